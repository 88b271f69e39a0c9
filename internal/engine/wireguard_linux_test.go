package engine_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// A WireGuard node of a test: a namespace, its device name (unique on the
// host: wireguard-go's control sockets are shared by all namespaces), keys
// and tunnel address.
type wgNode struct {
	ns, dev, dir string
	priv         wgtypes.Key
	tunnel       string // 10.99.0.N
	under        string // underlay address, 10.1.0.N
	keyFile      string
}

var devSeq atomic.Uint32

func newNode(t *testing.T, n int) *wgNode {
	t.Helper()
	nettest.RequireTool(t, "wg")
	nettest.RequireTool(t, "wireguard-go")
	ns := nettest.NewNetNS(t)
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	w := &wgNode{ns: ns, dev: fmt.Sprintf("nrw%d%c%d", os.Getpid()%100000, 'a'+n, devSeq.Add(1)%10), dir: t.TempDir(), priv: k,
		tunnel: fmt.Sprintf("10.99.0.%d", n), under: fmt.Sprintf("10.1.0.%d", n)}
	w.keyFile = filepath.Join(w.dir, "wg.key")
	if err := os.WriteFile(w.keyFile, []byte(k.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Registered after the namespace: runs first, so wireguard-go exits
	// with its device before the namespace goes.
	t.Cleanup(func() { _ = execQuiet("ip", "-n", ns, "link", "del", w.dev) })
	nettest.IP(t, ns, "link", "set", "lo", "up")
	return w
}

func execQuiet(prog string, args ...string) error {
	return nettest.ExecErr(prog, args...)
}

// link joins nodes with one bridge in the first node's namespace: every
// node gets a veth into it, with its underlay address.
func join(t *testing.T, hub *wgNode, nodes ...*wgNode) {
	t.Helper()
	nettest.IP(t, hub.ns, "link", "add", "br-u", "type", "bridge")
	nettest.IP(t, hub.ns, "link", "set", "br-u", "up")
	for i, n := range append([]*wgNode{hub}, nodes...) {
		a, b := fmt.Sprintf("u%d", i), fmt.Sprintf("u%dp", i)
		nettest.IP(t, hub.ns, "link", "add", a, "type", "veth", "peer", "name", b)
		nettest.IP(t, hub.ns, "link", "set", a, "master", "br-u", "up")
		if n != hub {
			nettest.IP(t, hub.ns, "link", "set", b, "netns", n.ns)
		}
		nettest.IP(t, n.ns, "addr", "add", n.under+"/24", "dev", b)
		nettest.IP(t, n.ns, "link", "set", b, "up")
	}
}

type peerSpec struct {
	node       *wgNode
	endpoints  []string
	keepalive  string
	psk        string
	allowedIPs []string
}

func (w *wgNode) config(rotation string, peers ...peerSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nlinks:\n  %s:\n    kind: wireguard\n    mtu: 1420\n    addresses: [%s/24]\n", w.dev, w.tunnel)
	fmt.Fprintf(&b, "    wireguard:\n      private-key-file: %s\n      listen-port: 51820\n      fwmark: 0x20\n      userspace: true\n", w.keyFile)
	if rotation != "" {
		fmt.Fprintf(&b, "      rotation: %s\n", rotation)
	}
	if len(peers) > 0 {
		b.WriteString("      peers:\n")
	}
	for _, p := range peers {
		ips := p.allowedIPs
		if ips == nil {
			ips = []string{p.node.tunnel + "/32"}
		}
		fmt.Fprintf(&b, "        - public-key: %s\n          allowed-ips: [%s]\n", p.node.priv.PublicKey(), strings.Join(ips, ", "))
		if len(p.endpoints) > 0 {
			fmt.Fprintf(&b, "          endpoints: [%s]\n", strings.Join(quoteAll(p.endpoints), ", "))
		}
		if p.keepalive != "" {
			fmt.Fprintf(&b, "          persistent-keepalive: %s\n", p.keepalive)
		}
		if p.psk != "" {
			fmt.Fprintf(&b, "          preshared-key-file: %s\n", p.psk)
		}
	}
	return b.String()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return out
}

// apply writes the node's file and runs `netreconcile apply` in its namespace.
func (w *wgNode) apply(t *testing.T, conf string) nettest.Result {
	t.Helper()
	f := filepath.Join(w.dir, "netreconcile.yaml")
	if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r := nettest.CLI(t, "apply", "--netns", w.ns, "-c", f, "--state-dir", w.dir)
	if r.Code != 0 {
		t.Fatalf("apply in %s: exit %d\n%s%s\nconfig:\n%s", w.ns, r.Code, r.Stdout, r.Stderr, conf)
	}
	return r
}

func (w *wgNode) cli(t *testing.T, args ...string) nettest.Result {
	t.Helper()
	f := filepath.Join(w.dir, "netreconcile.yaml")
	return nettest.CLI(t, append(args, "--netns", w.ns, "-c", f, "--state-dir", w.dir)...)
}

// handshake returns the peer's latest handshake as `wg show` reports it
// (Unix seconds, 0 = never).
func (w *wgNode) handshake(t *testing.T, peer *wgNode) string {
	t.Helper()
	out := nettest.InNS(t, w.ns, "wg", "show", w.dev, "latest-handshakes")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == peer.priv.PublicKey().String() {
			return f[1]
		}
	}
	t.Fatalf("%s has no peer %s:\n%s", w.dev, peer.priv.PublicKey(), out)
	return ""
}

func (w *wgNode) peers(t *testing.T) []string {
	t.Helper()
	return strings.Fields(nettest.InNS(t, w.ns, "wg", "show", w.dev, "peers"))
}

// ping sends a few pings through the tunnel; it fails the test if none is
// answered. The count and per-reply timeout leave time for the handshake.
func (w *wgNode) ping(t *testing.T, to *wgNode) {
	t.Helper()
	nettest.InNS(t, w.ns, "ping", "-c", "3", "-i", "0.3", "-w", "15", "-q", "-I", w.dev, to.tunnel)
}

func osWriteFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

func osWriteFileMode(p, s string, m os.FileMode) error { return os.WriteFile(p, []byte(s), m) }

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func execOut(prog string, args ...string) (string, error) {
	out, err := exec.Command(prog, args...).CombinedOutput()
	return string(out), err
}
