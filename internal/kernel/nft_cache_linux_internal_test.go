package kernel

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The element cache after a batch (review of the one-shot cache): carried
// forward only from a cache valid at the batch's start; a set the batch
// creates starts empty and takes its elements (the first load is not
// dumped back); the sets the batch's rules change from the packet path are
// dropped, and only those.
func TestElemCacheApplied(t *testing.T) {
	tk := model.NftTableKey{Family: "ip", Name: "t"}
	other := model.NftTableKey{Family: "ip", Name: "u"}
	x := &model.NftSet{Name: "x"}
	y := &model.NftSet{Name: "y"}
	e := func(k string) []model.NftElem { return []model.NftElem{{Key: k}} }
	fresh := func() *nftElemCache {
		c := &nftElemCache{}
		c.reset(5)
		c.sets[nftSetKey{tk, "x"}] = e("a")
		c.sets[nftSetKey{other, "x"}] = e("a")
		return c
	}
	// Ours, nothing in between: x takes the new element; y, created, holds
	// what the batch put in it.
	c := fresh()
	c.applied([]model.NftOp{{Op: model.NftAddSet, Table: tk, Set: y}, {Op: model.NftAddElems, Table: tk, Set: y, Elems: e("b")},
		{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("b")}}, nil, 5, 6)
	if !c.valid || c.gen != 6 || len(c.sets[nftSetKey{tk, "x"}]) != 2 {
		t.Fatalf("after our batch: %+v", c)
	}
	if got, ok := c.sets[nftSetKey{tk, "y"}]; !ok || len(got) != 1 || got[0].Key != "b" {
		t.Errorf("a set the batch created and filled: cached %v (%v), want [b]", got, ok)
	}
	// Created empty: cached empty, not absent.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddSet, Table: tk, Set: y}}, nil, 5, 6)
	if got, ok := c.sets[nftSetKey{tk, "y"}]; !ok || len(got) != 0 {
		t.Errorf("a set the batch created empty: cached %v (%v)", got, ok)
	}
	// Deleted and made again in one batch (a change of type): what the
	// batch put in, not what was there.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftDelSet, Table: tk, Set: x}, {Op: model.NftAddSet, Table: tk, Set: x},
		{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("c")}}, nil, 5, 6)
	if got := c.sets[nftSetKey{tk, "x"}]; len(got) != 1 || got[0].Key != "c" {
		t.Errorf("a set made again: cached %v, want [c]", got)
	}
	// A set made by a batch whose cache a commit in between spoiled: unknown.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddSet, Table: tk, Set: y}}, nil, 6, 7)
	if c.valid {
		t.Error("a set made after a foreign commit: the cache is still valid (the add may have been a no-op on a foreign set)")
	}
	// Someone committed between the read (5) and the batch (sent at 6).
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("b")}}, nil, 6, 7)
	if c.valid {
		t.Error("a commit between the read and the batch: the cache is still valid")
	}
	// Someone committed with the batch.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("b")}}, nil, 5, 7)
	if c.valid {
		t.Error("two commits for one batch: the cache is still valid")
	}
	// A rule that adds to t's x from the packet path: that set is
	// dropped, even when the batch made it; the others are kept.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddSet, Table: tk, Set: y},
		{Op: model.NftAddRule, Table: tk, Chain: &model.NftChain{Name: "c"}, Rule: &model.NftRule{Text: "udp dport 9 add @x { ip daddr } add @y { ip daddr }"}}},
		map[nftSetKey]bool{{tk, "x"}: true, {tk, "y"}: true}, 5, 6)
	if _, ok := c.sets[nftSetKey{tk, "x"}]; ok || len(c.sets[nftSetKey{other, "x"}]) != 1 {
		t.Errorf("after a rule that adds to %s x: %+v", tk, c.sets)
	}
	if _, ok := c.sets[nftSetKey{tk, "y"}]; ok {
		t.Errorf("a set the batch made and a rule of it adds to is cached: %+v", c.sets)
	}
}
