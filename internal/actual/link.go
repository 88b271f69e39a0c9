package actual

import (
	"fmt"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// readRemotePeers reads the other side of the veth pairs we own whose peer
// is in another namespace: deleting or recreating such a pair deletes the
// peer, and with it whatever sits on the peer there, which the diff must see
// to refuse. Only owned ends: a foreign pair is never deleted.
func readRemotePeers(k kernel.Reader, st *model.State) error {
	for _, l := range st.Links {
		if !l.Owned || l.Veth == nil || l.Veth.PeerNSID < 0 {
			continue
		}
		rp, err := k.VethPeer(l.Veth.PeerNSID, l.Veth.PeerIndex)
		if err != nil {
			return fmt.Errorf("read the peer of veth %s: %w", l.Name, err)
		}
		l.Veth.Remote = rp
	}
	return nil
}

// readLinks lists the links; the kernel reader marks ours (by the alias).
func readLinks(k kernel.Reader, st *model.State) error {
	links, err := k.Links()
	if err != nil {
		return err
	}
	for _, l := range links {
		st.Links[l.Name] = l
	}
	return nil
}
