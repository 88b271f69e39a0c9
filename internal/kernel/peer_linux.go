package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vishvananda/netns"

	"github.com/netreconcile/netreconcile/internal/model"
)

// runNetns is where ip-netns(8) keeps the names of namespaces, and the only
// place a veth's peer-netns can name.
const runNetns = "/run/netns"

// VethPeer reads the peer of a veth end in another namespace. The kernel reports a peer in another
// namespace only as a netnsid local to this one; each named namespace is
// asked for its netnsid here (RTM_GETNSID, which assigns none) until one
// matches.
func (k *Netlink) VethPeer(nsid, index int) (*model.RemotePeer, error) {
	entries, err := os.ReadDir(runNetns)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list network namespaces in %s: %w", runNetns, err)
	}
	for _, e := range entries {
		path := filepath.Join(runNetns, e.Name())
		h, err := netns.GetFromPath(path)
		if err != nil {
			// Being deleted, or a leftover of a failed ip netns add.
			continue
		}
		id, err := k.h.GetNetNsIdByFd(int(h))
		h.Close()
		if err != nil || id != nsid {
			continue
		}
		rp := &model.RemotePeer{NetNS: e.Name()}
		other, err := Open(path)
		if err != nil {
			rp.Unreadable = err.Error()
			return rp, nil
		}
		defer other.Close()
		if rp.Links, err = other.Links(); err != nil {
			rp.Unreadable = fmt.Sprintf("list links in namespace %s: %v", e.Name(), err)
			return rp, nil
		}
		for _, l := range rp.Links {
			if l.Index == index {
				rp.Name = l.Name
			}
		}
		if rp.Name == "" {
			rp.Unreadable = fmt.Sprintf("no link with index %d in namespace %s", index, e.Name())
		}
		return rp, nil
	}
	return &model.RemotePeer{Unreadable: fmt.Sprintf("its namespace (netnsid %d) has no name under %s", nsid, runNetns)}, nil
}
