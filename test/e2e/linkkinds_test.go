package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkFiles writes netreconcile files and applies them in a namespace with
// a state directory of its own.
type linkFiles struct {
	t           *testing.T
	ns          *NetNS
	file, state string
}

func newLinkFiles(t *testing.T, ns *NetNS) *linkFiles {
	dir := t.TempDir()
	return &linkFiles{t, ns, filepath.Join(dir, "netreconcile.yaml"), t.TempDir()}
}

func (f *linkFiles) apply(cfg string) string {
	f.t.Helper()
	if err := os.WriteFile(f.file, []byte(cfg), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return runNetreconcile(f.t, f.ns, "apply", "-c", f.file, "--state-dir", f.state)
}

// converged checks that a second apply writes nothing and that diff exits 0.
func (f *linkFiles) converged() {
	f.t.Helper()
	if out := runNetreconcile(f.t, f.ns, "apply", "-c", f.file, "--state-dir", f.state); !strings.Contains(out, "No changes") {
		f.t.Errorf("in %s, a second apply changed something:\n%s", f.ns.Name, out)
	}
	runNetreconcile(f.t, f.ns, "diff", "-c", f.file, "--state-dir", f.state)
}

// ping checks that an address answers. A link just made may not pass
// traffic yet (a bond picks its active port
// at its next link check, miimon), so the first echo may be lost: up to
// five are sent, one at a time, and one answer is enough.
func ping(t *testing.T, ns *NetNS, args ...string) {
	t.Helper()
	for i := 0; i < 4; i++ {
		if _, _, err := ns.Exec("", "/bin/ping", append([]string{"-c", "1", "-W", "2"}, args...)...); err == nil {
			return
		}
	}
	ns.Run(t, "/bin/ping", append([]string{"-c", "1", "-W", "5"}, args...)...)
}

// noPing checks that addr does not answer. The unanswered ping leaves a
// neighbour entry still resolving (three probes a second apart, -W 1 waits
// for one): a ping right after would be queued on it and dropped with it
// when the last probe goes unanswered, so the entry is flushed.
func noPing(t *testing.T, ns *NetNS, addr string) {
	t.Helper()
	if out, _, err := ns.Exec("", "/bin/ping", "-c", "1", "-W", "1", addr); err == nil {
		t.Errorf("in %s, ping %s answered, want no answer:\n%s", ns.Name, addr, out)
	}
	ns.IP(t, "neigh", "flush", "to", addr)
}

const vlanFile = `version: 1
links:
  PARENT: {kind: device}
  tag100:
    kind: vlan
    mtu: MTU
    vlan: {parent: PARENT, id: ID}
    addresses: [ADDR/24]
  qinq:
    kind: vlan
    vlan: {parent: PARENT, id: 300, protocol: 802.1ad}
    addresses: [QADDR/24]
`

// TestLinkKindVLAN: vlans on both ends of a veth pair carry tagged traffic
// (an 802.1Q and an 802.1ad one); an MTU change keeps the vlan, an id change
// recreates it (the kernel fixes the id), and a file with a mismatched id
// reaches nothing.
func TestLinkKindVLAN(t *testing.T) {
	requireModules(t, "8021q", "veth")
	a, b := newNetNS(t, "a"), newNetNS(t, "b")
	veth(t, a, "ea", "", b, "eb", "")
	fa, fb := newLinkFiles(t, a), newLinkFiles(t, b)
	file := func(parent, id, mtu, addr, qaddr string) string {
		return strings.NewReplacer("PARENT", parent, "ID", id, "MTU", mtu, "QADDR", qaddr, "ADDR", addr).Replace(vlanFile)
	}
	fa.apply(file("ea", "100", "1500", "10.100.0.1", "10.30.0.1"))
	fb.apply(file("eb", "100", "1500", "10.100.0.2", "10.30.0.2"))
	mustContain(t, "ip -d link show tag100", a.IP(t, "-d", "link", "show", "tag100"), "vlan protocol 802.1Q id 100", "alias netreconcile")
	mustContain(t, "ip -d link show qinq", a.IP(t, "-d", "link", "show", "qinq"), "vlan protocol 802.1ad id 300")
	ping(t, a, "10.100.0.2")
	ping(t, a, "10.30.0.2")
	// The parent carries no address: only tagged frames reach the peer's vlans.
	fa.converged()
	fb.converged()

	first := ifindex(t, a, "tag100")
	out := fa.apply(file("ea", "100", "1400", "10.100.0.1", "10.30.0.1"))
	mustContain(t, "apply mtu", out, "~ link tag100", "mtu: 1500 -> 1400")
	if got := ifindex(t, a, "tag100"); got != first {
		t.Errorf("an MTU change recreated the vlan: ifindex %s -> %s", first, got)
	}
	fa.converged()

	out = fa.apply(file("ea", "101", "1400", "10.100.0.1", "10.30.0.1"))
	mustContain(t, "apply id", out, "± link tag100", "vlan id 100 -> 101")
	if got := ifindex(t, a, "tag100"); got == first {
		t.Errorf("an id change kept ifindex %s", got)
	}
	mustContain(t, "ip -d link after the id change", a.IP(t, "-d", "link", "show", "tag100"), "id 101", "mtu 1400")
	fa.converged()
	noPing(t, a, "10.100.0.2") // tagged 101 now, the peer is on 100
	fb.apply(file("eb", "101", "1500", "10.100.0.2", "10.30.0.2"))
	ping(t, a, "10.100.0.2")
	fb.converged()
}

const vrfFile = `version: 1
links:
  blue:
    kind: vrf
    vrf: {table: TABLE}
  va:
    kind: device
    master: blue
    addresses: [10.9.0.1/24]
routes:
  - {to: 10.77.0.0/24, via: 10.9.0.2, table: TABLE}
`

// TestLinkKindVRF: a ping bound to the vrf uses the vrf's table (its only
// route to 10.77.0.0/24 is there), and one outside the vrf does not reach;
// a table change recreates the vrf and enslaves its member again.
func TestLinkKindVRF(t *testing.T) {
	requireModules(t, "vrf", "veth")
	a, b := newNetNS(t, "a"), newNetNS(t, "b")
	veth(t, a, "va", "", b, "vb", "10.9.0.2/24")
	b.IP(t, "addr", "add", "10.77.0.1/32", "dev", "lo")
	fa := newLinkFiles(t, a)
	fa.apply(strings.ReplaceAll(vrfFile, "TABLE", "1001"))
	mustContain(t, "ip -d link show blue", a.IP(t, "-d", "link", "show", "blue"), "vrf table 1001", "alias netreconcile")
	mustContain(t, "ip link show va", a.IP(t, "link", "show", "va"), "master blue")
	mustContain(t, "ip route show table 1001", a.IP(t, "route", "show", "table", "1001"), "10.77.0.0/24 via 10.9.0.2 dev va")
	ping(t, a, "-I", "blue", "10.77.0.1")
	noPing(t, a, "10.77.0.1") // the main table has no route to it
	fa.converged()

	first := ifindex(t, a, "blue")
	out := fa.apply(strings.ReplaceAll(vrfFile, "TABLE", "1002"))
	mustContain(t, "apply table", out, "± link blue", "vrf table 1001 -> 1002")
	if got := ifindex(t, a, "blue"); got == first {
		t.Errorf("a table change kept ifindex %s", got)
	}
	mustContain(t, "ip link show va after the table change", a.IP(t, "link", "show", "va"), "master blue")
	ping(t, a, "-I", "blue", "10.77.0.1")
	fa.converged()
}

const bondFile = `version: 1
links:
  bond0:
    kind: bond
    bond: {mode: MODE, miimon: MIIMON}
    addresses: [ADDR/24]
  P1: {kind: device, master: bond0}
  P2: {kind: device, master: bond0}
`

// TestLinkKindBond: two bonds of two members each, over two veth pairs,
// pass traffic; miimon changes in place, the mode of a bond with members
// recreates it (and enslaves its members again), traffic passes after.
func TestLinkKindBond(t *testing.T) {
	requireModules(t, "bonding", "veth")
	a, b := newNetNS(t, "a"), newNetNS(t, "b")
	veth(t, a, "a1", "", b, "b1", "")
	veth(t, a, "a2", "", b, "b2", "")
	fa, fb := newLinkFiles(t, a), newLinkFiles(t, b)
	file := func(mode, miimon, addr, p1, p2 string) string {
		return strings.NewReplacer("MODE", mode, "MIIMON", miimon, "ADDR", addr, "P1", p1, "P2", p2).Replace(bondFile)
	}
	fa.apply(file("active-backup", "100", "10.8.0.1", "a1", "a2"))
	fb.apply(file("active-backup", "100", "10.8.0.2", "b1", "b2"))
	mustContain(t, "ip -d link show bond0", a.IP(t, "-d", "link", "show", "bond0"), "bond mode active-backup", "miimon 100", "alias netreconcile")
	mustContain(t, "ip link show a1", a.IP(t, "link", "show", "a1"), "master bond0", "UP")
	ping(t, a, "10.8.0.2")
	fa.converged()
	fb.converged()

	first := ifindex(t, a, "bond0")
	out := fa.apply(file("active-backup", "50", "10.8.0.1", "a1", "a2"))
	mustContain(t, "apply miimon", out, "~ link bond0", "bond miimon: 100 -> 50")
	if got := ifindex(t, a, "bond0"); got != first {
		t.Errorf("a miimon change recreated the bond: ifindex %s -> %s", first, got)
	}
	mustContain(t, "ip -d link after miimon", a.IP(t, "-d", "link", "show", "bond0"), "miimon 50")
	fa.converged()

	out = fa.apply(file("balance-xor", "50", "10.8.0.1", "a1", "a2"))
	mustContain(t, "apply mode", out, "± link bond0", "bond mode active-backup -> balance-xor")
	mustContain(t, "ip -d link after mode", a.IP(t, "-d", "link", "show", "bond0"), "bond mode balance-xor")
	mustContain(t, "ip link show a2 after mode", a.IP(t, "link", "show", "a2"), "master bond0")
	fa.converged()
	fb.apply(file("balance-xor", "100", "10.8.0.2", "b1", "b2"))
	ping(t, a, "10.8.0.2")
	fb.converged()
}

// TestLinkKindsKernelInPlace records what this kernel changes in place,
// with iproute2 alone: the facts the diff's in-place and replace choices
// rest on. A change the kernel silently ignores counts as not in place.
func TestLinkKindsKernelInPlace(t *testing.T) {
	requireModules(t, "8021q", "vrf", "bonding", "macvlan", "dummy")
	ns := newNetNS(t, "")
	ip := func(args ...string) error {
		_, errOut, err := ns.Exec("", ipBin, args...)
		if err != nil {
			t.Logf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut))
		}
		return err
	}
	show := func(name string) string { return ns.IP(t, "-d", "link", "show", name) }
	ns.IP(t, "link", "add", "d0", "type", "dummy")
	ns.IP(t, "link", "add", "d1", "type", "dummy")
	ns.IP(t, "link", "add", "d2", "type", "dummy")
	check := func(what string, changed bool, want bool) {
		t.Logf("%s in place: %t", what, changed)
		if changed != want {
			t.Errorf("%s in place: %t, the diff assumes %t", what, changed, want)
		}
	}

	ns.IP(t, "link", "add", "link", "d0", "name", "v0", "type", "vlan", "id", "10")
	_ = ip("link", "set", "v0", "type", "vlan", "id", "11")
	check("vlan id", strings.Contains(show("v0"), "id 11"), false)
	_ = ip("link", "set", "v0", "type", "vlan", "protocol", "802.1ad")
	check("vlan protocol", strings.Contains(show("v0"), "802.1ad"), false)

	ns.IP(t, "link", "add", "link", "d1", "name", "m0", "type", "macvlan", "mode", "bridge")
	_ = ip("link", "set", "m0", "type", "macvlan", "mode", "private")
	check("macvlan mode bridge -> private", strings.Contains(show("m0"), "mode private"), true)
	_ = ip("link", "set", "m0", "type", "macvlan", "mode", "passthru")
	check("macvlan mode private -> passthru", strings.Contains(show("m0"), "mode passthru"), false)

	ns.IP(t, "link", "add", "r0", "type", "vrf", "table", "10")
	_ = ip("link", "set", "r0", "type", "vrf", "table", "11")
	check("vrf table", strings.Contains(show("r0"), "table 11"), false)

	ns.IP(t, "link", "add", "b0", "type", "bond", "mode", "balance-rr")
	t.Logf("a new bond: %s", show("b0"))
	_ = ip("link", "set", "b0", "type", "bond", "miimon", "70")
	check("bond miimon", strings.Contains(show("b0"), "miimon 70"), true)
	_ = ip("link", "set", "b0", "type", "bond", "mode", "active-backup")
	check("bond mode (down, no members)", strings.Contains(show("b0"), "mode active-backup"), true)
	ns.IP(t, "link", "set", "b0", "up")
	_ = ip("link", "set", "b0", "type", "bond", "mode", "balance-xor")
	check("bond mode (up, no members)", strings.Contains(show("b0"), "mode balance-xor"), false)
	ns.IP(t, "link", "set", "d2", "up")
	enslavedUp := ip("link", "set", "d2", "master", "b0") == nil
	t.Logf("a link that is up can be enslaved to a bond: %t", enslavedUp)
	if !enslavedUp {
		ns.IP(t, "link", "set", "d2", "down")
		ns.IP(t, "link", "set", "d2", "master", "b0")
	}
	ns.IP(t, "link", "set", "b0", "down")
	_ = ip("link", "set", "b0", "type", "bond", "mode", "balance-xor")
	check("bond mode (down, a member)", strings.Contains(show("b0"), "mode balance-xor"), false)
	_ = ip("link", "set", "b0", "type", "bond", "miimon", "80")
	check("bond miimon (a member)", strings.Contains(show("b0"), "miimon 80"), true)
}

// TestLinkKindBondModeInPlace: the mode of a bond without members changes
// in place although the bond is up (it goes down for the change and up
// again), and its IPv6 address, which the kernel drops on the way down, is
// there after the same apply.
func TestLinkKindBondModeInPlace(t *testing.T) {
	requireModules(t, "bonding")
	ns := newNetNS(t, "")
	f := newLinkFiles(t, ns)
	const file = "version: 1\nlinks:\n  bond1:\n    kind: bond\n    bond: {mode: MODE}\n    addresses: [10.8.1.1/24, fd00:8::1/64]\n"
	f.apply(strings.ReplaceAll(file, "MODE", "balance-rr"))
	first := ifindex(t, ns, "bond1")
	out := f.apply(strings.ReplaceAll(file, "MODE", "active-backup"))
	mustContain(t, "apply mode", out, "~ link bond1", "bond mode: balance-rr -> active-backup")
	if got := ifindex(t, ns, "bond1"); got != first {
		t.Errorf("a mode change of a bond without members recreated it: ifindex %s -> %s", first, got)
	}
	mustContain(t, "ip -d link show bond1", ns.IP(t, "-d", "link", "show", "bond1"), "bond mode active-backup", "miimon 100")
	mustContain(t, "ip addr show bond1", ns.IP(t, "addr", "show", "bond1"), "fd00:8::1/64", "10.8.1.1/24")
	f.converged()
}
