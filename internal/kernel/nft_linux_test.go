package kernel_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
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

// NFTTables lists every table of the namespace, of every family, as nft
// -j lists them.
func TestNftTablesListsEveryFamily(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if ts, err := k.NFTTables(); err != nil || len(ts) != 0 {
		t.Fatalf("a fresh namespace's tables: %v, %v", ts, err)
	}
	for _, f := range []string{"ip", "ip6", "inet", "arp", "bridge", "netdev"} {
		nettest.InNS(t, ns, "nft", "add", "table", f, "t"+f)
	}
	nettest.InNS(t, ns, "nft", "add", "table", "inet", "two")
	var listed struct {
		Nftables []struct {
			Table *struct{ Family, Name string }
		}
	}
	if err := json.Unmarshal([]byte(nettest.InNS(t, ns, "nft", "-j", "list", "tables")), &listed); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, o := range listed.Nftables {
		if o.Table != nil {
			want = append(want, o.Table.Family+" "+o.Table.Name)
		}
	}
	ts, err := k.NFTTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts {
		got = append(got, tk.String())
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) != 7 || !slices.Equal(got, want) {
		t.Errorf("NFTTables: %v; nft lists %v", got, want)
	}
}

// A batch larger than the socket's buffers is sent whole: the buffers are
// sized to it (nftwire.Conn.Send), as nft sizes them, instead of failing
// with EMSGSIZE (an interval set of 450,000 elements failed with 8 MiB
// buffers). The socket
// starts at 64 KiB here, so that sets of 20,000 elements, an interval set
// and a hash set, take a batch 20 times its size; nft -j counts what the
// kernel holds after the load, an element added and one removed. make
// bench-nft loads and changes sets of a million elements.
func TestNftBatchLargerThanSocket(t *testing.T) {
	nettest.RequireTool(t, "nft")
	defer kernel.SetNFTSockBuf(64 << 10)()
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	const n = 20000
	tk := model.NftTableKey{Family: "inet", Name: "big"}
	ranges := &model.NftSet{Name: "ranges", Type: model.NftIPv6, Interval: true, Elems: Elems6(n + 1)}
	var hosts []model.NftElem
	for i := range n + 1 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		hosts = append(hosts, elemOf(t, model.NftIPv4, false, a.String()))
	}
	model.SortNftElems(hosts)
	addrs := &model.NftSet{Name: "hosts", Type: model.NftIPv4, Elems: hosts}
	if err := k.NFTApply([]model.NftOp{
		{Op: model.NftAddTable, Table: tk},
		{Op: model.NftAddSet, Table: tk, Set: ranges},
		{Op: model.NftAddElems, Table: tk, Set: ranges, Elems: ranges.Elems[:n]},
		{Op: model.NftAddSet, Table: tk, Set: addrs},
		{Op: model.NftAddElems, Table: tk, Set: addrs, Elems: hosts[:n]},
	}); err != nil {
		t.Fatalf("load two sets of %d elements through a 64 KiB socket: %v", n, err)
	}
	count := func(want int) {
		t.Helper()
		for _, set := range []string{"ranges", "hosts"} {
			if got := nftCount(t, ns, "inet", "big", set); got != want {
				t.Errorf("nft -j: set %s holds %d elements, want %d", set, got, want)
			}
		}
	}
	count(n)
	// One element more and one less, in one batch per set.
	if err := k.NFTApply([]model.NftOp{
		{Op: model.NftAddElems, Table: tk, Set: ranges, Elems: ranges.Elems[n:]},
		{Op: model.NftDelElems, Table: tk, Set: ranges, Elems: ranges.Elems[:1]},
		{Op: model.NftAddElems, Table: tk, Set: addrs, Elems: hosts[n:]},
		{Op: model.NftDelElems, Table: tk, Set: addrs, Elems: hosts[:1]},
	}); err != nil {
		t.Fatal(err)
	}
	count(n)
	got, err := k.NFTTable(tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got.Sets {
		want := map[string][]model.NftElem{"ranges": ranges.Elems[1:], "hosts": hosts[1:]}[s.Name]
		if len(s.Elems) != len(want) || s.Elems[0] != want[0] || s.Elems[len(s.Elems)-1] != want[len(want)-1] {
			t.Errorf("set %s read back with %d elements, want %d, first and last as written", s.Name, len(s.Elems), len(want))
		}
	}
}

func elemOf(t *testing.T, typ string, interval bool, s string) model.NftElem {
	t.Helper()
	e, err := model.ParseNftElem(typ, interval, s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// nftCount is how many elements nft -j lists in a set.
func nftCount(t *testing.T, ns, family, table, set string) int {
	t.Helper()
	var out struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(nettest.InNS(t, ns, "nft", "-j", "list", "set", family, table, set)), &out); err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Nftables {
		if raw, ok := o["set"]; ok {
			var s struct {
				Elem []json.RawMessage `json:"elem"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			return len(s.Elem)
		}
	}
	return -1
}
