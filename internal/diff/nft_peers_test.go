package diff

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

func peerSetState(from *model.NftElemsFrom, literal ...string) *model.State {
	st := model.NewState()
	p1, p2 := model.Key{1}, model.Key{2}
	st.Links["ks"] = &model.Link{Name: "ks", Kind: model.KindWireGuard, WireGuard: &model.WireGuard{Peers: []model.WireGuardPeer{
		{PublicKey: p1, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.100.0.2/32"), netip.MustParsePrefix("10.244.2.0/24"), netip.MustParsePrefix("fd00::2/128")}},
		{PublicKey: p2, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.100.0.3/32"), netip.MustParsePrefix("10.244.3.0/24")}},
	}}}
	v4 := model.NftSet{Name: "v4", Type: model.NftIPv4, Interval: true, From: from}
	for _, l := range literal {
		e, err := model.ParseNftElem(model.NftIPv4, true, l)
		if err != nil {
			panic(err)
		}
		v4.Elems = append(v4.Elems, e)
	}
	v6 := model.NftSet{Name: "v6", Type: model.NftIPv6, Interval: true, From: from}
	st.NFTables = []model.NftTable{{Family: "inet", Name: "t", Sets: []model.NftSet{v4, v6}}}
	return st
}

func elemsOf(s *model.NftSet) string {
	var out []string
	for _, e := range s.Elems {
		out = append(out, model.FormatNftElem(s.Type, s.Interval, e))
	}
	return strings.Join(out, " ")
}

func TestPeerSets(t *testing.T) {
	up := map[string]map[model.Key]bool{"ks": {model.Key{1}: true}}
	for _, c := range []struct {
		name   string
		from   *model.NftElemsFrom
		states map[string]map[model.Key]bool
		lit    []string
		v4, v6 string
	}{
		{"up only", &model.NftElemsFrom{WireGuard: "ks"}, up, nil, "10.100.0.2 10.244.2.0/24", "fd00::2"},
		{"all peers", &model.NftElemsFrom{WireGuard: "ks", AllPeers: true}, nil, nil, "10.100.0.2 10.100.0.3 10.244.2.0/24 10.244.3.0/24", "fd00::2"},
		{"none up", &model.NftElemsFrom{WireGuard: "ks"}, nil, nil, "", ""},
		// A literal /16 swallows the peers' /24s: the kernel refuses overlaps.
		{"union with literal", &model.NftElemsFrom{WireGuard: "ks", AllPeers: true}, nil, []string{"10.244.0.0/16", "192.0.2.1"}, "10.100.0.2 10.100.0.3 10.244.0.0/16 192.0.2.1", "fd00::2"},
		{"literal equals a peer's", &model.NftElemsFrom{WireGuard: "ks"}, up, []string{"10.100.0.2"}, "10.100.0.2 10.244.2.0/24", "fd00::2"},
	} {
		d := peerSetState(c.from, c.lit...)
		got := peerSets(d, c.states)
		tb := &got.NFTables[0]
		if g := elemsOf(tb.Set("v4")); g != c.v4 {
			t.Errorf("%s: v4 = %q, want %q", c.name, g, c.v4)
		}
		if g := elemsOf(tb.Set("v6")); g != c.v6 {
			t.Errorf("%s: v6 = %q, want %q", c.name, g, c.v6)
		}
		if n := len(d.NFTables[0].Sets[0].Elems); n != len(c.lit) {
			t.Errorf("%s: desired itself changed: %d elements", c.name, n)
		}
	}
}

// A peer that comes up adds its allowed IPs to the set and nothing else:
// the plan from the kernel state of the pass before holds element ops only.
func TestPeerUpChangesElementsOnly(t *testing.T) {
	from := &model.NftElemsFrom{WireGuard: "ks"}
	d := peerSetState(from)
	d.NFTables[0].Chains = []model.NftChain{{Name: "c", Type: "filter", Hook: "output", Policy: "accept"}}
	before := peerSets(d, nil)
	act := *before
	act.NFTables = append([]model.NftTable(nil), before.NFTables...)
	act.NFTables[0].Owned = true
	// The device is as the file says: only the peers' states differ.
	ks := *d.Links["ks"]
	ks.Owned = true
	act.Links = map[string]*model.Link{"ks": &ks}
	act.Protocol = d.Protocol
	plan, err := ComputeWith(d, &act, Inputs{PeersUp: map[string]map[model.Key]bool{"ks": {model.Key{2}: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range plan.Ops {
		got = append(got, string(op.Action)+" "+string(op.Kind)+" "+op.ID)
	}
	want := "create nft element inet t set v4 element 10.100.0.3,create nft element inet t set v4 element 10.244.3.0/24"
	if strings.Join(got, ",") != want {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.ReplaceAll(want, ",", "\n"))
	}
}
