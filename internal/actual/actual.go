// Package actual reads the kernel into a model.State: the same model the
// desired stage produces, with ownership marked, so that the diff can
// compare the two directly.
package actual

import (
	"errors"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Options tune a read.
type Options struct {
	// Protocol is our route and rule protocol.
	Protocol int
	// AllRoutes also reads foreign routes (for show --all); a reconcile reads
	// only ours, which the kernel filters for us.
	AllRoutes bool
	// OwnedFou lists the FoU ports netreconcile opened (from its ledger).
	OwnedFou map[model.FouKey]bool
}

// Read lists the kernel's links, addresses, routes, rules and FoU ports.
func Read(k kernel.Reader, opt Options) (*model.State, error) {
	st := model.NewState()
	st.Protocol = opt.Protocol
	links, err := k.Links()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		st.Links[l.Name] = l
	}
	if err := readRemotePeers(k, st); err != nil {
		return nil, err
	}
	if err := readWireGuard(k, st); err != nil {
		return nil, err
	}
	if st.Addresses, err = k.Addresses(); err != nil {
		return nil, err
	}
	for i := range st.Addresses {
		a := &st.Addresses[i]
		if l, ok := st.Links[a.Link]; ok && l.Owned {
			a.Owned = true
		}
	}
	proto := opt.Protocol
	if opt.AllRoutes {
		proto = 0
	}
	if st.Routes, err = k.Routes(proto); err != nil {
		return nil, err
	}
	if st.Rules, err = k.Rules(); err != nil {
		return nil, err
	}
	st.FouPorts, err = k.FouPorts()
	if errors.Is(err, kernel.ErrUnsupported) {
		// No FoU in this kernel: nothing can be open. A file that declares
		// ports gets its error when the apply tries to open them.
		st.FouPorts, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read fou ports: %w", err)
	}
	for i := range st.FouPorts {
		st.FouPorts[i].Owned = opt.OwnedFou[st.FouPorts[i].Key()]
	}
	return st, nil
}

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
