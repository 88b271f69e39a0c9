package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// The deadline for a repair or an edit to show in the kernel. The daemon
// takes about 50-150 ms (make bench-daemon measures it); these deadlines only
// tell "done" from "never done", on a machine that may be loaded (make test
// runs two guests beside them): a daemon's first pass took 4 s at load 20.
const (
	repairDeadline = 30 * time.Second
	editDeadline   = 30 * time.Second
	startDeadline  = time.Minute
)

// config is a file naming a link, an address, routes and rules of both
// kinds of notification the daemon subscribes to.
func config(route string) string {
	return fmt.Sprintf(`version: 1
links:
  nrd0:
    kind: bridge
    addresses: [10.71.0.1/24]
routes:
  - {to: %s, via: 10.71.0.254, table: 100}
rules:
  - {priority: 1000, from: 10.71.0.0/24, table: 100}
`, route)
}

// kernelState renders what the daemon owns, as ip prints it.
func kernelState(t *testing.T, ns string) string {
	t.Helper()
	return strings.Join([]string{
		nettest.IP(t, ns, "-4", "-br", "addr", "show"),
		nettest.IP(t, ns, "route", "show", "table", "all", "proto", "245"),
		nettest.IP(t, ns, "rule", "show"),
	}, "")
}

type env struct {
	ns, dir, config, state string
}

func newEnv(t *testing.T, content string) env {
	t.Helper()
	ns := nettest.NewNetNS(t)
	// Without IPv6 no link-local address, DAD or router solicitation
	// notifies on its own a second after a link comes up: every pass the
	// tests see comes from what they do.
	nettest.InNS(t, ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	dir := t.TempDir()
	e := env{ns: ns, dir: dir, config: filepath.Join(dir, "netreconcile.yaml"), state: filepath.Join(dir, "state")}
	writeInPlace(t, e.config, content)
	return e
}

func (e env) start(t *testing.T, extraEnv []string, args ...string) *proc {
	t.Helper()
	return startDaemon(t, e.ns, e.config, e.state, extraEnv, args...)
}

func hasRoute(t *testing.T, ns, dst string) bool {
	t.Helper()
	return strings.Contains(nettest.IP(t, ns, "route", "show", "table", "100"), dst+" via 10.71.0.254 dev nrd0 proto 245")
}

// READY=1 comes only once the kernel holds the file's state: here the file
// names a device that does not exist yet, so the daemon cannot converge and
// must not report ready until the device appears (which it sees through a
// link notification).
func TestReadyOnlyAfterConverge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `version: 1
links:
  nrdup0:
    kind: device
    state: up
    addresses: [10.72.0.1/24]
routes:
  - {to: 10.73.0.0/16, via: 10.72.0.254, table: 100}
`)
	p := e.start(t, []string{"WATCHDOG_USEC=200000"})
	st := p.statusAfter(0, "not converged", startDeadline)
	if !strings.Contains(st, "nrdup0") {
		t.Errorf("STATUS=%s: want the missing device named", st)
	}
	// The address and the route are left out with the missing device (a
	// conflict, not a failure to retry): the loop waits for the device's
	// notification, and meanwhile says nothing of READY=1.
	time.Sleep(time.Second)
	for _, m := range p.messages() {
		if hasLine(m, "READY=1") {
			t.Fatalf("READY=1 before the kernel holds the file's state; notifications: %q", p.messages())
		}
	}
	// Table 100 may not exist yet: nothing was written to it.
	if strings.Contains(nettest.IP(t, e.ns, "route", "show", "table", "all"), "10.73.0.0/16") {
		t.Fatal("route added although its device is missing")
	}

	nettest.IP(t, e.ns, "link", "add", "nrdup0", "type", "veth", "peer", "name", "nrdup1")
	i, _ := p.waitMsg(0, "READY=1", startDeadline)
	// Checked right after READY=1, without waiting: the state must be there.
	if out := nettest.IP(t, e.ns, "-o", "addr", "show", "dev", "nrdup0"); !strings.Contains(out, "inet 10.72.0.1/24") {
		t.Errorf("after READY=1: ip addr: %q, want 10.72.0.1/24 on nrdup0", out)
	}
	if out := nettest.IP(t, e.ns, "-o", "link", "show", "dev", "nrdup0"); !regexp.MustCompile(`[<,]UP[,>]`).MatchString(out) {
		t.Errorf("after READY=1: ip link: %q, want nrdup0 up", out)
	}
	if out := nettest.IP(t, e.ns, "route", "show", "table", "100"); !strings.Contains(out, "10.73.0.0/16 via 10.72.0.254 dev nrdup0 proto 245") {
		t.Errorf("after READY=1: ip route show table 100: %q", out)
	}
	if st := p.statusAfter(i, "converged", startDeadline); !strings.HasPrefix(st, "converged: 3 objects") {
		t.Errorf("STATUS=%s after READY=1", st)
	}
	p.waitMsg(0, "WATCHDOG=1", startDeadline)
}

// Changes made behind the daemon's back are repaired through notifications
// (the periodic resync is 5 minutes away): one per kind it subscribes to.
func TestRepairsDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t, config("10.74.0.0/16"))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	want := kernelState(t, e.ns)

	for _, tc := range []struct {
		name   string
		break_ []string
		kind   string // of the object whose repair is logged
	}{
		{"route deleted", []string{"route", "del", "10.74.0.0/16", "table", "100"}, "route"},
		{"rule deleted", []string{"rule", "del", "priority", "1000"}, "rule"},
		{"address deleted", []string{"addr", "del", "10.71.0.1/24", "dev", "nrd0"}, "address"},
		{"link down", []string{"link", "set", "nrd0", "down"}, "link"},
		// The link takes its address and route with it.
		{"link deleted", []string{"link", "del", "nrd0"}, "link"},
	} {
		p.settle()
		repairs := strings.Count(p.Stderr(), "msg=applied kind="+tc.kind)
		nettest.IP(t, e.ns, tc.break_...)
		eventually(t, repairDeadline, tc.name+": repaired", func() bool {
			return strings.Count(p.Stderr(), "msg=applied kind="+tc.kind) > repairs && kernelState(t, e.ns) == want
		})
	}
	counted := regexp.MustCompile(`^STATUS=converged: 4 objects, [1-9][0-9]* drift repaired, 0 errors`)
	eventually(t, startDeadline, "repairs counted in STATUS=", func() bool {
		for _, m := range p.messages() {
			if counted.MatchString(m) {
				return true
			}
		}
		return false
	})
	if !strings.Contains(p.Stderr(), `msg=applied kind=route id="10.74.0.0/16 table 100" action=create drift=true`) {
		t.Errorf("no log line for the route repair:\n%s", p.Stderr())
	}
}

// Edits of the main file in place and by rename, and a new drop-in file,
// are applied without a signal.
func TestAppliesEdits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, config("10.75.0.0/16"))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	if !hasRoute(t, e.ns, "10.75.0.0/16") {
		t.Fatal("initial route missing")
	}

	writeInPlace(t, e.config, config("10.76.0.0/16"))
	eventually(t, editDeadline, "in-place edit applied", func() bool {
		return hasRoute(t, e.ns, "10.76.0.0/16") && !hasRoute(t, e.ns, "10.75.0.0/16")
	})

	writeByRename(t, e.config, config("10.77.0.0/16"))
	eventually(t, editDeadline, "edit by rename applied", func() bool {
		return hasRoute(t, e.ns, "10.77.0.0/16") && !hasRoute(t, e.ns, "10.76.0.0/16")
	})

	// conf.d does not exist at start: it is picked up when created.
	dropIn := filepath.Join(e.dir, "conf.d")
	if err := os.Mkdir(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	writeByRename(t, filepath.Join(dropIn, "10-extra.yaml"), "version: 1\nroutes:\n  - {to: 10.78.0.0/16, via: 10.71.0.254, table: 100}\n")
	eventually(t, editDeadline, "drop-in applied", func() bool { return hasRoute(t, e.ns, "10.78.0.0/16") })
	if p.exited() {
		t.Fatal("daemon exited")
	}
}

// An invalid edit changes nothing in the kernel, keeps the daemon running
// with the error and its position in STATUS=, and the next valid edit is
// applied.
func TestInvalidEditKeepsLastGood(t *testing.T) {
	t.Parallel()
	e := newEnv(t, config("10.79.0.0/16"))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	before := kernelState(t, e.ns)

	// Line 5: an MTU out of range, with a route change that must not happen.
	writeByRename(t, e.config, strings.Replace(config("10.80.0.0/16"), "    kind: bridge\n", "    kind: bridge\n    mtu: 10\n", 1))
	st := p.statusAfter(0, "invalid configuration", editDeadline)
	if want := e.config + ":5:10: links.nrd0.mtu:"; !strings.Contains(st, want) {
		t.Errorf("STATUS=%s\nwant the error's position %q", st, want)
	}
	eventually(t, editDeadline, "error logged with its position", func() bool {
		return strings.Contains(p.Stderr(), `level=ERROR msg="invalid configuration; enforcing the last good one"`) &&
			strings.Contains(p.Stderr(), "netreconcile.yaml:5:10: links.nrd0.mtu")
	})
	// The last good file is still enforced: a repair still happens.
	nettest.IP(t, e.ns, "route", "del", "10.79.0.0/16", "table", "100")
	eventually(t, repairDeadline, "repair under the last good configuration", func() bool { return kernelState(t, e.ns) == before })
	if p.exited() {
		t.Fatal("daemon exited on an invalid edit")
	}

	writeInPlace(t, e.config, config("10.81.0.0/16"))
	eventually(t, editDeadline, "next valid edit applied", func() bool {
		return hasRoute(t, e.ns, "10.81.0.0/16") && !hasRoute(t, e.ns, "10.79.0.0/16") && !hasRoute(t, e.ns, "10.80.0.0/16")
	})
	p.statusAfter(0, "converged", editDeadline)
}

// SIGTERM stops the daemon and leaves the kernel state in place; a restart
// after SIGKILL finds nothing to change.
func TestStopAndRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, config("10.82.0.0/16"))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	want := kernelState(t, e.ns)

	p.signal(syscall.SIGTERM)
	if err := p.wait(startDeadline); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	p.waitMsg(0, "STOPPING=1", time.Second)
	if got := kernelState(t, e.ns); got != want {
		t.Fatalf("SIGTERM changed the kernel:\nbefore:\n%s\nafter:\n%s", want, got)
	}

	p = e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	p.signal(syscall.SIGKILL)
	if err := p.wait(startDeadline); err == nil {
		t.Fatal("SIGKILL: want a non-zero exit")
	}
	if got := kernelState(t, e.ns); got != want {
		t.Fatalf("the kernel changed:\nbefore:\n%s\nafter:\n%s", want, got)
	}

	p = e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	// Lines are logged in order: once this one is in, every change is.
	eventually(t, editDeadline, "ready logged", func() bool { return strings.Contains(p.Stderr(), `msg="converged; ready"`) })
	if log := p.Stderr(); strings.Contains(log, "msg=applied") {
		t.Errorf("restart made changes:\n%s", log)
	}
}

// SIGHUP is a reload as Type=notify-reload expects, and metrics are served.
func TestReloadAndMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, config("10.83.0.0/16"))
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)

	from := p.count()
	p.signal(syscall.SIGHUP)
	i, msg := p.waitMsg(from, "RELOADING=1", startDeadline)
	if !hasLine(msg, "MONOTONIC_USEC=") {
		t.Errorf("RELOADING=1 without MONOTONIC_USEC: %q", msg)
	}
	p.waitMsg(i+1, "READY=1", startDeadline)
	eventually(t, editDeadline, "reload logged", func() bool {
		return strings.Contains(p.Stderr(), `msg="configuration reloaded; unchanged"`)
	})

	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`netreconcile_reconciles_total{result="converged"}`,
		`netreconcile_changes_total{action="create",kind="route"} 1`,
		`netreconcile_reconcile_duration_seconds_count`,
		`netreconcile_last_success_timestamp_seconds`,
		`netreconcile_objects 4`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A configuration that is invalid at start is an error: there is nothing
// to enforce.
func TestInvalidAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "version: 1\nlinks:\n  nrd0: {kind: nope}\n")
	p := e.start(t, nil)
	if err := p.wait(startDeadline); err == nil {
		t.Fatal("want a non-zero exit")
	}
	if !strings.Contains(p.Stderr(), e.config+":3:") {
		t.Errorf("error without position:\n%s", p.Stderr())
	}
	for _, m := range p.messages() {
		if hasLine(m, "READY=1") {
			t.Fatal("READY=1 with an invalid configuration")
		}
	}
}

// An owned nftables rule deleted with nft is put back through an nftables
// change notification (the periodic resync is 5 minutes away).
func TestRepairsNftablesDrift(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "nft")
	e := newEnv(t, `version: 1
nftables:
  inet nrd_mark:
    chains:
      out:
        type: route
        hook: output
        priority: filter
        rules:
          - ip daddr 10.76.0.0/16 meta mark set 0x40 accept
`)
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	want := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "nrd_mark")
	if !strings.Contains(want, "ip daddr 10.76.0.0/16 meta mark set 0x00000040 accept") {
		t.Fatalf("nft list table after READY=1:\n%s", want)
	}
	p.settle()
	nettest.InNS(t, e.ns, "nft", "flush", "chain", "inet", "nrd_mark", "out")
	eventually(t, repairDeadline, "nftables rule repaired", func() bool {
		return nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "nrd_mark") == want
	})
}

// IPAM pool usage is exported once metrics are served.
func TestPoolMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `version: 1
pools:
  nodes:
    subnets: [10.84.0.0/16]
links:
  lo: {kind: device, state: up}
  nrdp0:
    kind: bridge
    addresses: [{pool: nodes}]
`)
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	wants := []string{
		`netreconcile_ipam_pool_addresses_allocated{pool="nodes"} 1`,
		`netreconcile_ipam_pool_blocks{pool="nodes"} 1`,
		`netreconcile_ipam_pool_addresses{pool="nodes"} 32`,
		`netreconcile_ipam_pool_addresses_cooling{pool="nodes"} 0`,
	}
	var body string
	defer func() {
		if t.Failed() {
			t.Logf("last metrics scraped:\n%s", body)
		}
	}()
	eventually(t, editDeadline, "pool usage in the metrics", func() bool {
		resp, err := http.Get("http://" + addr[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
	if out := nettest.IP(t, e.ns, "route", "show", "table", "119"); !strings.Contains(out, "10.84.0.0/27 dev lo proto 245") {
		t.Errorf("export route missing from table 119: %q", out)
	}
}

// A routes file in a directory of its own is watched like a drop-in: an
// edit moved into place or written in place is applied, a bad line keeps
// the last good routes (the error at its line in STATUS=), and the fix is
// applied.
func TestAppliesSideFileEdits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	tables := filepath.Join(e.dir, "tables")
	if err := os.Mkdir(tables, 0o755); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(tables, "up.routes")
	writeInPlace(t, side, "10.82.0.0/16 via 10.71.0.254\n")
	writeInPlace(t, e.config, strings.Replace(config("10.83.0.0/16"), "rules:", "routes-files: [{file: tables/up.routes, table: 100}]\nrules:", 1))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	if !hasRoute(t, e.ns, "10.82.0.0/16") || !hasRoute(t, e.ns, "10.83.0.0/16") {
		t.Fatalf("routes of the YAML and of the side file missing:\n%s", kernelState(t, e.ns))
	}
	writeByRename(t, side, "10.84.0.0/16 via 10.71.0.254\n")
	eventually(t, editDeadline, "side file moved into place applied", func() bool {
		return hasRoute(t, e.ns, "10.84.0.0/16") && !hasRoute(t, e.ns, "10.82.0.0/16")
	})
	writeInPlace(t, side, "10.84.0.0/16 via 10.71.0.254\n10.85.0.0/16 via 10.71.0.254\n")
	eventually(t, editDeadline, "side file written in place applied", func() bool { return hasRoute(t, e.ns, "10.85.0.0/16") })
	before := kernelState(t, e.ns)
	writeByRename(t, side, "10.86.0.0/16 via 10.71.0.254\n10.87.0.0/16 vai 10.71.0.254\n")
	st := p.statusAfter(0, "invalid configuration", editDeadline)
	if want := side + ":2:14: routes-files[0].vai: unknown word"; !strings.Contains(st, want) {
		t.Errorf("STATUS=%s\nwant %q", st, want)
	}
	if got := kernelState(t, e.ns); got != before {
		t.Errorf("a bad side file changed the kernel:\n%s\nwant\n%s", got, before)
	}
	writeByRename(t, side, "10.86.0.0/16 via 10.71.0.254\n")
	eventually(t, editDeadline, "fixed side file applied", func() bool {
		return hasRoute(t, e.ns, "10.86.0.0/16") && !hasRoute(t, e.ns, "10.84.0.0/16") && !hasRoute(t, e.ns, "10.85.0.0/16")
	})
	p.statusAfter(0, "converged", editDeadline)
}
