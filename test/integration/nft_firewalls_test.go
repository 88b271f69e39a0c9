package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
	"github.com/netreconcile/netreconcile/test/nftcorpus"
)

// addFirewallLinks makes the links the firewalls' rules and netdev chains
// name: nft resolves iif, oif and a device to an index
// (veth pairs, as dummy may not be built; a bridge for meta ibrname).
func addFirewallLinks(t *testing.T, ns string) {
	t.Helper()
	for _, l := range []string{"eth0", "eth1", "wg0"} {
		nettest.IP(t, ns, "link", "add", l, "type", "veth", "peer", "name", l+"p")
	}
	nettest.IP(t, ns, "link", "add", "br0x", "type", "bridge")
}

// TestNftFirewalls applies whole firewalls as operators write them
// (test/nftcorpus/testdata/firewalls: inet filters with policy drop, NAT with
// maps, bridge, netdev ingress, arp, ip6, named sets and maps with flags,
// objects, dynamic sets, priorities by name, numbers in nft's syntaxes,
// quoted strings) with netreconcile in one fresh namespace and their nft
// script with nft -f in another, and requires the same tables (each rule's
// bytecode and words, and nft's listing), then that they are settled: diff
// empty, a second apply and daemon passes write nothing, and show's output
// applies with no change.
func TestNftFirewalls(t *testing.T) {
	nettest.RequireTool(t, "nft")
	files, err := filepath.Glob("../nftcorpus/testdata/firewalls/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no firewalls: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			script, keys, err := nftcorpus.FirewallScript(string(text))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			addFirewallLinks(t, e.ns)
			nsN := nettest.NewNetNS(t)
			addFirewallLinks(t, nsN)
			if strings.Contains(string(text), "\nlinks:\n") {
				// The links a firewall declares are the veth pair v0, v0p.
				nettest.IP(t, nsN, "link", "add", "v0", "type", "veth", "peer", "name", "v0p")
			}
			nettest.InNS(t, nsN, "nft", "-f", e.file("fw.nft", script))
			f := e.file("fw.yaml", string(text))
			e.apply(f)
			for _, k := range keys {
				if n, w := nftcorpus.ReadTable(t, nsN, k), nftcorpus.ReadTable(t, e.ns, k); n != w {
					t.Errorf("table %s: nft -f:\n%s\nnetreconcile:\n%s", k, n, w)
				}
			}
			e.settled(f, keys[0])
		})
	}
}

// TestNftFinding31ListingReadsBackToOtherBytecode: nft lists some rules
// without a match it takes for a dependency (`ip protocol tcp tcp dport 22`
// in an ip table as `tcp dport 22`, `meta l4proto icmp icmp type
// echo-request` in an inet table as `icmp type echo-request`), and that
// shorter text compiles to other bytecode. show printed it, and an apply of
// show's output rewrote every such rule (diff: "~ nft rule"); nft judges
// the two the same rule, and so does netreconcile now: a file in nft's
// words (as `show` prints a rule it did not write, or as a user copies
// them from `nft list ruleset`) keeps the rule as nft -f wrote it, its
// handle too, and daemon passes over it write nothing. show itself prints
// a rule netreconcile wrote in the file's words.
func TestNftFinding31ListingReadsBackToOtherBytecode(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("f.yaml", `version: 1
nftables:
  ip t4:
    chains:
      in:
        type: filter
        hook: input
        priority: filter
        rules:
          - ip protocol tcp tcp dport 22 accept
          - ip protocol icmp icmp type echo-request accept
          - meta l4proto tcp tcp dport 80 accept
  inet t:
    chains:
      in:
        type: filter
        hook: input
        priority: filter
        rules:
          - meta l4proto icmp icmp type { echo-request, time-exceeded } accept
          - meta l4proto ipv6-icmp icmpv6 type echo-request accept
          - ether type ip ip saddr 10.0.0.1 accept
  bridge b:
    chains:
      fw:
        type: filter
        hook: forward
        priority: filter
        rules:
          - ether type ip ip saddr 10.0.0.1 accept
`)
	e.apply(f)
	before := e.nftIn("-a", "list", "ruleset")
	e.roundTrip(f)
	listed := readFile(t, f)
	for written, words := range map[string]string{
		"ip protocol tcp tcp dport 22 accept":                                "tcp dport 22 accept",
		"ip protocol icmp icmp type echo-request accept":                     "icmp type echo-request accept",
		"meta l4proto icmp icmp type { echo-request, time-exceeded } accept": "icmp type { echo-request, time-exceeded } accept",
		"meta l4proto ipv6-icmp icmpv6 type echo-request accept":             "icmpv6 type echo-request accept",
	} {
		if !strings.Contains(e.nftIn("list", "ruleset"), words) {
			t.Errorf("nft lists no %q", words)
		}
		listed = strings.ReplaceAll(listed, written, words)
	}
	s := e.file("listed.yaml", listed)
	e.passes(s, 3)
	if after := e.nftIn("-a", "list", "ruleset"); after != before {
		t.Errorf("show's output rewrote rules:\n%s\nto:\n%s", before, after)
	}
}

// TestNftFinding31DeclaredSize65535OfAFedSet: a set the packet path fills,
// declared with `size 65535` as firewalls often write it (a ban list fed by
// `add @banned { ip saddr }`). The kernel gives a set fed by a rule that
// size when it has none, so the kernel's side reads that size as none; the
// compile's side did too when it compiled the rule with the set, but not
// when the rule was in the kernel already and the set was compiled alone:
// every apply after the first replaced the whole table, emptying the ban
// list. The set is now the same when either reading is the kernel's.
func TestNftFinding31DeclaredSize65535OfAFedSet(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("f.yaml", `version: 1
nftables:
  inet fw:
    sets:
      banned:
        type: ipv4_addr
        flags: [dynamic, timeout]
        timeout: 10m
        size: 65535
      seen:
        typeof: ip saddr . tcp dport
        flags: [dynamic]
        size: 65535
      nosize:
        type: ipv4_addr
        flags: [dynamic]
    chains:
      input:
        type: filter
        hook: input
        priority: filter
        rules:
          - ip saddr @banned drop
          - ct state new add @seen { ip saddr . tcp dport } add @nosize { ip saddr }
          - tcp dport 22 update @banned { ip saddr timeout 1h } drop
`)
	e.apply(f)
	nsN := nettest.NewNetNS(t)
	script, keys, err := nftcorpus.FirewallScript(mustRead(t, f))
	if err != nil {
		t.Fatal(err)
	}
	nettest.InNS(t, nsN, "nft", "-f", e.file("f.nft", script))
	if n, w := nftcorpus.ReadTable(t, nsN, keys[0]), nftcorpus.ReadTable(t, e.ns, keys[0]); n != w {
		t.Errorf("nft -f:\n%s\nnetreconcile:\n%s", n, w)
	}
	e.settled(f, keys[0])
}

// TestNftFinding31OwnSetElementNumbers: an element of a set of
// netreconcile's own types with a leading zero (a port list copied from a
// file that pads them) was read in decimal, where nft reads octal: the set
// held 10 where nft -f of the same text holds 8. It is refused now, at
// its place in the file, and the set written in decimal is nft's.
func TestNftFinding31OwnSetElementNumbers(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	bad := e.file("bad.yaml", "version: 1\nnftables:\n  inet t:\n    sets:\n      ports: {type: inet_service, elements: [22, 010]}\n")
	if r := e.cli("validate", "-c", bad); r.Code != 1 || !strings.Contains(r.Stderr, "bad.yaml:5:50: nftables.inet t.sets.ports.elements[1]") || !strings.Contains(r.Stderr, "octal") {
		t.Errorf("validate: exit %d, want 1 and the element's place and nft's octal\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.nftIn("list", "ruleset"); out != "" {
		t.Errorf("a refused file wrote:\n%s", out)
	}
	f := e.file("f.yaml", "version: 1\nnftables:\n  inet t:\n    sets:\n      ports: {type: inet_service, elements: [22, 8]}\n      protos: {type: inet_proto, elements: [8, ipip]}\n      marks: {type: mark, elements: [010, 0x10]}\n")
	e.apply(f)
	nsN := nettest.NewNetNS(t)
	nettest.InNS(t, nsN, "nft", "-f", e.file("f.nft", "table inet t {\n\tset ports { type inet_service; elements = { 22, 010 }; }\n\tset protos { type inet_proto; elements = { 010, ipip }; }\n\tset marks { type mark; elements = { 010, 0x10 }; }\n}\n"))
	if n, w := nftcorpus.ReadTable(t, nsN, "inet t"), nftcorpus.ReadTable(t, e.ns, "inet t"); n != w {
		t.Errorf("nft -f:\n%s\nnetreconcile:\n%s", n, w)
	}
	e.settled(f, "inet t")
}
