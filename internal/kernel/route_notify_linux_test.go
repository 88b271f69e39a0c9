package kernel_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// The route of a notification, read by RouteOf, is the route a dump lists:
// the daemon patches a table's last read with notifications instead of
// dumping it again, and a route that differed would be written again by
// every pass. Every kind of route the reconciler writes, both families,
// added and deleted; a route on a link the names do not know is refused.
func TestRouteOfANotificationIsTheDumpsRoute(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "nrnote0", "type", "bridge")
	nettest.IP(t, ns, "link", "add", "nrnote1", "type", "bridge")
	for _, l := range []string{"nrnote0", "nrnote1"} {
		nettest.IP(t, ns, "link", "set", l, "up")
	}
	nettest.IP(t, ns, "addr", "add", "10.20.0.1/24", "dev", "nrnote0")
	nettest.IP(t, ns, "addr", "add", "10.21.0.1/24", "dev", "nrnote1")
	nettest.IP(t, ns, "addr", "add", "2001:db8:20::1/64", "dev", "nrnote0", "nodad")
	k := batchOpen(t, ns, "")
	links, err := k.Links()
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint32]string{}
	for _, l := range links {
		names[uint32(l.Index)] = l.Name
	}
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := nl.SubscribeAt(h, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetReceiveTimeout(&unix.Timeval{Sec: 5}); err != nil {
		t.Fatal(err)
	}
	p := fmt.Sprint(model.DefaultProtocol)
	routes := [][]string{
		{"10.30.0.0/16", "via", "10.20.0.254", "dev", "nrnote0", "metric", "10", "mtu", "1400"},
		{"10.31.0.0/16", "via", "10.20.0.254", "src", "10.20.0.1", "table", "1000"},
		{"10.32.0.0/16", "via", "192.0.2.1", "dev", "nrnote0", "onlink", "table", "100"},
		{"blackhole", "10.33.0.0/16", "table", "100"},
		{"unreachable", "10.34.0.0/16", "tos", "0x10"},
		{"default", "via", "10.20.0.254", "table", "100"},
		{"10.35.0.0/16", "table", "100", "proto", p, "nexthop", "via", "10.20.0.254", "weight", "2", "nexthop", "via", "10.21.0.254"},
		{"2001:db8:30::/48", "via", "2001:db8:20::fe", "dev", "nrnote0", "metric", "5"},
		{"2001:db8:31::/48", "dev", "nrnote0", "table", "100"},
	}
	// receive returns the next route notification of our protocol.
	receive := func(what string) (uint16, model.Route, bool) {
		t.Helper()
		for {
			msgs, _, err := s.Receive()
			if err != nil {
				t.Fatalf("%s: no notification: %v", what, err)
			}
			for _, m := range msgs {
				if m.Header.Type != unix.RTM_NEWROUTE && m.Header.Type != unix.RTM_DELROUTE {
					continue
				}
				r, ok := kernel.RouteOf(m.Data, func(i uint32) string { return names[i] })
				if r.Protocol == model.DefaultProtocol || !ok {
					return m.Header.Type, r, ok
				}
			}
		}
	}
	for _, r := range routes {
		if !slices.Contains(r, "proto") {
			r = append(r, "proto", p)
		}
		nettest.IP(t, ns, append([]string{"route", "add"}, r...)...)
		typ, got, ok := receive(fmt.Sprint(r))
		if !ok || typ != unix.RTM_NEWROUTE {
			t.Fatalf("%v: notification %d not read (%v)", r, typ, ok)
		}
		dump, err := k.TableRoutes(int(got.Table), model.DefaultProtocol)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range dump {
			if d.Key() == got.Key() {
				found = true
				if !reflect.DeepEqual(d, got) {
					t.Errorf("%v: notification's route\n  %+v\nthe dump's\n  %+v", r, got, d)
				}
			}
		}
		if !found {
			t.Errorf("%v: notification's route %+v not in the dump:\n%s", r, got, routeLines(dump))
		}
		nettest.IP(t, ns, append([]string{"route", "del"}, r...)...)
		typ, gone, ok := receive(fmt.Sprint(r) + " deleted")
		if !ok || typ != unix.RTM_DELROUTE || !reflect.DeepEqual(gone, got) {
			t.Errorf("%v deleted: notification %d %+v (%v), want the route added", r, typ, gone, ok)
		}
	}

	// A link the names do not know.
	nettest.IP(t, ns, "route", "add", "10.36.0.0/16", "dev", "nrnote1", "proto", p)
	for _, l := range links {
		if l.Name == "nrnote1" {
			delete(names, uint32(l.Index))
		}
	}
	if _, r, ok := receive("a route on a link not named"); ok {
		t.Errorf("a route on a link not named: read as %+v", r)
	}
}
