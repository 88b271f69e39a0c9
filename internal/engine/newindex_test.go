package engine

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// A table waits for a link the plan makes under a name the kernel holds
// (its index changes): one whose rules name it, as a word of its own, and
// no other; a table already waiting keeps its reason.
func TestWaitForNewIndexes(t *testing.T) {
	table := func(name, rule string) model.NftTable {
		return model.NftTable{Family: "inet", Name: name, Chains: []model.NftChain{{Name: "c", Rules: []model.NftRule{{Text: rule}}}}}
	}
	desired := &model.State{NFTables: []model.NftTable{
		table("a", `iif "p2a" accept`),
		table("b", `iifname "p2ab" accept`),
		table("c", `oif { "lo", "x1" } accept`),
		table("d", `iif "x9" accept`),
		table("e", `iif "m0" accept`),
	}}
	act := &model.State{Links: map[string]*model.Link{"p2a": {Name: "p2a", Index: 7}, "x1": {Name: "x1", Index: 8}, "p2ab": {Name: "p2ab", Index: 9}, "m0": {Name: "m0", Index: 10}}}
	plan := &diff.Plan{Ops: []diff.Op{
		{Action: diff.Replace, Kind: diff.KindLink, ID: "p2a"},
		{Action: diff.Replace, Kind: diff.KindLink, ID: "x1"},
		{Action: diff.Create, Kind: diff.KindLink, ID: "x9"},
		{Action: diff.Update, Kind: diff.KindLink, ID: "m0"},
	}}
	before := map[model.NftTableKey]string{{Family: "inet", Name: "d"}: "waits for link x9"}
	got := waitForNewIndexes(desired, act, plan, before)
	want := map[string]string{"a": "p2a", "c": "x1", "d": ""}
	if len(got) != len(want) {
		t.Fatalf("waiting %v, want tables %v", got, want)
	}
	for name, link := range want {
		why := got[model.NftTableKey{Family: "inet", Name: name}]
		switch {
		case link == "" && why != before[model.NftTableKey{Family: "inet", Name: name}]:
			t.Errorf("table %s: %q, want its reason kept", name, why)
		case link != "" && why != "waits for link "+link+", which its rules name and this plan makes again: compiled to its new index once it exists":
			t.Errorf("table %s: %q, want it waiting for %s", name, why, link)
		}
	}
	if got := waitForNewIndexes(desired, act, &diff.Plan{Ops: plan.Ops[2:]}, before); got != nil {
		t.Errorf("no link made again: %v, want nil", got)
	}
}
