package desired

import (
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// nftElemsFromConf feeds a set from a WireGuard link's peers:
//
//	elements-from: {wireguard: kubespan, peers: up}
type nftElemsFromConf struct {
	Meta
	WireGuard string `yaml:"wireguard" schema:"required"`
	Peers     string `yaml:"peers" schema:"enum=peerSelections"`
}

// peerSelections are the words of elements-from's peers: the peers that
// are up (the default), or all of them.
var peerSelections = []string{"up", "all"}

// nftElemsFrom checks elements-from and records it on the set. The peers'
// allowed IPs are prefixes of both families, so the set must be an interval
// set of addresses: each family's prefixes go to the set of its type.
func (b *builder) nftElemsFrom(path string, s *model.NftSet, sc *nftSetConf) bool {
	fc := sc.ElementsFrom
	fp := path + ".elements-from"
	ok := true
	if s.Type != model.NftIPv4 && s.Type != model.NftIPv6 {
		b.errs.add(sc.at("type"), path+".type", "a set fed by WireGuard peers holds their allowed IPs: expected type %s or %s, found %q", model.NftIPv4, model.NftIPv6, s.Type)
		ok = false
	}
	if !s.Interval {
		b.errs.add(fc.Pos, path+".flags", "a set fed by WireGuard peers holds prefixes: add flags: [interval]")
		ok = false
	}
	if s.Timeout {
		b.errs.add(fc.Pos, path+".flags", "a set fed by WireGuard peers cannot have timeout: netreconcile adds and removes its elements")
		ok = false
	}
	known := b.wireGuardLinks()
	switch lc := b.links[fc.WireGuard]; {
	case fc.WireGuard == "":
		b.errs.add(fc.Pos, fp+".wireguard", "missing; expected the name of a wireguard link of this file (%s)", known)
		ok = false
	case lc == nil:
		b.errs.add(fc.at("wireguard"), fp+".wireguard", "no link %q in the file; expected a wireguard link (%s)", fc.WireGuard, known)
		ok = false
	case lc.Kind != model.KindWireGuard:
		b.errs.add(fc.at("wireguard"), fp+".wireguard", "link %s is of kind %s; expected a wireguard link (%s)", fc.WireGuard, lc.Kind, known)
		ok = false
	}
	from := &model.NftElemsFrom{WireGuard: fc.WireGuard, Origin: fc.Pos.String()}
	switch {
	case !fc.has("peers") || fc.Peers == peerSelections[0]:
	case fc.Peers == peerSelections[1]:
		from.AllPeers = true
	default:
		b.errs.add(fc.at("peers"), fp+".peers", "expected up (the peers whose handshakes are recent, as KubeSpan) or all, found %q", fc.Peers)
		ok = false
	}
	if ok {
		s.From = from
	}
	return ok
}

// wireGuardLinks says which wireguard links the files declare, for the
// errors of elements-from; made once: listing every link for each set was
// sets times links.
func (b *builder) wireGuardLinks() string {
	if b.wgKnown != nil {
		return *b.wgKnown
	}
	var wgLinks []string
	for _, name := range b.linkNames {
		if b.links[name].Kind == model.KindWireGuard {
			wgLinks = append(wgLinks, name)
		}
	}
	known := "none is declared"
	if len(wgLinks) > 0 {
		known = "declared: " + strings.Join(wgLinks, ", ")
	}
	b.wgKnown = &known
	return known
}
