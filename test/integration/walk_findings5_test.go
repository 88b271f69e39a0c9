package integration

import (
	"strings"
	"testing"
)

// 90. A link's net.ipv6.conf.LINK.mtu is the kernel's to move: it sets it
// to the link's MTU when the link gets its IPv6 settings (a new link starts
// there, not at default's), when the MTU changes and when the link becomes
// ready (up, with carrier: a veth whose peer comes up). The plan took a new
// link's value for default's and wrote nothing when the file asked for
// that (1280), wrote nothing when the file kept the key while the link's
// MTU or state changed, and wrote a new link's key before its carrier came:
// the kernel then set the link's MTU, and every such apply failed its
// verify.
// Adversarial tests of issue 30 (by hand: a veth pair with ipv6.mtu 1280,
// then its MTU 1500 -> 1300 -> 1400, then down and up).
func TestWalkFinding90IPv6MTUFollowsTheLink(t *testing.T) {
	e := newEnv(t)
	file := func(name, v0 string) string {
		return e.file(name, "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, sysctls: {ipv6.mtu: 1280}"+v0+"}\n"+
			"  v1: {kind: veth, veth: {peer: v0}}\n")
	}
	for _, f := range []string{
		file("new.yaml", ""),
		file("mtu.yaml", ", mtu: 1400"),
		file("down.yaml", ", mtu: 1400, state: down"),
		file("up.yaml", ", mtu: 1400"),
	} {
		e.apply(f)
		if got := e.sysctl("net.ipv6.conf.v0.mtu"); got != "1280" {
			t.Errorf("after %s: net.ipv6.conf.v0.mtu is %s, want 1280", f, got)
		}
		e.converged(f)
	}
}

// 91. The kernel refuses an IPv6 route through a link that is down
// ("Nexthop device is not up", or no route to a gateway whose connected
// route went with the link), as it refuses an IPv4 one. Validation refused
// only the IPv4 ones: a file with an IPv6 route through a link it declares
// down validated, and every apply failed on the route.
// Adversarial tests of issue 30 (by hand: a veth with an IPv6 address and
// a route through it, then state: down).
func TestWalkFinding91IPv6RouteThroughADownLink(t *testing.T) {
	e := newEnv(t)
	for _, route := range []string{
		`{to: "2001:db8:1::/48", via: "2001:db8::2", dev: v0}`,
		`{to: "2001:db8:1::/48", dev: v0}`,
		`{to: "2001:db8:1::/48", nexthops: [{via: "fe80::1", dev: v0}, {via: "fe80::2", dev: v1}]}`,
	} {
		f := e.file("down.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, state: down, addresses: [\"2001:db8::1/64\"]}\n"+
			"  v1: {kind: veth, veth: {peer: v0}}\nroutes:\n  - "+route+"\n")
		r := e.cli("apply", "-c", f)
		if r.Code != 1 || !strings.Contains(r.Stderr, "declared state: down; the kernel refuses routes through a link that is down") {
			t.Errorf("apply of an IPv6 route %s through a link declared down: exit %d, want the route refused at validation\n%s%s", route, r.Code, r.Stdout, r.Stderr)
		}
		if got := e.ip("link", "show"); strings.Contains(got, "v0") {
			t.Fatalf("a refused file changed the kernel:\n%s", got)
		}
	}
}

// 93. net.ipv6.conf.all.disable_ipv6 sets every link's disable_ipv6 (and
// default's), as all.forwarding sets every link's forwarding, and so do
// all.addr_gen_mode, all.ignore_routes_with_linkdown and
// all.force_forwarding (measured on 6.18). Only the forwarding keys were
// written again after their master: a link that declared
// ipv6.disable_ipv6: 0 under all.disable_ipv6: 1 failed the verify, and its
// IPv6 addresses and routes, which the master's write deleted, were not
// planned again. A file with all.disable_ipv6: 1 and an IPv6 address on a
// link that does not turn IPv6 back on validated, and every apply failed
// on the address (EACCES).
// Adversarial tests of issue 30 (by hand: a veth with IPv4 and IPv6
// addresses and an IPv6 route; all.disable_ipv6: 1 with the link's own 0).
func TestWalkFinding93FamilyWideSysctlsSetEveryLink(t *testing.T) {
	e := newEnv(t)
	file := func(name, global, own string) string {
		return e.file(name, "version: 1\n"+global+"links:\n  v0: {kind: veth, veth: {peer: v1}, addresses: [10.0.0.1/24, \"2001:db8::1/64\"]"+own+"}\n"+
			"  v1: {kind: veth, veth: {peer: v0}}\nroutes:\n  - {to: \"2001:db8:1::/48\", via: \"2001:db8::2\", dev: v0}\n")
	}
	plain := file("plain.yaml", "", "")
	e.apply(plain)
	f := file("disabled.yaml", "sysctls:\n  net.ipv6.conf.all.disable_ipv6: 1\n  net.ipv6.conf.all.ignore_routes_with_linkdown: 1\n",
		", sysctls: {ipv6.disable_ipv6: 0, ipv6.ignore_routes_with_linkdown: 0}")
	e.apply(f)
	e.converged(f)
	e.wantSysctl("net.ipv6.conf.v0.disable_ipv6", "0")
	e.wantSysctl("net.ipv6.conf.v1.disable_ipv6", "1")
	e.wantSysctl("net.ipv6.conf.v0.ignore_routes_with_linkdown", "0")
	if got := e.ip("-6", "route", "show", "dev", "v0"); !strings.Contains(got, "2001:db8:1::/48") {
		t.Errorf("v0 lost its IPv6 route to the global key's write:\n%s", got)
	}
	e.roundTrip(f)
	e.apply(plain)
	e.converged(plain)
	bad := file("bad.yaml", "sysctls:\n  net.ipv6.conf.all.disable_ipv6: 1\n", "")
	if r := e.cli("validate", "-c", bad); r.Code != 1 || !strings.Contains(r.Stderr, "disables IPv6 on every link, and link v0 declares IPv6 address 2001:db8::1/64") {
		t.Errorf("validate of all.disable_ipv6 with an IPv6 address: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// 92. A link's ipv6.disable_ipv6 that leaves the file goes back to the
// value it had (0) after the plan's creates, with the other restores: the
// file's IPv6 address and route on the link, back in the same step, were
// added while IPv6 was still off, and the kernel refused them (EACCES, no
// route to host) in every such apply.
// Adversarial tests of issue 30 (by hand: a veth with an IPv6 address and
// route; ipv6.disable_ipv6: 1 without them; then the first file again).
func TestWalkFinding92IPv6TurnedBackOnBeforeItsAddresses(t *testing.T) {
	e := newEnv(t)
	v6 := e.file("v6.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, addresses: [10.0.0.1/24, \"2001:db8::1/64\"]}\n"+
		"  v1: {kind: veth, veth: {peer: v0}}\nroutes:\n  - {to: \"2001:db8:1::/48\", via: \"2001:db8::2\", dev: v0}\n")
	off := e.file("off.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, addresses: [10.0.0.1/24], sysctls: {ipv6.disable_ipv6: 1}}\n"+
		"  v1: {kind: veth, veth: {peer: v0}}\n")
	for _, f := range []string{v6, off, v6} {
		e.apply(f)
		e.converged(f)
	}
	e.wantSysctl("net.ipv6.conf.v0.disable_ipv6", "0")
	if got := e.ip("-6", "route", "show", "dev", "v0"); !strings.Contains(got, "2001:db8:1::/48") {
		t.Errorf("v0 lacks its IPv6 route:\n%s", got)
	}
}

// 94. Below 1280, IPv6's minimum MTU, the kernel takes IPv6 off a link: its
// IPv6 addresses, routes and net.ipv6 keys go, and come back (the keys from
// default's) when the MTU is 1280 or more again. A file lowering the MTU
// planned the deletes of the IPv6 address and route, and the apply failed
// on the address the kernel had already taken; raising it again was
// refused for good ("the kernel in this namespace has no such key") for
// the link's IPv6 keys; a file giving a link both an MTU below 1280 and an
// IPv6 address or key validated, and every apply failed.
// Adversarial tests of issue 30 (by hand: a veth with IPv6 keys, an IPv6
// address and route, MTU 1500 -> 1200 without them -> 1500 with them).
func TestWalkFinding94IPv6GoesBelowItsMinimumMTU(t *testing.T) {
	e := newEnv(t)
	v6 := e.file("v6.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, mtu: 1500, addresses: [10.0.0.1/24, \"2001:db8::1/64\"], sysctls: {ipv6.accept_ra: 0}}\n"+
		"  v1: {kind: veth, veth: {peer: v0}, mtu: 1500}\nroutes:\n  - {to: \"2001:db8:1::/48\", via: \"2001:db8::2\", dev: v0}\n")
	small := e.file("small.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, mtu: 1200, addresses: [10.0.0.1/24]}\n"+
		"  v1: {kind: veth, veth: {peer: v0}, mtu: 1200}\n")
	for _, f := range []string{v6, small, v6} {
		e.apply(f)
		e.converged(f)
	}
	e.wantSysctl("net.ipv6.conf.v0.accept_ra", "0")
	if got := e.ip("-6", "route", "show", "dev", "v0"); !strings.Contains(got, "2001:db8:1::/48") {
		t.Errorf("v0 lacks its IPv6 route:\n%s", got)
	}
	bad := e.file("bad.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, mtu: 1200, addresses: [\"2001:db8::1/64\"]}\n  v1: {kind: veth, veth: {peer: v0}}\n")
	if r := e.cli("validate", "-c", bad); r.Code != 1 || !strings.Contains(r.Stderr, "below 1280, IPv6's minimum, the kernel takes IPv6 off the link, and the link declares IPv6 address 2001:db8::1/64") {
		t.Errorf("validate of MTU 1200 with an IPv6 address: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// 95. An IPv6 link-local address the file declares is netreconcile's: it
// carries its protocol, where the kernel's own carries kernel_ll (3). All
// link-local addresses were taken for the kernel's: one the file declared
// was added but never deleted when it left the file or changed (the old
// one stayed beside the new), and show printed it as the kernel's, in a
// comment.
// Adversarial tests of issue 30 (by hand: a bridge with fe80::1234/64,
// then without it; lo with fe80::7/64).
func TestWalkFinding95DeclaredLinkLocalAddressIsOurs(t *testing.T) {
	e := newEnv(t)
	with := e.file("with.yaml", "version: 1\nlinks:\n  lo: {kind: device, addresses: [\"fe80::7/64\"]}\n  b0: {kind: bridge, addresses: [{address: \"fe80::1234/64\", scope: link}]}\n")
	without := e.file("without.yaml", "version: 1\nlinks:\n  lo: {kind: device}\n  b0: {kind: bridge}\n")
	e.apply(with)
	e.converged(with)
	if shown := e.roundTrip(with); !strings.Contains(shown, "fe80::1234/64") || !strings.Contains(shown, "fe80::7/64") {
		t.Errorf("show leaves out the declared link-local addresses:\n%s", shown)
	}
	e.apply(without)
	e.converged(without)
	for _, dev := range []string{"b0", "lo"} {
		if got := e.ip("-6", "addr", "show", "dev", dev); strings.Contains(got, "fe80::1234") || strings.Contains(got, "fe80::7/") {
			t.Errorf("a declared link-local address stayed on %s after it left the file:\n%s", dev, got)
		}
	}
}

// 99. The MTU the kernel gives a link can be below the file's: a vxlan is
// made at most its device's MTU less the encapsulation (70 bytes over IPv6),
// a macvlan without an MTU takes its parent's. A vxlan declared at 1280 on
// a bridge at 1280, with an IPv6 local address and an IPv6 address of its
// own, validated; diff warned about the MTU and planned the address; apply
// made the link at 1210, where the kernel has no IPv6, and failed on the
// address (invalid argument). Host soak seed 49809459181331, step 34.
func TestWalkFinding99IPv6OnALinkItsLowerDeviceHoldsBelow1280(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ name, file, want string }{
		{"vxlan.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, mtu: 1280}\n" +
			"  x1: {kind: vxlan, mtu: 1280, vxlan: {id: 20, local: \"2001:db8:ff::9\", remote: \"2001:db8:fe::9\", dev: b1}, addresses: [\"fd00:aa:9::2/128\"]}\n",
			"vxlan.yaml:4:26: links.x1.mtu: the kernel gives the link MTU 1210 (its device b1's 1280 less the 70 bytes of VXLAN encapsulation over IPv6), below 1280, IPv6's minimum, the kernel takes IPv6 off the link, and the link declares IPv6 address fd00:aa:9::2/128; give b1 an MTU of 1350 or more"},
		{"vxlan-nomtu.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, mtu: 1300}\n" +
			"  x1: {kind: vxlan, vxlan: {id: 20, remote: 192.0.2.1, dev: b1}, sysctls: {ipv6.accept_ra: 0}}\n",
			"links.x1.vxlan.dev: the kernel gives the link MTU 1250 (its device b1's 1300 less the 50 bytes of VXLAN encapsulation over IPv4), below 1280, IPv6's minimum, the kernel takes IPv6 off the link, and with it key ipv6.accept_ra; give b1 an MTU of 1330 or more"},
		{"macvlan.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, mtu: 1200}\n  v1: {kind: veth, veth: {peer: v0}}\n" +
			"  m0: {kind: macvlan, macvlan: {parent: v0}, addresses: [\"2001:db8::1/64\"]}\n",
			"links.m0.macvlan.parent: the kernel gives the link MTU 1200 (its parent v0's), below 1280"},
		{"route.yaml", "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}, mtu: 1200}\n  v1: {kind: veth, veth: {peer: v0}}\n" +
			"  m0: {kind: macvlan, macvlan: {parent: v0}}\nroutes:\n  - {to: \"2001:db8:1::/48\", dev: m0}\n",
			"routes[0].dev: link m0 has MTU 1200 (its parent v0's), below 1280: the kernel takes IPv6 off such a link"},
	} {
		f := e.file(c.name, c.file)
		if r := e.cli("validate", "-c", f); r.Code != 1 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("validate %s: exit %d, want 1 and %q\n%s%s", c.name, r.Code, c.want, r.Stdout, r.Stderr)
		}
	}
	// At its device's MTU less the encapsulation, the vxlan has IPv6.
	ok := e.file("ok.yaml", "version: 1\nlinks:\n  b1: {kind: bridge, mtu: 1350}\n"+
		"  x1: {kind: vxlan, mtu: 1280, vxlan: {id: 20, local: \"2001:db8:ff::9\", remote: \"2001:db8:fe::9\", dev: b1}, addresses: [\"fd00:aa:9::2/128\"]}\n")
	e.apply(ok)
	e.converged(ok)
	if got := e.ip("-6", "addr", "show", "dev", "x1"); !strings.Contains(got, "fd00:aa:9::2/128") {
		t.Errorf("x1 lacks its IPv6 address:\n%s", got)
	}
}

// 100. A link's pool address given back in the plan that lowers its MTU
// below 1280: the kernel takes the link's IPv6 addresses with the MTU
// change, and the delete planned for the pool's IPv6 address failed on an
// address that was gone ("delete address fd98::/64 dev p0c: no such device
// or address"). Host walk of make test's seed 90934393032559 with the
// walk's MTUs below 1280, step 26: a veth with a dual-stack pool's
// addresses, MTU 1500 -> 1000 without them. The same link at 1000 with the
// pool's addresses validated, and the apply failed on the IPv6 one.
func TestWalkFinding100PoolAddressGivenBackAsIPv6Goes(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "set", "lo", "up")
	pool := "version: 1\npools:\n  pd: {subnets: [{ipv4: 10.98.0.0/24, ipv6: \"fd98::/120\"}], export-table: 120, reuse-delay: 0s}\nlinks:\n  lo: {kind: device, state: up}\n"
	with := e.file("with.yaml", pool+"  v0: {kind: veth, veth: {peer: v1}, mtu: 1500, addresses: [{pool: pd}]}\n  v1: {kind: veth, veth: {peer: v0}}\n")
	without := e.file("without.yaml", pool+"  v0: {kind: veth, veth: {peer: v1}, mtu: 1000}\n  v1: {kind: veth, veth: {peer: v0}}\n")
	for _, f := range []string{with, without, with} {
		e.apply(f)
		e.converged(f)
	}
	if got := e.ip("-6", "addr", "show", "dev", "v0"); !strings.Contains(got, "fd98::") {
		t.Errorf("v0 lacks its pool's IPv6 address:\n%s", got)
	}
	// Below 1280 with the pool's address: refused, as a static IPv6
	// address is (the kernel would refuse the pool's).
	bad := e.file("bad.yaml", pool+"  v0: {kind: veth, veth: {peer: v1}, mtu: 1000, addresses: [{pool: pd}]}\n  v1: {kind: veth, veth: {peer: v0}}\n")
	if r := e.cli("validate", "-c", bad); r.Code != 1 || !strings.Contains(r.Stderr, "links.v0.mtu: below 1280, IPv6's minimum, the kernel takes IPv6 off the link, and the link takes an IPv6 address from pool pd") {
		t.Errorf("validate of MTU 1000 with a dual-stack pool's address: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
