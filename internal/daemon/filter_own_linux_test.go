package daemon_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// The echo of the daemon's own write wakes no pass (filter_own.go): a
// deleted route, rule or nftables element is repaired by one pass, not one
// and then another that finds nothing to do. Before, each repair cost two
// passes, and under churn on a big table the next repair waited behind the
// second (bench-churn: p99 1.65 s).
func TestOwnWritesWakeNothing(t *testing.T) {
	t.Parallel()
	ns := churnNS(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "netreconcile.yaml")
	writeInPlace(t, cfg, churnConfig)
	p := startDaemon(t, ns, cfg, filepath.Join(dir, "state"), nil, "--resync-interval", "1h")
	p.waitMsg(0, "READY=1", startDeadline)
	state := func() string { return withoutForeign(kernelState(t, ns)) + nftTable(ns, "inet", "nrc") }
	want := state()
	for _, tc := range []struct {
		name  string
		drift []string
	}{
		{"route deleted", []string{"ip", "-n", ns, "route", "del", "10.82.0.0/16", "table", "100"}},
		{"rule deleted", []string{"ip", "-n", ns, "rule", "del", "priority", "1000"}},
		{"nftables set element deleted", []string{"ip", "netns", "exec", ns, "nft", "delete element inet nrc s { 10.83.0.2 }"}},
	} {
		converged(t, "converged before "+tc.name, want, state)
		// Quiet: every pass of the previous case is over (on a loaded
		// machine one may end well after the kernel converged).
		before := quietAfter(p, 300*time.Millisecond)
		nettest.Exec(t, tc.drift[0], tc.drift[1:]...)
		converged(t, tc.name+": repaired", want, state)
		// An echo would wake a pass one debounce (50 ms) plus one gap
		// after the repair: 500 ms is ample on a loaded machine.
		time.Sleep(500 * time.Millisecond)
		msgs := p.messages()[before:]
		if n := statusCount(msgs); n != 1 {
			t.Errorf("%s: %d passes, want 1 (the repair):\n%s", tc.name, n, strings.Join(msgs, "\n"))
		}
	}
}

// quietAfter waits until no notification arrived for gap (at most a
// minute), and returns how many there are.
func quietAfter(p *proc, gap time.Duration) int {
	n := p.count()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		time.Sleep(gap)
		m := p.count()
		if m == n {
			break
		}
		n = m
	}
	return n
}
