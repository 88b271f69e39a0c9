package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/test/bench/growth"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestBenchNft compares netreconcile with `nft -f` on interval and hash
// sets at several sizes (NETRECONCILE_BENCH_NFT_SIZES, default 10k, 100k,
// 1M; NETRECONCILE_BENCH_NFT_KINDS=interval or hash runs one kind): loading
// a set into an empty namespace, adding one element, and
// removing it, as the daemon does (one engine kept between passes) and as
// one command per change (the CLI). It runs only under `make bench-nft`
// (NETRECONCILE_BENCH=nft) and prints growth tables; it asserts
// correctness, never speed.
func TestBenchNft(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "nft" {
		t.Skip("benchmark: run with make bench-nft")
	}
	nettest.RequireTool(t, "nft")
	sizes := growth.Sizes("NETRECONCILE_BENCH_NFT_SIZES", 10000, 100000, 1000000)
	rounds := 3
	only := os.Getenv("NETRECONCILE_BENCH_NFT_KINDS")
	for _, interval := range []bool{true, false} {
		kind, short := "hash set of ipv4 addresses", "hash"
		if interval {
			kind, short = "interval set of ipv4 /30s", "interval"
		}
		if only != "" && only != short {
			continue
		}
		b := growth.Bench{Name: "nftables " + kind, Unit: "elements", Sizes: sizes,
			Detail: "load, one element added, that element removed; median of 3 for the daemon"}
		err := b.Run(os.Stdout, func(n int) ([]growth.Measure, error) {
			r := largeSet(t, n, interval, rounds)
			return []growth.Measure{
				{Name: "load: the daemon's pass (read, diff, write)", Ours: r.engLoad, Peer: "nft -f", Theirs: r.nftLoad,
					Note: fmt.Sprintf("parse %s", r.parse.Round(time.Millisecond))},
				{Name: "load: netreconcile apply (CLI)", Ours: r.cliLoad, Peer: "nft -f", Theirs: r.nftLoad},
				{Name: "add 1: the daemon's pass", Ours: r.engAdd, Peer: "nft -f", Theirs: r.nftAdd,
					Note: fmt.Sprintf("%d kernel messages", r.addWrites)},
				{Name: "add 1: netreconcile apply (CLI)", Ours: r.cliAdd, Peer: "nft -f", Theirs: r.nftAdd},
				{Name: "remove 1: the daemon's pass", Ours: r.engDel, Peer: "nft -f", Theirs: r.nftDel},
				{Name: "remove 1: netreconcile apply (CLI)", Ours: r.cliDel, Peer: "nft -f", Theirs: r.nftDel},
			}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLargeSetLoadsGrowsShrinks is the benchmark's short form: interval
// and hash sets of 30,000 elements (30 element messages in one batch) are
// loaded, take one more element and lose it, through the daemon's engine and through the CLI, and each
// namespace then lists what nft lists after the same changes. The full
// size (1M) runs in `make bench-nft`.
func TestLargeSetLoadsGrowsShrinks(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	for _, interval := range []bool{true, false} {
		largeSet(t, 30000, interval, 1)
	}
}

type largeSetTimes struct {
	parse, nftLoad, nftAdd, nftDel, engLoad, engAdd, engDel, cliLoad, cliAdd, cliDel time.Duration
	addWrites                                                                        uint64
}

// largeSet loads a set of n elements, adds one and removes it, with nft -f,
// with one engine kept between passes (rounds adds and removes, the median
// of each) and with the CLI, and checks that the three namespaces list the
// same set after each step.
func largeSet(t *testing.T, n int, interval bool, rounds int) largeSetTimes {
	t.Helper()
	var r largeSetTimes
	dir := t.TempDir()
	elems := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if interval {
			// Disjoint /30s from 10.0.0.0 (every 4th one), so no two merge.
			v := uint32(10)<<24 + uint32(i)*16
			elems = append(elems, fmt.Sprintf("%d.%d.%d.%d/30", v>>24, v>>16&0xff, v>>8&0xff, v&0xff))
		} else {
			v := uint32(10)<<24 + uint32(i)*3
			elems = append(elems, fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff))
		}
	}
	extra := "192.168.7.0/24"
	typ := "\t\ttype ipv4_addr\n\t\tflags interval\n"
	ytyp := "        type: ipv4_addr\n        flags: [interval]\n"
	if !interval {
		extra = "192.168.7.1"
		typ = "\t\ttype ipv4_addr\n"
		ytyp = "        type: ipv4_addr\n"
	}
	nftFile := "table ip bench {\n\tset s {\n" + typ + "\t\telements = { " + strings.Join(elems, ", ") + " }\n\t}\n}\n"
	yamlFile := func(es []string) string {
		return "version: 1\nnftables:\n  ip bench:\n    sets:\n      s:\n" + ytyp + "        elements: [" + strings.Join(es, ", ") + "]\n"
	}
	loadNft := nettest.WriteFile(t, dir, "load.nft", nftFile)
	addNft := nettest.WriteFile(t, dir, "add.nft", "add element ip bench s { "+extra+" }\n")
	delNft := nettest.WriteFile(t, dir, "del.nft", "delete element ip bench s { "+extra+" }\n")
	y1 := nettest.WriteFile(t, dir, "load.yaml", yamlFile(elems))
	y2 := nettest.WriteFile(t, dir, "add.yaml", yamlFile(append(elems[:len(elems):len(elems)], extra)))
	timeIt := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }

	// What nft lists, in each namespace, compared after each step.
	listing := func(ns string) string {
		return nettest.InNS(t, ns, "nft", "list", "set", "ip", "bench", "s")
	}
	same := func(step, nsN string, others ...string) {
		t.Helper()
		want := listing(nsN)
		if !strings.Contains(want, elems[n-1]) {
			t.Fatalf("%s: nft's set lacks its last element %s", step, elems[n-1])
		}
		for _, ns := range others {
			if got := listing(ns); got != want {
				t.Fatalf("%s (%d elements, interval %v): namespace %s lists %d bytes, nft's %d", step, n, interval, ns, len(got), len(want))
			}
		}
	}

	nsN, nsE, nsC := nettest.NewNetNS(t), nettest.NewNetNS(t), nettest.NewNetNS(t)
	r.nftLoad = timeIt(func() { nettest.InNS(t, nsN, "nft", "-f", loadNft) })

	parse := func(p string) *desired.Config {
		cfg, err := desired.Load(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	var c1, c2 *desired.Config
	r.parse = timeIt(func() { c1 = parse(y1) })
	c2 = parse(y2)
	k, err := kernel.Open("/run/netns/" + nsE)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, _ := ledger.OpenIn(nil, 0)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	pass := func(cfg *desired.Config, wantOps int) {
		t.Helper()
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		if wantOps >= 0 && len(plan.Ops) != wantOps {
			t.Fatalf("plan has %d ops, want %d", len(plan.Ops), wantOps)
		}
		if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
	}
	// The table, the set, and an op per 1,024 elements (diff.elemChunk).
	r.engLoad = timeIt(func() { pass(c1, 2+(n+1023)/1024) })
	state := filepath.Join(dir, "state")
	cli := func(p string) {
		t.Helper()
		if res := nettest.CLI(t, "apply", "-q", "-c", p, "--netns", nsC, "--state-dir", state); res.Code != 0 {
			t.Fatalf("apply: %s%s", res.Stdout, res.Stderr)
		}
	}
	r.cliLoad = timeIt(func() { cli(y1) })
	same("load", nsN, nsE, nsC)

	r.nftAdd = timeIt(func() { nettest.InNS(t, nsN, "nft", "-f", addNft) })
	var adds, dels []time.Duration
	for i := 0; i < rounds; i++ {
		w0 := k.Writes()
		adds = append(adds, timeIt(func() { pass(c2, 1) }))
		r.addWrites = k.Writes() - w0
		if i < rounds-1 {
			dels = append(dels, timeIt(func() { pass(c1, 1) }))
		}
	}
	r.cliAdd = timeIt(func() { cli(y2) })
	same("one element added", nsN, nsE, nsC)
	if !strings.Contains(listing(nsN), extra) {
		t.Fatalf("nft's set lacks the element added")
	}

	r.nftDel = timeIt(func() { nettest.InNS(t, nsN, "nft", "-f", delNft) })
	dels = append(dels, timeIt(func() { pass(c1, 1) }))
	r.cliDel = timeIt(func() { cli(y1) })
	same("that element removed", nsN, nsE, nsC)
	if strings.Contains(listing(nsN), extra) {
		t.Fatalf("nft's set still holds the element removed")
	}
	// A pass with nothing to change writes nothing.
	w0 := k.Writes()
	pass(c1, 0)
	if w := k.Writes() - w0; w != 0 {
		t.Errorf("a pass with nothing to change wrote %d messages", w)
	}
	r.engAdd, r.engDel = growth.Median(adds), growth.Median(dels)
	return r
}

// TestBenchNftRules changes one rule among 1,000 of a chain: netreconcile
// (engine pass, and the command) against nft -f of that one change (a
// replace of the rule by its handle), in one run. make bench-nft runs it
// after TestBenchNft; NETRECONCILE_BENCH_NFT_ROUNDS sets how many times each
// is timed (default 15), the tools taking turns.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("NETRECONCILE_BENCH_NFT_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 15
}

func TestBenchNftRules(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "nft" {
		t.Skip("benchmark: run with make bench-nft")
	}
	nettest.RequireTool(t, "nft")
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2fx", float64(a)/float64(b)) }
	median := func(ds []time.Duration) time.Duration {
		ds = append([]time.Duration(nil), ds...)
		slices.Sort(ds)
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
	// nft's change is timed here and again beside each command's (the
	// rule and back each time): a machine whose load moves during the run
	// moves both sides.
	// nft starts in the namespace itself, as the binary is given
	// --netns: ip netns exec would add a process and a mount namespace to
	// its time. Each side's CPU is the process's, user and system, its
	// children included (the binary's nft).
	var nftT, nftCPU []time.Duration
	nftRound := func() {
		var cmd *exec.Cmd
		nettest.Within(t, nsN, func() {
			cmd = exec.Command("nft", "-f", swap[0])
			nftT = append(nftT, timeIt(func() {
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("nft -f: %v\n%s", err, out)
				}
			}))
		})
		nftCPU = append(nftCPU, cpuOf(cmd))
		nettest.InNS(t, nsN, "nft", "-f", swap[1])
	}
	rounds := benchRounds()
	for i := 0; i < rounds; i++ {
		nftRound()
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
	for i := 0; i < rounds; i++ {
		engT = append(engT, timeIt(func() { pass(c1, 1) }))
		pass(c0, 1)
	}
	// A fresh engine and kernel connection each time, as one command is:
	// nothing in memory, the changed rule compiled by nft, the unchanged
	// ones known by their markers.
	for i := 0; i < rounds; i++ {
		engFirst = append(engFirst, timeIt(func() {
			fk, err := kernel.Open("/run/netns/" + nsE)
			if err != nil {
				t.Fatal(err)
			}
			defer fk.Close()
			fresh := &engine.Engine{Kernel: fk, Ledger: l}
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
	for i := 0; i < rounds; i++ {
		cliT = append(cliT, timeIt(func() { cli(y1) }))
		cli(y0)
		nftRound()
	}
	if got := nettest.InNS(t, nsC, "nft", "list", "chain", "inet", "rules", "in"); strings.Count(got, " accept") < n/2 {
		t.Fatalf("the command's table lacks rules:\n%s", got)
	}
	// The command as users run it: a process of its own each time (Go's
	// start, nft's version, the compile), when make bench-nft names the
	// binary it built.
	var binT, binCPU []time.Duration
	var nftBinT, nftBinCPU []time.Duration
	loadBefore := loadAverage()
	if bin := os.Getenv("NETRECONCILE_BENCH_BIN"); bin != "" {
		nsB := nettest.NewNetNS(t)
		stateB := filepath.Join(dir, "stateBin")
		run := func(p string) *exec.Cmd {
			cmd := exec.Command(bin, "apply", "-q", "-c", p, "--netns", nsB, "--state-dir", stateB)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s apply: %v\n%s", bin, err, out)
			}
			return cmd
		}
		run(y0)
		// nft's rounds beside the binary's only: the ratio of the two
		// is taken over the same stretch of the machine's load.
		nftT, nftCPU = nil, nil
		for i := 0; i < rounds; i++ {
			var cmd *exec.Cmd
			binT = append(binT, timeIt(func() { cmd = run(y1) }))
			binCPU = append(binCPU, cpuOf(cmd))
			run(y0)
			nftRound()
		}
		nftBinT, nftBinCPU = nftT, nftCPU
	}
	nftMed := median(nftT)
	fmt.Printf("\nnftables: one rule changed among %d of a chain (load average %s; %d rounds, medians)\n", n, loadBefore, rounds)
	fmt.Printf("  %-46s %12s %12s\n", "", "time", "vs nft -f")
	fmt.Printf("  %-46s %12s %12s\n", "nft -f: replace 1 rule by handle", nftMed.Round(time.Microsecond), "1.00x")
	fmt.Printf("  %-46s %12s\n", "engine pass: load 1,000 rules", engLoad.Round(time.Millisecond))
	fmt.Printf("  %-46s %12s %12s\n", "engine pass: change 1 rule, compiled before", median(engT).Round(time.Microsecond), ratio(median(engT), nftMed))
	fmt.Printf("  %-46s %12s %12s\n", "engine pass: change 1 rule, nft compiles it", median(engFirst).Round(time.Microsecond), ratio(median(engFirst), nftMed))
	fmt.Printf("  %-46s %12d\n", "  kernel messages written", oneWrites)
	fmt.Printf("  %-46s %12s %12s\n", "netreconcile apply (CLI): change 1 rule", median(cliT).Round(time.Millisecond), ratio(median(cliT), nftMed))
	if len(binT) > 0 {
		nw, nc := median(nftBinT), median(nftBinCPU)
		fmt.Printf("\n  the command as users run it, a process each time, beside nft -f (load average %s -> %s)\n", loadBefore, loadAverage())
		fmt.Printf("  %-46s %12s %12s %12s %12s\n", "", "wall", "vs nft -f", "CPU", "vs nft -f")
		fmt.Printf("  %-46s %12s %12s %12s %12s\n", "nft -f: replace 1 rule by handle", nw.Round(time.Microsecond), "1.00x", nc.Round(time.Microsecond), "1.00x")
		fmt.Printf("  %-46s %12s %12s %12s %12s\n", "netreconcile apply (the binary): change 1 rule", median(binT).Round(time.Microsecond), ratio(median(binT), nw),
			median(binCPU).Round(time.Microsecond), ratio(median(binCPU), nc))
	}
}

// cpuOf is the CPU time, user and system, a finished command and the
// children it waited for used.
func cpuOf(cmd *exec.Cmd) time.Duration {
	if cmd == nil || cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// loadAverage is /proc/loadavg's three averages.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
