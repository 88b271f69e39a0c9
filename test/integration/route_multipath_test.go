package integration

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// newRteEnv is newEnv with a namespace named rte-… (the routes tests').
func newRteEnv(t *testing.T) *env {
	return &env{t: t, ns: nettest.NewNetNSPrefixed(t, "rte"), state: t.TempDir(), dir: t.TempDir()}
}

// twoUplinks joins e's namespace (the router) to a new sink namespace by two
// veth pairs, up0-sk0 and up1-sk1, with IPv4 and IPv6 subnets, link-local
// addresses fe80::2 on the sink's ends, and the sink's destinations
// 198.51.100.1, 2001:db8:99::1 and 203.0.113.1 on its lo. The router's
// ends are foreign devices netreconcile is told of (kind: device). DAD is
// off in both, so that addresses are usable at once.
func twoUplinks(t *testing.T, e *env) (sink string) {
	sink = nettest.NewNetNSPrefixed(t, "rte")
	for _, ns := range []string{e.ns, sink} {
		nettest.InNS(t, ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
	}
	for i, n := range []string{"0", "1"} {
		e.ip("link", "add", "up"+n, "type", "veth", "peer", "name", "sk"+n, "netns", sink)
		e.ip("addr", "add", "10.0."+n+".2/24", "dev", "up"+n)
		e.ip("addr", "add", "2001:db8:"+n+"::2/64", "dev", "up"+n, "nodad")
		e.ip("link", "set", "up"+n, "up")
		nettest.IP(t, sink, "addr", "add", "10.0."+n+".1/24", "dev", "sk"+n)
		nettest.IP(t, sink, "addr", "add", "2001:db8:"+n+"::1/64", "dev", "sk"+n, "nodad")
		nettest.IP(t, sink, "addr", "add", "fe80::"+string(rune('2'+i))+"/64", "dev", "sk"+n, "nodad")
		nettest.IP(t, sink, "link", "set", "sk"+n, "up")
	}
	nettest.IP(t, sink, "link", "set", "lo", "up")
	for _, a := range []string{"198.51.100.1/32", "203.0.113.1/32", "2001:db8:99::1/128"} {
		nettest.IP(t, sink, "addr", "add", a, "dev", "lo")
	}
	return sink
}

// txPackets reads a link's transmitted packets.
func txPackets(t *testing.T, ns, dev string) int {
	t.Helper()
	var ls []struct {
		Stats struct {
			TX struct {
				Packets int `json:"packets"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(nettest.IP(t, ns, "-j", "-s", "link", "show", "dev", dev)), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ip -s link show %s: %v", dev, err)
	}
	return ls[0].Stats.TX.Packets
}

// udpFlows sends one datagram on each of n flows (source ports) to dst:9,
// from inside ns.
func udpFlows(t *testing.T, ns, dst string, n int) {
	t.Helper()
	nettest.Within(t, ns, func() {
		raddr := &net.UDPAddr{IP: net.ParseIP(dst), Port: 9}
		for i := 0; i < n; i++ {
			c, err := net.DialUDP("udp", nil, raddr)
			if err != nil {
				t.Fatalf("flow %d to %s: %v", i, dst, err)
			}
			_, err = c.Write([]byte("netreconcile multipath"))
			c.Close()
			if err != nil {
				t.Fatalf("flow %d to %s: %v", i, dst, err)
			}
		}
	})
}

// A multipath route (IPv4 and IPv6) is created as the file says, read back
// by ip as one route with its weighted next hops, carries flows on both
// uplinks (L4 hash), is changed in place when its next hops change, and a
// second apply writes nothing.
func TestMultipathRouteTraffic(t *testing.T) {
	e := newRteEnv(t)
	twoUplinks(t, e)
	nettest.InNS(t, e.ns, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1")
	conf := func(w string) string {
		return `version: 1
links:
  up0: {kind: device}
  up1: {kind: device}
routes:
  - {to: 198.51.100.0/24, nexthops: [{via: 10.0.0.1, dev: up0` + w + `}, {via: 10.0.1.1, dev: up1}]}
  - {to: 2001:db8:99::/48, nexthops: [{via: 2001:db8:1::1, dev: up1}, {via: 2001:db8:0::1, dev: up0}]}
`
	}
	f := e.file("a.yaml", conf(", weight: 2"))
	e.apply(f)
	type hop struct {
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
		Weight  int    `json:"weight"`
	}
	routes := func(args ...string) string {
		var rs []struct {
			Dst      string `json:"dst"`
			Protocol string `json:"protocol"`
			Nexthops []hop  `json:"nexthops"`
		}
		if err := json.Unmarshal([]byte(e.ip(append([]string{"-j"}, args...)...)), &rs); err != nil {
			t.Fatal(err)
		}
		var b []string
		for _, r := range rs {
			s := r.Dst + " proto " + r.Protocol
			for _, h := range r.Nexthops {
				s += " [" + h.Gateway + " " + h.Dev + " " + string(rune('0'+h.Weight)) + "]"
			}
			b = append(b, s)
		}
		return strings.Join(b, "\n")
	}
	if got, want := routes("-4", "route", "show", "198.51.100.0/24"), "198.51.100.0/24 proto 245 [10.0.0.1 up0 2] [10.0.1.1 up1 1]"; got != want {
		t.Errorf("ip -4 route:\n%s\nwant:\n%s", got, want)
	}
	// The kernel lists an IPv6 multipath route as one route with its next
	// hops (RTA_MULTIPATH), in the order written.
	if got, want := routes("-6", "route", "show", "2001:db8:99::/48"), "2001:db8:99::/48 proto 245 [2001:db8::1 up0 1] [2001:db8:1::1 up1 1]"; got != want {
		t.Errorf("ip -6 route:\n%s\nwant:\n%s", got, want)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// Neighbours resolved first: datagrams that wait for resolution are
	// sent (and counted) later, or dropped beyond the queue.
	for _, gw := range []string{"10.0.0.1", "10.0.1.1", "2001:db8::1", "2001:db8:1::1"} {
		nettest.InNS(t, e.ns, "ping", "-c", "1", "-W", "5", gw)
	}
	for _, dst := range []string{"198.51.100.1", "2001:db8:99::1"} {
		before := []int{txPackets(t, e.ns, "up0"), txPackets(t, e.ns, "up1")}
		udpFlows(t, e.ns, dst, 200)
		n0, n1 := txPackets(t, e.ns, "up0")-before[0], txPackets(t, e.ns, "up1")-before[1]
		if n0 < 20 || n1 < 20 {
			t.Errorf("200 flows to %s: %d packets out of up0, %d out of up1; want both paths used", dst, n0, n1)
		}
		t.Logf("200 flows to %s: up0 %d, up1 %d", dst, n0, n1)
	}
	// A weight changed: one replace, the route stays (no delete).
	f2 := e.file("b.yaml", conf(", weight: 5"))
	out := e.apply(f2)
	if !strings.Contains(out, "~ route 198.51.100.0/24 table main") || strings.Contains(out, "- route") {
		t.Errorf("weight change planned as:\n%s", out)
	}
	if got, want := routes("-4", "route", "show", "198.51.100.0/24"), "198.51.100.0/24 proto 245 [10.0.0.1 up0 5] [10.0.1.1 up1 1]"; got != want {
		t.Errorf("after the change, ip -4 route:\n%s\nwant:\n%s", got, want)
	}
	if r := e.cli("apply", "-c", f2); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply after the change: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// show --all renders the routes in the schema.
	if r := e.cli("show", "--all"); r.Code != 0 || !strings.Contains(r.Stdout, "nexthops: [{via: 10.0.0.1, dev: up0, weight: 5}, {via: 10.0.1.1, dev: up1}]") {
		t.Errorf("show --all: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// An IPv4 route with an IPv6 link-local next hop (RFC 5549), single path and
// multipath, forwards: a ping to the sink's address through it answers.
func TestRFC5549RouteForwards(t *testing.T) {
	e := newRteEnv(t)
	twoUplinks(t, e)
	f := e.file("a.yaml", `version: 1
links:
  up0: {kind: device}
  up1: {kind: device}
routes:
  - {to: 203.0.113.0/24, via: 'fe80::2', dev: up0}
  - {to: 198.51.100.0/24, nexthops: [{via: 'fe80::2', dev: up0}, {via: 'fe80::3', dev: up1}]}
`)
	e.apply(f)
	var rs []struct {
		Dst string `json:"dst"`
		Via struct {
			Family string `json:"family"`
			Host   string `json:"host"`
		} `json:"via"`
		Dev      string `json:"dev"`
		Nexthops []struct {
			Via struct {
				Host string `json:"host"`
			} `json:"via"`
			Dev string `json:"dev"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal([]byte(e.ip("-j", "-4", "route", "show", "proto", "245")), &rs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		s := r.Dst
		if r.Via.Host != "" {
			s += " via " + r.Via.Family + " " + r.Via.Host + " dev " + r.Dev
		}
		for _, h := range r.Nexthops {
			s += " nexthop via inet6 " + h.Via.Host + " dev " + h.Dev
		}
		got = append(got, s)
	}
	want := "198.51.100.0/24 nexthop via inet6 fe80::2 dev up0 nexthop via inet6 fe80::3 dev up1\n203.0.113.0/24 via inet6 fe80::2 dev up0"
	if g := strings.Join(got, "\n"); g != want {
		t.Errorf("ip -4 route:\n%s\nwant:\n%s", g, want)
	}
	for _, dst := range []string{"203.0.113.1", "198.51.100.1"} {
		if err := nettest.ExecErr("ip", "netns", "exec", e.ns, "ping", "-c", "1", "-W", "5", dst); err != nil {
			t.Errorf("ping %s over the IPv6 next hop: %v", dst, err)
		}
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
