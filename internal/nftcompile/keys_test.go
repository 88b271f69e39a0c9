package nftcompile

import (
	"fmt"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// A key remembered from one plan to the next is the key Key computes, for
// every change of what the key depends on: the text, the chain, a set's
// declaration, a link's index, nft's version.
func TestKeysRememberedAsComputed(t *testing.T) {
	table := func() *model.NftTable {
		return &model.NftTable{Family: "inet", Name: "t",
			Sets:   []model.NftSet{{Name: "s", Type: model.NftIPv4}},
			Chains: []model.NftChain{{Name: "in", Type: "filter", Hook: "input"}, {Name: "fwd", Type: "filter", Hook: "forward"}}}
	}
	links := map[string]int{"eth0": 2}
	var k Keys
	check := func(step, version string, tb *model.NftTable, links map[string]int) {
		t.Helper()
		k.Begin(3)
		ctx := TableContext(version, tb, links)
		for _, text := range []string{"ip saddr @s accept", "iifname eth0 accept", "tcp dport 22 accept"} {
			for i := range tb.Chains {
				c := &tb.Chains[i]
				if got, want := k.Key(ctx, version, tb, c, text, links), Key(version, tb, c, text, links); got != want {
					t.Fatalf("%s: %q in %s: remembered %s, Key %s", step, text, c.Name, got, want)
				}
			}
		}
	}
	check("first", "v1", table(), links)
	check("again", "v1", table(), links)
	tb := table()
	tb.Sets[0].Interval = true
	check("a set's declaration", "v1", tb, links)
	tb = table()
	tb.Chains[0].Priority = 10
	check("a chain's priority", "v1", tb, links)
	check("a link's index", "v1", table(), map[string]int{"eth0": 3})
	check("nft's version", "v2", table(), links)
	check("back", "v1", table(), links)
}

// Keys are written into the kernel's rules (their markers): a rule whose
// key a new version computes otherwise is compiled by nft again on the
// first apply after an upgrade. These are the keys as computed when the
// hashing was reworked to allocate less.
func TestKeysStayAsWritten(t *testing.T) {
	tb := &model.NftTable{Family: "inet", Name: "t",
		Sets:    []model.NftSet{{Name: "s", Type: model.NftIPv4}, {Name: "iv", Type: model.NftIPv4, Interval: true}},
		Objects: []model.NftObject{{Name: "c1", Decl: "counter"}},
		Chains:  []model.NftChain{{Name: "in", Type: "filter", Hook: "input", Priority: -10}, {Name: "fwd", Type: "filter", Hook: "forward"}, {Name: "sub"}}}
	links := map[string]int{"eth0": 2, "wg0": 7, "lo": 1}
	for _, c := range []struct{ chain, text, want string }{
		{"in", "tcp dport 22 accept", "f5f2e51bb8739934a442201fe26bfb7c"},
		{"in", "ip saddr @s counter name c1 iifname eth0 jump sub", "c492037936671b5726e2af9479805be0"},
		{"fwd", "ip daddr @iv oifname { wg0, eth0 } accept", "82ed6310bb704d9b2c3d06944e4258a5"},
		{"sub", "", "86195facf72b8e3363f657e61449d787"},
	} {
		if got := Key("1.0.6", tb, tb.Chain(c.chain), c.text, links); got != c.want {
			t.Errorf("Key of %q in %s = %s, want %s", c.text, c.chain, got, c.want)
		}
	}
	if got, want := fmt.Sprintf("%x", TableContext("1.0.6", tb, links)), "f1d565e66f7c9910132e8871f22bb899cd1452c1be32b2becffd4a0e59b5761e"; got != want {
		t.Errorf("TableContext = %s, want %s", got, want)
	}
}
