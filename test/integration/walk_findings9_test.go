package integration

import (
	"strings"
	"testing"
)

// A write of net.ipv4.conf.default.rp_filter set rp_filter on every link
// whose own key was never written (the kernel copies default's to those):
// a link declaring ipv4.rp_filter at the value it already held was moved,
// so a second apply wrote it again, and a link someone else made, which
// the file does not name, was changed. The plan now writes the file's
// keys again after default's, gives the file's links that do not declare
// the key default's new value (what a link made under the file starts
// with, whatever happened to the link before), and writes a foreign
// link's own value back. Found by an adversarial review.
func TestWalkFindingDefaultSysctlSpreadsToLinks(t *testing.T) {
	e := newEnv(t)
	const dflt = "net.ipv4.conf.default.rp_filter"
	v0 := e.sysctl(dflt)
	v1, v2 := "1", "2"
	switch v0 {
	case "1":
		v1, v2 = "2", "0"
	case "2":
		v1, v2 = "0", "1"
	}
	// Someone else's links, made before any write of default's key: one
	// with no address (the kernel moves it with default's), one with an
	// IPv4 address (the kernel holds its keys as written).
	e.ip("link", "add", "fb0", "type", "bridge")
	e.ip("link", "add", "fb1", "type", "bridge")
	e.ip("addr", "add", "10.9.0.1/24", "dev", "fb1")
	if e.sysctl("net.ipv4.conf.fb0.rp_filter") != v0 {
		t.Fatalf("fb0's rp_filter is not default's %s", v0)
	}
	first := e.file("a.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: "+v0+"}}\n")
	e.apply(first)
	e.converged(first)
	for i, c := range []struct{ dflt, file string }{
		{v1, "version: 1\nsysctls: {" + dflt + ": " + v1 + "}\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: " + v0 + "}}\n  br2: {kind: bridge}\n"},
		// br0 and br2 were written when default's changed: the kernel no
		// longer moves them with it.
		{v2, "version: 1\nsysctls: {" + dflt + ": " + v2 + "}\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: " + v0 + "}}\n  br2: {kind: bridge}\n"},
		// Default's given back.
		{v0, "version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: " + v1 + "}}\n  br2: {kind: bridge}\n"},
	} {
		f := e.file("b.yaml", c.file)
		e.apply(f)
		e.converged(f)
		want := map[string]string{"default": c.dflt, "br0": c.dflt, "br2": c.dflt, "br1": v0, "fb0": v0, "fb1": v0}
		if i == 2 {
			want["br1"] = v1
		}
		for _, n := range []string{"default", "br0", "br1", "br2", "fb0", "fb1"} {
			if got := e.sysctl("net.ipv4.conf." + n + ".rp_filter"); got != want[n] {
				t.Errorf("step %d: net.ipv4.conf.%s.rp_filter = %s, want %s", i+1, n, got, want[n])
			}
		}
	}
}

// A macvlan without an mtu was left below its bridge's MTU after a port
// with a smaller MTU joined: the port pulled the bridge down, the kernel
// lowered the macvlan with it, and apply set the bridge back but not the
// macvlan; nor did a parent (or a vxlan's device) raised by the file raise
// its links. The link's MTU told its lower device's history, and a fresh
// apply of the same file gave another. A macvlan, vlan, ipvlan or vxlan
// the file gives no mtu is now at its lower device's MTU (less a vxlan's
// encapsulation), as made. Found by an adversarial review.
func TestWalkFindingUpperWithoutMTUFollowsItsLowerDevice(t *testing.T) {
	const (
		base = "version: 1\nlinks:\n  m0: {kind: macvlan, macvlan: {parent: br0, mode: bridge}}\n  vx: {kind: vxlan, vxlan: {id: 7, remote: 192.0.2.1, dev: br0}}\n"
		port = "  pa: {kind: veth, mtu: 1400, master: br0, veth: {peer: pb}}\n  pb: {kind: veth, veth: {peer: pa}}\n"
	)
	steps := []struct {
		bridge    string
		port      bool
		br, m, vx string
	}{
		{"  br0: {kind: bridge}\n", false, "1500", "1500", "1450"},
		// The port pulls br0 down to 1400 until apply sets it back.
		{"  br0: {kind: bridge}\n", true, "1500", "1500", "1450"},
		{"  br0: {kind: bridge, mtu: 1400}\n", true, "1400", "1400", "1350"},
		{"  br0: {kind: bridge, mtu: 1500}\n", true, "1500", "1500", "1450"},
	}
	e := newEnv(t)
	for i, s := range steps {
		text := base + s.bridge
		if s.port {
			text += port
		}
		f := e.file("a.yaml", text)
		e.apply(f)
		e.converged(f)
		check := func(e *env, what string) {
			for n, want := range map[string]string{"br0": s.br, "m0": s.m, "vx": s.vx} {
				if got := e.mtu(n); got != want {
					t.Errorf("step %d%s: %s mtu %s, want %s", i+1, what, n, got, want)
				}
			}
		}
		check(e, "")
		// The same file applied afresh.
		fresh := newEnv(t)
		fresh.apply(fresh.file("a.yaml", text))
		check(fresh, " (afresh)")
	}
}

// mtu is link n's MTU as ip shows it.
func (e *env) mtu(n string) string {
	e.t.Helper()
	f := strings.Fields(e.ip("-o", "link", "show", "dev", n))
	for i := range len(f) - 1 {
		if f[i] == "mtu" {
			return f[i+1]
		}
	}
	e.t.Fatalf("no mtu for %s in %q", n, f)
	return ""
}
