package kernel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// A rule that changes a set from the packet path (delete @a) changes it
// without a commit, and the kernel takes such a rule on a set without the
// dynamic flag (review of the one-shot cache). Read twice at one
// generation, with a packet in between, the set shows the packet's change:
// it is never served from the element cache.
func TestNftElemCacheSkipsSetsChangedByPackets(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "set", "lo", "up")
	dir := t.TempDir()
	nettest.WriteFile(t, dir, "t.nft", `table ip t {
	set a { type ipv4_addr; elements = { 1.1.1.1, 127.0.0.9 } }
	set b { type ipv4_addr; elements = { 1.1.1.1, 127.0.0.9 } }
}
`)
	// The rule comes in a later transaction: nft then leaves the set's
	// flags as they are (made with the rule, the set gets flags dynamic).
	nettest.WriteFile(t, dir, "rule.nft", "add chain ip t out { type filter hook output priority 0; }\nadd rule ip t out udp dport 9 delete @a { ip daddr }\n")
	nettest.InNS(t, ns, "nft", "-f", dir+"/t.nft")
	nettest.InNS(t, ns, "nft", "-f", dir+"/rule.nft")
	if out := nettest.InNS(t, ns, "nft", "list", "set", "ip", "t", "a"); strings.Contains(out, "dynamic") {
		t.Fatalf("set a has flags dynamic: the test proves nothing\n%s", out)
	}
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	key := model.NftTableKey{Family: "ip", Name: "t"}
	read := func() map[string]int {
		tb, err := k.NFTTable(key)
		if err != nil || tb == nil {
			t.Fatalf("read: %v", err)
		}
		n := map[string]int{}
		for _, s := range tb.Sets {
			n[s.Name] = len(s.Elems)
			if s.Raw != nil {
				// nft gave a, used by a dynset, a size: a set of
				// nft's making, read as bytes (and never cached).
				n[s.Name] = len(s.Raw.Elems)
			}
		}
		return n
	}
	if got := read(); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("first read: %v", got)
	}
	nettest.InNS(t, ns, "bash", "-c", "echo x >/dev/udp/127.0.0.9/9")
	if out := nettest.InNS(t, ns, "nft", "list", "set", "ip", "t", "a"); strings.Contains(out, "127.0.0.9") {
		t.Fatalf("the packet did not delete 127.0.0.9: the test proves nothing\n%s", out)
	}
	if got := read(); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("second read, same generation: %v, want a with 1 element (read again), b with 2", got)
	}
}

// The first load of a table (absent when read, then made by one batch with
// its sets, elements, chain and rules) leaves the element cache holding
// what the batch put in the sets, so the read after it, and the next
// one-shot command, dump nothing (bench-nft: a first load of a 100k-element
// set took 2x nft -f when the batch's sets were dropped). What the cache
// holds is checked against a fresh handle's dump and nft -j.
func TestNftElemCacheFollowsAFirstLoad(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tk := model.NftTableKey{Family: "ip", Name: "first"}
	if tb, err := k.NFTTable(tk); err != nil || tb != nil {
		t.Fatalf("read of the absent table: %v, %v", tb, err)
	}
	set := &model.NftSet{Name: "s", Type: model.NftIPv4, Interval: true}
	empty := &model.NftSet{Name: "e", Type: model.NftIPv4}
	elems := []model.NftElem{elem(t, "10.0.0.0/8"), elem(t, "192.168.1.1"), elem(t, "172.16.0.0/12")}
	chain := &model.NftChain{Name: "out", Hook: "output", Type: "filter", Policy: "accept"}
	rule := compiled(t, tk, []model.NftSet{*set, *empty}, chain, "ip daddr @s accept")
	if err := k.NFTApply([]model.NftOp{
		{Op: model.NftAddTable, Table: tk},
		{Op: model.NftAddSet, Table: tk, Set: set},
		{Op: model.NftAddSet, Table: tk, Set: empty},
		{Op: model.NftAddElems, Table: tk, Set: set, Elems: elems},
		{Op: model.NftAddChain, Table: tk, Chain: chain},
		{Op: model.NftAddRule, Table: tk, Chain: chain, Rule: rule},
	}); err != nil {
		t.Fatal(err)
	}
	snap, ok := k.NFTElems()
	if !ok {
		t.Fatal("after the first load the element cache holds nothing: the next read dumps the set again")
	}
	cached := map[string][]model.NftElem{}
	for _, cs := range snap.Sets {
		if cs.Table == tk {
			cached[cs.Set] = cs.Elems
		}
	}
	if _, ok := cached["e"]; !ok {
		t.Errorf("the empty set the batch made is not cached: %v", cached)
	}
	// A handle of its own has no cache: it dumps.
	k2, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	tb, err := k2.NFTTable(tk)
	if err != nil || tb == nil {
		t.Fatalf("fresh read: %v, %v", tb, err)
	}
	for _, s := range tb.Sets {
		if got, want := fmt.Sprint(cached[s.Name]), fmt.Sprint(s.Elems); got != want {
			t.Errorf("set %s: cached %s, the kernel holds %s", s.Name, got, want)
		}
	}
	// nft's own count of the interval set's elements.
	if out := nettest.InNS(t, ns, "nft", "-j", "list", "set", "ip", "first", "s"); strings.Count(out, `"prefix"`)+strings.Count(out, `"192.168.1.1"`) != 3 {
		t.Errorf("nft -j does not show the three elements:\n%s", out)
	}
	// The cache serves the next read of the first handle.
	tb, err = k.NFTTable(tk)
	if err != nil || tb == nil {
		t.Fatalf("second read: %v, %v", tb, err)
	}
	for _, s := range tb.Sets {
		if s.Name == "s" && len(s.Elems) != 3 {
			t.Errorf("second read: set s has %d elements, want 3", len(s.Elems))
		}
	}
}
