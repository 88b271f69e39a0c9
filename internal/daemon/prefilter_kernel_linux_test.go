package daemon_test

import (
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/daemon"
	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// The prefilter on notifications a real kernel sent in a fresh namespace:
// it passes every one the exact filter wakes on, drops foreign routes
// outside what the file declares, and passes what is not a route.
func TestRoutePrefilterOnKernelMessages(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "eth9", "type", "veth", "peer", "name", "eth8")
	nettest.IP(t, ns, "link", "set", "eth9", "up")
	nettest.IP(t, ns, "link", "set", "eth8", "up")
	nettest.IP(t, ns, "addr", "add", "10.1.0.1/16", "dev", "eth9")
	nettest.IP(t, ns, "addr", "add", "2001:db8:1::1/64", "dev", "eth9", "nodad")
	// The filter tests' snapshot declares 10.1.0.0/24 in table 100,
	// 2001:db8::/64 in table 1000 and the default route in main.
	vm, err := bpf.NewVM(daemon.FixturePrefilter())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dst string
		cmd       []string
		// wake is what the exact filter says of the message the command
		// makes; drop whether the prefilter drops it.
		wake, drop bool
	}{
		{"foreign route, declared key", "10.1.0.0/24", []string{"route", "add", "10.1.0.0/24", "dev", "eth9", "table", "100", "proto", "12"}, true, false},
		{"foreign route inside a declared prefix", "10.1.0.128/25", []string{"route", "add", "10.1.0.128/25", "dev", "eth9", "table", "100", "proto", "12"}, false, false},
		{"foreign route, other destination", "10.2.0.0/24", []string{"route", "add", "10.2.0.0/24", "dev", "eth9", "table", "100", "proto", "12"}, false, true},
		{"foreign route deleted, other destination", "10.2.0.0/24", []string{"route", "del", "10.2.0.0/24", "table", "100"}, false, true},
		{"foreign route, other table", "10.1.0.0/24", []string{"route", "add", "10.1.0.0/24", "dev", "eth9", "table", "101", "proto", "12"}, false, true},
		{"foreign route, table above 255", "10.1.0.0/24", []string{"route", "add", "10.1.0.0/24", "dev", "eth9", "table", "70000", "proto", "12"}, false, true},
		{"route of ours", "192.0.2.0/24", []string{"route", "add", "192.0.2.0/24", "dev", "eth9", "table", "200", "proto", "245"}, true, false},
		{"foreign IPv6 route, declared table", "2001:db8::/64", []string{"route", "add", "2001:db8::/64", "dev", "eth9", "table", "1000", "proto", "12"}, true, false},
		{"foreign IPv6 route, other table", "2001:db8:5::/64", []string{"route", "add", "2001:db8:5::/64", "dev", "eth9", "table", "1001", "proto", "12"}, false, true},
		{"foreign default route, declared", "0.0.0.0/0", []string{"route", "add", "default", "via", "10.1.0.254", "proto", "12"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The kernel's own (the routes of a link-local address)
			// may come meanwhile: the one of the command is found by
			// its destination.
			var b []byte
			var m syscall.NetlinkMessage
			for _, raw := range nettest.Notifications(t, ns, []uint32{unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE}, func() { nettest.IP(t, ns, tc.cmd...) }) {
				parsed, err := syscall.ParseNetlinkMessage(raw)
				var r rtnl.Route
				if err == nil && len(parsed) == 1 && rtnl.DecodeRoute(parsed[0].Data, &r) == nil && r.Dst == netip.MustParsePrefix(tc.dst) {
					b, m = raw, parsed[0]
				}
			}
			if b == nil {
				t.Fatalf("no notification of %s", tc.dst)
			}
			wake, ok := daemon.FixtureWakesOnRoute(m)
			if !ok {
				t.Fatalf("undecodable notification % x", b)
			}
			if wake != tc.wake {
				t.Errorf("the filter wakes: %v, want %v", wake, tc.wake)
			}
			n, err := vm.Run(b)
			if err != nil {
				t.Fatal(err)
			}
			if drop := n == 0; drop != tc.drop {
				t.Errorf("the prefilter drops: %v, want %v", drop, tc.drop)
			}
		})
	}
	// Notifications of the other kinds pass: the prefilter reads routes
	// only (the route socket gets nothing else, but a filter must not
	// drop what it cannot read).
	others := nettest.Notifications(t, ns, []uint32{unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV4_RULE}, func() {
		nettest.IP(t, ns, "link", "add", "nrp0", "type", "bridge")
		nettest.IP(t, ns, "addr", "add", "10.3.0.1/24", "dev", "nrp0")
		nettest.IP(t, ns, "rule", "add", "priority", "77", "lookup", "100")
	})
	kinds := map[uint16]bool{}
	for _, b := range others {
		parsed, err := syscall.ParseNetlinkMessage(b)
		if err != nil || len(parsed) != 1 {
			t.Fatalf("notification % x: %v", b, err)
		}
		typ := parsed[0].Header.Type
		kinds[typ] = true
		if n, err := vm.Run(b); err != nil || n == 0 {
			t.Errorf("the prefilter drops a notification of type %d (%v)", typ, err)
		}
	}
	for _, typ := range []uint16{unix.RTM_NEWLINK, unix.RTM_NEWADDR, unix.RTM_NEWRULE} {
		if !kinds[typ] {
			t.Errorf("no notification of type %d to hold the prefilter to", typ)
		}
	}
}
