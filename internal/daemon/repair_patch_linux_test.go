package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// patchConfig has routes of ours in a table that foreign routes fill too,
// IPv4 and IPv6.
const patchConfig = `version: 1
links:
  nrp0:
    kind: bridge
    state: up
    addresses: [10.71.0.1/24, "2001:db8:71::1/64"]
routes:
  - {to: 10.72.0.0/16, via: 10.71.0.254, table: 100}
  - {to: 10.73.0.0/16, via: 10.71.0.254, table: 100}
  - {to: "2001:db8:74::/48", via: "2001:db8:71::fe", table: 100}
`

// Routes of ours deleted, changed in place or added in their table while a
// routing daemon withdraws and announces thousands of its routes in that
// table are repaired, each time, with the resync an hour away: the repair
// passes patch the table's last read with the notifications of the changes
// and of the daemon's own writes (issue 34: they dumped the shared table,
// every foreign route of it). The route read counter shows that repairs
// were patched: the test does not pass by reading the table.
func TestIssue34RepairsUnderChurnFromTheNotifications(t *testing.T) {
	t.Parallel()
	ns := nettest.NewNetNSPrefixed(t, "rp")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "netreconcile.yaml")
	writeInPlace(t, cfg, patchConfig)
	p := startDaemon(t, ns, cfg, filepath.Join(dir, "state"), nil,
		"--resync-interval", "1h", "--full-resync-interval", "1h", "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	routes := func() string {
		return nettest.IP(t, ns, "route", "show", "table", "100", "proto", "245") +
			nettest.IP(t, ns, "-6", "route", "show", "table", "100", "proto", "245")
	}
	want := routes()
	for _, s := range []string{"10.72.0.0/16 via 10.71.0.254", "10.73.0.0/16 via 10.71.0.254", "2001:db8:74::/48 via 2001:db8:71::fe"} {
		if !strings.Contains(want, s) {
			t.Fatalf("converged routes lack %q:\n%s", s, want)
		}
	}

	// The routing daemon: 4,000 routes of its own in table 100, withdrawn
	// and announced again until the test ends.
	var add, del bytes.Buffer
	for i := range 4000 {
		fmt.Fprintf(&add, "route add 10.%d.%d.0/24 via 10.71.0.254 table 100 proto bird\n", 200+i/250, i%250)
		fmt.Fprintf(&del, "route del 10.%d.%d.0/24 table 100 proto bird\n", 200+i/250, i%250)
	}
	addF, delF := filepath.Join(dir, "foreign-add"), filepath.Join(dir, "foreign-del")
	for f, b := range map[string][]byte{addF: add.Bytes(), delF: del.Bytes()} {
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			for _, f := range []string{addF, delF} {
				select {
				case <-stop:
					return
				default:
				}
				if out, err := exec.Command("ip", "-n", ns, "-batch", f).CombinedOutput(); err != nil {
					t.Errorf("foreign churn: ip -batch %s: %v: %s", f, err, out)
					return
				}
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	patched, some := readsCounted(t, addr[1], "patched"), readsCounted(t, addr[1], "some_tables")
	for round := range 5 {
		for _, tc := range []struct {
			name  string
			drift []string
		}{
			{"route deleted", []string{"route", "del", "10.72.0.0/16", "table", "100"}},
			{"IPv6 route deleted", []string{"-6", "route", "del", "2001:db8:74::/48", "table", "100"}},
			{"route changed in place", []string{"route", "change", "10.73.0.0/16", "dev", "nrp0", "table", "100", "proto", "245"}},
			{"route of ours added", []string{"route", "add", "10.75.0.0/16", "via", "10.71.0.254", "table", "100", "proto", "245"}},
			{"two routes deleted at once", []string{"-batch", "-"}},
		} {
			what := fmt.Sprintf("round %d, %s", round+1, tc.name)
			if tc.drift[0] == "-batch" {
				cmd := exec.Command("ip", "-n", ns, "-batch", "-")
				cmd.Stdin = strings.NewReader("route del 10.72.0.0/16 table 100\nroute del 10.73.0.0/16 table 100\n")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v: %s", what, err, out)
				}
			} else {
				nettest.IP(t, ns, tc.drift...)
			}
			eventually(t, editDeadline, what+": repaired under foreign churn", func() bool { return routes() == want })
		}
	}
	got := readsCounted(t, addr[1], "patched")
	t.Logf("passes that patched the table: %v; that read it: %v", got-patched, readsCounted(t, addr[1], "some_tables")-some)
	if got <= patched {
		t.Errorf("no repair pass patched the table (%v before, %v after): they read it, and the test proves nothing", patched, got)
	}
}
