package e2e

import (
	"github.com/netreconcile/netreconcile/test/nettest"

	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// s1Rotation are short rotation timings for the test. The kernel retries a
// handshake every 5 s (REKEY_TIMEOUT, plus up to 1/3 s of jitter), and a
// changed endpoint is only tried at the next retry. The connect timeout is
// KubeSpan's own 15 s: with 7 s, a guest slowed by a loaded host once took
// 9 s to complete the handshake on the new endpoint and rotated back to the
// dead candidate first. down-after stays KubeSpan's:
// a session renews its handshake only every 2 minutes (REKEY_AFTER_TIME), so
// anything shorter would take healthy peers for dead ones.
const s1Rotation = "{connect-timeout: 15s, down-after: 275s, interval: 1s}"

// The dead first candidate of node 1's entry for node 2: on the LAN's
// subnet, so nothing answers (no ARP reply) and nothing is refused.
const s1Dead = "192.168.50.99:51820"

// s1Node is one KubeSpan node: a namespace on the LAN, its file derived from
// examples/kubespan.yaml, and an engine kept across passes as the daemon
// keeps one (the endpoint rotation lives in it).
type s1Node struct {
	n     int
	ns    *NetNS
	key   wgtypes.Key
	file  string
	state string
	cfg   *desired.Config
	eng   *engine.Engine
}

func (s *s1Node) mesh() string  { return fmt.Sprintf("10.100.0.%d", s.n) }
func (s *s1Node) under() string { return fmt.Sprintf("192.168.50.%d", s.n) }

// TestS1KubeSpanMesh: three nodes on one bridge, each configured from
// examples/kubespan.yaml with its own keys, addresses and peers. Node 1 lists
// a dead endpoint first for node 2, and node 2 lists no endpoint for node 1
// (so that node 2 cannot start a handshake that node 1 would roam to): node 1
// must rotate to the second candidate. Checks: the kernel WireGuard device as
// the file says, a handshake and a ping between every pair, the target sets
// filled with the allowed IPs of the peers that came up while no rule, chain
// or set handle changed, marked packets routed through table 180 and the
// link, unmarked ones not, and a one-shot apply afterwards changing nothing.
func TestS1KubeSpanMesh(t *testing.T) {
	requireModules(t, "wireguard", "nf_tables", "bridge", "veth")
	example, err := os.ReadFile(example(t, "kubespan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lan := newNetNS(t, "lan")
	lan.IP(t, "link", "add", "br0", "type", "bridge")
	lan.IP(t, "link", "set", "br0", "up")
	nodes := make([]*s1Node, 3)
	for i := range nodes {
		s := &s1Node{n: i + 1, ns: newNetNS(t, fmt.Sprintf("node%d", i+1)), state: t.TempDir()}
		if s.key, err = wgtypes.GeneratePrivateKey(); err != nil {
			t.Fatal(err)
		}
		port := fmt.Sprintf("p-node%d", s.n)
		lan.IP(t, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", s.ns.Name)
		lan.IP(t, "link", "set", port, "master", "br0", "up")
		s.ns.IP(t, "addr", "add", s.under()+"/24", "dev", "eth0")
		s.ns.IP(t, "link", "set", "eth0", "up")
		// A node has a default route of its own (to a gateway that does not
		// exist here): traffic to a non-target address follows it.
		s.ns.IP(t, "route", "add", "default", "via", "192.168.50.254", "dev", "eth0")
		nodes[i] = s
	}
	for _, s := range nodes {
		s.file = s1Config(t, example, s, nodes)
		if s.cfg, err = desired.Load(s.file, ""); err != nil {
			t.Fatalf("node %d: %v", s.n, err)
		}
		k, err := kernel.Open("/run/netns/" + s.ns.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Close() })
		// The ledger where `netreconcile apply --state-dir` run inside the
		// namespace keeps it, so that the CLI below sees what the engine owns.
		l, err := nettest.OpenLedger(filepath.Join(s.state, "ledger.json"))
		if err != nil {
			t.Fatal(err)
		}
		s.eng = &engine.Engine{Kernel: k, Ledger: l}
	}
	n1, n2 := nodes[0], nodes[1]

	// Passes on every node, every half second, until every peer is up.
	var endpoints []string // written for node 1's peer node 2, in turn
	pass := func(s *s1Node) {
		t.Helper()
		plan, err := s.eng.Plan(s.cfg.State)
		if err != nil {
			t.Fatalf("node %d: plan: %v", s.n, err)
		}
		if s == n1 {
			for _, op := range plan.Ops {
				if op.Kind != diff.KindWGPeer || op.WireGuard == nil || op.WireGuard.Peer == nil || op.WireGuard.Peer.PublicKey != model.Key(n2.key.PublicKey()) {
					continue
				}
				if ep := op.WireGuard.Peer.Endpoint; ep.IsValid() && (op.Action == diff.Create || hasEndpointChange(op)) {
					endpoints = append(endpoints, ep.String())
				}
			}
		}
		res, err := s.eng.Apply(context.Background(), plan)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			t.Fatalf("node %d: apply: %v", s.n, err)
		}
	}
	start := time.Now()
	for _, s := range nodes {
		pass(s)
	}
	firstPass := time.Since(start)
	handlesBefore := make([]string, len(nodes))
	for i, s := range nodes {
		handlesBefore[i] = nftHandles(s.ns.Nft(t, "-a", "list", "table", "inet", "talos_kubespan"))
		if got := s.ns.Nft(t, "list", "set", "inet", "talos_kubespan", "kubespan_targets_ipv4"); strings.Contains(got, "elements") {
			t.Errorf("node %d: the target set holds elements before any handshake:\n%s", s.n, got)
		}
	}
	if len(endpoints) != 1 || endpoints[0] != s1Dead {
		t.Fatalf("first pass wrote endpoints %v for node 1's peer node 2, want the first candidate %s", endpoints, s1Dead)
	}

	upAt := map[string]time.Duration{} // "1-3": when node 1 saw node 3 up
	// A bound for the wait, not a timing: rotation needs about 15 to 25 s.
	for deadline := time.Now().Add(90 * time.Second); len(upAt) < 6; {
		if time.Now().After(deadline) {
			t.Fatalf("peers up after %s: %v; endpoints written for node 1's peer node 2: %v\nnode 1:\n%s", time.Since(start), upAt, endpoints, n1.ns.WG(t, "show"))
		}
		time.Sleep(500 * time.Millisecond)
		for _, s := range nodes {
			pass(s)
			sts, err := s.eng.PeerStatuses(s.cfg.State)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range sts {
				for _, o := range nodes {
					pair := fmt.Sprintf("%d-%d", s.n, o.n)
					if _, seen := upAt[pair]; !seen && st.State == "up" && st.PublicKey == o.key.PublicKey().String() {
						upAt[pair] = time.Since(start)
					}
				}
			}
		}
	}
	// Every peer is up; the pass that saw it up filled the sets. One more
	// round lets each node see the others' states settle.
	for _, s := range nodes {
		pass(s)
	}
	meshUp := time.Since(start)
	if want := []string{s1Dead, n2.under() + ":51820"}; strings.Join(endpoints, " ") != strings.Join(want, " ") {
		t.Errorf("endpoints written for node 1's peer node 2: %v, want %v", endpoints, want)
	}
	if ep := wgField(t, n1, "endpoints", n2); ep != n2.under()+":51820" {
		t.Errorf("node 1's endpoint for node 2: %s", ep)
	}
	if ep := wgField(t, n2, "endpoints", n1); ep != n1.under()+":51820" {
		t.Errorf("node 2's endpoint for node 1 (learned from its handshake): %s", ep)
	}

	// The device, in wg's and ip's words: the kernel module, not wireguard-go.
	for _, s := range nodes {
		mustContain(t, fmt.Sprintf("node %d ip -d link", s.n), s.ns.IP(t, "-d", "link", "show", "kubespan"), "mtu 1420", " wireguard ")
		mustContain(t, fmt.Sprintf("node %d wg show", s.n), s.ns.WG(t, "show", "kubespan"),
			"public key: "+s.key.PublicKey().String(), "listening port: 51820", "fwmark: 0x20", "persistent keepalive: every 25 seconds")
		for _, o := range nodes {
			if o != s && wgField(t, s, "latest-handshakes", o) == "0" {
				t.Errorf("node %d: no handshake with node %d", s.n, o.n)
			}
		}
	}

	// The sets follow the mesh; nothing else was rewritten.
	for i, s := range nodes {
		var v4, v6 []string
		for _, o := range nodes {
			if o != s {
				v4 = append(v4, o.mesh(), fmt.Sprintf("10.244.%d.0/24", o.n))
				v6 = append(v6, fmt.Sprintf("fd7a:115c:a1e0::%d", o.n))
			}
		}
		if got := setElems(s.ns.Nft(t, "list", "set", "inet", "talos_kubespan", "kubespan_targets_ipv4")); !sameSet(got, v4) {
			t.Errorf("node %d: kubespan_targets_ipv4 holds %v, want %v", s.n, got, v4)
		}
		if got := setElems(s.ns.Nft(t, "list", "set", "inet", "talos_kubespan", "kubespan_targets_ipv6")); !sameSet(got, v6) {
			t.Errorf("node %d: kubespan_targets_ipv6 holds %v, want %v", s.n, got, v6)
		}
		if got := nftHandles(s.ns.Nft(t, "-a", "list", "table", "inet", "talos_kubespan")); got != handlesBefore[i] {
			t.Errorf("node %d: handles changed while peers came up:\nbefore:\n%s\nafter:\n%s", s.n, handlesBefore[i], got)
		}
	}

	// A ping between every pair, from mesh address to mesh address.
	pingStart := time.Now()
	for _, s := range nodes {
		for _, o := range nodes {
			if o == s {
				continue
			}
			if out, errOut, err := s.ns.Exec("", "/bin/ping", "-c", "1", "-w", "5", "-I", s.mesh(), o.mesh()); err != nil {
				t.Errorf("node %d cannot ping node %d through the mesh: %v\n%s%s", s.n, o.n, err, out, errOut)
			}
		}
	}
	pings := time.Since(pingStart)

	// Routing by mark: a marked packet to a target takes table 180 and the
	// link, the same address unmarked takes the main table.
	mustContain(t, "ip route get marked", n1.ns.IP(t, "route", "get", n2.mesh(), "mark", "0x40"), "dev kubespan table 180")
	mustContain(t, "ip route get unmarked", n1.ns.IP(t, "route", "get", n2.mesh()), "via 192.168.50.254 dev eth0")
	mustContain(t, "ip -6 route get marked", n1.ns.IP(t, "-6", "route", "get", "fd7a:115c:a1e0::2", "mark", "0x40"), "dev kubespan table 180")
	// What nftables marks: a probe table of our own (foreign to
	// netreconcile) counts, after kubespan_outgoing, the packets to a pod
	// of node 2 (a target) and to an address no peer holds.
	n1.ns.NftApply(t, `table inet probe {
	chain out {
		type filter hook output priority 10; policy accept;
		ip daddr 10.244.2.7 meta mark & 0x00000060 == 0x00000040 counter
		ip daddr 10.200.0.1 meta mark & 0x00000060 == 0x00000040 counter
		ip daddr 10.200.0.1 counter
	}
}`)
	tx0 := counter(t, n1.ns, "kubespan", "TX")
	sendUDP(t, n1.ns, "10.244.2.7:9", 3)
	tx1 := counter(t, n1.ns, "kubespan", "TX")
	sendUDP(t, n1.ns, "10.200.0.1:9", 3)
	tx2 := counter(t, n1.ns, "kubespan", "TX")
	c := nftCounters(t, n1.ns.Nft(t, "list", "chain", "inet", "probe", "out"))
	t.Logf("udp to a target: %d marked, kubespan tx +%d; to a non-target: %d of %d marked, kubespan tx +%d", c[0], tx1-tx0, c[1], c[2], tx2-tx1)
	if c[0] != 3 || tx1-tx0 < 3 {
		t.Errorf("packets to a target address: %d marked (want 3), kubespan tx +%d (want 3 or more)", c[0], tx1-tx0)
	}
	if c[2] != 3 || c[1] != 0 || tx2 != tx1 {
		t.Errorf("packets to a non-target address: %d of %d marked (want 0 of 3), kubespan tx +%d (want 0)", c[1], c[2], tx2-tx1)
	}

	// A one-shot apply of each node's file (the binary, a fresh process:
	// peers judged by their handshakes) changes nothing, and leaves the
	// probe table alone.
	for _, s := range nodes {
		out := runNetreconcile(t, s.ns, "apply", "-c", s.file, "--state-dir", s.state)
		if !strings.Contains(out, "No changes") {
			t.Errorf("node %d: a one-shot apply after the mesh came up changed something:\n%s", s.n, out)
		}
	}
	mustContain(t, "foreign table", n1.ns.Nft(t, "list", "tables"), "table inet probe")

	t.Logf("first pass on 3 nodes %s; peers up (since the first pass): %v; rotation (node 1 to node 2, dead first candidate) %s; mesh up %s; 6 pings %s",
		firstPass.Round(time.Millisecond), roundAll(upAt), upAt["1-2"].Round(time.Millisecond), meshUp.Round(time.Millisecond), pings.Round(time.Millisecond))
}

// s1Config derives node s's file from the example: its mesh addresses, key
// file (mode 0600), short rotation timings and its peers (the other nodes).
func s1Config(t *testing.T, example []byte, s *s1Node, nodes []*s1Node) string {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "kubespan.key")
	if err := os.WriteFile(keyFile, []byte(s.key.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(example, &doc); err != nil {
		t.Fatal(err)
	}
	wg := []string{"links", "kubespan", "wireguard"}
	yamlSet(t, &doc, []string{"links", "kubespan", "addresses"}, fmt.Sprintf("[%s/32, \"fd7a:115c:a1e0::%d/128\"]", s.mesh(), s.n))
	yamlSet(t, &doc, append(wg, "private-key-file"), keyFile)
	yamlSet(t, &doc, append(wg, "rotation"), s1Rotation)
	var peers []string
	for _, o := range nodes {
		if o == s {
			continue
		}
		eps := fmt.Sprintf("[\"%s:51820\"]", o.under())
		switch {
		case s.n == 1 && o.n == 2:
			eps = fmt.Sprintf("[\"%s\", \"%s:51820\"]", s1Dead, o.under())
		case s.n == 2 && o.n == 1:
			eps = "[]"
		}
		peers = append(peers, fmt.Sprintf("{public-key: %s, allowed-ips: [%s/32, \"fd7a:115c:a1e0::%d/128\", 10.244.%d.0/24], persistent-keepalive: 25s, endpoints: %s}",
			o.key.PublicKey(), o.mesh(), o.n, o.n, eps))
	}
	yamlSet(t, &doc, append(wg, "peers"), "["+strings.Join(peers, ", ")+"]")
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "kubespan.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// yamlSet replaces the value at a path of mapping keys with value (YAML).
func yamlSet(t *testing.T, doc *yaml.Node, path []string, value string) {
	t.Helper()
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		t.Fatalf("%s: %v", value, err)
	}
	n := doc.Content[0]
	for i, key := range path {
		found := false
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == key {
				if i == len(path)-1 {
					n.Content[j+1] = v.Content[0]
				}
				n, found = n.Content[j+1], true
				break
			}
		}
		if !found {
			t.Fatalf("the example has no %s", strings.Join(path[:i+1], "."))
		}
	}
}

func hasEndpointChange(op diff.Op) bool {
	for _, ch := range op.Changes {
		if ch.Field == "endpoint" {
			return true
		}
	}
	return false
}

// wgField returns what `wg show kubespan FIELD` says of peer o on node s.
func wgField(t *testing.T, s *s1Node, field string, o *s1Node) string {
	t.Helper()
	out := s.ns.WG(t, "show", "kubespan", field)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == o.key.PublicKey().String() {
			return f[1]
		}
	}
	t.Fatalf("node %d has no peer node %d:\n%s", s.n, o.n, out)
	return ""
}

var nftHandleLine = regexp.MustCompile(`(?m)^.* # handle \d+$`)

// nftHandles lists the lines of an `nft -a` listing that carry a handle.
func nftHandles(listing string) string {
	var out []string
	for _, m := range nftHandleLine.FindAllString(listing, -1) {
		out = append(out, strings.TrimSpace(m))
	}
	return strings.Join(out, "\n")
}

var setElemsRe = regexp.MustCompile(`(?s)elements = \{(.*?)\}`)

// setElems returns the elements of an `nft list set` listing.
func setElems(listing string) []string {
	m := setElemsRe.FindStringSubmatch(listing)
	if m == nil {
		return nil
	}
	var out []string
	for _, e := range strings.Split(m[1], ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	have := map[string]bool{}
	for _, x := range a {
		have[x] = true
	}
	for _, x := range b {
		if !have[x] {
			return false
		}
	}
	return true
}

var nftCounterRe = regexp.MustCompile(`counter packets (\d+)`)

// nftCounters returns the packet counts of a listing's counters, in order.
func nftCounters(t *testing.T, listing string) []int {
	t.Helper()
	var out []int
	for _, m := range nftCounterRe.FindAllStringSubmatch(listing, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	if len(out) != 3 {
		t.Fatalf("want 3 counters in:\n%s", listing)
	}
	return out
}

// sendUDP sends n datagrams from inside ns.
func sendUDP(t *testing.T, ns *NetNS, addr string, n int) {
	t.Helper()
	ns.Do(t, func() {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatalf("udp to %s: %v", addr, err)
		}
		defer c.Close()
		for i := 0; i < n; i++ {
			if _, err := c.Write([]byte("s1")); err != nil {
				t.Fatalf("udp to %s: %v", addr, err)
			}
		}
	})
}

func roundAll(m map[string]time.Duration) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.Round(100 * time.Millisecond).String()
	}
	return out
}
