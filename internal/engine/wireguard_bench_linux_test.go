package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/test/nettest"
)

const (
	benchPeers    = 1000
	wgBenchRounds = 7
)

// TestBenchWireGuard (make bench-wg) configures 1,000 peers and then changes
// one, with netreconcile (load, read, diff, apply) and with `wg setconf` of
// the same configuration on a twin device, and prints the times and ratios.
// It asserts only what is not a time: the one-peer change sends one peer.
func TestBenchWireGuard(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "1" {
		t.Skip("a benchmark: run with make bench-wg")
	}
	ours, theirs := newNode(t, 1), newNode(t, 2)
	keys := make([]wgtypes.Key, benchPeers)
	for i := range keys {
		k, err := wgtypes.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	peerIP := func(i int) string { return fmt.Sprintf("10.%d.%d.1/32", 100+i/250, i%250) }
	changed := 500

	// Our file, and wg's for the same peers.
	yamlConf := func(change bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "version: 1\nlinks:\n  %s:\n    kind: wireguard\n    wireguard:\n      private-key-file: %s\n      listen-port: 51820\n      userspace: true\n      peers:\n", ours.dev, ours.keyFile)
		for i, k := range keys {
			ips := peerIP(i)
			if change && i == changed {
				ips += ", 10.250.0.0/24"
			}
			fmt.Fprintf(&b, "        - {public-key: %s, allowed-ips: [%s], persistent-keepalive: 25s, endpoints: [\"192.0.2.%d:51820\"]}\n", k, ips, 1+i%250)
		}
		return b.String()
	}
	wgConf := func(change bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "[Interface]\nPrivateKey = %s\nListenPort = 51820\n", theirs.priv)
		for i, k := range keys {
			ips := peerIP(i)
			if change && i == changed {
				ips += ", 10.250.0.0/24"
			}
			fmt.Fprintf(&b, "\n[Peer]\nPublicKey = %s\nAllowedIPs = %s\nEndpoint = 192.0.2.%d:51820\nPersistentKeepalive = 25\n", k, ips, 1+i%250)
		}
		return b.String()
	}

	// Both devices exist, empty, before the clock starts.
	ours.apply(t, fmt.Sprintf("version: 1\nlinks:\n  %s:\n    kind: wireguard\n    wireguard: {private-key-file: %s, listen-port: 51820, userspace: true}\n", ours.dev, ours.keyFile))
	nettest.InNS(t, theirs.ns, "wireguard-go", theirs.dev)
	nettest.IP(t, theirs.ns, "link", "set", theirs.dev, "up")

	k, err := kernel.Open("/run/netns/" + ours.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, err := nettest.OpenLedger(filepath.Join(ours.dir, "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	eng := &engine.Engine{Kernel: k, Ledger: l}
	confFile := filepath.Join(ours.dir, "netreconcile.yaml")
	reconcile := func(conf string) (time.Duration, uint64) {
		t.Helper()
		if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		sent := k.PeersSent()
		start := time.Now()
		cfg, err := desired.Load(confFile, "")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.Apply(context.Background(), plan)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		return time.Since(start), k.PeersSent() - sent
	}
	wgFile := filepath.Join(theirs.dir, "wg.conf")
	setconf := func(conf string) time.Duration {
		t.Helper()
		if err := os.WriteFile(wgFile, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		nettest.InNS(t, theirs.ns, "wg", "setconf", theirs.dev, wgFile)
		return time.Since(start)
	}

	// The machine is shared: each measure is the median of wgBenchRounds,
	// with the two tools taking turns. Between rounds both devices are
	// emptied again (not timed).
	empty := fmt.Sprintf("version: 1\nlinks:\n  %s:\n    kind: wireguard\n    wireguard: {private-key-file: %s, listen-port: 51820, userspace: true}\n", ours.dev, ours.keyFile)
	emptyWG := fmt.Sprintf("[Interface]\nPrivateKey = %s\nListenPort = 51820\n", theirs.priv)
	var coldOurs, coldWG, oneOurs, oneWG, noopOurs []time.Duration
	var coldSent, oneSent, noopSent uint64
	for r := 0; r < wgBenchRounds; r++ {
		reconcile(empty)
		setconf(emptyWG)
		var d time.Duration
		if r%2 == 0 {
			d, coldSent = reconcile(yamlConf(false))
			coldOurs = append(coldOurs, d)
			coldWG = append(coldWG, setconf(wgConf(false)))
		} else {
			coldWG = append(coldWG, setconf(wgConf(false)))
			d, coldSent = reconcile(yamlConf(false))
			coldOurs = append(coldOurs, d)
		}
		if n := len(ours.peers(t)); n != benchPeers {
			t.Fatalf("netreconcile configured %d peers, want %d", n, benchPeers)
		}
		d, oneSent = reconcile(yamlConf(true))
		oneOurs = append(oneOurs, d)
		oneWG = append(oneWG, setconf(wgConf(true)))
		d, noopSent = reconcile(yamlConf(true))
		noopOurs = append(noopOurs, d)
		if oneSent != 1 {
			t.Errorf("the one-peer change sent %d peers, want 1", oneSent)
		}
		if noopSent != 0 {
			t.Errorf("a pass with nothing to change sent %d peers", noopSent)
		}
	}
	mc, mw, mo, mow, mn := median(coldOurs), median(coldWG), median(oneOurs), median(oneWG), median(noopOurs)
	report := fmt.Sprintf(`bench-wg: %d peers, userspace wireguard-go devices, median of %d rounds
  configure %d peers:  netreconcile %8.1f ms (%d peers sent)   wg setconf %8.1f ms   ratio %.2f
  change one peer:     netreconcile %8.1f ms (%d peer sent)     wg setconf %8.1f ms   ratio %.2f
  no change:           netreconcile %8.1f ms (%d peers sent)
`, benchPeers, wgBenchRounds, benchPeers, ms(mc), coldSent, ms(mw), ms(mc)/ms(mw),
		ms(mo), oneSent, ms(mow), ms(mo)/ms(mow), ms(mn), noopSent)
	fmt.Print(report)
	t.Log("\n" + report)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
