// Command routes measures route reconciliation against the kernel, in fresh
// network namespaces (make bench-core, as root):
//
//   - cold converge: `netreconcile apply` of N routes against `ip -batch` of
//     the same routes, for N = 10k and 100k;
//   - no-op reconcile: one pass (read, diff, apply) over 100k owned routes
//     among 100k foreign ones, with the desired state already loaded, as the
//     daemon holds it; it must make no kernel write;
//   - route writer: the kernel seam's batch writer (kernel.WriteRoutes)
//     against vishvananda/netlink's RouteReplace in a loop and `ip -batch`,
//     N route replaces each, in the same run: the measured reason the
//     writer is netreconcile's own (docs/design.md).
//
// Results are ratios to ip and per-route times; nothing is asserted on time.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/bench/growth"
)

var cpuProfile string

// table holds the benchmark's routes; foreign routes go in the same table.
const table = 100

// otherTable is a table the benchmark leaves empty.
const otherTable = 101

func main() {
	bin := flag.String("bin", "bin/netreconcile", "netreconcile binary")
	runs := flag.Int("runs", 3, "runs per measurement (the median is reported)")
	sizes := flag.String("sizes", "10000,100000", "cold converge sizes")
	noop := flag.Int("noop", 100000, "owned (and foreign) routes of the no-op reconcile")
	writers := flag.String("writer", "10000,100000", "route writer sizes")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the no-op reconciles to this file")
	flag.StringVar(&nsPrefix, "ns-prefix", "nr-bench", "prefix of the namespaces made")
	owned := flag.Int("owned", 10000, "routes of ours beside the foreign ones (-foreign)")
	foreign := flag.String("foreign", "12k,120k,1200k", "foreign route counts (a full Internet table: 1200k); empty: none")
	only := flag.String("only", "", "run only this part: cold, noop, writer, foreign or full")
	full := flag.String("full", "1200k", "foreign routes of the full-table measure (pass, apply, RSS, churn, repair); empty: none")
	flag.StringVar(&daemonLogLevel, "daemon-log-level", daemonLogLevel, "--log-level of the daemons run (-full; debug: where each pass's time went, on standard error)")
	trials := flag.Int("trials", 60, "repairs timed without foreign routes (-full; with them: as many as the churn lasts)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench-core needs root (fresh network namespaces)")
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "nr-bench-")
	check(err)
	defer os.RemoveAll(dir)
	part := func(name string) bool { return *only == "" || *only == name }
	for _, s := range strings.Split(*sizes, ",") {
		if s == "" || !part("cold") {
			continue
		}
		var n int
		_, err := fmt.Sscan(s, &n)
		check(err)
		cold(*bin, dir, n, *runs)
	}
	if part("noop") {
		noopReconcile(*bin, dir, *noop, *runs)
	}
	for _, s := range strings.Split(*writers, ",") {
		if s == "" || !part("writer") {
			continue
		}
		var n int
		_, err := fmt.Sscan(s, &n)
		check(err)
		writer(dir, n, *runs)
	}
	if *foreign != "" && part("foreign") {
		ns, err := growth.ParseSizes(*foreign)
		check(err)
		foreignGrowth(*bin, dir, *owned, ns, *runs)
	}
	if *full != "" && part("full") {
		ns, err := growth.ParseSizes(*full)
		check(err)
		for _, n := range ns {
			fullTable(*bin, dir, *owned, n, *runs, *trials)
		}
	}
}

// prefix returns the i-th /24 of the benchmark, from 1.0.0.0 up; base shifts
// the range so that owned and foreign routes do not collide.
func prefix(base, i int) netip.Prefix {
	v := uint32(base+i) << 8
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24)
}

func writeYAML(path string, n int) {
	var b bytes.Buffer
	b.WriteString("version: 1\nlinks:\n  bench0: {kind: device}\nroutes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {to: %s, dev: bench0, table: %d}\n", prefix(1<<16, i), table)
	}
	check(os.WriteFile(path, b.Bytes(), 0o644))
}

func writeBatch(path string, base, n int, proto string) {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "route add %s dev bench0 table %d proto %s\n", prefix(base, i), table, proto)
	}
	check(os.WriteFile(path, b.Bytes(), 0o644))
}

var (
	nsSeq    int
	nsPrefix string
)

// freshNS makes a namespace with the link bench0 (a bridge, up) the routes use.
func freshNS() (string, func()) {
	nsSeq++
	ns := fmt.Sprintf("%s-%d-%d", nsPrefix, os.Getpid(), nsSeq)
	run("ip", "netns", "add", ns)
	run("ip", "-n", ns, "link", "add", "bench0", "type", "bridge")
	run("ip", "-n", ns, "link", "set", "bench0", "up")
	return ns, func() { run("ip", "netns", "del", ns) }
}

func timed(f func()) time.Duration {
	t := time.Now()
	f()
	return time.Since(t)
}

// cpuTimed runs f and returns the CPU time (user and system) this process
// spent meanwhile: the kernel's work on a netlink request or dump is done
// in the calling thread, so it counts too. On a shared machine it varies
// far less than the wall clock.
func cpuTimed(f func()) time.Duration {
	before := selfCPU()
	f()
	return selfCPU() - before
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return rusageCPU(&ru)
}

func rusageCPU(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runCPU runs a command and returns the CPU time it spent.
func runCPU(prog string, args ...string) time.Duration {
	cmd := exec.Command(prog, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
		os.Exit(1)
	}
	return rusageCPU(cmd.ProcessState.SysUsage().(*syscall.Rusage))
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func countRoutes(ns string) int {
	out := output("ip", "-n", ns, "route", "show", "table", fmt.Sprint(table))
	return strings.Count(out, "\n")
}

func cold(bin, dir string, n, runs int) {
	yml := filepath.Join(dir, fmt.Sprintf("cold-%d.yaml", n))
	batch := filepath.Join(dir, fmt.Sprintf("cold-%d.batch", n))
	writeYAML(yml, n)
	// The same routes as the file: same prefixes, device, table and protocol.
	writeBatch(batch, 1<<16, n, "245")
	var ipT, nrT, ipC, nrC []time.Duration
	for r := 0; r < runs; r++ {
		w, c := ipBatch(batch, n)
		ipT, ipC = append(ipT, w), append(ipC, c)
		ns, del := freshNS()
		state := filepath.Join(dir, "state")
		nrT = append(nrT, timed(func() { c = runCPU(bin, "apply", "-q", "--netns", ns, "-c", yml, "--state-dir", state) }))
		nrC = append(nrC, c)
		mustCount(ns, n)
		del()
	}
	ip, nr := median(ipT), median(nrT)
	fmt.Printf("cold converge %6d routes: ip -batch %8.1f ms (%5.2f us/route)  netreconcile apply %8.1f ms (%5.2f us/route)  ratio %.2fx\n",
		n, ms(ip), us(ip, n), ms(nr), us(nr, n), float64(nr)/float64(ip))
	ipc, nrc := median(ipC), median(nrC)
	fmt.Printf("cold converge %6d routes, CPU:  ip -batch %8.1f ms  netreconcile apply %8.1f ms  ratio %.2fx\n",
		n, ms(ipc), ms(nrc), float64(nrc)/float64(ipc))
}

func noopReconcile(bin, dir string, n, runs int) {
	yml := filepath.Join(dir, fmt.Sprintf("noop-%d.yaml", n))
	writeYAML(yml, n)
	foreign := filepath.Join(dir, fmt.Sprintf("foreign-%d.batch", n))
	writeBatch(foreign, 1<<18, n, "static")
	var cfg *desired.Config
	var parse, parseCPU []time.Duration
	for r := 0; r < runs; r++ {
		var c time.Duration
		parse = append(parse, timed(func() {
			c = cpuTimed(func() {
				var err error
				cfg, err = desired.Load(yml, "")
				check(err)
			})
		}))
		parseCPU = append(parseCPU, c)
	}
	ns, del := freshNS()
	defer del()
	k, err := kernel.Open("/run/netns/" + ns)
	check(err)
	defer k.Close()
	l, err := ledger.OpenIn(nil, 0)
	check(err)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	converge := func() {
		plan, err := eng.Plan(cfg.State)
		check(err)
		res, err := eng.Apply(context.Background(), plan)
		check(err)
		check(res.Err())
	}
	converge()
	run("ip", "-n", ns, "-batch", foreign)
	mustCount(ns, 2*n)
	var ts []time.Duration
	var writes uint64
	var ops int
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	// pass is one reconcile pass: a plan and its apply, which must be empty.
	pass := func() {
		plan, err := eng.Plan(cfg.State)
		check(err)
		ops += len(plan.Ops)
		res, err := eng.Apply(context.Background(), plan)
		check(err)
		check(res.Err())
	}
	var cpu []time.Duration
	for r := 0; r < runs; r++ {
		before := k.Writes()
		var c time.Duration
		ts = append(ts, timed(func() { c = cpuTimed(pass) }))
		cpu = append(cpu, c)
		writes += k.Writes() - before
	}
	t := median(ts)
	fmt.Printf("no-op reconcile %d owned + %d foreign routes: %.1f ms (%.3f us/owned route), %d operations, %d kernel writes in %d runs\n",
		n, n, ms(t), us(t, n), ops, writes, runs)
	fmt.Printf("no-op reconcile, CPU: %.1f ms a pass (user and system)\n", ms(median(cpu)))
	// The daemon's pass after a notification of another kind (an
	// nftables or rule change; a link or address change reads everything):
	// the routes of the previous read are reused (engine.SetReread, issue
	// 16).
	var reused, oneTable []time.Duration
	for _, kinds := range []actual.Kinds{actual.NFT, actual.Rules} {
		for r := 0; r < runs; r++ {
			before := k.Writes()
			eng.SetReread(actual.Fresh{Kinds: kinds})
			reused = append(reused, timed(pass))
			writes += k.Writes() - before
		}
	}
	// After a route notification in another table (a repair in a small
	// table while the big one is quiet): that table alone is dumped.
	for r := 0; r < runs; r++ {
		before := k.Writes()
		eng.SetReread(actual.Fresh{Kinds: actual.Routes, RouteTables: map[int]bool{otherTable: true}})
		oneTable = append(oneTable, timed(pass))
		writes += k.Writes() - before
	}
	rt, ot := median(reused), median(oneTable)
	fmt.Printf("no-op reconcile, routes reused (after an nftables or rule event): %.1f ms (%.2fx the full read), %d operations, %d kernel writes\n",
		ms(rt), float64(rt)/float64(t), ops, writes)
	fmt.Printf("no-op reconcile, one other route table read (after a route event there): %.1f ms (%.2fx the full read)\n",
		ms(ot), float64(ot)/float64(t))
	// A one-shot no-op apply of the same file, against the daemon's full
	// pass plus parsing the file: what a command pays beyond the work. Its
	// first run, with a new state directory, records the tables of ours
	// and is not counted.
	state := filepath.Join(dir, "state-noop")
	defer os.RemoveAll(state)
	apply := []string{"apply", "-q", "--netns", ns, "-c", yml, "--state-dir", state}
	runCPU(bin, apply...)
	var cli, cliCPU []time.Duration
	for r := 0; r < runs; r++ {
		var c time.Duration
		cli = append(cli, timed(func() { c = runCPU(bin, apply...) }))
		cliCPU = append(cliCPU, c)
	}
	p, c := median(parse), median(cli)
	fmt.Printf("no-op netreconcile apply (CLI): %.1f ms, the daemon's pass plus the parse %.1f ms (%.1f + %.1f): %.2fx\n",
		ms(c), ms(t+p), ms(t), ms(p), float64(c)/float64(t+p))
	pc, cc, tc := median(parseCPU), median(cliCPU), median(cpu)
	fmt.Printf("no-op netreconcile apply (CLI), CPU: %.1f ms, the daemon's pass plus the parse %.1f ms (%.1f + %.1f): %.2fx\n",
		ms(cc), ms(tc+pc), ms(tc), ms(pc), float64(cc)/float64(tc+pc))
	if writes != 0 || ops != 0 {
		fmt.Fprintln(os.Stderr, "FAIL: the no-op reconcile wrote to the kernel")
		os.Exit(1)
	}
}

// writer writes n routes into a fresh namespace three ways, each a route
// replace: ip -batch, the library's RouteReplace one route at a time, and
// the kernel seam's batch writer.
func writer(dir string, n, runs int) {
	batch := filepath.Join(dir, fmt.Sprintf("writer-%d.batch", n))
	var b bytes.Buffer
	routes := make([]model.Route, n)
	for i := range routes {
		routes[i] = model.Route{Table: table, Dst: prefix(1<<16, i), Dev: "bench0", Type: model.RouteUnicast}
		fmt.Fprintf(&b, "route replace %s dev bench0 table %d proto 245\n", routes[i].Dst, table)
	}
	check(os.WriteFile(batch, b.Bytes(), 0o644))
	var ipT, libT, nrT, ipC, libC, nrC []time.Duration
	for r := 0; r < runs; r++ {
		w, c := ipBatch(batch, n)
		ipT, ipC = append(ipT, w), append(ipC, c)

		ns, del := freshNS()
		h, err := netns.GetFromName(ns)
		check(err)
		lib, err := netlink.NewHandleAt(h)
		check(err)
		link, err := lib.LinkByName("bench0")
		check(err)
		libT = append(libT, timed(func() {
			c = cpuTimed(func() {
				for i := range routes {
					dst := routes[i].Dst
					check(lib.RouteReplace(&netlink.Route{Dst: &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), 32)},
						LinkIndex: link.Attrs().Index, Table: table, Protocol: model.DefaultProtocol}))
				}
			})
		}))
		libC = append(libC, c)
		lib.Close()
		h.Close()
		mustCount(ns, n)
		del()

		ns, del = freshNS()
		k, err := kernel.Open("/run/netns/" + ns)
		check(err)
		_, err = k.Links()
		check(err)
		ws := make([]kernel.RouteWrite, n)
		for i := range ws {
			ws[i] = kernel.RouteWrite{Action: kernel.RouteReplace, Route: &routes[i]}
		}
		nrT = append(nrT, timed(func() {
			c = cpuTimed(func() {
				for _, err := range k.WriteRoutes(ws, model.DefaultProtocol) {
					check(err)
				}
			})
		}))
		nrC = append(nrC, c)
		k.Close()
		mustCount(ns, n)
		del()
	}
	ip, lib, nr := median(ipT), median(libT), median(nrT)
	fmt.Printf("route writer %6d replaces: ip -batch %8.1f ms (%5.2f us/route)  library RouteReplace loop %8.1f ms (%5.2f us/route)  batch writer %8.1f ms (%5.2f us/route)  writer/ip %.2fx  writer/library %.2fx\n",
		n, ms(ip), us(ip, n), ms(lib), us(lib, n), ms(nr), us(nr, n), float64(nr)/float64(ip), float64(nr)/float64(lib))
	ipc, libc, nrc := median(ipC), median(libC), median(nrC)
	fmt.Printf("route writer %6d replaces, CPU:  ip -batch %8.1f ms  library RouteReplace loop %8.1f ms  batch writer %8.1f ms  writer/ip %.2fx  writer/library %.2fx\n",
		n, ms(ipc), ms(libc), ms(nrc), float64(nrc)/float64(ipc), float64(nrc)/float64(libc))
}

// ipBatch runs `ip -batch` of n routes in a fresh namespace and returns
// the wall clock and CPU time it took.
func ipBatch(batch string, n int) (wall, cpu time.Duration) {
	ns, del := freshNS()
	defer del()
	wall = timed(func() { cpu = runCPU("ip", "-n", ns, "-batch", batch) })
	mustCount(ns, n)
	return wall, cpu
}

func mustCount(ns string, n int) {
	if got := countRoutes(ns); got != n {
		fmt.Fprintf(os.Stderr, "namespace %s holds %d routes in table %d, want %d\n", ns, got, table, n)
		os.Exit(1)
	}
}

func ms(d time.Duration) float64        { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration, n int) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }

func run(prog string, args ...string) {
	cmd := exec.Command(prog, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
		os.Exit(1)
	}
}

func output(prog string, args ...string) string {
	out, err := exec.Command(prog, args...).Output()
	check(err)
	return string(out)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-core:", err)
		os.Exit(1)
	}
}
