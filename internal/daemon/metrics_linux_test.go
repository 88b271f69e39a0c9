package daemon_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// openFDs counts the descriptors a process holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Finding 10 of issue 12: idle keep-alive connections to the metrics port
// must not use up the daemon's descriptors. The daemon's RLIMIT_NOFILE is
// lowered to what it holds plus 40; 200 clients connect and send a request
// each, and are left open. Without a connection cap every kernel read then
// fails (EMFILE) and a deleted route is never repaired.
func TestIdleMetricsConnectionsDoNotStarveRepair(t *testing.T) {
	t.Parallel()
	e := newEnv(t, config("10.87.0.0/16"))
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	pid := p.cmd.Process.Pid
	limit := uint64(openFDs(t, pid) + 40)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}

	const clients = 200
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr[1])
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			// One request, its answer's status line, then idle: a keep-alive
			// connection as a scraper leaves it. A connection over the cap
			// is closed; one the server never accepts times out.
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = bufio.NewReader(c).ReadString('\n')
		}()
	}
	wg.Wait()

	nettest.IP(t, e.ns, "route", "del", "10.87.0.0/16", "table", "100")
	eventually(t, editDeadline, "route repaired with idle metrics connections open", func() bool {
		return hasRoute(t, e.ns, "10.87.0.0/16")
	})
	if n := openFDs(t, pid); uint64(n) >= limit {
		t.Errorf("daemon holds %d descriptors, its limit is %d", n, limit)
	}
}

// The WireGuard peer gauge comes from the pass's own judgment of the peers
// (no second dump of the links) and is fresh when that pass ends: a peer the
// pass created is counted at once, judged with the endpoint it was given
// (unknown: no handshake yet, within the connect timeout).
func TestWireGuardPeerMetrics(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "wireguard-go")
	dev := wgDevName('m')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, _ := wgKeyFile(t, e.dir, "wg.key")
	link := wgLink(dev, keyFile)
	writeInPlace(t, e.config, "version: 1\nlinks:\n"+link)
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	scrape := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	gauge := regexp.MustCompile(`(?m)^netreconcile_wireguard_peers\{.*$`)
	want := fmt.Sprintf(`netreconcile_wireguard_peers{link=%q,state="unknown"} 1`, dev)
	if got := gauge.FindAllString(scrape(), -1); len(got) != 1 || got[0] != want {
		t.Fatalf("after READY=1: %q, want [%s]", got, want)
	}

	// A second peer: counted when the pass that creates it ends.
	peer, _ := wgtypes.GeneratePrivateKey()
	from := p.count()
	writeByRename(t, e.config, "version: 1\nlinks:\n"+link+fmt.Sprintf(`        - public-key: %s
          allowed-ips: [10.98.0.3/32]
          endpoints: ["192.0.2.2:51820"]
`, peer.PublicKey()))
	p.statusAfter(from, "converged: 3 objects", editDeadline) // the link and its two peers
	want = fmt.Sprintf(`netreconcile_wireguard_peers{link=%q,state="unknown"} 2`, dev)
	if got := gauge.FindAllString(scrape(), -1); len(got) != 1 || got[0] != want {
		t.Errorf("after the pass that added a peer: %q, want [%s]", got, want)
	}
}
