package desired

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/model"
)

// nhLinks is five lines: the routes list starts at line 6.
const nhLinks = "version: 1\nlinks: {eth0: {kind: device}, eth1: {kind: device}, br0: {kind: bridge, state: down}, lo: {kind: device}}\n#\n#\n#\n"

func TestMultipathRouteErrors(t *testing.T) {
	for _, tc := range []struct{ name, routes, want string }{{
		name:   "one next hop",
		routes: "  - {to: 10.1.0.0/16, nexthops: [{via: 10.0.0.1}]}\n",
		want:   "f.yaml:7:33: routes[0].nexthops: expected two or more next hops, found 1; for one path give via and dev on the route",
	}, {
		// An adversarial review: an empty list validated, beside a via.
		name:   "an empty list",
		routes: "  - {to: 10.0.0.0/8, via: 1.1.1.1, nexthops: []}\n",
		want:   "f.yaml:7:46: routes[0].nexthops: is empty; remove it (via and dev on the route give one path) or list two or more next hops",
	}, {
		name:   "with a top-level via",
		routes: "  - {to: 10.1.0.0/16, via: 10.0.0.9, nexthops: [{via: 10.0.0.1}, {via: 10.0.1.1}]}\n",
		want:   "f.yaml:7:48: routes[0].nexthops: a route with nexthops takes neither via nor dev of its own; give them in each next hop",
	}, {
		name:   "weight out of range, and a next hop without via or dev",
		routes: "  - {to: 10.1.0.0/16, nexthops: [{via: 10.0.0.1, weight: 257}, {via: 10.0.1.1, weight: 0}, {}]}\n",
		want: "f.yaml:7:58: routes[0].nexthops[0].weight: expected a weight from 1 to 256, found 257\n" +
			"f.yaml:7:88: routes[0].nexthops[1].weight: expected a weight from 1 to 256, found 0\n" +
			"f.yaml:7:92: routes[0].nexthops[2]: a next hop needs via, dev or both",
	}, {
		name:   "duplicate next hop",
		routes: "  - {to: 10.1.0.0/16, nexthops: [{via: 10.0.0.1, dev: eth0}, {via: 10.0.0.1}]}\n",
		want:   "f.yaml:7:62: routes[0].nexthops[1]: the same next hop as nexthops[0]; each path is given once (use weight for a larger share)",
	}, {
		name:   "IPv4 gateway of an IPv6 route; link-local without dev; undeclared and down links",
		routes: "  - {to: 2001:db8::/32, nexthops: [{via: 10.0.0.1, dev: eth0}, {via: 'fe80::1'}, {via: 'fe80::2', dev: eth9}]}\n  - {to: 10.2.0.0/16, nexthops: [{via: 10.0.0.1}, {dev: br0}]}\n",
		want: "f.yaml:7:42: routes[0].nexthops[0].via: gateway 10.0.0.1 is not of the destination's family (IPv6)\n" +
			"f.yaml:7:70: routes[0].nexthops[1].via: gateway fe80::1 is link-local; give dev, the link it is on\n" +
			"f.yaml:7:104: routes[0].nexthops[2].dev: link \"eth9\" is not declared; declare it (kind device for an existing NIC)\n" +
			"f.yaml:8:57: routes[1].nexthops[1].dev: link br0 is declared state: down; the kernel refuses routes through a link that is down",
	}, {
		name:   "lo as the link of an IPv6 gateway, single and multipath",
		routes: "  - {to: 10.1.0.0/16, via: 'fe80::1', dev: lo}\n  - {to: 10.2.0.0/16, nexthops: [{via: 'fe80::1', dev: lo}, {via: 10.0.1.1}]}\n",
		want: "f.yaml:7:44: routes[0].dev: the kernel refuses lo as the link of an IPv6 gateway (\"Egress device can not be loopback device\"); give another link\n" +
			"f.yaml:8:56: routes[1].nexthops[0].dev: the kernel refuses lo as the link of an IPv6 gateway (\"Egress device can not be loopback device\"); give another link",
	}, {
		name:   "a blackhole route with next hops",
		routes: "  - {to: 10.1.0.0/16, type: blackhole, nexthops: [{via: 10.0.0.1}, {via: 10.0.1.1}]}\n",
		want:   "f.yaml:7:50: routes[0].nexthops: a blackhole route takes no nexthops; only a unicast route has several paths",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := errorsOf(t, src("f.yaml", nhLinks+"routes:\n"+tc.routes))
			if got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestMultipathAndRFC5549Routes(t *testing.T) {
	cfg, err := Parse([]Source{src("f.yaml", nhLinks+`routes:
  - {to: 10.1.0.0/16, nexthops: [{via: 10.0.1.1, dev: eth1}, {via: 10.0.0.1, dev: eth0, weight: 3}]}
  - {to: 2001:db8::/32, nexthops: [{via: 'fe80::1', dev: eth0}, {via: 'fe80::2', dev: eth1}]}
  - {to: 10.2.0.0/16, via: 'fe80::1', dev: eth0}
  - {to: default, family: ipv4, nexthops: [{via: 'fe80::1', dev: eth0}, {via: 10.0.1.1}]}
  - {to: 10.3.0.0/16, nexthops: [{dev: eth0}, {dev: eth1}]}
`)})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	p := netip.MustParsePrefix
	want := []model.Route{
		{Table: 254, Dst: p("0.0.0.0/0"), Type: 1, NextHops: []model.NextHop{{Gateway: a("10.0.1.1"), Weight: 1}, {Gateway: a("fe80::1"), Dev: "eth0", Weight: 1}}},
		{Table: 254, Dst: p("10.1.0.0/16"), Type: 1, NextHops: []model.NextHop{{Gateway: a("10.0.0.1"), Dev: "eth0", Weight: 3}, {Gateway: a("10.0.1.1"), Dev: "eth1", Weight: 1}}},
		{Table: 254, Dst: p("10.2.0.0/16"), Type: 1, Gateway: a("fe80::1"), Dev: "eth0"},
		{Table: 254, Dst: p("10.3.0.0/16"), Type: 1, Scope: model.ScopeLink, NextHops: []model.NextHop{{Dev: "eth0", Weight: 1}, {Dev: "eth1", Weight: 1}}},
		{Table: 254, Dst: p("2001:db8::/32"), Type: 1, Metric: 1024, NextHops: []model.NextHop{{Gateway: a("fe80::1"), Dev: "eth0", Weight: 1}, {Gateway: a("fe80::2"), Dev: "eth1", Weight: 1}}},
	}
	got := cfg.State.Routes
	model.SortRoutes(got)
	for i := range got {
		got[i].Origin = model.Origin{}
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
}

// TestDefaultRouteFamilyFromNextHops: a default route's family comes from
// its next hops: IPv4 when any is IPv4 (an IPv6 first hop is RFC 5549),
// IPv6 when all are.
// Walk finding 49 (host seed 114581346965988, step 86).
func TestDefaultRouteFamilyFromNextHops(t *testing.T) {
	st, err := Parse([]Source{{Name: "f.yaml", Data: []byte(`version: 1
links:
  eth0: {kind: device}
  eth1: {kind: device, addresses: [10.0.1.2/24]}
routes:
  - {to: default, nexthops: [{via: 'fe80::1', dev: eth0}, {via: 10.0.1.1, dev: eth1}]}
  - {to: default, table: 200, nexthops: [{via: 'fe80::1', dev: eth0}, {via: 'fe80::2', dev: eth1}]}
  - {to: default, table: 201, nexthops: [{dev: eth0}, {via: 'fe80::2', dev: eth1}]}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range st.State.Routes {
		got = append(got, fmt.Sprintf("%s table %d", r.Dst, r.Table))
	}
	sort.Strings(got)
	if want := "0.0.0.0/0 table 254,::/0 table 200,::/0 table 201"; strings.Join(got, ",") != want {
		t.Errorf("routes %v, want %s", got, want)
	}
}
