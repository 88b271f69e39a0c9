package kernel_test

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// compiled compiles a rule of a chain with nft, in a table of tk's family
// holding sets.
func compiled(t *testing.T, tk model.NftTableKey, sets []model.NftSet, chain *model.NftChain, text string) *model.NftRule {
	t.Helper()
	tb := &model.NftTable{Family: tk.Family, Name: tk.Name, Sets: sets, Chains: []model.NftChain{*chain}}
	r := &model.NftRule{Text: text}
	if err := (&nftcompile.Nft{}).Compile(context.Background(), &nftcompile.Request{Rules: []nftcompile.Rule{{Table: tb, Chain: &tb.Chains[0], Rule: r}}}); err != nil {
		t.Fatal(err)
	}
	r.Key = nftcompile.Key("test", tb, &tb.Chains[0], text, nil)
	return r
}

func elem(t *testing.T, s string) model.NftElem {
	t.Helper()
	e, err := model.ParseNftElem(model.NftIPv4, true, s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A batch whose last message fails changes nothing: the element added
// earlier in the same batch is not in the set afterwards.
func TestNftBatchIsAtomic(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tk := model.NftTableKey{Family: "inet", Name: "atomic"}
	set := &model.NftSet{Name: "s", Type: model.NftIPv4, Interval: true}
	chain := &model.NftChain{Name: "c"}
	rule := compiled(t, tk, []model.NftSet{*set}, chain, "ip daddr @s accept")
	if err := k.NFTApply([]model.NftOp{
		{Op: model.NftAddTable, Table: tk},
		{Op: model.NftAddSet, Table: tk, Set: set},
		{Op: model.NftAddElems, Table: tk, Set: set, Elems: []model.NftElem{elem(t, "10.0.0.0/8")}},
		{Op: model.NftAddChain, Table: tk, Chain: chain},
		{Op: model.NftAddRule, Table: tk, Chain: chain, Rule: rule},
	}); err != nil {
		t.Fatal(err)
	}
	before := nettest.InNS(t, ns, "nft", "-a", "list", "ruleset")
	err = k.NFTApply([]model.NftOp{
		{Op: model.NftAddElems, Table: tk, Set: set, Elems: []model.NftElem{elem(t, "192.168.0.0/16")}},
		{Op: model.NftDelRule, Table: tk, Chain: chain, Handle: 9999},
	})
	if err == nil {
		t.Fatal("deleting a rule that does not exist succeeded")
	}
	if after := nettest.InNS(t, ns, "nft", "-a", "list", "ruleset"); after != before {
		t.Errorf("a failed batch changed the ruleset:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	got, err := k.NFTTable(tk)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Sets[0].Elems); n != 1 {
		t.Errorf("set holds %d elements, want 1", n)
	}
	if r := got.Chains[0].Rules[0]; r.Fingerprint != rule.Fingerprint || !r.Intact() || r.Key != rule.Key {
		t.Errorf("rule read back as %+v, want fingerprint %s and key %s, intact", r, rule.Fingerprint, rule.Key)
	}
}

// 100k interval elements load in one batch: element lists are split to fit
// netlink attributes, and the socket buffers take the batch and its ACKs.
func TestNftLargeSet(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tk := model.NftTableKey{Family: "ip6", Name: "big"}
	set := &model.NftSet{Name: "s", Type: model.NftIPv6, Interval: true, Elems: Elems6(100000)}
	if err := k.NFTApply([]model.NftOp{
		{Op: model.NftAddTable, Table: tk},
		{Op: model.NftAddSet, Table: tk, Set: set},
		{Op: model.NftAddElems, Table: tk, Set: set, Elems: set.Elems},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := k.NFTTable(tk)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Sets[0].Elems); n != 100000 {
		t.Fatalf("read back %d elements, want 100000", n)
	}
	for i, e := range got.Sets[0].Elems {
		if e != set.Elems[i] {
			t.Fatalf("element %d: read %s, wrote %s", i, model.FormatNftElem(model.NftIPv6, true, e), model.FormatNftElem(model.NftIPv6, true, set.Elems[i]))
		}
	}
	if l := nettest.InNS(t, ns, "nft", "list", "set", "ip6", "big", "s"); !strings.Contains(l, "2001:db8::/64") {
		t.Errorf("nft does not list the first element:\n%.400s", l)
	}
}

// Elems6 returns n disjoint /64 prefixes of 2001:db8::/32, sorted.
func Elems6(n int) []model.NftElem {
	out := make([]model.NftElem, 0, n)
	for i := 0; i < n; i++ {
		b := netip.MustParseAddr("2001:db8::").As16()
		b[4], b[5], b[6] = byte(i>>16), byte(i>>8), byte(i)
		p := netip.PrefixFrom(netip.AddrFrom16(b), 64)
		e, _ := model.ParseNftElem(model.NftIPv6, true, p.String())
		out = append(out, e)
	}
	model.SortNftElems(out)
	return out
}

// A table's handle is what nft -a shows, 0 for a table that does not exist,
// and another one for a table deleted and made again under the same name.
func TestNftTableHandle(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tk := model.NftTableKey{Family: "ip", Name: "hdl"}
	if h, err := k.NFTTableHandle(tk); err != nil || h != 0 {
		t.Fatalf("handle of a missing table: %d, %v", h, err)
	}
	nettest.InNS(t, ns, "nft", "add", "table", "ip", "other")
	nettest.InNS(t, ns, "nft", "add", "table", "ip", "hdl")
	first, err := k.NFTTableHandle(tk)
	if err != nil {
		t.Fatal(err)
	}
	if out := nettest.InNS(t, ns, "nft", "-a", "list", "table", "ip", "hdl"); !strings.Contains(out, "# handle "+strconv.FormatUint(first, 10)+"\n") {
		t.Errorf("handle %d, nft says:\n%s", first, out)
	}
	if tb, err := k.NFTTable(tk); err != nil || tb == nil || tb.Handle != first {
		t.Errorf("NFTTable: %+v, %v; want handle %d", tb, err, first)
	}
	nettest.InNS(t, ns, "nft", "delete", "table", "ip", "hdl")
	nettest.InNS(t, ns, "nft", "add", "table", "ip", "hdl")
	if again, err := k.NFTTableHandle(tk); err != nil || again == first || again == 0 {
		t.Errorf("handle after delete and add: %d (first %d), %v", again, first, err)
	}
}
