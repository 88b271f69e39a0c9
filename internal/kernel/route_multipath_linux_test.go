package kernel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Routes reads multipath routes and IPv6 next hops of IPv4 routes written by
// ip(8), not by us: IPv4 and IPv6 multipath each as one route with its next
// hops (the kernel dumps RTA_MULTIPATH for both), weights, RTA_VIA.
func TestRoutesDumpMultipath(t *testing.T) {
	ns := nettest.NewNetNSPrefixed(t, "rte")
	for _, n := range []string{"0", "1"} {
		nettest.IP(t, ns, "link", "add", "rtemp"+n, "type", "veth", "peer", "name", "rtemq"+n)
		nettest.IP(t, ns, "link", "set", "rtemp"+n, "up")
		nettest.IP(t, ns, "addr", "add", "10.0."+n+".2/24", "dev", "rtemp"+n)
		nettest.IP(t, ns, "addr", "add", "2001:db8:"+n+"::2/64", "dev", "rtemp"+n, "nodad")
	}
	p := fmt.Sprint(model.DefaultProtocol)
	for _, r := range [][]string{
		{"192.0.2.0/24", "nexthop", "via", "10.0.1.1", "dev", "rtemp1", "nexthop", "via", "10.0.0.1", "dev", "rtemp0", "weight", "3"},
		{"-6", "2001:db8:9::/64", "nexthop", "via", "2001:db8:1::1", "dev", "rtemp1", "nexthop", "via", "fe80::1", "dev", "rtemp0", "weight", "256"},
		{"198.51.100.0/24", "via", "inet6", "fe80::1", "dev", "rtemp0"},
		{"203.0.113.0/24", "table", "100", "nexthop", "via", "inet6", "fe80::2", "dev", "rtemp1", "nexthop", "via", "10.0.0.1", "dev", "rtemp0"},
	} {
		args := []string{"route", "add"}
		if r[0] == "-6" {
			args, r = []string{"-6", "route", "add"}, r[1:]
		}
		// proto before the next hops: ip reads everything after the first
		// "nexthop" as next hops.
		nettest.IP(t, ns, append(append(args, "proto", p), r...)...)
	}
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Links(); err != nil {
		t.Fatal(err)
	}
	rs, err := k.Routes(model.DefaultProtocol)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	// In key order: table, then destination.
	want := "203.0.113.0/24 table 100 nexthop via 10.0.0.1 dev rtemp0 weight 1 nexthop via inet6 fe80::2 dev rtemp1 weight 1\n" +
		"192.0.2.0/24 table main nexthop via 10.0.0.1 dev rtemp0 weight 3 nexthop via 10.0.1.1 dev rtemp1 weight 1\n" +
		"198.51.100.0/24 table main via inet6 fe80::1 dev rtemp0\n" +
		"2001:db8:9::/64 table main metric 1024 nexthop via 2001:db8:1::1 dev rtemp1 weight 1 nexthop via fe80::1 dev rtemp0 weight 256"
	if g := strings.Join(got, "\n"); g != want {
		t.Errorf("routes:\n%s\nwant:\n%s", g, want)
	}
}
