package daemon_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestDaemonLatency measures what a user waits for: from a file save to the
// change in the kernel, and from an external delete to its repair, over 100
// trials each. It runs with `make bench-daemon` (NETRECONCILE_BENCH=1).
//
// The clock stops when the route notification of the change reaches this
// process, a netlink subscription in the same namespace: no polling error.
// Trials start at a random phase (0-200 ms after the previous one settled),
// since real edits and drift do not wait for the loop's rhythm.
func TestDaemonLatency(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "1" {
		t.Skip("a benchmark: make bench-daemon runs it")
	}
	trials := 100
	if n, err := strconv.Atoi(os.Getenv("NETRECONCILE_BENCH_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	nettest.RequireTool(t, "wireguard-go")
	// The file also holds a userspace WireGuard link whose peer has an
	// endpoint and a route that fails on every pass (issue 12, finding 1):
	// the rotation tick and the backoff retry keep a later pass scheduled,
	// which must not delay an edit or a repair.
	dev := wgDevName('b')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, _ := wgKeyFile(t, e.dir, "wg.key")
	config := func(route string) string { return withWireGuardAndFailure(config(route), dev, keyFile) }
	writeInPlace(t, e.config, config("10.90.0.0/16"))
	p := e.start(t, nil)
	// Never READY=1: the failing route keeps it from converging.
	p.statusAfter(0, "not converged", startDeadline)

	nsh, err := netns.GetFromName(e.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	updates := make(chan netlink.RouteUpdate, 1024)
	done := make(chan struct{})
	defer close(done)
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &nsh}); err != nil {
		t.Fatal(err)
	}
	// added waits for our route to dst to be added and returns when.
	added := func(dst string) time.Time {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case u := <-updates:
				if u.Type == unix.RTM_NEWROUTE && u.Dst != nil && u.Dst.String() == dst && int(u.Protocol) == model.DefaultProtocol {
					return time.Now()
				}
			case <-timeout:
				t.Fatalf("route %s not added within 5 s", dst)
			}
		}
	}
	pause := func() {
		p.settle()
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		for len(updates) > 0 {
			<-updates
		}
	}

	var save, repair []time.Duration
	for i := range trials {
		pause()
		dst := fmt.Sprintf("10.%d.%d.0/24", 100+i/250, i%250)
		start := time.Now()
		writeByRename(t, e.config, config(dst))
		save = append(save, added(dst).Sub(start))
	}
	last := fmt.Sprintf("10.%d.%d.0/24", 100+(trials-1)/250, (trials-1)%250)
	_, ipnet, _ := net.ParseCIDR(last)
	for range trials {
		pause()
		start := time.Now()
		if err := h.RouteDel(&netlink.Route{Dst: ipnet, Table: 100, Gw: net.ParseIP("10.71.0.254")}); err != nil {
			t.Fatalf("ip route del %s table 100: %v", last, err)
		}
		repair = append(repair, added(last).Sub(start))
	}
	report := fmt.Sprintf("daemon latency over %d trials each (debounce 50 ms, gap between passes max(50 ms, last pass); userspace WireGuard link with endpoints and a permanently failing route in the file):\n", trials) +
		line("file save -> kernel", save) + line("delete -> repair", repair)
	fmt.Print(report)
	if dir := os.Getenv("NETRECONCILE_BENCH_OUT"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "daemon-latency.txt"), []byte(report), 0o644)
	}
}

func line(name string, d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(f float64) time.Duration {
		return s[min(len(s)-1, int(f*float64(len(s))))].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("  %-22s min %-8v median %-8v p90 %-8v p99 %-8v max %v\n", name, s[0].Round(100*time.Microsecond), q(0.5), q(0.9), q(0.99), s[len(s)-1].Round(100*time.Microsecond))
}
