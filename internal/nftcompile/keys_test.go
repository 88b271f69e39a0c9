package nftcompile

import (
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
		k.Begin()
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
