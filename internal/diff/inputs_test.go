package diff

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The engine's inputs make operations in the plan, at their place in its
// order, and only the plan: pool addresses given back (also from a link
// netreconcile does not own), the sets fed by the peers that are Up, and
// the pool addresses a dry run cannot name, shown apart from the ops.
func TestComputeWithInputs(t *testing.T) {
	keyA, keyB := model.Key{1}, model.Key{2}
	d := model.NewState()
	d.Links["eth0"] = &model.Link{Name: "eth0", Kind: model.KindDevice}
	d.Links["br0"] = &model.Link{Name: "br0", Kind: model.KindBridge, MTU: 1500, Up: true}
	d.Links["ks"] = &model.Link{Name: "ks", Kind: model.KindWireGuard, MTU: 1420, Up: true, WireGuard: &model.WireGuard{Peers: []model.WireGuardPeer{
		{PublicKey: keyA, AllowedIPs: pfx("10.100.0.2/32", "fd00::2/128")},
		{PublicKey: keyB, AllowedIPs: pfx("10.100.0.3/32")},
	}}}
	d.Addresses = []model.Address{{Link: "br0", Prefix: netip.MustParsePrefix("10.2.0.5/32")}}
	d.NFTables = []model.NftTable{{Family: "inet", Name: "t", Sets: []model.NftSet{
		{Name: "up", Type: model.NftIPv4, Interval: true, From: &model.NftElemsFrom{WireGuard: "ks"}},
	}}}

	a := model.NewState()
	a.Protocol = d.Protocol
	a.Links["eth0"] = &model.Link{Name: "eth0", Kind: "dummy", MTU: 1500, Up: true}
	a.Links["br0"] = &model.Link{Name: "br0", Kind: model.KindBridge, MTU: 1500, Up: true, Owned: true}
	a.Links["ks"] = &model.Link{Name: "ks", Kind: model.KindWireGuard, MTU: 1420, Up: true, Owned: true, WireGuard: &model.WireGuard{Peers: d.Links["ks"].WireGuard.Peers}}
	a.Addresses = []model.Address{
		{Link: "eth0", Prefix: netip.MustParsePrefix("10.2.0.9/32")},  // given back: the pool handed it out
		{Link: "eth0", Prefix: netip.MustParsePrefix("192.0.2.1/24")}, // not the pool's: left alone
		{Link: "br0", Prefix: netip.MustParsePrefix("10.2.0.5/32")},   // still taken
		{Link: "br0", Prefix: netip.MustParsePrefix("10.2.0.6/32")},   // a prune of an owned link's address
		{Link: "br0", Prefix: netip.MustParsePrefix("10.99.0.1/24")},  // likewise
	}
	a.NFTables = []model.NftTable{{Family: "inet", Name: "t", Owned: true, Sets: []model.NftSet{{Name: "up", Type: model.NftIPv4, Interval: true}}}}

	in := Inputs{
		PoolAddrs: map[string]map[netip.Addr]bool{
			"eth0": {netip.MustParseAddr("10.2.0.9"): true},
			"br0":  {netip.MustParseAddr("10.2.0.5"): true, netip.MustParseAddr("10.2.0.6"): true},
		},
		PeersUp:     map[string]map[model.Key]bool{"ks": {keyA: true}},
		Unallocated: []model.PoolAddress{{Link: "br1", Pool: "p"}},
	}
	plan, err := ComputeWith(d, a, in)
	if err != nil {
		t.Fatal(err)
	}
	want := `+ nft element inet t set up element 10.100.0.2
- address 10.2.0.6/32 dev br0
- address 10.99.0.1/24 dev br0
- address 10.2.0.9/32 dev eth0: given back to its pool
+ address (from pool p) dev br1: allocated by apply
`
	if got := plan.String(); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	if len(plan.Ops) != 4 || len(plan.Pending) != 1 || plan.Summary() != "2 to create, 0 to update, 0 to replace, 3 to delete" {
		t.Errorf("%d ops, %d pending: %s", len(plan.Ops), len(plan.Pending), plan.Summary())
	}
	js, _ := plan.JSON()
	if !strings.Contains(string(js), `"pending": [`) {
		t.Errorf("JSON has no pending list:\n%s", js)
	}

	// Without the inputs: no give-back, no peer in the set, nothing pending.
	plan, _ = Compute(d, a)
	want = `- address 10.2.0.6/32 dev br0
- address 10.99.0.1/24 dev br0
`
	if got := plan.String(); got != want {
		t.Errorf("plan without inputs:\n%s\nwant:\n%s", got, want)
	}
}
