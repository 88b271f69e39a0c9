package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestBenchNft compares netreconcile with `nft -f` on a 100k-element
// interval set: loading it into an empty namespace, then adding one element.
// It runs only under `make bench-nft` (NETRECONCILE_BENCH=nft) and prints
// figures and ratios; it asserts correctness, never speed.
var benchRounds = 5

func TestBenchNft(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "nft" {
		t.Skip("benchmark: run with make bench-nft")
	}
	nettest.RequireTool(t, "nft")
	const n = 100000
	dir := t.TempDir()
	var elems []string
	for i := 0; i < n; i++ {
		// Disjoint /30s across 10.0.0.0/8 (every 4th one), so no two merge.
		v := uint32(10)<<24 | uint32(i)*16
		elems = append(elems, fmt.Sprintf("%d.%d.%d.%d/30", v>>24, v>>16&0xff, v>>8&0xff, v&0xff))
	}
	extra := "192.168.7.0/24"
	nftFile := func(es []string) string {
		return "table ip bench {\n\tset s {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { " + strings.Join(es, ", ") + " }\n\t}\n}\n"
	}
	yamlFile := func(es []string) string {
		return "version: 1\nnftables:\n  ip bench:\n    sets:\n      s:\n        type: ipv4_addr\n        flags: [interval]\n        elements: [" + strings.Join(es, ", ") + "]\n"
	}
	nettest.WriteFile(t, dir, "load.nft", nftFile(elems))
	nettest.WriteFile(t, dir, "add.nft", "add element ip bench s { "+extra+" }\n")
	y1 := nettest.WriteFile(t, dir, "load.yaml", yamlFile(elems))
	y2 := nettest.WriteFile(t, dir, "add.yaml", yamlFile(append(append([]string(nil), elems...), extra)))

	timeIt := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }

	// nft -f
	nsN := nettest.NewNetNS(t)
	nftLoad := timeIt(func() { nettest.InNS(t, nsN, "nft", "-f", filepath.Join(dir, "load.nft")) })
	nftAdd := timeIt(func() { nettest.InNS(t, nsN, "nft", "-f", filepath.Join(dir, "add.nft")) })

	// netreconcile as the daemon runs it: files parsed, one engine kept
	// between passes.
	parse := func(p string) *desired.Config {
		cfg, err := desired.Load(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	var c1, c2 *desired.Config
	parseTime := timeIt(func() { c1 = parse(y1) })
	c2 = parse(y2)
	nsE := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + nsE)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, _ := ledger.OpenIn(nil, 0)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	pass := func(cfg *desired.Config, wantOps int) {
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Ops) != wantOps {
			t.Fatalf("plan has %d ops, want %d", len(plan.Ops), wantOps)
		}
		res, err := eng.Apply(context.Background(), plan)
		if err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
	}
	var loadPlan time.Duration
	engLoad := timeIt(func() {
		t0 := time.Now()
		plan, err := eng.Plan(c1.State)
		loadPlan = time.Since(t0)
		// The table, the set, and an op per 1,024 elements (diff.elemChunk).
		if err != nil || len(plan.Ops) != 2+(n+1023)/1024 {
			t.Fatalf("plan: %v, %d ops", err, len(plan.Ops))
		}
		if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
	})
	w0 := k.Writes()
	// Add the element, remove it, add it again...: the median of 5 adds.
	var adds, plans []time.Duration
	for i := 0; i < benchRounds; i++ {
		if i > 0 {
			pass(c1, 1)
		}
		w0 = k.Writes()
		var planT time.Duration
		adds = append(adds, timeIt(func() {
			t0 := time.Now()
			plan, err := eng.Plan(c2.State)
			planT = time.Since(t0)
			if err != nil || len(plan.Ops) != 1 {
				t.Fatalf("plan: %v, %d ops", err, len(plan.Ops))
			}
			if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
				t.Fatal(err, res.Err())
			}
		}))
		plans = append(plans, planT)
	}
	median := func(ds []time.Duration) time.Duration {
		ds = append([]time.Duration(nil), ds...)
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	engAdd, planT := median(adds), median(plans)
	addWrites := k.Writes() - w0

	// netreconcile as one command per change (no state kept between runs:
	// the second run reads the whole set back from the kernel).
	nsC := nettest.NewNetNS(t)
	state := filepath.Join(dir, "state")
	cli := func(p string) {
		if r := nettest.CLI(t, "apply", "-q", "-c", p, "--netns", nsC, "--state-dir", state); r.Code != 0 {
			t.Fatalf("apply: %s%s", r.Stdout, r.Stderr)
		}
	}
	cliLoad := timeIt(func() { cli(y1) })
	cliAdd := timeIt(func() { cli(y2) })

	for _, ns := range []string{nsN, nsE, nsC} {
		if got := nettest.InNS(t, ns, "nft", "list", "set", "ip", "bench", "s"); !strings.Contains(got, extra) || !strings.Contains(got, elems[n-1]) {
			t.Fatalf("namespace %s lacks elements", ns)
		}
	}
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2fx", float64(a)/float64(b)) }
	fmt.Printf("\nnftables: %d-element interval set (ipv4 /30s)\n", n)
	fmt.Printf("  %-44s %12s %12s\n", "", "time", "vs nft -f")
	fmt.Printf("  %-44s %12s %12s\n", "nft -f: load", nftLoad.Round(time.Millisecond), "1.00x")
	fmt.Printf("  %-44s %12s %12s\n", "engine pass: load (read, diff, one batch)", engLoad.Round(time.Millisecond), ratio(engLoad, nftLoad))
	fmt.Printf("  %-44s %12s\n", "  of which read and diff", loadPlan.Round(time.Millisecond))
	fmt.Printf("  %-44s %12s %12s\n", "  + parsing the YAML file", parseTime.Round(time.Millisecond), "")
	fmt.Printf("  %-44s %12s %12s\n", "netreconcile apply (CLI): load", cliLoad.Round(time.Millisecond), ratio(cliLoad, nftLoad))
	fmt.Printf("  %-44s %12s %12s\n", "nft -f: add 1 element", nftAdd.Round(time.Millisecond), "1.00x")
	fmt.Printf("  %-44s %12s %12s\n", "engine pass: add 1 element (median of 5)", engAdd.Round(time.Microsecond), ratio(engAdd, nftAdd))
	fmt.Printf("  %-44s %12s\n", "  of which read and diff", planT.Round(time.Microsecond))
	fmt.Printf("  %-44s %12d\n", "  kernel messages written", addWrites)
	fmt.Printf("  %-44s %12s %12s\n", "netreconcile apply (CLI): add 1 element", cliAdd.Round(time.Millisecond), ratio(cliAdd, nftAdd))
}

// TestBenchNftRules changes one rule among 1,000 of a chain: netreconcile
// (engine pass, and the command) against nft -f of that one change (a
// replace of the rule by its handle), in one run. make bench-nft runs it
// after TestBenchNft.
func TestBenchNftRules(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "nft" {
		t.Skip("benchmark: run with make bench-nft")
	}
	nettest.RequireTool(t, "nft")
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2fx", float64(a)/float64(b)) }
	median := func(ds []time.Duration) time.Duration {
		ds = append([]time.Duration(nil), ds...)
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	benchOneRuleOf1000(t, t.TempDir(), ratio, median)
}

// benchRuleText is the i-th rule of the 1,000-rule table: the classes of a
// real firewall, anonymous sets and verdict maps included.
func benchRuleText(i int) string {
	switch i % 5 {
	case 0:
		return fmt.Sprintf("tcp dport %d accept", 1000+i)
	case 1:
		return fmt.Sprintf("ip saddr 10.%d.%d.0/24 tcp dport { 22, 80, 443 } counter accept", i/256, i%256)
	case 2:
		return fmt.Sprintf("iifname \"veth%d\" ct state { established, related } accept", i)
	case 3:
		return fmt.Sprintf("meta mark & 0xff == %d udp dport vmap { 53 : accept, 123 : drop }", i%256)
	}
	return fmt.Sprintf("ip daddr 192.168.%d.%d limit rate %d/second drop", i/256, i%256, 1+i%100)
}

// benchOneRuleOf1000 changes one rule among 1,000 of a chain: netreconcile
// (engine pass, and the command) against nft -f of that one change (a
// replace of the rule by its handle), in one run.
func benchOneRuleOf1000(t *testing.T, dir string, ratio func(a, b time.Duration) string, median func([]time.Duration) time.Duration) {
	const n, changed = 1000, 500
	rules := func(alt bool) []string {
		var out []string
		for i := 0; i < n; i++ {
			r := benchRuleText(i)
			if alt && i == changed {
				r = "tcp dport 61000 accept"
			}
			out = append(out, r)
		}
		return out
	}
	yamlOf := func(rs []string) string {
		var b strings.Builder
		b.WriteString("version: 1\nnftables:\n  inet rules:\n    chains:\n      in:\n        type: filter\n        hook: input\n        priority: filter\n        rules:\n")
		for _, r := range rs {
			fmt.Fprintf(&b, "          - %q\n", r)
		}
		return b.String()
	}
	var nftLoad strings.Builder
	nftLoad.WriteString("table inet rules {\n\tchain in { type filter hook input priority filter; }\n}\n")
	for _, r := range rules(false) {
		nftLoad.WriteString("add rule inet rules in " + r + "\n")
	}
	timeIt := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }

	// nft -f: the table, then one replace by handle, five times (the
	// rule and back).
	nsN := nettest.NewNetNS(t)
	nettest.InNS(t, nsN, "nft", "-f", nettest.WriteFile(t, dir, "rules.nft", nftLoad.String()))
	handle := ""
	for _, l := range strings.Split(nettest.InNS(t, nsN, "nft", "-a", "list", "chain", "inet", "rules", "in"), "\n") {
		if strings.Contains(l, benchRuleText(changed)+" # handle ") {
			handle = l[strings.LastIndex(l, " ")+1:]
		}
	}
	if handle == "" {
		t.Fatal("rule 500 not listed")
	}
	swap := []string{nettest.WriteFile(t, dir, "swap1.nft", "replace rule inet rules in handle "+handle+" tcp dport 61000 accept\n"),
		nettest.WriteFile(t, dir, "swap0.nft", "replace rule inet rules in handle "+handle+" "+benchRuleText(changed)+"\n")}
	var nftT []time.Duration
	for i := 0; i < 2*benchRounds; i++ {
		d := timeIt(func() { nettest.InNS(t, nsN, "nft", "-f", swap[i%2]) })
		if i%2 == 0 {
			nftT = append(nftT, d)
		}
	}

	// netreconcile as the daemon runs it: one engine kept between passes.
	load := func(s string) *desired.Config {
		cfg, err := desired.Load(nettest.WriteFile(t, dir, fmt.Sprintf("r%d.yaml", len(s)), s), "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	c0, c1 := load(yamlOf(rules(false))), load(yamlOf(rules(true)))
	nsE := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + nsE)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, _ := ledger.OpenIn(nil, 0)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	pass := func(cfg *desired.Config, wantOps int) {
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Ops) != wantOps {
			t.Fatalf("plan has %d ops, want %d:\n%s", len(plan.Ops), wantOps, plan)
		}
		if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
	}
	engLoad := timeIt(func() { pass(c0, 2+n) })
	var engT, engFirst []time.Duration
	for i := 0; i < benchRounds; i++ {
		engT = append(engT, timeIt(func() { pass(c1, 1) }))
		pass(c0, 1)
	}
	// A fresh engine each time, as one command is: nothing in memory, the
	// changed rule compiled by nft, the unchanged ones known by their
	// markers.
	for i := 0; i < benchRounds; i++ {
		engFirst = append(engFirst, timeIt(func() {
			fresh := &engine.Engine{Kernel: k, Ledger: l}
			plan, err := fresh.Plan(c1.State)
			if err != nil || len(plan.Ops) != 1 {
				t.Fatalf("plan: %v, %v", err, plan)
			}
			if res, err := fresh.Apply(context.Background(), plan); err != nil || res.Err() != nil {
				t.Fatal(err, res.Err())
			}
		}))
		pass(c0, 1)
	}
	w0 := k.Writes()
	pass(c1, 1)
	oneWrites := k.Writes() - w0
	pass(c0, 1)

	// The command: one apply per change, nothing kept between runs.
	nsC := nettest.NewNetNS(t)
	state := filepath.Join(dir, "state1000")
	y0, y1 := nettest.WriteFile(t, dir, "rules0.yaml", yamlOf(rules(false))), nettest.WriteFile(t, dir, "rules1.yaml", yamlOf(rules(true)))
	cli := func(p string) {
		if r := nettest.CLI(t, "apply", "-q", "-c", p, "--netns", nsC, "--state-dir", state); r.Code != 0 {
			t.Fatalf("apply: %s%s", r.Stdout, r.Stderr)
		}
	}
	cli(y0)
	var cliT []time.Duration
	for i := 0; i < benchRounds; i++ {
		cliT = append(cliT, timeIt(func() { cli(y1) }))
		cli(y0)
	}
	if got := nettest.InNS(t, nsC, "nft", "list", "chain", "inet", "rules", "in"); strings.Count(got, " accept") < n/2 {
		t.Fatalf("the command's table lacks rules:\n%s", got)
	}
	nftMed := median(nftT)
	fmt.Printf("\nnftables: one rule changed among %d of a chain\n", n)
	fmt.Printf("  %-44s %12s %12s\n", "", "time", "vs nft -f")
	fmt.Printf("  %-44s %12s %12s\n", "nft -f: replace 1 rule by handle (median)", nftMed.Round(time.Microsecond), "1.00x")
	fmt.Printf("  %-44s %12s\n", "engine pass: load 1,000 rules", engLoad.Round(time.Millisecond))
	fmt.Printf("  %-44s %12s %12s\n", "engine pass: change 1 rule, compiled before", median(engT).Round(time.Microsecond), ratio(median(engT), nftMed))
	fmt.Printf("  %-44s %12s %12s\n", "engine pass: change 1 rule, nft compiles it", median(engFirst).Round(time.Microsecond), ratio(median(engFirst), nftMed))
	fmt.Printf("  %-44s %12d\n", "  kernel messages written", oneWrites)
	fmt.Printf("  %-44s %12s %12s\n", "netreconcile apply (CLI): change 1 rule", median(cliT).Round(time.Millisecond), ratio(median(cliT), nftMed))
}
