package engine

import (
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

// peerStates is every peer's state in this pass, by link and public key.
type peerStates map[string]map[model.Key]wgpeer.State

func (s peerStates) set(link string, pub model.Key, st wgpeer.State) {
	if s[link] == nil {
		s[link] = map[model.Key]wgpeer.State{}
	}
	s[link][pub] = st
}

// fillPeerSets returns desired with the elements of the sets fed by
// WireGuard peers (elements-from) computed from this pass's peer states: the
// literal elements plus the allowed IPs of the link's peers that are Up (or
// of all its peers) of the set's family, overlaps merged. It runs before the
// diff, so a peer that comes up or goes away changes set elements only.
// desired itself is not changed.
func fillPeerSets(desired *model.State, states peerStates) *model.State {
	var out *model.State
	for ti := range desired.NFTables {
		t := &desired.NFTables[ti]
		var sets []model.NftSet
		for si := range t.Sets {
			s := &t.Sets[si]
			if s.From == nil {
				continue
			}
			if sets == nil {
				sets = append([]model.NftSet(nil), t.Sets...)
			}
			sets[si].Elems = peerElems(desired, states, s)
		}
		if sets == nil {
			continue
		}
		if out == nil {
			c := *desired
			c.NFTables = append([]model.NftTable(nil), desired.NFTables...)
			out = &c
		}
		out.NFTables[ti].Sets = sets
	}
	if out == nil {
		return desired
	}
	return out
}

func peerElems(desired *model.State, states peerStates, s *model.NftSet) []model.NftElem {
	elems := append([]model.NftElem(nil), s.Elems...)
	l := desired.Links[s.From.WireGuard]
	if l == nil || l.WireGuard == nil {
		return elems
	}
	v4 := s.Type == model.NftIPv4
	for _, p := range l.WireGuard.Peers {
		if !s.From.AllPeers && states[s.From.WireGuard][p.PublicKey] != wgpeer.Up {
			continue
		}
		for _, a := range p.AllowedIPs {
			if a.Addr().Is4() == v4 {
				elems = append(elems, model.PrefixElem(a))
			}
		}
	}
	return model.MergeNftElems(elems)
}
