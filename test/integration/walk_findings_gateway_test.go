package integration

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// 101. An on-link IPv4 route whose gateway the kernel's local table types
// other than unicast (an address of the host, one in the subnet of an
// address on lo, a subnet's broadcast address, multicast) validated, then
// the kernel refused it ("Nexthop has invalid gateway") and the apply
// failed. Walk finding 101 (host soak seed 84241386452614, step 81: lo up
// with 10.60.0.5/24, a route via 10.60.0.201 dev lo onlink; shrunk to one
// file).
//
// The kernel is the oracle: gateways drawn around the file's addresses
// (each address, its subnet's first and last, neighbours, inside and
// outside lo's subnet, loopback, multicast) are each given to the kernel
// by ip route in a namespace holding the same addresses, and validate
// must refuse exactly the routes the kernel refuses.
func TestWalkFinding101OnLinkGatewayTheKernelTakesAsLocal(t *testing.T) {
	e := newEnv(t)
	addrs := map[string][]string{
		"lo": {"10.60.0.5/24", "10.61.0.7/32"},
		"d0": {"10.70.0.1/24", "10.71.0.1/31", "10.72.0.9/30", "10.73.0.1/32"},
	}
	e.ip("link", "set", "lo", "up")
	e.ip("link", "add", "d0", "type", "veth", "peer", "name", "d1")
	e.ip("link", "set", "d0", "up")
	var pfx []netip.Prefix
	for _, link := range []string{"lo", "d0"} {
		for _, a := range addrs[link] {
			e.ip("addr", "add", a, "dev", link)
			pfx = append(pfx, netip.MustParsePrefix(a))
		}
	}
	rng := rand.New(rand.NewPCG(101, 0))
	seen := map[netip.Addr]bool{}
	var gws []netip.Addr
	add := func(a netip.Addr) {
		if !seen[a] {
			seen[a] = true
			gws = append(gws, a)
		}
	}
	off := func(a netip.Addr, d int) netip.Addr {
		b := a.As4()
		binary.BigEndian.PutUint32(b[:], uint32(int(binary.BigEndian.Uint32(b[:]))+d))
		return netip.AddrFrom4(b)
	}
	for _, p := range pfx {
		first := p.Masked().Addr()
		last := off(first, 1<<(32-p.Bits())-1)
		for _, a := range []netip.Addr{p.Addr(), first, last, off(first, -1), off(last, 1), off(p.Addr(), 1), off(first, rng.IntN(1<<(32-p.Bits())))} {
			add(a)
		}
	}
	for _, a := range []string{"127.0.0.1", "127.1.2.3", "224.0.0.1", "239.1.1.1", "255.255.255.255", "10.80.0.9", "192.0.2.1"} {
		add(netip.MustParseAddr(a))
	}
	devs := []string{"lo", "d0"}
	var routes strings.Builder
	kernelRefuses := map[int]string{}
	for i, gw := range gws {
		dev := devs[i%2]
		to := fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256)
		fmt.Fprintf(&routes, "  - {to: %s, via: %s, dev: %s, table: 300, onlink: true}\n", to, gw, dev)
		out, err := exec.Command("ip", "-n", e.ns, "route", "add", to, "via", gw.String(), "dev", dev, "onlink", "table", "300").CombinedOutput()
		if err != nil {
			kernelRefuses[i] = strings.TrimSpace(string(out))
		}
	}
	if len(kernelRefuses) == 0 || len(kernelRefuses) == len(gws) {
		t.Fatalf("the kernel refused %d of %d gateways: the draw tests nothing", len(kernelRefuses), len(gws))
	}
	var links strings.Builder
	links.WriteString("links:\n  lo: {kind: device, state: up, addresses: [" + strings.Join(addrs["lo"], ", ") + "]}\n")
	links.WriteString("  d0: {kind: veth, veth: {peer: d1}, addresses: [" + strings.Join(addrs["d0"], ", ") + "]}\n  d1: {kind: veth, veth: {peer: d0}}\n")
	f := e.file("gw.yaml", "version: 1\n"+links.String()+"routes:\n"+routes.String())
	r := e.cli("validate", "-c", f)
	refused := map[int]string{}
	for _, m := range regexp.MustCompile(`routes\[(\d+)\]\.via: (.*)`).FindAllStringSubmatch(r.Stdout+r.Stderr, -1) {
		i, _ := strconv.Atoi(m[1])
		refused[i] = m[2]
	}
	for i, gw := range gws {
		k, kok := kernelRefuses[i]
		v, vok := refused[i]
		if kok != vok {
			t.Errorf("gateway %s dev %s onlink: the kernel refuses: %v (%s); validate refuses: %v (%s)", gw, devs[i%2], kok, k, vok, v)
		}
	}
	t.Logf("%d gateways: the kernel and validate refuse %d", len(gws), len(kernelRefuses))
}

// 108. IPv6's gateway check looks the gateway up in the route's own table
// ignoring link state, then, if that finds nothing, through the rules,
// leaving out the routes of a link without carrier whose
// ignore_routes_with_linkdown is set (measured on 6.18: "ip -6 route add
// 2001:db8:5::/64 via fd00:61::c9 dev p9a table 100" is refused with no
// route to host until p9a has carrier; in main, where the connected route
// is, it is taken; IPv4 takes both). A route in another table through such
// a link failed the apply, on every pass until carrier came. Walk finding
// 108 (host seed 10660574966138, step 73: a veth whose peer in another
// namespace is down, all.ignore_routes_with_linkdown: 1, a route via a
// gateway of its subnet in table 100).
//
// The route is taken now, as the kernel takes it with carrier and keeps it
// without; a gateway off the link is still refused, as with carrier, and
// no guard is left behind.
func TestWalkFinding108IPv6GatewayRouteOnALinkWithoutCarrier(t *testing.T) {
	e := &env{t: t, ns: nettest.NewNetNSPrefixed(t, "fa-linkdown"), state: t.TempDir(), dir: t.TempDir()}
	file := func(name, v0, v1, keys, routes string) string {
		return e.file(name, "version: 1\n"+keys+"links:\n"+
			"  v0: {kind: veth, veth: {peer: v1}, addresses: [\"fd00:61::4/64\", 10.97.0.3/24]"+v0+"}\n"+
			"  v1: {kind: veth, veth: {peer: v0}"+v1+"}\n"+
			"  v2: {kind: veth, veth: {peer: v3}, addresses: [\"fd00:62::4/64\"]}\n"+
			"  v3: {kind: veth, veth: {peer: v2}}\n"+
			"routes:"+cmp.Or(routes, " []\n"))
	}
	routes := "\n  - {to: \"2001:db8:5::/64\", via: \"fd00:61::c9\", dev: v0, table: 100, metric: 100}\n" +
		"  - {to: \"2001:db8:6::/64\", via: \"fd00:61::c9\", table: 100}\n" +
		"  - {to: \"2001:db8:7::/64\", nexthops: [{via: \"fd00:61::c9\", dev: v0}, {via: \"fd00:62::c9\", dev: v2}], table: 101}\n" +
		"  - {to: 10.5.0.0/16, via: 10.97.0.201, dev: v0, table: 100}\n"
	all := "sysctls: {net.ipv6.conf.all.ignore_routes_with_linkdown: 1}\n"
	guards := func(when string) {
		t.Helper()
		if got := e.ip("-6", "route", "show", "table", "all", "metric", "4294967295"); got != "" {
			t.Errorf("%s: guard routes left:\n%s", when, got)
		}
	}
	// The walk's case: all.'s key, and v1 down, which leaves v0 without carrier.
	noCarrier := file("nocarrier.yaml", "", ", state: down", all, routes)
	e.apply(noCarrier)
	e.converged(noCarrier)
	if got := e.ip("link", "show", "v0"); !strings.Contains(got, "NO-CARRIER") {
		t.Fatalf("v0 has carrier; the test needs it without:\n%s", got)
	}
	e.wantSysctl("net.ipv6.conf.v0.ignore_routes_with_linkdown", "1")
	for _, want := range []string{"2001:db8:5::/64 via fd00:61::c9 dev v0 table 100 proto 245 metric 100 ", "2001:db8:6::/64 via fd00:61::c9 dev v0 table 100 proto 245 ", "10.5.0.0/16 via 10.97.0.201 dev v0 table 100 proto 245 "} {
		if got := e.ip("route", "show", "table", "all"); !strings.Contains(got, want) {
			t.Errorf("no %q:\n%s", want, got)
		}
	}
	if got := e.ip("-6", "route", "show", "table", "101"); !strings.Contains(got, "nexthop via fd00:61::c9 dev v0") || !strings.Contains(got, "nexthop via fd00:62::c9 dev v2") {
		t.Errorf("table 101 has not the multipath route:\n%s", got)
	}
	guards("all.'s key")
	// Carrier comes, and goes again: the routes stay as they are.
	withCarrier := file("carrier.yaml", "", "", all, routes)
	e.apply(withCarrier)
	e.converged(withCarrier)
	e.apply(noCarrier)
	e.converged(noCarrier)

	// The link's own key alone, the routes made afresh.
	own := ", sysctls: {ipv6.ignore_routes_with_linkdown: 1}"
	allOff := "sysctls: {net.ipv6.conf.all.ignore_routes_with_linkdown: 0}\n"
	e.apply(file("none.yaml", own, ", state: down", allOff, ""))
	ownKey := file("own.yaml", own, ", state: down", allOff, routes)
	e.apply(ownKey)
	e.converged(ownKey)
	e.wantSysctl("net.ipv6.conf.all.ignore_routes_with_linkdown", "0")
	e.wantSysctl("net.ipv6.conf.v0.ignore_routes_with_linkdown", "1")
	guards("the link's own key")

	// A gateway off the link is refused, without carrier as with it.
	for _, v1 := range []string{", state: down", ""} {
		off := file("off.yaml", "", v1, all, "\n  - {to: \"2001:db8:9::/64\", via: \"fd00:69::c9\", dev: v0, table: 100}\n")
		if r := e.cli("apply", "-c", off); r.Code == 0 || !strings.Contains(r.Stderr, "no route to host") {
			t.Errorf("apply of a route via a gateway off its link (v1%s): exit %d, want no route to host\n%s%s", v1, r.Code, r.Stdout, r.Stderr)
		}
		guards("a gateway off the link")
	}
}
