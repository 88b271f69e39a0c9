package model

import "net/netip"

// NftElemsFrom feeds a set from the allowed IPs of a WireGuard link's peers
// (desired only). The engine computes the elements each pass, before the
// diff, so the set follows the mesh without the file changing.
type NftElemsFrom struct {
	WireGuard string // the wireguard link's name
	// AllPeers takes every peer of the link; otherwise only the peers that
	// are Up (package wgpeer), as KubeSpan's target sets do.
	AllPeers bool
	Origin   string
}

// Peers is the word of the file for AllPeers: "all" or "up".
func (f *NftElemsFrom) Peers() string {
	if f.AllPeers {
		return "all"
	}
	return "up"
}

// PrefixElem is the interval element of a prefix in a set of its family.
func PrefixElem(p netip.Prefix) NftElem {
	p = p.Masked()
	k := p.Addr().AsSlice()
	return NftElem{Key: string(k), End: string(rangeEnd(k, p.Bits()))}
}

// MergeNftElems sorts interval elements and joins the ones that overlap
// (a peer's /24 inside a literal /16, the same prefix from two sources),
// which the kernel would refuse. Adjacent intervals are kept apart: nft
// lists them as written.
func MergeNftElems(es []NftElem) []NftElem {
	if len(es) == 0 {
		return es
	}
	SortNftElems(es)
	out := es[:1]
	for _, e := range es[1:] {
		last := &out[len(out)-1]
		if last.End != "" && e.Key >= last.End {
			out = append(out, e)
			continue
		}
		// Overlap: the union runs to the later end ("" is the top).
		if last.End != "" && (e.End == "" || e.End > last.End) {
			last.End = e.End
		}
	}
	return out
}
