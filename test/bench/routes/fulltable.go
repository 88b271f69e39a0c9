package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/bench/growth"
)

// fullTable measures, in one run, what a full foreign table costs ours:
// owned routes in table (as -foreign), in one namespace without foreign
// routes and one with n of them (writeForeign: in main, in ours and in a
// table of their own, IPv4 and IPv6), loaded by ip -batch:
//
//   - the daemon's steady pass: its periodic resync as a running daemon
//     (netreconcile run --resync-interval 1s) runs it, the routes vouched
//     for by its notifications, CPU from /proc and wall from its pass
//     duration histogram, per pass; and a pass that reads every route
//     table (the full resync, the first pass after a link change: an
//     engine whose ledger records our tables, Plan and Apply);
//   - a one-shot no-op apply (the CLI), CPU and wall, and beside it the
//     kernel's dump of our table alone, as `ip route show table T proto P`
//     reads it: the kernel walks every route of the table, foreign ones
//     included, to filter ours, and what the foreign routes add to the
//     two is printed side by side;
//   - the resident memory of a daemon (netreconcile run) settled after
//     its start, and again after the churn;
//   - the daemon's CPU-seconds per 100k foreign events while the whole
//     foreign table is withdrawn and announced again (ip -batch);
//   - the repair delay of a route of ours in the shared table, deleted by
//     hand while that churn goes on (without foreign routes: with nothing
//     going on), from the delete's return (the route's loss; the delete's
//     own wait for the routing lock is printed apart) to the kernel
//     holding it again.
//
// Ratios are the foreign side's over the side without, same run.
func fullTable(bin, dir string, owned, n, runs, minTrials int) {
	yml := filepath.Join(dir, fmt.Sprintf("full-owned-%d.yaml", owned))
	writeYAML(yml, owned)
	cfg, err := desired.Load(yml, "")
	check(err)
	loadBefore := growth.LoadAverage()
	base := fullSide(bin, dir, yml, cfg, 0, runs, minTrials)
	full := fullSide(bin, dir, yml, cfg, n, runs, minTrials)
	loadAfter := growth.LoadAverage()

	fmt.Printf("full table: %d routes of ours (table %d) beside %d foreign (proto bird; IPv4 in main, %d and %d, IPv6 in main), against none, same run\n",
		owned, table, n, table, foreignTable)
	fmt.Printf("  load average %s before, %s after\n", loadBefore, loadAfter)
	fmt.Printf("  %-48s %14s %14s %7s  %s\n", "measure", "no foreign", fmt.Sprintf("%d foreign", n), "ratio", "target")
	row := func(name string, a, b float64, unit, target string) {
		ratio := "-"
		if a > 0 && b > 0 {
			ratio = fmt.Sprintf("%.2fx", b/a)
		}
		fmt.Printf("  %-48s %14s %14s %7s  %s\n", name, fmtVal(a, unit), fmtVal(b, unit), ratio, target)
	}
	row("daemon steady pass: resync (CPU)", ms(base.resyncCPU), ms(full.resyncCPU), "ms", "<= 1.5x")
	row("daemon steady pass: resync (wall)", ms(base.resync), ms(full.resync), "ms", "<= 1.5x")
	row("pass reading every route table (CPU)", ms(base.passCPU), ms(full.passCPU), "ms", "")
	row("pass reading every route table (wall)", ms(base.pass), ms(full.pass), "ms", "")
	row("one-shot no-op apply (CLI, CPU)", ms(base.cliCPU), ms(full.cliCPU), "ms", "<= 1.5x")
	row("one-shot no-op apply (CLI, wall)", ms(base.cli), ms(full.cli), "ms", "<= 1.5x")
	row(fmt.Sprintf("ip route show table %d proto %d (wall)", table, model.DefaultProtocol), ms(base.ipShow), ms(full.ipShow), "ms", "the kernel's dump")
	fmt.Printf("  %-48s %14s %14s\n", "what the foreign routes add: apply, ip", fmtVal(ms(full.cli-base.cli), "ms"), fmtVal(ms(full.ipShow-base.ipShow), "ms"))
	row("daemon steady RSS", base.rss, full.rss, "MiB", "<= 1.2x")
	row("daemon RSS settled after the churn", base.rss, full.rssAfter, "MiB", "")
	row("churn: daemon CPU-s per 100k foreign events", -1, full.churnPer100k, "s", "<= 0.1")
	row("repair delay p50 (foreign side: during churn)", ms(q(base.repair, 0.5)), ms(q(full.repair, 0.5)), "ms", "")
	row("repair delay p99 (foreign side: during churn)", ms(q(base.repair, 0.99)), ms(q(full.repair, 0.99)), "ms", "<= 200 ms")
	row("repair delay max", ms(q(base.repair, 1)), ms(q(full.repair, 1)), "ms", "")
	row("the bench's delete before it, p99 (not in the delay)", ms(q(base.deleteWait, 0.99)), ms(q(full.deleteWait, 0.99)), "ms", "")
	fmt.Printf("  resync passes: %d and %d, of which %d and %d took every route from the previous read\n",
		base.resyncs, full.resyncs, base.vouched, full.vouched)
	fmt.Printf("  passes: median of %d; churn: %d events in %.1f s (%.0f events/s); repairs: %d and %d trials; /proc counts CPU in 10 ms\n",
		runs, full.events, full.churnTook.Seconds(), float64(full.events)/full.churnTook.Seconds(), len(base.repair), len(full.repair))
}

func fmtVal(v float64, unit string) string {
	if v < 0 {
		return "-"
	}
	switch unit {
	case "s":
		return fmt.Sprintf("%.3f s", v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// q is the f-quantile of ds (1: the largest), 0 for none.
func q(ds []time.Duration, f float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(f*float64(len(s))))]
}

type fullResult struct {
	pass, passCPU, cli, cliCPU time.Duration
	ipShow                     time.Duration // ip route show of our table and protocol: the kernel's dump alone
	resync, resyncCPU          time.Duration
	resyncs, vouched           int
	rss, rssAfter              float64 // MiB
	churnPer100k               float64 // CPU-s
	events                     int
	churnTook                  time.Duration
	repair                     []time.Duration
	deleteWait                 []time.Duration // the bench's own delete, before each repair's clock starts
}

// probeRule lets a plain route lookup (ip route get fibmatch) find the
// probe route in the benchmark's table: the bench polls for it that way,
// which costs a lookup where a dump of the table would walk every foreign
// route in it. A rule of someone else's, in both namespaces alike.
const probeRulePref = 1000

func fullSide(bin, dir, yml string, cfg *desired.Config, foreign, runs, minTrials int) fullResult {
	var r fullResult
	ns, del := freshNS()
	defer del()
	state := filepath.Join(dir, fmt.Sprintf("state-full-%d", foreign))
	defer os.RemoveAll(state)
	runCPU(bin, "apply", "-q", "--netns", ns, "-c", yml, "--state-dir", state)
	probe := prefix(1<<16, 0)
	run("ip", "-n", ns, "rule", "add", "to", probe.String(), "lookup", fmt.Sprint(table), "pref", fmt.Sprint(probeRulePref))
	add, delBatch := filepath.Join(dir, "full-add.batch"), filepath.Join(dir, "full-del.batch")
	if foreign > 0 {
		writeForeign(add, foreign)
		b, err := os.ReadFile(add)
		check(err)
		check(os.WriteFile(delBatch, bytes.ReplaceAll(b, []byte("route add "), []byte("route del ")), 0o644))
		run("ip", "-n", ns, "-batch", add)
	}

	// The steady pass and the one-shot apply.
	k, err := kernel.Open("/run/netns/" + ns)
	check(err)
	l, err := ledger.OpenIn(nil, 0)
	check(err)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	pass := func() {
		plan, err := eng.Plan(cfg.State)
		check(err)
		res, err := eng.Apply(context.Background(), plan)
		check(err)
		check(res.Err())
		if len(plan.Ops) != 0 {
			check(fmt.Errorf("no-op pass beside %d foreign routes planned %d operations", foreign, len(plan.Ops)))
		}
	}
	pass() // the first: no record of our tables yet
	var ts, cs, cli, clic, ips []time.Duration
	for i := 0; i < runs; i++ {
		var c time.Duration
		ts = append(ts, timed(func() { c = cpuTimed(pass) }))
		cs = append(cs, c)
		cli = append(cli, timed(func() { c = runCPU(bin, "apply", "-q", "--netns", ns, "-c", yml, "--state-dir", state) }))
		clic = append(clic, c)
		ips = append(ips, timed(func() {
			run("ip", "-n", ns, "route", "show", "table", fmt.Sprint(table), "proto", fmt.Sprint(model.DefaultProtocol))
		}))
	}
	r.pass, r.passCPU, r.cli, r.cliCPU, r.ipShow = median(ts), median(cs), median(cli), median(clic), median(ips)
	k.Close()

	// The daemon's resync, every second: the passes of a window after the
	// first converge settled.
	r.resync, r.resyncCPU, r.resyncs, r.vouched = resyncPasses(bin, ns, yml, state)

	// The daemon.
	d := startRun(bin, ns, yml, state)
	defer d.stop()
	// Past the release of the first converge's memory (the daemon
	// returns it at most every 10 s).
	time.Sleep(12 * time.Second)
	idleCPU(d.pid)
	r.rss = vmRSS(d.pid)

	if foreign > 0 {
		before := idleCPU(d.pid)
		t0 := time.Now()
		run("ip", "-n", ns, "-batch", delBatch)
		run("ip", "-n", ns, "-batch", add)
		r.churnTook = time.Since(t0)
		r.events = 2 * foreign
		r.churnPer100k = (idleCPU(d.pid) - before) / float64(r.events) * 100000
	}

	// Repairs: during churn on the foreign side, in a quiet namespace on
	// the other.
	h, err := netns.GetFromName(ns)
	check(err)
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	check(err)
	defer nl.Close()
	dst := &net.IPNet{IP: probe.Addr().AsSlice(), Mask: net.CIDRMask(probe.Bits(), 32)}
	addr := probe.Addr().Next().AsSlice()
	present := func() bool {
		rs, err := nl.RouteGetWithOptions(addr, &netlink.RouteGetOptions{FIBMatch: true})
		if err != nil {
			return false // unreachable: no route
		}
		return len(rs) > 0 && rs[0].Dst != nil && rs[0].Dst.String() == dst.String() && rs[0].Table == table
	}
	if !present() {
		check(fmt.Errorf("probe route %s table %d not found by a lookup", probe, table))
	}
	churning := make(chan error, 1)
	if foreign > 0 {
		go func() {
			var err error
			for _, f := range []string{delBatch, add} {
				if out, e := exec.Command("ip", "-n", ns, "-batch", f).CombinedOutput(); e != nil && err == nil {
					err = fmt.Errorf("ip -batch %s: %v: %s", f, e, out)
				}
			}
			churning <- err
		}()
	}
	trial := func() {
		time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
		// The delay runs from the route's loss: the delete's return. The
		// delete itself waits for the kernel's routing lock as long as
		// the churn holds it, which is no wait of the daemon's; it is
		// reported apart.
		asked := time.Now()
		check(nl.RouteDel(&netlink.Route{Dst: dst, Table: table, Scope: netlink.SCOPE_NOWHERE}))
		t0 := time.Now()
		r.deleteWait = append(r.deleteWait, t0.Sub(asked))
		for !present() {
			if time.Since(t0) > 5*time.Minute {
				d.stop()
				del()
				check(fmt.Errorf("probe route %s not repaired within 5 min", probe))
			}
			time.Sleep(time.Millisecond)
		}
		r.repair = append(r.repair, time.Since(t0))
	}
	if foreign == 0 {
		for range minTrials {
			trial()
		}
	}
	for over := foreign == 0; !over; {
		select {
		case err := <-churning:
			check(err)
			over = true
		default:
			trial()
		}
	}
	time.Sleep(12 * time.Second)
	idleCPU(d.pid)
	r.rssAfter = vmRSS(d.pid)
	return r
}

// resyncPasses runs a daemon whose resync comes every second and returns
// the wall and CPU time of its passes, per pass, over a window of 20 s
// after it settled, with how many passes there were and how many of them
// read no route (netreconcile_route_reads_total{tables="none"}).
func resyncPasses(bin, ns, yml, state string) (wall, cpu time.Duration, passes, vouched int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := l.Addr().String()
	l.Close()
	d := startRun(bin, ns, yml, state, "--resync-interval", "1s", "--metrics-listen", addr)
	defer d.stop()
	time.Sleep(12 * time.Second)
	m0, c0 := scrape(addr), procCPU(d.pid)
	time.Sleep(20 * time.Second)
	m1, c1 := scrape(addr), procCPU(d.pid)
	n := m1["netreconcile_reconcile_duration_seconds_count"] - m0["netreconcile_reconcile_duration_seconds_count"]
	if n <= 0 {
		check(fmt.Errorf("no pass of the daemon in 20 s"))
	}
	sum := m1["netreconcile_reconcile_duration_seconds_sum"] - m0["netreconcile_reconcile_duration_seconds_sum"]
	none := `netreconcile_route_reads_total{tables="none"}`
	return time.Duration(sum / n * float64(time.Second)), time.Duration((c1 - c0) / n * float64(time.Second)),
		int(n), int(m1[none] - m0[none])
}

// scrape reads the daemon's metrics: each sample by its name and labels,
// as the text format prints them.
func scrape(addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	check(err)
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// daemonLogLevel is the daemons' --log-level (-daemon-log-level): debug
// logs where each pass's time went.
var daemonLogLevel = "warn"

// daemonProc is a `netreconcile run` in a namespace.
type daemonProc struct {
	cmd  *exec.Cmd
	pid  int
	sock string
	conn *net.UnixConn
}

// startRun starts the daemon, with args added to its own, and waits for
// its READY=1 (sd_notify).
func startRun(bin, ns, yml, state string, args ...string) *daemonProc {
	sockDir, err := os.MkdirTemp("", "nrb")
	check(err)
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	check(err)
	// The daemon runs at the default priority, as a service does, whatever
	// nice the benchmark runs under (on a shared machine at nice 19 under a
	// load of 30, a repair waited seconds for a core). nice execs it: the
	// pid is the daemon's, and every thread of it starts at that priority.
	cmd := exec.Command("nice", append([]string{"-n", fmt.Sprint(-ownNice()), bin, "run", "--netns", ns, "-c", yml, "--state-dir", state, "--log-level", daemonLogLevel}, args...)...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	check(cmd.Start())
	d := &daemonProc{cmd: cmd, pid: cmd.Process.Pid, sock: sockDir, conn: conn}
	ready := make(chan struct{})
	// Read for as long as the daemon runs: it sends its status on.
	go func() {
		buf := make([]byte, 4096)
		told := false
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			if !told && strings.Contains(string(buf[:n]), "READY=1") {
				close(ready)
				told = true
			}
		}
	}()
	select {
	case <-ready:
		return d
	case <-time.After(10 * time.Minute):
		d.stop()
		check(fmt.Errorf("daemon not ready after 10 min"))
		return nil
	}
}

func (d *daemonProc) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
	d.conn.Close()
	os.RemoveAll(d.sock)
}

// procCPU is a process's user and system time in seconds (/proc, 10 ms
// ticks).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

// idleCPU waits until the process's CPU time has not moved for 500 ms and
// returns it.
func idleCPU(pid int) float64 {
	last := procCPU(pid)
	for range 240 {
		time.Sleep(500 * time.Millisecond)
		now := procCPU(pid)
		if now == last {
			return now
		}
		last = now
	}
	check(fmt.Errorf("daemon still busy after 2 min"))
	return 0
}

// vmRSS is the process's resident memory in MiB.
func vmRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	check(fmt.Errorf("no VmRSS for %d", pid))
	return 0
}

// ownNice is this process's nice value.
func ownNice() int {
	// getpriority(2) returns 20 - nice.
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	check(err)
	return 20 - p
}
