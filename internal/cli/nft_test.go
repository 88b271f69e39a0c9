package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// nftEnv is a fresh namespace with the KubeSpan example's file copied to a
// temporary directory (so tests may edit it) and a private state directory.
// The copy's target sets take every peer (`peers: all`): no peer of the
// example is reachable, so with `peers: up` they would stay empty.
type nftEnv struct {
	ns, dir, config, state string
}

func newNftEnv(t *testing.T) *nftEnv {
	t.Helper()
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	dir := t.TempDir()
	conf, _ := nettest.KubeSpanExample(t, "../../examples/kubespan.yaml", dir, ns)
	if strings.Count(conf, "peers: up}") != 2 {
		t.Fatalf("the example's target sets are not both fed by the peers that are up:\n%s", conf)
	}
	e := &nftEnv{ns: ns, dir: dir, config: filepath.Join(dir, "kubespan.yaml"), state: filepath.Join(dir, "state")}
	e.write(t, strings.ReplaceAll(conf, "peers: up}", "peers: all}"))
	return e
}

func (e *nftEnv) write(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(e.config, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *nftEnv) run(t *testing.T, cmd string, wantCode int) string {
	t.Helper()
	r := nettest.CLI(t, cmd, "-c", e.config, "--netns", e.ns, "--state-dir", e.state)
	if r.Code != wantCode {
		t.Fatalf("netreconcile %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", cmd, r.Code, wantCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func (e *nftEnv) nft(t *testing.T, args ...string) string {
	t.Helper()
	return nettest.InNS(t, e.ns, "nft", args...)
}

var handleRe = regexp.MustCompile(`(?m)^\s*(.*\S) # handle (\d+)$`)

// ruleHandles maps each listed rule (and set, chain) line to its handle.
func ruleHandles(listing string) map[string]string {
	out := map[string]string{}
	for _, m := range handleRe.FindAllStringSubmatch(listing, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// handleLines lists every line carrying a handle (table, sets, chains,
// rules), in order.
func handleLines(listing string) []string {
	var out []string
	for _, m := range handleRe.FindAllStringSubmatch(listing, -1) {
		out = append(out, strings.TrimSpace(m[0]))
	}
	return out
}

func TestNftKubeSpanExample(t *testing.T) {
	e := newNftEnv(t)
	out := e.run(t, "apply", 0)
	if !strings.Contains(out, "+ nft table inet talos_kubespan") {
		t.Errorf("apply did not create the table:\n%s", out)
	}
	got := e.nft(t, "list", "table", "inet", "talos_kubespan")
	for _, want := range []string{
		"set kubespan_targets_ipv4 {\n\t\ttype ipv4_addr\n\t\tflags interval\n",
		"set kubespan_targets_ipv6 {\n\t\ttype ipv6_addr\n\t\tflags interval\n",
		"chain kubespan_prerouting {\n\t\ttype filter hook prerouting priority filter; policy accept;\n" +
			"\t\tmeta mark & 0x00000060 == 0x00000020 accept\n" +
			"\t\tip daddr @kubespan_targets_ipv4 meta mark set meta mark & 0xffffffdf | 0x00000040 accept\n" +
			"\t\tip6 daddr @kubespan_targets_ipv6 meta mark set meta mark & 0xffffffdf | 0x00000040 accept\n\t}",
		"chain kubespan_outgoing {\n\t\ttype route hook output priority filter; policy accept;\n\t\toifname \"lo\" accept\n",
		"tcp flags syn tcp option maxseg size set 1380",
		"elements = { 10.100.0.2, 10.100.0.3,\n\t\t\t     10.244.2.0/24, 10.244.3.0/24 }",
		"elements = { fd7a:115c:a1e0::2,\n\t\t\t     fd7a:115c:a1e0::3 }",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("nft list table lacks %q; got:\n%s", want, got)
		}
	}
	if ip := nettest.IP(t, e.ns, "rule", "show"); !strings.Contains(ip, "32500:\tfrom all fwmark 0x40/0x60 lookup 180") {
		t.Errorf("ip rule lacks the 32500 rule:\n%s", ip)
	}
	if out := e.run(t, "apply", 0); !strings.Contains(out, "No changes") {
		t.Errorf("second apply changed something:\n%s", out)
	}
}

func TestNftOneElementChangesOnlyThatElement(t *testing.T) {
	e := newNftEnv(t)
	e.run(t, "apply", 0)
	before := handleLines(e.nft(t, "-a", "list", "table", "inet", "talos_kubespan"))
	data, _ := os.ReadFile(e.config)
	// The first set is kubespan_targets_ipv4: a literal element beside the peers'.
	e.write(t, strings.Replace(string(data), "elements-from:", "elements: [10.250.0.0/16]\n        elements-from:", 1))
	plan := e.run(t, "diff", 2)
	want := "+ nft element inet talos_kubespan set kubespan_targets_ipv4 element 10.250.0.0/16\n\nPlan: 1 to create, 0 to update, 0 to replace, 0 to delete.\nDisruption: 1 in place.\n"
	if plan != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", plan, want)
	}
	e.run(t, "apply", 0)
	listing := e.nft(t, "-a", "list", "table", "inet", "talos_kubespan")
	if !strings.Contains(listing, "10.250.0.0/16") {
		t.Fatalf("element not added:\n%s", listing)
	}
	after := handleLines(listing)
	if len(before) != 14 { // the table, 2 sets, 2 chains, 9 rules
		t.Errorf("found %d lines with handles before the change, want 14:\n%s", len(before), strings.Join(before, "\n"))
	}
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("handles changed:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

func TestNftForeignTablesSurvive(t *testing.T) {
	e := newNftEnv(t)
	// Same name, other family; and another table of the same family.
	e.nft(t, "add", "table", "ip", "talos_kubespan")
	e.nft(t, "add", "chain", "ip", "talos_kubespan", "theirs")
	e.nft(t, "add", "table", "inet", "someone_else")
	e.run(t, "apply", 0)
	data, _ := os.ReadFile(e.config)
	// Prune: the file drops its nftables section.
	e.write(t, strings.Split(string(data), "nftables:")[0])
	out := e.run(t, "apply", 0)
	if !strings.Contains(out, "- nft table inet talos_kubespan") {
		t.Errorf("prune did not delete our table:\n%s", out)
	}
	got := e.nft(t, "list", "tables")
	if got != "table ip talos_kubespan\ntable inet someone_else\n" {
		t.Errorf("tables after prune:\n%s", got)
	}
	if !strings.Contains(e.nft(t, "list", "table", "ip", "talos_kubespan"), "chain theirs") {
		t.Error("foreign chain lost")
	}
}

func TestNftRuleEditedBehindOurBackIsPutBack(t *testing.T) {
	e := newNftEnv(t)
	e.run(t, "apply", 0)
	orig := e.nft(t, "-a", "list", "chain", "inet", "talos_kubespan", "kubespan_prerouting")
	h := ruleHandles(orig)["ip daddr @kubespan_targets_ipv4 meta mark set meta mark & 0xffffffdf | 0x00000040 accept"]
	if h == "" {
		t.Fatalf("rule not found:\n%s", orig)
	}
	e.nft(t, "replace", "rule", "inet", "talos_kubespan", "kubespan_prerouting", "handle", h, "ip", "daddr", "@kubespan_targets_ipv4", "accept")
	plan := e.run(t, "diff", 2)
	if !strings.Contains(plan, "~ nft rule inet talos_kubespan chain kubespan_prerouting rule 2") || !strings.Contains(plan, "Plan: 0 to create, 1 to update") {
		t.Errorf("plan does not replace the edited rule in place:\n%s", plan)
	}
	e.run(t, "apply", 0)
	if got := e.nft(t, "-a", "list", "chain", "inet", "talos_kubespan", "kubespan_prerouting"); got != orig {
		t.Errorf("chain after repair:\n%s\nwant:\n%s", got, orig)
	}
	e.run(t, "apply", 0)
}

func TestNftGoldenParity(t *testing.T) {
	e := newNftEnv(t)
	e.run(t, "apply", 0)
	ours := e.nft(t, "list", "table", "inet", "talos_kubespan")
	other := nettest.NewNetNS(t)
	nettest.InNS(t, other, "nft", "-f", "../../examples/testdata/kubespan.nft")
	theirs := nettest.InNS(t, other, "nft", "list", "table", "inet", "talos_kubespan")
	if ours != theirs {
		t.Errorf("netreconcile's table:\n%s\nnft -f's table:\n%s", ours, theirs)
	}
}

// TestNftMarksPackets sends real packets: namespace A reaches 10.99.0.2 (in
// namespace B, over veth va-vb) only through routing table 180, which rule
// 32500 selects for packets marked 0x40/0x60. Unmarked packets follow the
// main table into a dead end (veth vc). B counts the UDP packets that reach
// it: they arrive only if the nftables rule netreconcile wrote marks them.
func TestNftMarksPackets(t *testing.T) {
	nettest.RequireTool(t, "nft")
	nettest.RequireTool(t, "bash")
	a, b := nettest.NewNetNS(t), nettest.NewNetNS(t)
	nettest.IP(t, a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b)
	nettest.IP(t, a, "link", "add", "vc", "type", "veth", "peer", "name", "vd")
	for _, l := range []string{"va", "vc", "vd", "lo"} {
		nettest.IP(t, a, "link", "set", l, "up")
	}
	nettest.IP(t, a, "addr", "add", "10.98.0.1/32", "dev", "va")
	nettest.IP(t, a, "route", "add", "10.99.0.0/24", "dev", "vc")
	nettest.IP(t, b, "link", "set", "vb", "up")
	nettest.IP(t, b, "addr", "add", "10.99.0.2/32", "dev", "vb")
	nettest.IP(t, b, "route", "add", "10.98.0.1/32", "dev", "vb")
	nettest.InNS(t, b, "nft", "add table ip count; add chain ip count in { type filter hook prerouting priority 0; }; add rule ip count in ip saddr 10.98.0.1 udp dport 9 counter")

	send := func() { nettest.InNS(t, a, "bash", "-c", "for i in 1 2 3; do echo x > /dev/udp/10.99.0.2/9; done") }
	counted := func() bool {
		// Delivery over veth is synchronous with the send but the first
		// packets wait for ARP: look a few times.
		for i := 0; i < 20; i++ {
			if !strings.Contains(nettest.InNS(t, b, "nft", "list", "chain", "ip", "count", "in"), "counter packets 0 ") {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	send()
	if counted() {
		t.Fatal("B received packets before any mark is set: the test cannot tell marked packets apart")
	}
	dir := t.TempDir()
	cfg := nettest.WriteFile(t, dir, "mark.yaml", `version: 1
links:
  va: {kind: device}
routes:
  - {to: default, family: ipv4, dev: va, table: 180}
rules:
  - {priority: 32500, family: ipv4, fwmark: 0x40/0x60, table: 180}
nftables:
  inet mark_test:
    sets:
      targets: {type: ipv4_addr, flags: [interval], elements: [10.99.0.0/24]}
    chains:
      out:
        type: route
        hook: output
        priority: filter
        rules:
          - ip daddr @targets meta mark set meta mark & 0xffffffdf | 0x00000040 counter accept
`)
	if r := nettest.CLI(t, "apply", "-c", cfg, "--netns", a, "--state-dir", filepath.Join(dir, "state")); r.Code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	send()
	if !counted() {
		t.Fatalf("no marked packet reached B\nA:\n%s\nB:\n%s", nettest.InNS(t, a, "nft", "list", "ruleset"), nettest.InNS(t, b, "nft", "list", "ruleset"))
	}
}

// The Coil gateway's masquerade and forwarding. The file's links (ipip with
// FoU) need modules this machine lacks, so only its sysctls and nftables
// parts are applied here.
func TestNftCoilGatewayMasquerade(t *testing.T) {
	nettest.RequireTool(t, "nft")
	data, err := os.ReadFile("../../examples/coil-egress-gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full := nettest.WriteFile(t, dir, "full.yaml", string(data))
	if r := nettest.CLI(t, "validate", "-c", full); r.Code != 0 {
		t.Fatalf("validate: %s%s", r.Stdout, r.Stderr)
	}
	_, nftPart, ok := strings.Cut(string(data), "\nnftables:\n")
	if !ok {
		t.Fatal("no nftables section in the example")
	}
	_, sysPart, ok := strings.Cut(string(data), "\nsysctls:\n")
	if !ok {
		t.Fatal("no sysctls section in the example: the gateway must declare its forwarding")
	}
	sysPart, _, _ = strings.Cut(sysPart, "\nfou:\n")
	cfg := nettest.WriteFile(t, dir, "nft.yaml", "version: 1\nsysctls:\n"+sysPart+"\nnftables:\n"+nftPart)
	ns := nettest.NewNetNS(t)
	// A fresh namespace copies the host's IPv4 forwarding.
	nettest.InNS(t, ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=0")
	args := []string{"-c", cfg, "--netns", ns, "--state-dir", filepath.Join(dir, "state")}
	if r := nettest.CLI(t, append([]string{"apply"}, args...)...); r.Code != 0 {
		t.Fatalf("apply: %s%s", r.Stdout, r.Stderr)
	}
	want := "table ip coil_egress {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n" +
		"\t\toifname \"eth0\" ip saddr != 10.20.30.1 masquerade\n\t}\n}\n"
	if got := nettest.InNS(t, ns, "nft", "list", "table", "ip", "coil_egress"); got != want {
		t.Errorf("nft list table:\n%s\nwant:\n%s", got, want)
	}
	if got := strings.TrimSpace(nettest.InNS(t, ns, "sysctl", "-n", "net.ipv4.ip_forward")); got != "1" {
		t.Errorf("net.ipv4.ip_forward = %s, want 1", got)
	}
	if r := nettest.CLI(t, append([]string{"apply"}, args...)...); !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: %s%s", r.Stdout, r.Stderr)
	}
}
