package kernel

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The element cache after a batch (review of the one-shot cache): carried
// forward only from a cache valid at the batch's start, never for a set the
// batch creates, and not for a table whose rules the batch adds or
// replaces (a rule may change its sets from the packet path).
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
	// Ours, nothing in between: x takes the new element; y, created, is
	// not taken for empty.
	c := fresh()
	c.applied([]model.NftOp{{Op: model.NftAddSet, Table: tk, Set: y}, {Op: model.NftAddElems, Table: tk, Set: y, Elems: e("b")},
		{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("b")}}, 5, 6)
	if !c.valid || c.gen != 6 || len(c.sets[nftSetKey{tk, "x"}]) != 2 {
		t.Fatalf("after our batch: %+v", c)
	}
	if _, ok := c.sets[nftSetKey{tk, "y"}]; ok {
		t.Error("a set the batch created is cached (it may have existed: an add of an existing set is a no-op)")
	}
	// Someone committed between the read (5) and the batch (sent at 6).
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("b")}}, 6, 7)
	if c.valid {
		t.Error("a commit between the read and the batch: the cache is still valid")
	}
	// Someone committed with the batch.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddElems, Table: tk, Set: x, Elems: e("b")}}, 5, 7)
	if c.valid {
		t.Error("two commits for one batch: the cache is still valid")
	}
	// A rule added to t: t's sets are dropped, u's kept.
	c = fresh()
	c.applied([]model.NftOp{{Op: model.NftAddRule, Table: tk, Chain: &model.NftChain{Name: "c"}, Rule: &model.NftRule{Text: "udp dport 9 add @x { ip daddr }"}}}, 5, 6)
	if _, ok := c.sets[nftSetKey{tk, "x"}]; ok || len(c.sets[nftSetKey{other, "x"}]) != 1 {
		t.Errorf("after a rule added to %s: %+v", tk, c.sets)
	}
}
