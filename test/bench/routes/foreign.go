package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/test/bench/growth"
)

// foreignTable is the table of its own the foreign routes share with none
// of ours.
const foreignTable = 300

// writeForeign writes an ip -batch of n routes of protocol bird, laid out
// as a full Internet table beside ours: five sixths IPv4, of which half in
// main, a quarter in the table of ours (table) and a quarter in a table of
// their own; one sixth IPv6 in main.
func writeForeign(path string, n int) {
	var b bytes.Buffer
	v6 := n / 6
	v4 := n - v6
	for i := 0; i < v4; i++ {
		t := "main"
		switch i % 4 {
		case 1:
			t = fmt.Sprint(table)
		case 3:
			t = fmt.Sprint(foreignTable)
		}
		// From 64.0.0.0 up, /24s: clear of the owned routes (from 1.0.0.0).
		v := uint32(64<<24) + uint32(i)<<8
		fmt.Fprintf(&b, "route add %s dev bench0 table %s proto bird\n",
			netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24), t)
	}
	for i := 0; i < v6; i++ {
		fmt.Fprintf(&b, "route add 2001:%x:%x::/48 dev bench0 proto bird\n", 0x1000+i>>16, i&0xffff)
	}
	check(os.WriteFile(path, b.Bytes(), 0o644))
}

// foreignGrowth measures what ours cost beside foreign routes: owned
// routes in a table of their own (table), and for each size a namespace
// with that many foreign routes (writeForeign) loaded by ip -batch after
// ours converged. Measured: the daemon's steady pass (one engine kept,
// its ledger's record of our tables made by its first pass) and a no-op
// CLI apply (its state directory's ledger holding the record), each
// against the same in a namespace without foreign routes, in the same
// run; and the first pass of a daemon with no record (a sweep of every
// table), once.
func foreignGrowth(bin, dir string, owned int, sizes []int, runs int) {
	yml := filepath.Join(dir, fmt.Sprintf("owned-%d.yaml", owned))
	writeYAML(yml, owned)
	cfg, err := desired.Load(yml, "")
	check(err)
	type result struct{ pass, passCPU, cli, cliCPU, sweepCPU time.Duration }
	measure := func(foreign int) result {
		ns, del := freshNS()
		defer del()
		state := filepath.Join(dir, fmt.Sprintf("state-foreign-%d", foreign))
		defer os.RemoveAll(state)
		runCPU(bin, "apply", "-q", "--netns", ns, "-c", yml, "--state-dir", state)
		if foreign > 0 {
			batch := filepath.Join(dir, "foreign.batch")
			writeForeign(batch, foreign)
			run("ip", "-n", ns, "-batch", batch)
		}
		k, err := kernel.Open("/run/netns/" + ns)
		check(err)
		defer k.Close()
		l, err := ledger.OpenIn(nil, 0)
		check(err)
		eng := &engine.Engine{Kernel: k, Ledger: l}
		var writes uint64
		pass := func() {
			before := k.Writes()
			plan, err := eng.Plan(cfg.State)
			check(err)
			res, err := eng.Apply(context.Background(), plan)
			check(err)
			check(res.Err())
			if len(plan.Ops) != 0 {
				check(fmt.Errorf("no-op pass beside %d foreign routes planned %d operations", foreign, len(plan.Ops)))
			}
			writes += k.Writes() - before
		}
		var r result
		r.sweepCPU = cpuTimed(pass) // no record yet: every table
		if cpuProfile != "" && foreign > 0 {
			f, err := os.Create(fmt.Sprintf("%s.foreign-%d", cpuProfile, foreign))
			check(err)
			check(pprof.StartCPUProfile(f))
			for i := 0; i < 10; i++ {
				pass()
			}
			pprof.StopCPUProfile()
			f.Close()
		}
		var ts, cs, cli, clic []time.Duration
		for i := 0; i < runs; i++ {
			var c time.Duration
			ts = append(ts, timed(func() { c = cpuTimed(pass) }))
			cs = append(cs, c)
			cli = append(cli, timed(func() { c = runCPU(bin, "apply", "-q", "--netns", ns, "-c", yml, "--state-dir", state) }))
			clic = append(clic, c)
		}
		if writes != 0 {
			check(fmt.Errorf("no-op passes beside %d foreign routes wrote %d messages", foreign, writes))
		}
		r.pass, r.passCPU, r.cli, r.cliCPU = median(ts), median(cs), median(cli), median(clic)
		return r
	}
	b := growth.Bench{Name: fmt.Sprintf("%d routes of ours beside foreign routes", owned), Unit: "foreign",
		Sizes: sizes, Detail: "the peer column is the same measure in a namespace without foreign routes, same run"}
	check(b.Run(os.Stdout, func(n int) ([]growth.Measure, error) {
		base, r := measure(0), measure(n)
		return []growth.Measure{
			{Name: "the daemon's steady pass (wall)", Ours: r.pass, Peer: "no foreign", Theirs: base.pass},
			{Name: "the daemon's steady pass (CPU)", Ours: r.passCPU, Peer: "no foreign", Theirs: base.passCPU},
			{Name: "no-op netreconcile apply (CLI, wall)", Ours: r.cli, Peer: "no foreign", Theirs: base.cli},
			{Name: "no-op netreconcile apply (CLI, CPU)", Ours: r.cliCPU, Peer: "no foreign", Theirs: base.cliCPU},
			{Name: "first pass without the record: every table (CPU)", Ours: r.sweepCPU, Peer: "no foreign", Theirs: base.sweepCPU},
		}, nil
	}))
}
