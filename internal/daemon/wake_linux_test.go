package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/test/nettest"
)

var wgSeq atomic.Uint32

// wgDevName is a WireGuard device name unique on the host: wireguard-go's
// control sockets in /var/run/wireguard are shared by every namespace.
func wgDevName(tag byte) string {
	return fmt.Sprintf("nrd%d%c%d", os.Getpid()%100000, tag, wgSeq.Add(1)%100)
}

// wgKeyFile writes a fresh private key with mode 0600 and returns its path
// and the key.
func wgKeyFile(t *testing.T, dir, name string) (string, wgtypes.Key) {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(k.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, k
}

// wgLink is the YAML of a userspace WireGuard link with one peer that has
// an endpoint: the rotation keeps a pass scheduled every 30 s.
func wgLink(dev, keyFile string) string {
	peer, _ := wgtypes.GeneratePrivateKey()
	return fmt.Sprintf(`  %s:
    kind: wireguard
    wireguard:
      private-key-file: %s
      userspace: true
      peers:
        - public-key: %s
          allowed-ips: [10.98.0.2/32]
          endpoints: ["192.0.2.1:51820"]
`, dev, keyFile, peer.PublicKey())
}

// failingRoute is a route whose gateway no link reaches: the kernel refuses
// it ("Nexthop has invalid gateway") on every pass, so it is retried with
// backoff. (A route through a declared device that never appears is a
// conflict, left out without retries, so it would not do.)
const failingRoute = `  - {to: 10.97.0.0/16, via: 10.250.0.1, table: 100}
`

// withWireGuardAndFailure adds to a file made by config a userspace
// WireGuard link with endpoints and a route that fails on every pass: the
// two things that keep a later pass scheduled.
func withWireGuardAndFailure(c, dev, keyFile string) string {
	c = strings.Replace(c, "links:\n", "links:\n"+wgLink(dev, keyFile), 1)
	return strings.Replace(c, "routes:\n", "routes:\n"+failingRoute, 1)
}

// deleteLinkAtCleanup deletes dev in ns when the test ends, before the
// namespace goes (cleanups run last-registered first), so that wireguard-go
// exits with its device.
func deleteLinkAtCleanup(t *testing.T, ns, dev string) {
	t.Cleanup(func() { _ = nettest.ExecErr("ip", "-n", ns, "link", "del", dev) })
}

// Finding 1 of issue 12: with a WireGuard link whose peers have endpoints
// (the rotation tick keeps a pass scheduled 30 s ahead) and an object that
// keeps failing (its backoff retry is scheduled seconds ahead), a wake-up
// must still bring the next pass forward: a deleted route and a file edit
// are handled within one debounce, not at the next tick. Before each step
// the test waits until the failing object's backoff has grown to 6.4 s (a
// new plan or file starts it again at 200 ms); the deadline, 3 s, only tells
// "at once" (about 100 ms) from "at the retry" (6.4 s).
func TestWakeBringsScheduledPassForward(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "wireguard-go")
	const deadline = 3 * time.Second
	dev := wgDevName('w')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, _ := wgKeyFile(t, e.dir, "wg.key")
	file := func(route string) string { return withWireGuardAndFailure(config(route), dev, keyFile) }
	writeInPlace(t, e.config, file("10.84.0.0/16"))
	p := e.start(t, nil)
	// The table does not exist until the route is in it.
	eventually(t, startDeadline, "route applied", func() bool { return strings.Contains(p.Stderr(), "msg=applied kind=route") })
	longRetry := func(seen int) int {
		t.Helper()
		eventually(t, time.Minute, "backoff grown to 6.4 s", func() bool {
			return strings.Count(p.Stderr(), "retry_in=6.4s") > seen
		})
		return strings.Count(p.Stderr(), "retry_in=6.4s")
	}

	seen := longRetry(0)
	nettest.IP(t, e.ns, "route", "del", "10.84.0.0/16", "table", "100")
	eventually(t, deadline, "deleted route repaired before the scheduled pass", func() bool {
		return hasRoute(t, e.ns, "10.84.0.0/16")
	})

	longRetry(seen)
	writeByRename(t, e.config, file("10.85.0.0/16"))
	eventually(t, deadline, "edit applied before the scheduled pass", func() bool {
		return hasRoute(t, e.ns, "10.85.0.0/16") && !hasRoute(t, e.ns, "10.84.0.0/16")
	})
}
