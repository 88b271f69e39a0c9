package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// 1M): loading a set into an empty namespace, adding one element, and
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
	for _, interval := range []bool{true, false} {
		kind := "hash set of ipv4 addresses"
		if interval {
			kind = "interval set of ipv4 /30s"
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
