package integration

// Regression tests for the defects the randomized walk (test/walk) found.
// Each test is the shrunk sequence of its finding, and names the finding and
// the seed that found it; docs/walk-findings.md groups them by class.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// converged fails the test unless a second diff of f is empty.
func (e *env) converged(f string) {
	e.t.Helper()
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		e.t.Errorf("second diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A bridge keeps the MTU the file gives it when a port of another MTU joins
// or leaves: the kernel moves a bridge's MTU to its ports' smallest unless the
// MTU was set after creation.
// Walk finding 1 (host seed 1, step 9).
func TestWalkFindingBridgeMTUWithPorts(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
links:
  b1: {kind: bridge, mtu: 1450}
  pa: {kind: veth, mtu: 1500, veth: {peer: pb}}
  pb: {kind: veth, mtu: 9000, master: b1, veth: {peer: pa}}
`)
	e.apply(f)
	if out := e.ip("link", "show", "b1"); !strings.Contains(out, "mtu 1450 ") {
		t.Errorf("after enslaving a port of MTU 9000:\n%s", out)
	}
	e.converged(f)
	// The port leaves (deleted with its pair): the bridge stays at 1450.
	f = e.file("b.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, mtu: 1450}\n")
	e.apply(f)
	if out := e.ip("link", "show", "b1"); !strings.Contains(out, "mtu 1450 ") {
		t.Errorf("after the port left:\n%s", out)
	}
	e.converged(f)
}

// Removing a link's last IPv4 address flushes every IPv4 route through it,
// ours included: the routes the file keeps (or adds) on that link are there
// after one apply.
// Walk finding 2 (host seed 1, step 9).
func TestWalkFindingLastIPv4Address(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [10.19.0.1/24]}
routes:
  - {to: 172.16.1.0/24, via: 10.201.0.1, dev: b1, onlink: true}
`))
	f := e.file("b.yaml", `version: 1
links:
  b1: {kind: bridge}
routes:
  - {to: 172.16.1.0/24, via: 10.201.0.1, dev: b1, onlink: true}
  - {to: 172.16.2.0/24, via: 10.201.0.1, dev: b1, onlink: true, table: 100}
`)
	e.apply(f)
	for _, want := range []string{"172.16.1.0/24 via 10.201.0.1 dev b1", "172.16.2.0/24 via 10.201.0.1 dev b1 table 100"} {
		if out := e.ip("route", "show", "table", "all"); !strings.Contains(out, want) {
			t.Errorf("route %q missing after the last IPv4 address went:\n%s", want, out)
		}
	}
	e.converged(f)
}

// Renaming a vxlan (the same VNI and port under another name) deletes the old
// one before creating the new: the kernel allows one per VNI and port.
// Walk finding 3 (host seed 1, step 10).
func TestWalkFindingRenameVXLAN(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  x2: {kind: vxlan, vxlan: {id: 10, remote: 198.51.100.3, port: 4790}}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  x0: {kind: vxlan, vxlan: {id: 10, remote: 198.51.100.3, port: 4790}}\n")
	e.apply(f)
	if out := e.ip("-o", "link", "show"); strings.Contains(out, " x2:") || !strings.Contains(out, " x0:") {
		t.Errorf("after the rename:\n%s", out)
	}
	e.converged(f)
}

// A userspace WireGuard device gets the MTU the file gives it: wireguard-go's
// daemon opens the device again with its own default (1420) after the first
// process returned, and used to undo an MTU set too early.
// Walk finding 4 (host seed 2, step 7).
func TestWalkFindingWireGuardGoMTU(t *testing.T) {
	nettest.RequireTool(t, "wireguard-go")
	e := newEnv(t)
	var links strings.Builder
	var names []string
	for i := 0; i < 4; i++ {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		key := filepath.Join(e.dir, fmt.Sprintf("k%d", i))
		if err := os.WriteFile(key, []byte(k.String()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// wireguard-go's sockets are host-wide: names unique to this run.
		n := fmt.Sprintf("wgm%d-%d", os.Getpid()%100000, i)
		names = append(names, n)
		fmt.Fprintf(&links, "  %s: {kind: wireguard, mtu: 1280, wireguard: {private-key-file: %s, userspace: true}}\n", n, key)
	}
	t.Cleanup(func() { stopNetNSProcesses(e.ns) })
	f := e.file("a.yaml", "version: 1\nlinks:\n"+links.String())
	e.apply(f)
	for _, n := range names {
		if out := e.ip("link", "show", n); !strings.Contains(out, "mtu 1280 ") {
			t.Errorf("%s:\n%s", n, out)
		}
	}
	e.converged(f)
}

// stopNetNSProcesses ends the wireguard-go daemons the test's applies started
// in ns, so that their host-wide sockets go with the namespace.
func stopNetNSProcesses(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, pid := range strings.Fields(string(out)) {
		_ = nettest.ExecErr("kill", pid)
	}
}

// Setting a link down flushes the routes through it; the stale route the
// plan deletes on that link is already gone, which is what the plan wants.
// Walk finding 6 (host seed 4, step 7).
func TestWalkFindingRouteGoneWithLinkDown(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  b1: {kind: bridge}
routes:
  - {to: "2001:db8:3::/64", dev: b1, table: 300, metric: 10}
`))
	f := e.file("b.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, state: down}\n")
	e.apply(f)
	e.converged(f)
}

// A vxlan recreated with a new VNI while another takes its old one: the old
// one goes first (the kernel holds a VNI once per port).
// Walk finding 7 (host seed 3, step 3).
func TestWalkFindingVXLANSwapVNI(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  x2: {kind: vxlan, vxlan: {id: 31, remote: 198.51.100.4}}\n"))
	f := e.file("b.yaml", `version: 1
links:
  x1: {kind: vxlan, vxlan: {id: 31, remote: 198.51.100.5}}
  x2: {kind: vxlan, vxlan: {id: 32, remote: 198.51.100.4}}
`)
	e.apply(f)
	e.converged(f)
}

// A veth pair whose first end is enslaved to a declared bridge: the other
// end is configured after the pair exists, not before.
// Walk finding 9 (host seed 7, step 17).
func TestWalkFindingVethPeerAfterEnslavedEnd(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
links:
  b0: {kind: bridge}
  p2a: {kind: veth, master: b0, veth: {peer: p2c}}
  p2c: {kind: veth, veth: {peer: p2a}, addresses: [10.82.0.1/24]}
`)
	e.apply(f)
	e.converged(f)
}

// Setting a link down deletes its IPv6 addresses (keep_addr_on_down is off
// by default): the file's are added again in the same apply, and a stale
// one is not deleted twice.
// Walk finding 10 (host seed 8).
func TestWalkFindingIPv6AddressesOnLinkDown(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, addresses: [fd00:58::1/64, fd00:58::2/64, 10.1.0.1/24]}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, state: down, addresses: [fd00:58::1/64, 10.1.0.1/24]}\n")
	e.apply(f)
	if out := e.ip("addr", "show", "b1"); !strings.Contains(out, "fd00:58::1/64") || strings.Contains(out, "fd00:58::2/64") {
		t.Errorf("after setting b1 down:\n%s", out)
	}
	e.converged(f)
}

// A pool address on the second end of a veth pair that leaves the file: the
// address goes with the pair, and is not deleted from a link that is gone.
// Walk finding 11 (host seed 9).
func TestWalkFindingPoolAddressOnVethPeer(t *testing.T) {
	e := newEnv(t)
	pool := "pools:\n  pw: {subnets: [10.99.0.0/24], block-size-bits: 2, reuse-delay: 0s}\n"
	e.apply(e.file("a.yaml", "version: 1\n"+pool+`links:
  lo: {kind: device, state: up}
  p2a: {kind: veth, veth: {peer: p2c}}
  p2c: {kind: veth, veth: {peer: p2a}, addresses: [{pool: pw}]}
`))
	f := e.file("b.yaml", "version: 1\n"+pool+"links:\n  lo: {kind: device, state: up}\n")
	e.apply(f)
	e.converged(f)
}

// Replacing a link's only IPv4 address (a change of noprefixroute, scope or
// peer deletes and adds it) flushes the link's IPv4 routes: they are added
// again in the same apply.
// Walk finding 12 (host seed 10).
func TestWalkFindingReplaceOnlyIPv4Address(t *testing.T) {
	e := newEnv(t)
	routes := "routes:\n  - {to: 172.16.4.0/24, dev: b1}\n"
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, addresses: [10.19.0.3/24]}\n"+routes))
	f := e.file("b.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, addresses: [{address: 10.19.0.3/24, noprefixroute: true}]}\n"+routes)
	e.apply(f)
	if out := e.ip("route", "show", "172.16.4.0/24"); !strings.Contains(out, "dev b1") {
		t.Errorf("route 172.16.4.0/24 dev b1 missing after the address was replaced: %q", out)
	}
	e.converged(f)
}

// A veth pair whose enslaved end goes with the other (the pair is recreated
// under a new peer name): the bridge, left without ports, keeps its declared
// MTU instead of falling back to 1500.
// Walk finding 1 (host seed 1, step 9).
func TestWalkFindingBridgeMTUPeerDeleted(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  b2: {kind: bridge, mtu: 9000}
  p1a: {kind: veth, mtu: 9000, master: b2, veth: {peer: p1b}}
  p1b: {kind: veth, veth: {peer: p1a}}
`))
	f := e.file("b.yaml", `version: 1
links:
  b2: {kind: bridge, mtu: 9000}
  p1b: {kind: veth, veth: {peer: p1c}}
  p1c: {kind: veth, veth: {peer: p1b}}
`)
	e.apply(f)
	if out := e.ip("link", "show", "b2"); !strings.Contains(out, "mtu 9000 ") {
		t.Errorf("after the enslaved end went with its pair:\n%s", out)
	}
	e.converged(f)
}

// The kernel keeps one scope per IPv4 subnet on a link: the file that moves
// a subnet's addresses to another scope has the old ones deleted before the
// new ones are added (EINVAL otherwise), and the routes through the link,
// flushed while it has no IPv4 address, are added again in the same apply.
// Walk seed 90934393032559, step 73.
// Walk finding 17 (host seed 90934393032559, step 73).
func TestWalkFindingSubnetScopeChange(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [{address: 10.87.1.2/24, scope: link}]}
routes:
  - {to: 172.16.7.0/24, via: 10.87.1.254, table: 100}
`))
	f := e.file("b.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [10.87.1.3/24, 10.87.1.4/24]}
routes:
  - {to: 172.16.7.0/24, via: 10.87.1.254, table: 100}
`)
	e.apply(f)
	out := e.ip("-4", "addr", "show", "b1")
	for _, a := range []string{"10.87.1.3/24", "10.87.1.4/24"} {
		if !strings.Contains(out, a) {
			t.Errorf("%s missing after the scope change:\n%s", a, out)
		}
	}
	if strings.Contains(out, "10.87.1.2/") {
		t.Errorf("the old address is still there:\n%s", out)
	}
	if out := e.ip("route", "show", "table", "100"); !strings.Contains(out, "172.16.7.0/24 via 10.87.1.254") {
		t.Errorf("the route through b1 is gone:\n%s", out)
	}
	e.converged(f)
}

// A pool address on a link the plan leaves out for a conflict (here a veth
// end whose pair needs a foreign bridge) is not allocated: diff and apply
// report the same conflicts, and the pool hands out nothing.
// Walk seed 82024829848149, step 69.
// Walk finding 20 (host seed 82024829848149, step 69).
// Walk finding 34 (host seed 42168518117009, step 71).
func TestWalkFindingPoolAddressOnLeftOutLink(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "fb0", "type", "bridge")
	f := e.file("a.yaml", `version: 1
pools:
  pw: {subnets: [10.99.0.0/24], block-size-bits: 2, export-table: 119, reuse-delay: 0s}
links:
  lo: {kind: device, state: up}
  fb0: {kind: bridge}
  p1b: {kind: veth, master: fb0, veth: {peer: p1c}}
  p1c: {kind: veth, veth: {peer: p1b}, addresses: [{pool: pw}]}
`)
	d := e.cli("diff", "-c", f)
	a := e.cli("apply", "-c", f)
	conflicts := func(s string) string {
		if i := strings.Index(s, "conflict(s)"); i >= 0 {
			return s[i:]
		}
		return s
	}
	if d.Code != 1 || a.Code != 1 || conflicts(d.Stderr) != conflicts(a.Stderr) {
		t.Fatalf("diff (exit %d) and apply (exit %d) report different conflicts:\n%s\n%s", d.Code, a.Code, d.Stderr, a.Stderr)
	}
	if want := "address (from pool pw) dev p1c is left out: link p1c is in conflict"; !strings.Contains(a.Stderr, want) {
		t.Errorf("apply does not say %q:\n%s", want, a.Stderr)
	}
	if out := e.ip("route", "show", "table", "all"); strings.Contains(out, "10.99.0.") {
		t.Errorf("a block was taken for a link left out:\n%s", out)
	}
	if r := e.cli("ipam", "list", "-c", f); strings.Contains(r.Stdout, "10.99.0.") {
		t.Errorf("an address was allocated for a link left out:\n%s", r.Stdout)
	}
}

// A rule that sends every lookup elsewhere (from all prohibit, a not rule
// with a drop action) comes before "lookup main": the kernel's check of a
// route's gateway, a policy lookup, fails in it. The route is added all the
// same, whether the rule is one the file drops in the same apply (walk seed
// 6, step 13), one it keeps, or someone else's, and no rule of the check is
// left behind. Walk finding 8.
func TestWalkFindingCatchAllRuleGatewayCheck(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nrules:\n  - {priority: 30000, family: ipv4, action: prohibit}\n"))
	f := e.file("b.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [10.88.1.3/24, fd00:88::3/64]}
routes:
  - {to: 172.16.3.0/24, via: 10.88.1.200, dev: b1}
`)
	e.apply(f)
	if out := e.ip("route", "show", "172.16.3.0/24"); !strings.Contains(out, "via 10.88.1.200 dev b1") {
		t.Errorf("route through the gateway missing after the catch-all rule went: %q", out)
	}
	e.converged(f)

	// Someone else's catch-all rules, and one the file keeps.
	e.ip("rule", "add", "priority", "29000", "not", "from", "10.50.0.0/16", "blackhole")
	e.ip("-6", "rule", "add", "priority", "29000", "prohibit")
	f = e.file("c.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [10.88.1.3/24, fd00:88::3/64]}
routes:
  - {to: 172.16.3.0/24, via: 10.88.1.200, dev: b1}
  - {to: 172.16.4.0/24, via: 10.88.1.200, table: 200}
  - {to: 172.16.5.0/24, via: 10.88.1.200}
  - {to: "2001:db8:4::/64", via: "fd00:88::200", dev: b1, table: 200}
rules:
  - {priority: 30000, family: ipv4, action: prohibit}
`)
	e.apply(f)
	out := e.ip("route", "show", "table", "all") + e.ip("-6", "route", "show", "table", "all")
	for _, want := range []string{"172.16.4.0/24 via 10.88.1.200 dev b1 table 200", "172.16.5.0/24 via 10.88.1.200 dev b1", "2001:db8:4::/64 via fd00:88::200 dev b1"} {
		if !strings.Contains(out, want) {
			t.Errorf("route %q missing with catch-all rules in the way:\n%s", want, out)
		}
	}
	if rules := e.rules(); strings.Contains(rules, "10.88.1.200") || strings.Contains(rules, "fd00:88::200") {
		t.Errorf("a rule of the gateway check is left:\n%s", rules)
	}
	e.converged(f)
}

// A veth pair declared again under a new peer name is recreated, and its old
// peer goes with it; when the recreate is left out (the end needs a foreign
// bridge), the old peer stays, and the conflicts say so. Walk seed
// 82024829848149, step 95 (finding 21).
func TestWalkFindingStalePeerOfLeftOutPair(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  p2a: {kind: veth, veth: {peer: p2c}}
  p2c: {kind: veth, veth: {peer: p2a}}
`))
	e.ip("link", "add", "fb0", "type", "bridge")
	f := e.file("b.yaml", `version: 1
links:
  fb0: {kind: bridge}
  p2a: {kind: veth, master: fb0, veth: {peer: p2b}}
  p2b: {kind: veth, veth: {peer: p2a}}
`)
	d, a := e.cli("diff", "-c", f), e.cli("apply", "-c", f)
	want := "link p2c is not deleted: it goes with its peer p2a, which is left out"
	for _, r := range []struct {
		what string
		out  string
	}{{"diff", d.Stderr}, {"apply", a.Stderr}} {
		if !strings.Contains(r.out, want) {
			t.Errorf("%s does not say %q:\n%s", r.what, want, r.out)
		}
	}
	if out := e.ip("link", "show", "p2c"); !strings.Contains(out, "p2c@p2a") {
		t.Errorf("p2c is not as it was:\n%s", out)
	}
}

// A link of ours that the file drops but that stays (the undeclared peer of
// a declared veth end, or a link whose delete is a conflict) keeps none of
// our routes and addresses: they were left to the link's delete, which does
// not happen. Walk findings 19 (guest seed 81081787807254, step 12) and 22
// (host seed 78411014980141, step 84).
// Walk finding 19 (guest seed 81081787807254, step 12).
// Walk finding 22 (host seed 78411014980141, step 84).
func TestWalkFindingRoutesOnStaleLinkThatStays(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  p1a: {kind: veth, veth: {peer: p1c}, addresses: [10.61.0.1/24, fd00:61::1/64]}
  p1c: {kind: veth, veth: {peer: p1a}, addresses: [10.62.0.1/24]}
routes:
  - {to: 172.16.3.0/24, dev: p1a, table: 200}
  - {to: "2001:db8:4::/64", dev: p1a, table: 200, metric: 10}
  - {to: 172.16.2.0/24, dev: p1c, metric: 100}
`))
	// p1a lives on as p1c's undeclared peer.
	f := e.file("b.yaml", "version: 1\nlinks:\n  p1c: {kind: veth, veth: {peer: p1a}, addresses: [10.62.0.1/24]}\nroutes:\n  - {to: 172.16.2.0/24, dev: p1c, metric: 100}\n")
	e.apply(f)
	if out := e.ip("route", "show", "table", "all", "dev", "p1a") + e.ip("-6", "route", "show", "table", "all", "dev", "p1a"); strings.Contains(out, "172.16.3.0/24") || strings.Contains(out, "2001:db8:4::/64") {
		t.Errorf("routes of the file's first step left on p1a:\n%s", out)
	}
	if out := e.ip("addr", "show", "p1a"); strings.Contains(out, "10.61.0.1") || strings.Contains(out, "fd00:61::1") {
		t.Errorf("addresses of the file's first step left on p1a:\n%s", out)
	}
	e.converged(f)

	// The pair's delete is a conflict (a foreign vxlan on p1c): the pair
	// stays, and our routes through it go (its addresses are left out
	// with it, and the conflicts say so).
	e.ip("link", "add", "fc9", "type", "vxlan", "id", "9", "dstport", "4789", "dev", "p1c")
	f = e.file("c.yaml", "version: 1\n")
	r := e.cli("apply", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "link p1c cannot be deleted") || !strings.Contains(r.Stderr, "address 10.62.0.1/24 dev p1c is left out") {
		t.Fatalf("apply: exit %d, want the conflict of p1c and its address:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("route", "show", "table", "all", "dev", "p1c"); strings.Contains(out, "172.16.2.0/24") {
		t.Errorf("a route of ours left on p1c, whose delete is a conflict:\n%s", out)
	}
}

// Two addresses of one subnet that change scope together: each was replaced
// in its own op (delete, add), and the first add met the other address still
// in the old scope (EINVAL: the kernel keeps one scope per subnet). Walk seed
// 84958747665877, step 84 (finding 23).
func TestWalkFindingSubnetScopeChangeOfKeptAddresses(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [{address: 10.89.0.3/24, scope: host, noprefixroute: true}, {address: 10.89.0.1/24, scope: host}, 10.76.1.2/24]}
routes:
  - {to: 172.16.8.0/24, via: 10.76.1.254, dev: b1}
`))
	f := e.file("b.yaml", `version: 1
links:
  b1: {kind: bridge, addresses: [10.89.0.3/24, 10.89.0.1/24, 10.76.1.2/24]}
routes:
  - {to: 172.16.8.0/24, via: 10.76.1.254, dev: b1}
`)
	e.apply(f)
	out := e.ip("-4", "addr", "show", "b1")
	for _, a := range []string{"10.89.0.3/24", "10.89.0.1/24"} {
		if !strings.Contains(out, a) || strings.Contains(out, "scope host") {
			t.Errorf("%s missing or still scope host:\n%s", a, out)
		}
	}
	e.converged(f)
}

// The kernel's subnet of a point-to-point IPv4 address is its peer's: two
// addresses with one peer and two scopes are refused (EINVAL; shown here
// with ip), so validation refuses them, and both changing scope together
// converges as finding 23 does for a plain subnet. Host soak seed
// 125963786465382, step 45.
// Walk finding 41 (host seed 125963786465382, step 45).
func TestWalkFindingPointToPointSubnetScope(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "pb", "type", "bridge")
	e.ip("addr", "add", "10.18.9.1/32", "peer", "10.18.9.10/32", "dev", "pb")
	if out, err := exec.Command("ip", "-n", e.ns, "addr", "add", "10.18.9.2/32", "peer", "10.18.9.10/32", "scope", "host", "dev", "pb").CombinedOutput(); err == nil {
		t.Fatalf("the kernel took a second scope for one peer: %s", out)
	}
	e.ip("link", "del", "pb")

	bad := e.file("bad.yaml", `version: 1
links:
  p1: {kind: bridge, addresses: [{address: 10.18.9.2/32, peer: 10.18.9.10/32, scope: host}, {address: 10.18.9.1/32, peer: 10.18.9.10/32}]}
`)
	if r := e.cli("apply", "-c", bad); r.Code == 0 || !strings.Contains(r.Stderr, "the kernel keeps one scope per subnet on a link (a point-to-point address's subnet is its peer's)") {
		t.Fatalf("apply of two scopes for one peer: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("link", "show"); strings.Contains(out, "p1") {
		t.Fatalf("a refused file changed the kernel:\n%s", out)
	}

	e.apply(e.file("a.yaml", `version: 1
links:
  p1: {kind: bridge, addresses: [{address: 10.18.9.2/32, peer: 10.18.9.10/32, scope: host}, {address: 10.18.9.1/32, peer: 10.18.9.10/32, scope: host}]}
`))
	f := e.file("b.yaml", `version: 1
links:
  p1: {kind: bridge, addresses: [{address: 10.18.9.2/32, peer: 10.18.9.10/32}, {address: 10.18.9.1/32, peer: 10.18.9.10/32}]}
`)
	e.apply(f)
	if out := e.ip("-4", "addr", "show", "p1"); strings.Count(out, "peer 10.18.9.10/32") != 2 || strings.Contains(out, "scope host") {
		t.Errorf("addresses after the scope change:\n%s", out)
	}
	e.converged(f)
}

// Two vxlans, each on one bridge and a port of the other: the kernel stacks
// a vxlan above its dev, so the second master closes a loop and is refused
// (EBUSY, shown here with ip); validation refuses the file before apply
// changes anything. Walk seed 7400491185195, step 10 (finding 24).
func TestWalkFindingLinksStackedInALoop(t *testing.T) {
	e := newEnv(t)
	for _, c := range [][]string{
		{"link", "add", "b2", "type", "bridge"}, {"link", "add", "bv", "type", "bridge"},
		{"link", "add", "x0", "type", "vxlan", "id", "20", "remote", "192.0.2.4", "dstport", "4789", "dev", "b2"},
		{"link", "add", "x2", "type", "vxlan", "id", "21", "remote", "192.0.2.8", "dstport", "4789", "dev", "bv"},
		{"link", "set", "x0", "master", "bv"},
	} {
		e.ip(c...)
	}
	if out, err := exec.Command("ip", "-n", e.ns, "link", "set", "x2", "master", "b2").CombinedOutput(); err == nil {
		t.Fatalf("the kernel took x2 as a port of b2, which is below it: %s", out)
	}
	f := e.file("a.yaml", `version: 1
links:
  b2: {kind: bridge}
  bv: {kind: bridge}
  x0: {kind: vxlan, master: bv, vxlan: {id: 20, remote: 192.0.2.4, dev: b2}}
  x2: {kind: vxlan, master: b2, vxlan: {id: 21, remote: 192.0.2.8, dev: bv}}
`)
	if r := e.cli("apply", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, "links stack on each other in a loop") || strings.Contains(r.Stdout, "Applied") {
		t.Errorf("apply: exit %d, want a refusal before any change:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A link that takes an address from a pool and declares a static one in
// the pool's subnet: the pool must not hand out that address (walk seed
// 79416349912272, step 22). Before, apply allocated it and refused its own
// plan ("is also declared"), where diff, which allocates nothing, accepted
// the file; another link would have been given it outright. Walk finding 25.
func TestWalkFindingPoolStaticAddress(t *testing.T) {
	e := newEnv(t)
	pools := "pools:\n  pw: {subnets: [10.99.0.0/24], block-size-bits: 0, export-table: 120, reuse-delay: 0s}\n"
	e.apply(e.file("a.yaml", "version: 1\n"+pools+"links:\n  lo: {kind: device, state: up}\n  b1: {kind: bridge, addresses: [{pool: pw}]}\n"))
	f := e.file("b.yaml", "version: 1\n"+pools+`links:
  lo: {kind: device, state: up}
  b2: {kind: bridge, addresses: [{address: 10.99.0.1/24, scope: link}, {pool: pw}]}
  b3: {kind: bridge, addresses: [{pool: pw}]}
  b4: {kind: bridge, addresses: [10.99.0.2/24]}
`)
	if d := e.cli("diff", "-c", f); d.Code == 1 {
		t.Fatalf("diff refuses the file: %s", d.Stderr)
	}
	e.apply(f)
	e.converged(f)
	seen := map[string]string{}
	for _, l := range []string{"b2", "b3", "b4"} {
		for _, f := range strings.Fields(e.ip("-4", "-br", "addr", "show", "dev", l))[2:] {
			ip := strings.SplitN(f, "/", 2)[0]
			if other, dup := seen[ip]; dup {
				t.Errorf("%s is on %s and %s: the pool handed out an address the file declares", ip, other, l)
			}
			seen[ip] = l
		}
	}
	if len(seen) != 4 {
		t.Errorf("want 4 distinct IPv4 addresses on b2, b3, b4, got %v", seen)
	}
}

// A rule the kernel takes for one that exists: it compares from and to
// only where the rule being added sets them, so "from all blackhole" of
// priority 1000 "exists" while "to 2001:db8:50::/48 blackhole" of 1000 does
// (walk seed 16691395986882, step 45: file exists, unpredicted). A stale
// rule of ours is deleted before the add; someone else's is a conflict
// that diff shows and apply keeps to, touching nothing. Walk finding 36.
func TestWalkFindingRuleAddClash(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nrules:\n  - {priority: 1000, family: ipv6, to: \"2001:db8:50::/48\", action: blackhole}\n"))
	b := e.file("b.yaml", "version: 1\nrules:\n  - {priority: 1000, family: ipv6, action: blackhole}\n")
	e.apply(b)
	if out := e.ip("-6", "rule", "show", "priority", "1000"); strings.Contains(out, "2001:db8:50::/48") || !strings.Contains(out, "blackhole") {
		t.Errorf("rules of priority 1000:\n%s", out)
	}
	e.converged(b)

	e.ip("-4", "rule", "add", "priority", "1100", "to", "10.60.0.0/16", "blackhole", "proto", "static")
	before := e.ip("-4", "rule", "show")
	c := e.file("c.yaml", "version: 1\nrules:\n  - {priority: 1000, family: ipv6, action: blackhole}\n  - {priority: 1100, family: ipv4, action: blackhole}\n")
	d := e.cli("diff", "-c", c)
	a := e.cli("apply", "-c", c)
	want := "rule 1100: from all blackhole (ipv4) cannot be added: the kernel takes it for the rule 1100: from all to 10.60.0.0/16 blackhole (ipv4) of protocol 4"
	if d.Code != 1 || a.Code != 1 || !strings.Contains(d.Stderr, want) || !strings.Contains(a.Stderr, want) {
		t.Fatalf("diff (exit %d) and apply (exit %d) do not both report the clash %q:\n%s\n%s", d.Code, a.Code, want, d.Stderr, a.Stderr)
	}
	if after := e.ip("-4", "rule", "show"); after != before {
		t.Errorf("rules changed:\n%s\nwas:\n%s", after, before)
	}
}

// An IPv6 route with an MTU of its own, on a link whose MTU the file
// changes: the kernel moves the route's MTU with the link's (down to the
// new MTU when at or above it, up with it when equal to the old one), so the
// route is written again after the link (walk seed 63371234605657, step
// 69: mtu 1400 read back as 1350). IPv4 route MTUs stay. Walk finding 37.
func TestWalkFindingRouteMTUMovedWithLink(t *testing.T) {
	e := newEnv(t)
	file := func(name string, mtu int) string {
		return e.file(name, fmt.Sprintf(`version: 1
links:
  p0a: {kind: veth, mtu: %d, veth: {peer: p0b}, addresses: ["fd00:37::1/64", 10.37.0.1/24]}
  p0b: {kind: veth, mtu: %d, veth: {peer: p0a}}
routes:
  - {to: "2001:db8:4::/64", dev: p0a, table: 300, metric: 10, mtu: 1400}
  - {to: "2001:db8:5::/64", dev: p0a, table: 300, metric: 10, mtu: 1280}
  - {to: 172.16.37.0/24, dev: p0a, table: 300, mtu: 1400}
`, mtu, mtu))
	}
	e.apply(file("a.yaml", 1280))
	for i, mtu := range []int{1350, 1500, 1280} {
		f := file(fmt.Sprintf("b%d.yaml", i), mtu)
		e.apply(f)
		out := e.ip("-6", "route", "show", "table", "300") + e.ip("-4", "route", "show", "table", "300")
		for _, want := range []string{"2001:db8:4::/64 dev p0a metric 10 mtu 1400", "2001:db8:5::/64 dev p0a metric 10 mtu 1280", "172.16.37.0/24 dev p0a proto 245 scope link mtu 1400"} {
			if !strings.Contains(strings.ReplaceAll(out, " proto 245", ""), strings.ReplaceAll(want, " proto 245", "")) {
				t.Errorf("link mtu %d: no %q in:\n%s", mtu, want, out)
			}
		}
		e.converged(f)
	}
}

// A port joining a bridge made with its MTU moved the bridge's MTU to the
// port's (br_mtu_auto_adjust), and with it the MTU of an IPv6 route through
// the bridge (rt6_mtu_change_route: down to 1350, then up to 9000 when the
// bridge's MTU was put back): the route's declared 1400 was lost. A bridge
// netreconcile creates has its MTU marked as set by the user, so the kernel
// leaves it alone. Host soak seed 61164360228805 (walk), step 33, shrunk to
// these two files (finding 42).
func TestWalkFindingBridgePortKeepsRouteMTU(t *testing.T) {
	e := newEnv(t)
	const base = `version: 1
links:
  b1: {kind: bridge, mtu: 9000, addresses: ["fd00:59::4/64"]}
routes:
  - {to: "2001:db8:3::/64", dev: b1, metric: 10, mtu: 1400}
`
	e.apply(e.file("a.yaml", base))
	f := e.file("b.yaml", base+`  - {to: "2001:db8:6::/64", dev: b1, metric: 10, mtu: 9000}
`)
	e.apply(f)
	for _, port := range []string{
		`  x1: {kind: vxlan, mtu: 1350, master: b1, vxlan: {id: 30, local: 192.0.2.2, remote: 198.51.100.6}}`,
		`  p1: {kind: veth, mtu: 1280, master: b1, veth: {peer: p2}}
  p2: {kind: veth, mtu: 1500, veth: {peer: p1}}`,
	} {
		g := e.file("c.yaml", strings.Replace(base, "links:\n", "links:\n"+port+"\n", 1)+`  - {to: "2001:db8:6::/64", dev: b1, metric: 10, mtu: 9000}
`)
		e.apply(g)
		routeMTUs := func(when string) {
			t.Helper()
			out := e.ip("-6", "route", "show", "dev", "b1")
			for _, want := range []string{`2001:db8:3::/64 proto 245 metric 10 (linkdown )?mtu 1400 `, `2001:db8:6::/64 proto 245 metric 10 (linkdown )?mtu 9000 `} {
				if !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("%s: no %q in:\n%s", when, want, out)
				}
			}
			if out := e.ip("link", "show", "b1"); !strings.Contains(out, " mtu 9000 ") {
				t.Errorf("%s: bridge mtu moved:\n%s", when, out)
			}
		}
		routeMTUs("after a port joined")
		e.converged(g)
		e.apply(f) // the port leaves
		routeMTUs("after the port left")
		e.converged(f)
	}
}

// The same for every next hop of a multipath route: a "not … unreachable"
// rule the same plan deletes stood in the way of the check of an IPv4 next
// hop, and the route was refused (ENETUNREACH) until the next apply. Host
// soak, walk seed 32154340888953, step 84 (finding 53).
func TestWalkFindingMultipathGatewayCheck(t *testing.T) {
	e := newEnv(t)
	links := "links:\n  b1: {kind: bridge, addresses: [10.88.1.3/24, fd00:88::3/64]}\n  b2: {kind: bridge, addresses: [10.89.1.3/24]}\n"
	e.apply(e.file("a.yaml", "version: 1\n"+links+"rules:\n  - {priority: 1000, family: ipv4, from: 10.50.0.0/16, fwmark: 0x10, not: true, action: unreachable}\n"))
	f := e.file("b.yaml", "version: 1\n"+links+`routes:
  - {to: 172.16.0.0/24, table: 200, nexthops: [{via: 10.88.1.200, dev: b1}, {via: 10.89.1.200, dev: b2}, {via: 'fe80::1', dev: b1}]}
`)
	e.apply(f)
	if out := e.ip("route", "show", "table", "200"); !strings.Contains(out, "nexthop via 10.88.1.200 dev b1") || !strings.Contains(out, "nexthop via 10.89.1.200 dev b2") {
		t.Errorf("multipath route missing after the catch-all rule went:\n%s", out)
	}
	if rules := e.rules(); strings.Contains(rules, "10.88.1.200") || strings.Contains(rules, "10.89.1.200") {
		t.Errorf("a rule of the gateway check is left:\n%s", rules)
	}
	e.converged(f)
}

// An address a link already holds from a pool that the file then declares
// statically: the pool gives it back and the link takes another one, as
// for an address not yet handed out (finding 25). Before, diff and apply
// refused the file ("is also declared") until it changed. Host soak, walk
// seed 42173343209599, step 29 (finding 54).
func TestWalkFindingPoolAddressDeclaredLater(t *testing.T) {
	e := newEnv(t)
	pools := "pools:\n  pw: {subnets: [10.99.0.0/24], block-size-bits: 0, export-table: 120, reuse-delay: 0s}\n"
	e.apply(e.file("a.yaml", "version: 1\n"+pools+"links:\n  lo: {kind: device, state: up}\n  b1: {kind: bridge, addresses: [{pool: pw}]}\n"))
	held := strings.Fields(e.ip("-4", "-br", "addr", "show", "dev", "b1"))
	if len(held) < 3 {
		t.Fatalf("b1 took no address from the pool: %v", held)
	}
	ip := strings.SplitN(held[2], "/", 2)[0]
	f := e.file("b.yaml", "version: 1\n"+pools+"links:\n  lo: {kind: device, state: up}\n  b1: {kind: bridge, addresses: [{pool: pw}, "+ip+"/24]}\n")
	if d := e.cli("diff", "-c", f); d.Code == 1 {
		t.Fatalf("diff refuses the file: %s", d.Stderr)
	}
	e.apply(f)
	e.converged(f)
	addrs := strings.Fields(e.ip("-4", "-br", "addr", "show", "dev", "b1"))[2:]
	if len(addrs) != 2 || !strings.Contains(strings.Join(addrs, " "), ip+"/24") {
		t.Errorf("b1 has %v, want the declared %s/24 and another address from the pool", addrs, ip)
	}
}

// TestWalkFindingNeighTemplateOwned (finding 55, host soak seed
// 73839564667697, step 81): a link made while the file set lo's neigh key
// (its template) started with netreconcile's value and recorded it as the
// one found before; when the file dropped the link's key, that value
// stayed, not the one the link would have had without netreconcile. The
// record is now the template's own recorded value, whether the file still
// declares lo's key or drops it in the same plan.
func TestWalkFindingNeighTemplateOwned(t *testing.T) {
	for _, keepLo := range []bool{false, true} {
		t.Run(fmt.Sprintf("lo declared throughout=%v", keepLo), func(t *testing.T) {
			e := newEnv(t)
			ucast, mcast := "net.ipv4.neigh.b1.ucast_solicit", "net.ipv6.neigh.b1.mcast_solicit"
			loU, loM := e.sysctl("net.ipv4.neigh.lo.ucast_solicit"), e.sysctl("net.ipv6.neigh.lo.mcast_solicit")
			lo := "  lo: {kind: device, state: up, sysctls: {ipv4.neigh.ucast_solicit: 5, ipv6.neigh.mcast_solicit: 6}}\n"
			e.apply(e.file("1.yaml", "version: 1\nlinks:\n"+lo))
			if !keepLo {
				lo = "  lo: {kind: device, state: up}\n"
			}
			f := e.file("2.yaml", "version: 1\nlinks:\n"+lo+"  b1: {kind: bridge, sysctls: {ipv4.neigh.ucast_solicit: 5, ipv6.neigh.mcast_solicit: 6}}\n")
			e.apply(f)
			e.converged(f)
			e.wantSysctl(ucast, "5")
			f = e.file("3.yaml", "version: 1\nlinks:\n"+lo+"  b1: {kind: bridge}\n")
			e.apply(f)
			e.converged(f)
			e.wantSysctl(ucast, loU)
			e.wantSysctl(mcast, loM)
		})
	}
}

// TestNewLinkConfKeyFollowsDefault: a conf key of a new link starts with
// net.ipv4.conf.default's value for certain. When the file drops the link's
// key, the link has what a link made under the file would have: the
// declared default, whether the file declared it in an earlier apply or in
// the same one as the link (an adversarial review of the finding-55 fix saw
// the default's value from before netreconcile written back), and the
// default's old value when the file drops both.
// Walk finding 55 (host seed 73839564667697, step 81).
func TestNewLinkConfKeyFollowsDefault(t *testing.T) {
	def := "sysctls: {net.ipv4.conf.default.rp_filter: 2}\n"
	withKey := "links:\n  b1: {kind: bridge, sysctls: {ipv4.rp_filter: 1}}\n"
	noKey := "links:\n  b1: {kind: bridge}\n"
	for _, tc := range []struct {
		name                string
		first, second, last string
		want                string // "" : the default's value before the test
	}{
		{"default declared before the link", "version: 1\n" + def, "version: 1\n" + def + withKey, "version: 1\n" + def + noKey, "2"},
		{"default declared with the link", "version: 1\n", "version: 1\n" + def + withKey, "version: 1\n" + def + noKey, "2"},
		{"default and key dropped together", "version: 1\n", "version: 1\n" + def + withKey, "version: 1\n" + noKey, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			want := tc.want
			if want == "" {
				want = e.sysctl("net.ipv4.conf.default.rp_filter")
			}
			e.apply(e.file("1.yaml", tc.first))
			e.apply(e.file("2.yaml", tc.second))
			e.wantSysctl("net.ipv4.conf.b1.rp_filter", "1")
			f := e.file("3.yaml", tc.last)
			e.apply(f)
			e.converged(f)
			e.wantSysctl("net.ipv4.conf.b1.rp_filter", want)
		})
	}
}

// TestAdoptedLinkKeyGoesBack: a link the file adopts is not one
// netreconcile made: a key the file drops goes back to the value it had
// before netreconcile wrote it, not to its template's.
// Walk finding 55 (host seed 73839564667697, step 81).
func TestAdoptedLinkKeyGoesBack(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "b2", "type", "bridge")
	e.setSysctl("net.ipv4.conf.b2.rp_filter", "1")
	e.apply(e.file("1.yaml", "version: 1\nlinks:\n  b2: {kind: bridge, adopt: true, sysctls: {ipv4.rp_filter: 2}}\n"))
	e.wantSysctl("net.ipv4.conf.b2.rp_filter", "2")
	f := e.file("2.yaml", "version: 1\nlinks:\n  b2: {kind: bridge, adopt: true}\n")
	e.apply(f)
	e.converged(f)
	e.wantSysctl("net.ipv4.conf.b2.rp_filter", "1")
}

// TestWalkFindingLeftOutLinkKeepsItsRoutes (finding 56, host soak seed
// 41107412154582, step 87): a vxlan whose dev changes must be recreated,
// and the routes through it go with it; but when the vxlan is left out
// (its new dev is a veth end whose pair cannot be recreated: a foreign link
// sits on the other end), it stays, and so do its routes. The plan took the
// route as gone and created the file's new one with the same key: EEXIST,
// which the plan did not predict. It now changes the route in place.
func TestWalkFindingLeftOutLinkKeepsItsRoutes(t *testing.T) {
	e := newEnv(t)
	links := func(peer string) string {
		return "links:\n" +
			"  p2a: {kind: veth, veth: {peer: " + peer + "}}\n" +
			"  " + peer + ": {kind: veth, veth: {peer: p2a}}\n" +
			"  x2: {kind: vxlan, vxlan: {id: 30, local: 192.0.2.4, remote: 198.51.100.2, dev: " + peer + "}, addresses: [10.171.0.1/24]}\n"
	}
	e.apply(e.file("1.yaml", "version: 1\n"+links("p2b")+
		"routes:\n  - {to: 172.16.0.0/24, type: local, dev: x2, table: 300, tos: 8}\n"))
	e.ip("link", "add", "fc4", "type", "vxlan", "id", "4004", "dstport", "4789", "dev", "p2a")
	f := e.file("2.yaml", "version: 1\n"+links("p2c")+
		"routes:\n  - {to: 172.16.0.0/24, type: blackhole, table: 300, tos: 8}\n")
	r := e.cli("apply", "-c", f)
	if strings.Contains(r.Stderr, "operations failed") {
		t.Fatalf("apply: a write failed (the plan should have predicted every failure):\n%s%s", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "link x2 is left out") {
		t.Errorf("apply does not leave x2 out:\n%s", r.Stderr)
	}
	if got := e.ip("-4", "route", "show", "table", "300"); !strings.Contains(got, "blackhole 172.16.0.0/24 tos 0x08") && !strings.Contains(got, "blackhole 172.16.0.0/24 tos CS1") {
		t.Errorf("table 300 holds %q, want the blackhole route", got)
	}
	if d := e.cli("diff", "-c", f); strings.Contains(d.Stdout, "route") {
		t.Errorf("a second diff plans a route again:\n%s", d.Stdout)
	}
}
