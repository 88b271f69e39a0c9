package diff

import "github.com/netreconcile/netreconcile/internal/model"

// peerSets returns desired with the elements of the sets fed by WireGuard
// peers (elements-from) computed from the peers that are Up (Inputs.PeersUp):
// the literal elements plus the allowed IPs of the link's peers that are Up
// (or of all its peers) of the set's family, overlaps merged. So a peer that
// comes up or goes away changes set elements only. desired itself is not
// changed.
func peerSets(desired *model.State, up map[string]map[model.Key]bool) *model.State {
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
			sets[si].Elems = peerElems(desired, up, s)
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

func peerElems(desired *model.State, up map[string]map[model.Key]bool, s *model.NftSet) []model.NftElem {
	elems := append([]model.NftElem(nil), s.Elems...)
	l := desired.Links[s.From.WireGuard]
	if l == nil || l.WireGuard == nil {
		return elems
	}
	v4 := s.Type == model.NftIPv4
	for _, p := range l.WireGuard.Peers {
		if !s.From.AllPeers && !up[s.From.WireGuard][p.PublicKey] {
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
