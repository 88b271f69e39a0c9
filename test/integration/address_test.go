package integration

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Changing an address within its subnet, or dropping the primary address of
// a subnet while a secondary stays, keeps the link's other addresses and the
// routes through it (ours and foreign): with promote_secondaries off, the
// kernel deletes a primary's secondaries with it, and the routes through a
// link left without an IPv4 address.
func TestAddressChangeWithinSubnet(t *testing.T) {
	for _, tc := range []struct{ name, before, after, want string }{
		{"one address changed", "[10.19.0.1/24]", "[10.19.0.2/24]", "10.19.0.2/24"},
		{"primary dropped, secondary kept", "[10.19.0.1/24, 10.19.0.5/24]", "[10.19.0.5/24]", "10.19.0.5/24"},
		{"primary changed, secondary kept", "[10.19.0.1/24, 10.19.0.5/24]", "[10.19.0.2/24, 10.19.0.5/24]", "10.19.0.2/24 10.19.0.5/24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			conf := func(addrs string) string {
				return "version: 1\nlinks:\n  ab0: {kind: bridge, addresses: " + addrs + "}\nroutes:\n  - {to: 10.50.0.0/16, via: 10.19.0.254, dev: ab0}\n"
			}
			e.apply(e.file("a.yaml", conf(tc.before)))
			e.ip("route", "add", "10.60.0.0/16", "via", "10.19.0.254", "dev", "ab0", "proto", "static")
			f := e.file("b.yaml", conf(tc.after))
			e.apply(f)
			var got []string
			if f := strings.Fields(e.ip("-4", "-br", "addr", "show", "dev", "ab0")); len(f) > 2 {
				got = f[2:]
			}
			sort.Strings(got) // the promoted secondary is listed first
			if strings.Join(got, " ") != tc.want {
				t.Errorf("addresses: %v, want %s", got, tc.want)
			}
			routes := e.ip("-4", "route", "show")
			for _, r := range []string{"10.50.0.0/16 via 10.19.0.254 dev ab0 proto 245", "10.60.0.0/16 via 10.19.0.254 dev ab0 proto static"} {
				if !strings.Contains(routes, r) {
					t.Errorf("route %q lost:\n%s", r, routes)
				}
			}
			if v := strings.TrimSpace(nettest.InNS(t, e.ns, "cat", "/proc/sys/net/ipv4/conf/ab0/promote_secondaries")); v != "1" {
				t.Errorf("promote_secondaries on the owned link: %s", v)
			}
			if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
				t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// A route whose source is an IPv6 address added in the same apply waits for
// the address's duplicate address detection: the kernel refuses a tentative
// source (EINVAL), and the first apply would fail.
func TestRouteFromANewIPv6Address(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
links:
  d0: {kind: veth, veth: {peer: d1}, addresses: ["2001:db8:5::1/64"]}
  d1: {kind: veth, veth: {peer: d0}}
routes:
  - {to: "2001:db8:6::/48", via: "2001:db8:5::2", dev: d0, src: "2001:db8:5::1"}
`)
	e.apply(f)
	if out := e.ip("-6", "route", "show", "2001:db8:6::/48"); !strings.Contains(out, "src 2001:db8:5::1") {
		t.Errorf("route: %q", out)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// Dropping an address and the route that uses it as source in one change:
// the kernel deletes the route with the address, so the route is deleted
// first (deletes run in the reverse order of creates), and a delete that
// finds the object gone already is done, not an error.
func TestDropAddressAndRouteFromIt(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  sb0: {kind: bridge, addresses: [10.91.0.1/24, 10.92.0.1/24]}
routes:
  - {to: 10.93.0.0/16, via: 10.91.0.254, dev: sb0, src: 10.91.0.1}
`))
	f := e.file("b.yaml", "version: 1\nlinks:\n  sb0: {kind: bridge, addresses: [10.92.0.1/24]}\n")
	r := e.cli("diff", "-c", f)
	if i, j := strings.Index(r.Stdout, "- route"), strings.Index(r.Stdout, "- address"); i < 0 || j < 0 || i > j {
		t.Errorf("diff: the route's delete should come before the address's:\n%s", r.Stdout)
	}
	e.apply(f)
	// Deleted behind the plan's back: the delete is done.
	e.apply(e.file("c.yaml", "version: 1\nlinks:\n  sb0: {kind: bridge, addresses: [10.92.0.1/24]}\nroutes:\n  - {to: 10.94.0.0/16, type: blackhole}\n"))
	k := openKernel(t, e)
	eng := &engine.Engine{Kernel: k, Ledger: mustLedger(t)}
	cfg, err := desired.Parse([]desired.Source{{Name: "f.yaml", Data: []byte("version: 1\nlinks:\n  sb0: {kind: bridge}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := eng.Plan(cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	e.ip("route", "del", "blackhole", "10.94.0.0/16")
	e.ip("addr", "del", "10.92.0.1/24", "dev", "sb0")
	if res, _ := eng.Apply(context.Background(), plan); res.Err() != nil || len(res.Done) != 2 {
		t.Errorf("deletes of what is gone: %v (%d done)", res.Err(), len(res.Done))
	}
}

// On a link netreconcile does not own, changing the scope of an address that
// is the primary of its subnet would delete it and, with promote_secondaries
// off, the link's other addresses of the subnet (here a foreign one): a
// conflict instead.
func TestDeviceAddressPrimaryChangeKeepsOthers(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "dv0", "type", "bridge")
	e.ip("addr", "add", "10.19.0.1/24", "dev", "dv0")
	e.ip("addr", "add", "10.19.0.9/24", "dev", "dv0")
	f := e.file("a.yaml", "version: 1\nlinks:\n  dv0: {kind: device, addresses: [{address: 10.19.0.1/24, scope: link}]}\n")
	r := e.cli("apply", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "would delete the other addresses of its subnet on dv0") {
		t.Errorf("apply: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("-4", "-o", "addr", "show", "dev", "dv0"); !strings.Contains(out, "10.19.0.9/24") || !strings.Contains(out, "10.19.0.1/24") {
		t.Errorf("addresses of dv0:\n%s", out)
	}
}

// IPv6 addresses whose scope the kernel derives (fe80::/10 link, fec0::/10
// site) converge: the kernel ignores the scope asked for, so a desired
// scope other than the derived one was replaced on every pass, restarting
// duplicate address detection and dropping routes each time.
func TestIPv6AddressScopeConverges(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
links:
  br9:
    kind: bridge
    addresses: ["fd22::1/64", "fe80::1/64", "fec0::1/64", {address: "fe80::2/64", scope: link}, {address: "fd23::1/64", scope: global}]
`)
	e.apply(f)
	out := e.ip("-6", "addr", "show", "dev", "br9")
	for _, w := range []string{"inet6 fd22::1/64 scope global", "inet6 fe80::1/64 scope link", "inet6 fec0::1/64 scope site", "inet6 fe80::2/64 scope link", "inet6 fd23::1/64 scope global"} {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q:\n%s", w, out)
		}
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("second diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A point-to-point address converges: the kernel keeps the peer's prefix
// length only, so an address whose length differs (10.30.0.1/24 with peer
// 10.30.0.2/32) was added and deleted by turns; it is refused before
// anything is written, and the address written as the kernel keeps it
// converges.
func TestPeerAddressConverges(t *testing.T) {
	e := newEnv(t)
	bad := e.file("bad.yaml", "version: 1\nlinks:\n  pp0: {kind: bridge, addresses: [{address: 10.30.0.1/24, peer: 10.30.0.2/32}]}\n")
	if r := e.cli("apply", "-c", bad); r.Code == 0 || !strings.Contains(r.Stderr, "with a peer the kernel keeps one prefix length, the peer's") {
		t.Errorf("apply with /24 and peer /32: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("-br", "link"); strings.Contains(out, "pp0") {
		t.Errorf("a refused file wrote links:\n%s", out)
	}
	f := e.file("a.yaml", `version: 1
links:
  pp0: {kind: bridge, addresses: [{address: 10.30.0.1/32, peer: 10.30.0.2/32}, {address: 10.31.0.1/24, peer: 10.31.0.0/24}, {address: "fd30::1/128", peer: "fd30::2/128"}]}
`)
	e.apply(f)
	out := e.ip("addr", "show", "dev", "pp0")
	for _, w := range []string{"inet 10.30.0.1 peer 10.30.0.2/32", "inet 10.31.0.1 peer 10.31.0.0/24", "inet6 fd30::1 peer fd30::2/128"} {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q:\n%s", w, out)
		}
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("second diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
