package actual

import (
	"maps"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Kinds names the parts of a kernel state that notifications report, which
// a read may take from the previous read when nothing reported a change
// (the daemon, issue 16). WireGuard devices, the far ends of veth pairs,
// FoU ports and sysctls send no notifications: they are read every time.
type Kinds uint8

const (
	// Links are the links and their addresses.
	Links Kinds = 1 << iota
	Routes
	Rules
	// NFT is the nftables tables (read by the engine, not Read).
	NFT

	AllKinds = Links | Routes | Rules | NFT
)

// ReadReusing is Read that reads only the kinds in fresh and takes the
// others from prev, a state an earlier Read or ReadReusing returned with
// the same options. With no prev (or a prev of another protocol) it reads
// everything.
//
// The caller vouches that nothing of a kind left out of fresh changed in the
// kernel since prev was read, in a way that matters to the plan (the
// daemon's event filter says so), and that nothing changes prev's parts:
// the new state shares them (its links map is its own, holding the same
// links).
func ReadReusing(k kernel.Reader, opt Options, prev *model.State, fresh Kinds) (*model.State, error) {
	if prev == nil || prev.Protocol != opt.Protocol || opt.AllRoutes || fresh&AllKinds == AllKinds {
		return Read(k, opt)
	}
	st := model.NewState()
	st.Protocol = opt.Protocol
	if fresh&Links != 0 {
		if err := readLinks(k, st); err != nil {
			return nil, err
		}
	} else {
		st.Links = maps.Clone(prev.Links)
	}
	if err := readRemotePeers(k, st); err != nil {
		return nil, err
	}
	if err := readWireGuard(k, st); err != nil {
		return nil, err
	}
	if fresh&Links != 0 {
		if err := readAddresses(k, st); err != nil {
			return nil, err
		}
	} else {
		st.Addresses = prev.Addresses
		st.AddressProtocols = prev.AddressProtocols
	}
	if fresh&Routes != 0 {
		if err := readRoutes(k, st, opt); err != nil {
			return nil, err
		}
	} else {
		st.Routes = prev.Routes
	}
	if fresh&Rules != 0 {
		if err := readRules(k, st); err != nil {
			return nil, err
		}
	} else {
		st.Rules = prev.Rules
	}
	if err := readFou(k, st, opt.OwnedFou); err != nil {
		return nil, err
	}
	if err := readSysctls(k, st, opt.Sysctls, opt.OwnedSysctls); err != nil {
		return nil, err
	}
	return st, nil
}
