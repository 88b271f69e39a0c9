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
