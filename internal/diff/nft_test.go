package diff_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

const nftBase = `version: 1
nftables:
  inet t:
    sets:
      s4: {type: ipv4_addr, flags: [interval], elements: [10.0.0.0/8, 192.168.1.1]}
    chains:
      pre:
        type: filter
        hook: prerouting
        priority: filter
        rules:
          - meta mark & 0x60 == 0x20 accept
          - ip daddr @s4 meta mark set meta mark & 0xffffffdf | 0x40 accept
          - counter
`

func parseFull(t *testing.T, y string) *model.State {
	t.Helper()
	cfg, err := desired.Parse([]desired.Source{{Name: "f.yaml", Data: []byte(y)}})
	if err != nil {
		t.Fatal(err)
	}
	compiled(cfg.State)
	return cfg.State
}

// compiled gives each rule the fingerprint the engine would before the
// diff: here its text with runs of spaces made one (as the fake compiler
// of kerneltest does), so that a rule reworded by spacing is the same.
func compiled(st *model.State) {
	for i := range st.NFTables {
		for j := range st.NFTables[i].Chains {
			c := &st.NFTables[i].Chains[j]
			for k := range c.Rules {
				c.Rules[k].Fingerprint = "fp " + strings.Join(strings.Fields(c.Rules[k].Text), " ")
			}
		}
	}
}

// kernelOf turns a desired state into what the kernel would report after
// applying it: rule handles numbered from 10, tables owned.
func kernelOf(st *model.State) *model.State {
	out := model.NewState()
	h := uint64(10)
	for _, t := range st.NFTables {
		t.Owned = true
		var chains []model.NftChain
		for _, c := range t.Chains {
			var rules []model.NftRule
			for _, r := range c.Rules {
				rules = append(rules, model.NftRule{Text: r.Text, Key: r.Key, Fingerprint: r.Fingerprint, Marked: r.Fingerprint, Handle: h})
				h++
			}
			c.Rules = rules
			chains = append(chains, c)
		}
		t.Chains = chains
		out.NFTables = append(out.NFTables, t)
	}
	return out
}

func plan(t *testing.T, d, a *model.State) string {
	t.Helper()
	p, err := diff.Compute(d, a)
	if err != nil {
		t.Fatal(err)
	}
	return p.String()
}

func TestNftPlans(t *testing.T) {
	base := parseFull(t, nftBase)
	for _, tc := range []struct {
		name string
		edit func(string) string   // of the file
		kern func(st *model.State) // of the kernel's state
		want string
	}{
		{name: "unchanged", want: ""},
		{name: "one element more",
			edit: func(s string) string { return strings.Replace(s, "192.168.1.1]", "192.168.1.1, 172.16.0.0/12]", 1) },
			want: "+ nft element inet t set s4 element 172.16.0.0/12\n"},
		{name: "one element less",
			edit: func(s string) string { return strings.Replace(s, "10.0.0.0/8, ", "", 1) },
			want: "- nft element inet t set s4 element 10.0.0.0/8\n"},
		{name: "prefix widened: delete then add",
			edit: func(s string) string { return strings.Replace(s, "10.0.0.0/8", "10.0.0.0/7", 1) },
			want: "- nft element inet t set s4 element 10.0.0.0/8\n+ nft element inet t set s4 element 10.0.0.0/7\n"},
		{name: "rule changed in the middle: replaced in place",
			edit: func(s string) string { return strings.Replace(s, "| 0x40 accept", "| 0x40 counter accept", 1) },
			want: "~ nft rule inet t chain pre rule 2\n    handle 11: ip daddr @s4 meta mark set meta mark & 0xffffffdf | 0x40 accept -> ip daddr @s4 meta mark set meta mark & 0xffffffdf | 0x40 counter accept\n"},
		{name: "rule reworded to the same bytecode: kept",
			edit: func(s string) string { return strings.Replace(s, "- counter", "-   counter ", 1) },
			want: ""},
		{name: "rule inserted first: before the first kept rule",
			edit: func(s string) string {
				return strings.Replace(s, "        rules:\n", "        rules:\n          - iifname \"lo\" accept\n", 1)
			},
			want: "+ nft rule inet t chain pre rule 1 (iifname \"lo\" accept)\n"},
		{name: "rule removed",
			edit: func(s string) string { return strings.Replace(s, "          - counter\n", "", 1) },
			want: "- nft rule inet t chain pre rule handle 12 (counter)\n"},
		{name: "rule edited behind our back",
			kern: func(st *model.State) { st.NFTables[0].Chains[0].Rules[0] = model.NftRule{Handle: 10} },
			want: "~ nft rule inet t chain pre rule 1\n    handle 10: handle 10 (not written by netreconcile) -> meta mark & 0x60 == 0x20 accept\n"},
		{name: "policy changed in place",
			edit: func(s string) string {
				return strings.Replace(s, "priority: filter\n", "priority: filter\n        policy: drop\n", 1)
			},
			want: "~ nft chain inet t chain pre\n    policy: accept -> drop\n"},
		{name: "hook changed: table rebuilt in one batch",
			edit: func(s string) string { return strings.Replace(s, "hook: prerouting", "hook: input", 1) },
			want: "± nft table inet t: chain pre changes from \"type filter hook prerouting priority 0\" to \"type filter hook input priority 0\" [table replaced]\n"},
		{name: "foreign table of the same name, adopt: true: adopted",
			edit: func(s string) string { return strings.Replace(s, "  inet t:\n", "  inet t:\n    adopt: true\n", 1) },
			kern: func(st *model.State) { st.NFTables[0].Owned = false },
			want: "~ nft table inet t: declared in the file: owned whole from now on\n    owner: none -> netreconcile\n"},
		{name: "table left the file: deleted",
			edit: func(s string) string { return "version: 1\n" },
			want: "- nft table inet t\n"},
		{name: "foreign table left alone",
			edit: func(s string) string { return "version: 1\n" },
			kern: func(st *model.State) { st.NFTables[0].Owned = false },
			want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			if tc.edit != nil {
				d = parseFull(t, tc.edit(nftBase))
			}
			a := kernelOf(base)
			if tc.kern != nil {
				tc.kern(a)
			}
			got := plan(t, d, a)
			if tc.name == "hook changed: table rebuilt in one batch" {
				// the rebuild lists every object after the table line
				got = strings.SplitAfterN(got, "\n", 2)[0]
			}
			if got != tc.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// A foreign table with a declared name and family is a conflict without
// adopt: its sets, chains and rules are not the file's to delete.
func TestNftForeignTableConflict(t *testing.T) {
	d := parseFull(t, strings.Replace(nftBase, "- counter", "- counter\n          - accept", 1))
	a := kernelOf(parseFull(t, nftBase))
	a.NFTables[0].Owned = false
	p, err := diff.Compute(d, a)
	if err == nil || !strings.Contains(err.Error(), "nftables table inet t exists and netreconcile did not create it") {
		t.Errorf("err = %v, want the conflict", err)
	}
	if got := p.String(); got != "" {
		t.Errorf("plan touches the foreign table:\n%s", got)
	}
}

// A foreign table of a declared name is a conflict even while the file's
// rules of it wait for a link (Inputs.Waiting): not a pending table, which
// the apply that makes the link would leave as it is without a word.
func TestWalkFinding195WaitingTableOfSomeoneElseIsAConflict(t *testing.T) {
	d := parseFull(t, strings.Replace(nftBase, "- counter", "- counter\n          - accept", 1))
	a := kernelOf(parseFull(t, nftBase))
	a.NFTables[0].Owned = false
	k := a.NFTables[0].Key()
	p, err := diff.ComputeWith(d, a, diff.Inputs{Waiting: map[model.NftTableKey]string{k: "waits for link p9a"}})
	if err == nil || !strings.Contains(err.Error(), "nftables table inet t exists and netreconcile did not create it") {
		t.Errorf("err = %v, want the conflict", err)
	}
	if p == nil || len(p.Pending) > 0 || len(p.Waiting) > 0 || p.String() != "" {
		t.Errorf("plan waits for or touches the foreign table: %+v", p)
	}
}

// A cold start (routes and set elements the kernel holds none of) makes
// the plan's array once, at its size: a growing one holds the old array
// and the new at once, which the first converge of a big host peaked on
// (bench-memory, issue 16). The element ops, made straight into it, come
// right after their set's op: an op per element for a set of up to 1,024
// of them, an op per 1,024 for a larger one (its run's first and last
// element, and the count), which together hold every element once.
func TestColdPlanIsSizedOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("links:\n  br0: {kind: bridge}\nroutes:\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "  - {to: 10.%d.%d.0/24, dev: br0}\n", i/256, i%256)
	}
	b.WriteString("nftables:\n  inet t:\n    sets:\n")
	sizes := map[string]int{"a": 1024, "b": 2500}
	for _, set := range []string{"a", "b"} {
		fmt.Fprintf(&b, "      %s:\n        type: ipv4_addr\n        elements: [", set)
		for i := range sizes[set] {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "10.%d.%d.%d", map[string]int{"a": 1, "b": 2}[set], i/256, i%256)
		}
		b.WriteString("]\n")
	}
	b.WriteString("      e: {type: ipv4_addr}\n")
	d := parse(t, b.String())
	p, err := diff.Compute(d, model.NewState())
	if err != nil {
		t.Fatal(err)
	}
	if n, c := len(p.Ops), cap(p.Ops); n != 1+3000+1+3+1024+3 || c < n || c > n+128 {
		t.Errorf("cold plan: %d ops in an array of %d, want 4032 in one made for them", n, c)
	}
	// The sets' ops, each followed by its elements' ops; every element
	// once, in order.
	var got []string
	elems := map[string][]string{}
	for _, op := range p.Ops {
		switch op.Kind {
		case diff.KindNftSet:
			got = append(got, op.ID)
		case diff.KindNftElem:
			set := strings.Fields(op.ID)[3]
			if !strings.HasSuffix(got[len(got)-1], " set "+set) {
				t.Fatalf("element op %s after %s", op.ID, got[len(got)-1])
			}
			if len(op.NFT) != 1 {
				t.Fatalf("element op %s: %d messages", op.ID, len(op.NFT))
			}
			es := op.NFT[0].Elems
			first := model.FormatNftElem(model.NftIPv4, false, es[0])
			last := model.FormatNftElem(model.NftIPv4, false, es[len(es)-1])
			want := "inet t set " + set + " element " + first
			if set == "b" {
				want = fmt.Sprintf("inet t set b elements %s ... %s", first, last)
				if op.Summary != fmt.Sprintf("%d elements", len(es)) {
					t.Errorf("op %s: summary %q", op.ID, op.Summary)
				}
			}
			if op.ID != want || set == "a" && len(es) != 1 {
				t.Errorf("element op %q of %d elements, want %q", op.ID, len(es), want)
			}
			for _, e := range es {
				elems[set] = append(elems[set], model.FormatNftElem(model.NftIPv4, false, e))
			}
		}
	}
	if want := []string{"inet t set a", "inet t set b", "inet t set e"}; !slices.Equal(got, want) {
		t.Errorf("set ops: %v, want %v", got, want)
	}
	for set, n := range sizes {
		var want []string
		for _, e := range d.NFTables[0].Set(set).Elems {
			want = append(want, model.FormatNftElem(model.NftIPv4, false, e))
		}
		if len(want) != n || !slices.Equal(elems[set], want) {
			t.Errorf("set %s: the ops hold %d elements, want its %d in order", set, len(elems[set]), n)
		}
	}
}
