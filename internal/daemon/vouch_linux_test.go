package daemon_test

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// vouchConfig has routes of ours that the kernel takes or changes without
// a route notification when something else changes: through a link, with
// a preferred source on someone else's link, IPv6 on a link of its own.
const vouchConfig = `version: 1
links:
  nrv0:
    kind: bridge
    addresses: [10.91.0.1/24]
  nrv1:
    kind: bridge
    state: up
routes:
  - {to: 10.93.0.0/16, via: 10.91.0.254, table: 100}
  - {to: 10.94.0.0/16, via: 10.91.0.254, src: 10.99.0.1}
  - {to: 10.95.0.0/16, via: 10.91.0.254, table: 100}
  - {to: "2001:db8:96::/48", dev: nrv1, table: 100}
`

// The resync every 300 ms reads no route table the notifications vouch
// for, and the full resync is an hour away: a change the kernel makes to
// our routes without a route notification is repaired only if something
// marks the tables it touched (sourceKinds in filter_pass.go). Each case is
// one such change; one that nothing marks leaves the drift in place and
// fails the test. The route read counter shows the resyncs took the routes
// from the previous read: the test does not pass by reading everything.
func TestResyncVouchedRepairsSilentChanges(t *testing.T) {
	t.Parallel()
	ns := nettest.NewNetNSPrefixed(t, "ic")
	nettest.IP(t, ns, "link", "add", "fx0", "type", "bridge")
	nettest.IP(t, ns, "addr", "add", "10.99.0.1/32", "dev", "fx0")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "netreconcile.yaml")
	writeInPlace(t, cfg, vouchConfig)
	p := startDaemon(t, ns, cfg, filepath.Join(dir, "state"), nil,
		"--resync-interval", "300ms", "--full-resync-interval", "1h", "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	routes := func() string {
		return nettest.IP(t, ns, "route", "show", "table", "all", "proto", "245")
	}
	want := routes()
	for _, s := range []string{"10.93.0.0/16", "10.94.0.0/16 via 10.91.0.254 dev nrv0 src 10.99.0.1", "10.95.0.0/16", "2001:db8:96::/48 dev nrv1"} {
		if !strings.Contains(want, s) {
			t.Fatalf("converged routes lack %q:\n%s", s, want)
		}
	}
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	in := func(cmd string) string { return "ip netns exec " + ns + " " + cmd }
	ip := "ip -n " + ns + " "

	vouched := readsCounted(t, addr[1], "none")
	// quiet waits for two resyncs that take the routes from the previous
	// read: the second started after quiet did, so whatever was marked
	// before (by the test's setup, by the last repair) was read already.
	quiet := func(what string) {
		t.Helper()
		n := readsCounted(t, addr[1], "none")
		eventually(t, editDeadline, what+": two resyncs that read no route", func() bool { return readsCounted(t, addr[1], "none") >= n+2 })
	}
	for _, tc := range []struct {
		name  string
		drift []string
	}{
		// The kernel deletes the IPv4 routes of the main table whose
		// preferred source is gone from the host, whatever link it was
		// on: fx0 is not ours and no route of ours goes through it
		// (6.18 notifies that delete; the filter does not count on
		// it). Put back at once, so that the route can be made again.
		{"source address removed from a link not ours",
			sh(ip + "addr del 10.99.0.1/32 dev fx0 && " + ip + "addr add 10.99.0.1/32 dev fx0")},
		// A link down takes its IPv4 routes, notified by the link.
		{"link down and up", sh(ip + "link set nrv0 down && " + ip + "link set nrv0 up")},
		// The last IPv4 address of a link removed takes its routes.
		{"last address removed", sh(ip + "addr flush dev nrv0")},
	} {
		quiet(tc.name)
		if got := routes(); got != want {
			t.Fatalf("%s: routes before the change:\n%s\nwant:\n%s", tc.name, got, want)
		}
		nettest.Exec(t, tc.drift[0], tc.drift[1:]...)
		eventually(t, editDeadline, tc.name+": repaired", func() bool { return routes() == want })
	}

	// A route of ours rewritten to use a nexthop object (its routes are
	// notified, and read as before: nothing to repair) goes with the
	// object, without a route notification.
	nettest.IP(t, ns, "nexthop", "add", "id", "77", "via", "10.91.0.254", "dev", "nrv0")
	nettest.IP(t, ns, "route", "replace", "10.95.0.0/16", "nhid", "77", "table", "100", "proto", "245")
	quiet("route rewritten to use a nexthop object")
	if got := nettest.IP(t, ns, "route", "show", "10.95.0.0/16", "table", "100"); !strings.Contains(got, "nhid 77") {
		t.Logf("the daemon rewrote the route that uses a nexthop object (%q): nothing left to test", got)
	} else {
		nettest.IP(t, ns, "nexthop", "del", "id", "77")
		eventually(t, editDeadline, "nexthop object deleted: repaired", func() bool { return routes() == want })
	}

	// And a VRF, where the kernel has them: enslaving a link cycles it.
	if err := exec.Command("ip", "-n", ns, "link", "add", "fvrf", "type", "vrf", "table", "500").Run(); err != nil {
		t.Logf("no VRF here (%v): the enslavement case is left out", err)
	} else {
		quiet("VRF made")
		nettest.Exec(t, "sh", "-c", ip+"link set nrv0 master fvrf && "+ip+"link set nrv0 nomaster")
		eventually(t, editDeadline, "link enslaved to a VRF and released: repaired", func() bool { return routes() == want })
	}

	// Last, since it leaves every resync reading every table: with
	// skip_notify_on_dev_down, disable_ipv6 on a link without IPv6
	// addresses takes its IPv6 routes and notifies nothing at all.
	nettest.Exec(t, "sh", "-c", ip+"link set nrv1 addrgenmode none && "+ip+"-6 addr flush dev nrv1")
	quiet("IPv6 addresses of nrv1 removed")
	nettest.InNS(t, ns, "sysctl", "-qw", "net.ipv6.route.skip_notify_on_dev_down=1")
	nettest.Exec(t, "sh", "-c", in("sysctl -qw net.ipv6.conf.nrv1.disable_ipv6=1")+" && "+in("sysctl -qw net.ipv6.conf.nrv1.disable_ipv6=0"))
	eventually(t, editDeadline, "disable_ipv6 on a link without addresses, deletes not notified: repaired", func() bool { return routes() == want })

	if got := readsCounted(t, addr[1], "none"); got <= vouched {
		t.Errorf("no pass took the routes from the previous read (%v before the changes, %v after): the resyncs read them, and the test proves nothing", vouched, got)
	}
}

var routeReadsLine = regexp.MustCompile(`(?m)^netreconcile_route_reads_total\{tables="([a-z_]+)"\} (\S+)$`)

// readsCounted is netreconcile_route_reads_total of tables as the daemon
// serves it.
func readsCounted(t *testing.T, addr, tables string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range routeReadsLine.FindAllStringSubmatch(string(body), -1) {
		if m[1] == tables {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no netreconcile_route_reads_total{tables=%q} in the metrics", tables)
	return 0
}
