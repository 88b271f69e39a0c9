package integration

import (
	"strings"
	"testing"
)

// 103. The check that refuses a file naming a key the kernel does not have
// judged a link's keys by the link the kernel held, not by the one the plan
// leaves: an owned bridge at MTU 1200 (no IPv6 there), declared again as a
// vxlan with an ipv6 key, was refused for good ("the kernel in this
// namespace has no such key") where the plan recreates it (the new link
// takes its keys from default's), and where the recreate is in conflict (a
// foreign port on the bridge) the refusal hid the conflict, which leaves the
// link and its keys out. Host soak seed 8444641220246, step 87, shrunk to 6
// steps: k1 a bridge at 1200, a foreign port enslaved to it, k1 out of the
// file (its delete in conflict), then k1 a vxlan with ipv6.hop_limit.
func TestWalkFinding103KeysOfALinkThePlanRecreates(t *testing.T) {
	e := newEnv(t)
	bridge := e.file("bridge.yaml", "version: 1\nlinks:\n  k1: {kind: bridge, mtu: 1200, state: down}\n")
	vxlan := e.file("vxlan.yaml", "version: 1\nlinks:\n  k1: {kind: vxlan, state: down, vxlan: {id: 100, local: \"2001:db8:ff::9\", remote: \"2001:db8:fe::1\", port: 4790}, sysctls: {ipv6.hop_limit: \"33\"}}\n")
	e.apply(bridge)
	e.ip("link", "add", "fp0", "type", "veth", "peer", "name", "fp1")
	e.ip("link", "set", "fp0", "master", "k1")
	for _, cmd := range []string{"diff", "apply"} {
		r := e.cli(cmd, "-c", vxlan)
		if r.Code != 1 || !strings.Contains(r.Stderr, "link k1 cannot be deleted or recreated: the kernel would release [fp0] from it") || strings.Contains(r.Stderr, "no such key") {
			t.Errorf("%s with k1's recreate in conflict: exit %d, want the conflict\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
		}
	}
	if got := e.ip("-d", "link", "show", "k1"); !strings.Contains(got, "mtu 1200") || !strings.Contains(got, "bridge") {
		t.Errorf("k1 changed under its conflict:\n%s", got)
	}
	e.ip("link", "del", "fp0")
	e.apply(vxlan)
	e.converged(vxlan)
	e.wantSysctl("net.ipv6.conf.k1.hop_limit", "33")
}

// 103. The same class, where the plan keeps the link: a link the kernel
// holds below 1280 keeps that MTU when the file gives it none (an mtu an
// earlier file gave and took out, a vxlan made when its device was smaller
// and kept when the device's goes up, a bridge whose mtu was set), and has
// no IPv6. Validation, which reads the file, could not see it: an ipv6 key
// there was refused as a key the kernel "does not have", and an IPv6
// address failed the apply after the plan's other writes (the device's MTU
// raised). Both are refused now, before anything is written, with the link,
// what the file declares on it and what to give; given an mtu of 1280 or
// more, the same file converges. Likewise a vxlan made, or kept, on a
// device the kernel keeps below 1280 less the encapsulation (a vxlan
// without an mtu is at its device's, less the encapsulation).
func TestWalkFinding103IPv6OnALinkTheKernelKeepsBelow1280(t *testing.T) {
	for _, c := range []struct {
		name, before, bad, want, good string
	}{
		{"veth",
			"  v0: {kind: veth, mtu: 1200, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
			"  v0: {kind: veth, veth: {peer: v1}, sysctls: {ipv6.hop_limit: \"33\"}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
			"link v0 has no IPv6: the kernel holds it at MTU 1200, below 1280, IPv6's minimum (the file gives it no mtu, so it stays there); the file declares key ipv6.hop_limit (declared at ",
			"  v0: {kind: veth, mtu: 1400, veth: {peer: v1}, sysctls: {ipv6.hop_limit: \"33\"}}\n  v1: {kind: veth, veth: {peer: v0}}\n"},
		{"vxlan",
			"  b1: {kind: bridge, mtu: 1280}\n  x1: {kind: vxlan, vxlan: {id: 20, local: \"2001:db8:ff::9\", remote: \"2001:db8:fe::9\", dev: b1}}\n",
			"  b1: {kind: bridge}\n  x1: {kind: vxlan, vxlan: {id: 20, local: \"2001:db8:ff::9\", remote: \"2001:db8:fe::9\", dev: b1}, addresses: [\"fd00:aa:9::2/128\"]}\n",
			"link x1 has no IPv6: the kernel holds it at MTU 1210, below 1280, IPv6's minimum (it has its device b1's 1280 less the 70 bytes of VXLAN encapsulation); the file declares IPv6 address fd00:aa:9::2/128 (declared at ",
			"  b1: {kind: bridge, mtu: 1500}\n  x1: {kind: vxlan, mtu: 1400, vxlan: {id: 20, local: \"2001:db8:ff::9\", remote: \"2001:db8:fe::9\", dev: b1}, addresses: [\"fd00:aa:9::2/128\"]}\n"},
		{"bridge",
			"  br: {kind: bridge, mtu: 1200}\n  p0: {kind: veth, veth: {peer: p1}, master: br}\n  p1: {kind: veth, veth: {peer: p0}}\n",
			"  br: {kind: bridge}\n  p0: {kind: veth, veth: {peer: p1}, master: br}\n  p1: {kind: veth, veth: {peer: p0}}\n" +
				"routes:\n  - {to: \"2001:db8:1::/48\", dev: br}\n",
			"link br has no IPv6: the kernel holds it at MTU 1200, below 1280, IPv6's minimum (the file gives it no mtu, so it stays there); the file declares IPv6 route to 2001:db8:1::/48 (declared at ",
			"  br: {kind: bridge, mtu: 1500}\n  p0: {kind: veth, veth: {peer: p1}, master: br}\n  p1: {kind: veth, veth: {peer: p0}}\n" +
				"routes:\n  - {to: \"2001:db8:1::/48\", dev: br}\n"},
		{"vxlan on a device kept low",
			"  v0: {kind: veth, mtu: 1200, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
			"  v0: {kind: veth, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n" +
				"  x2: {kind: vxlan, vxlan: {id: 30, remote: 192.0.2.1, dev: v0}, sysctls: {ipv6.accept_ra: \"0\"}}\n",
			"link x2 has no IPv6: the kernel makes it at MTU 1150, below 1280, IPv6's minimum (it has its device v0's 1200 less the 50 bytes of VXLAN encapsulation); the file declares key ipv6.accept_ra (declared at ",
			"  v0: {kind: veth, mtu: 1500, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n" +
				"  x2: {kind: vxlan, vxlan: {id: 30, remote: 192.0.2.1, dev: v0}, sysctls: {ipv6.accept_ra: \"0\"}}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			before := e.file("before.yaml", "version: 1\nlinks:\n"+c.before)
			bad := e.file("bad.yaml", "version: 1\nlinks:\n"+c.bad)
			good := e.file("good.yaml", "version: 1\nlinks:\n"+c.good)
			e.apply(before)
			links, addrs := e.links(), e.addrs()
			for _, cmd := range []string{"diff", "apply"} {
				r := e.cli(cmd, "-c", bad)
				if r.Code != 1 || !strings.Contains(r.Stderr, c.want) || !strings.Contains(r.Stderr, "nothing was changed") {
					t.Errorf("%s: exit %d, want 1 and %q\n%s%s", cmd, r.Code, c.want, r.Stdout, r.Stderr)
				}
			}
			if got := e.links(); got != links {
				t.Errorf("the refused apply changed the links:\nbefore:\n%s\nafter:\n%s", links, got)
			}
			if got := e.addrs(); got != addrs {
				t.Errorf("the refused apply changed the addresses:\nbefore:\n%s\nafter:\n%s", addrs, got)
			}
			e.apply(good)
			e.converged(good)
		})
	}
}

// A bridge the file gives no mtu keeps the MTU it is made with when ports
// below IPv6's minimum join it or are lowered in it: apply sets it back
// whenever a port it adds or changes moves it. Validation took it to
// follow its ports (br_mtu_auto_adjust) and refused IPv6 on it, a file the
// kernel holds.
func TestBridgeWithoutMTUKeepsIPv6BesideSmallPorts(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
links:
  br: {kind: bridge, addresses: ["2001:db8:5::1/64"]}
  p0: {kind: veth, mtu: 1200, master: br, veth: {peer: p1}}
  p1: {kind: veth, mtu: 1200, veth: {peer: p0}}
routes:
  - {to: "2001:db8:6::/48", via: "2001:db8:5::9", dev: br}
`)
	if r := e.cli("validate", "-c", f); r.Code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.apply(f)
	check := func(when string) {
		t.Helper()
		if out := e.ip("link", "show", "br"); !strings.Contains(out, "mtu 1500 ") {
			t.Errorf("%s: the bridge moved to its ports' MTU:\n%s", when, out)
		}
		if out := e.ip("-6", "addr", "show", "dev", "br"); !strings.Contains(out, "2001:db8:5::1/64") {
			t.Errorf("%s: the bridge lost its IPv6 address:\n%s", when, out)
		}
		if out := e.ip("-6", "route", "show", "2001:db8:6::/48"); !strings.Contains(out, "dev br") {
			t.Errorf("%s: the IPv6 route through the bridge is missing:\n%s", when, out)
		}
	}
	check("made")
	e.converged(f)
	g := e.file("b.yaml", strings.ReplaceAll(readFile(t, f), "mtu: 1200", "mtu: 1100"))
	e.apply(g)
	check("ports lowered")
	e.converged(g)
}
