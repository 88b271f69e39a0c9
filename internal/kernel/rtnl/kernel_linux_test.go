package rtnl_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/test/nettest"
)

var update = flag.Bool("rtnl.update", false, "write the messages the kernel sent to testdata/kernel (the fuzz targets' seeds)")

// kernelDir holds notifications a real kernel sent, one datagram a file:
// the seeds of the fuzz targets here and of the daemon's FuzzEvents.
const kernelDir = "testdata/kernel"

// rtnlGroups are the groups the daemon subscribes to.
var rtnlGroups = []uint32{unix.RTNLGRP_LINK, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR,
	unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE, unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE}

// captured is one notification, named for its file.
type captured struct {
	name string
	typ  uint16
	body []byte
	raw  []byte
}

// capture runs each step in a fresh namespace and keeps the notifications
// of the given type it causes.
func capture(t *testing.T, ns string, steps []struct {
	name string
	typ  uint16
	do   func()
}) []captured {
	t.Helper()
	var out []captured
	for _, s := range steps {
		n := 0
		for _, raw := range nettest.Notifications(t, ns, rtnlGroups, s.do) {
			typ := binary.NativeEndian.Uint16(raw[4:])
			if typ != s.typ {
				continue
			}
			n++
			out = append(out, captured{fmt.Sprintf("%s-%d", s.name, n), typ, raw[unix.SizeofNlMsghdr:], raw})
		}
		if n == 0 {
			t.Fatalf("%s: the kernel sent no message of type %d", s.name, s.typ)
		}
	}
	return out
}

// addAddressProto adds an address with IFA_PROTO through the codec:
// iproute2 6.1 has no word for it.
func addAddressProto(t *testing.T, ns string, index uint32, p netip.Prefix, proto uint8) {
	t.Helper()
	c := dial(t, ns)
	defer c.Close()
	body, err := rtnl.MarshalAddress(&rtnl.Address{Family: unix.AF_INET, PrefixLen: uint8(p.Bits()), Index: index,
		Local: p.Addr(), Address: p.Addr(), Protocol: proto})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_NEWADDR,
		Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl}, Data: body}); err != nil {
		t.Fatalf("add address %s with protocol %d: %v", p, proto, err)
	}
}

// The codec reads what a real kernel sends: a link, an address (with its
// protocol, written by the codec), routes of both families with and
// without a destination, a multipath and a deleted route, a rule. The
// messages are the fuzz targets' seeds (-rtnl.update writes them).
func TestKernelMessages(t *testing.T) {
	ns := nettest.NewNetNS(t)
	ip := func(args ...string) func() { return func() { nettest.IP(t, ns, args...) } }
	nettest.IP(t, ns, "link", "add", "nrc1", "type", "veth", "peer", "name", "nrc2")
	nettest.IP(t, ns, "link", "set", "nrc1", "up")
	nettest.IP(t, ns, "link", "set", "nrc2", "up")
	nettest.IP(t, ns, "addr", "add", "10.70.0.1/24", "dev", "nrc1")
	nettest.IP(t, ns, "addr", "add", "2001:db8:70::1/64", "dev", "nrc1", "nodad")
	msgs := capture(t, ns, []struct {
		name string
		typ  uint16
		do   func()
	}{
		{"link-new", unix.RTM_NEWLINK, ip("link", "add", "nrc0", "type", "bridge")},
		{"link-up", unix.RTM_NEWLINK, ip("link", "set", "nrc0", "up")},
		// The kernel tells an alias only of a link that is up.
		{"link-alias", unix.RTM_NEWLINK, ip("link", "set", "nrc0", "alias", "netreconcile")},
		{"link-master", unix.RTM_NEWLINK, ip("link", "set", "nrc2", "master", "nrc0")},
		{"addr-v4", unix.RTM_NEWADDR, ip("addr", "add", "10.71.0.1/24", "dev", "nrc1", "label", "nrc1:x")},
		{"addr-v6", unix.RTM_NEWADDR, ip("addr", "add", "2001:db8:71::1/64", "dev", "nrc1", "nodad", "noprefixroute")},
		{"addr-proto", unix.RTM_NEWADDR, func() { addAddressProto(t, ns, index(t, ns, "nrc1"), netip.MustParsePrefix("10.72.0.1/24"), 77) }},
		{"route-v4", unix.RTM_NEWROUTE, ip("route", "add", "10.80.0.0/16", "via", "10.70.0.2", "table", "100", "proto", "245", "metric", "7", "mtu", "1400")},
		{"route-v4-table-1000", unix.RTM_NEWROUTE, ip("route", "add", "10.81.0.0/24", "dev", "nrc1", "table", "1000", "proto", "245", "src", "10.70.0.1")},
		{"route-v4-default", unix.RTM_NEWROUTE, ip("route", "add", "default", "via", "10.70.0.2", "table", "100")},
		{"route-v4-via-inet6", unix.RTM_NEWROUTE, ip("route", "add", "10.82.0.0/24", "via", "inet6", "2001:db8:70::2", "dev", "nrc1")},
		{"route-v4-multipath", unix.RTM_NEWROUTE, ip("route", "add", "10.83.0.0/24", "proto", "245", "nexthop", "via", "10.70.0.2", "weight", "3", "nexthop", "via", "10.70.0.3")},
		{"route-v4-blackhole", unix.RTM_NEWROUTE, ip("route", "add", "blackhole", "10.84.0.0/24", "tos", "0x10")},
		{"route-v4-encap", unix.RTM_NEWROUTE, ip("route", "add", "10.85.0.0/24", "encap", "ip", "id", "5", "dst", "10.70.0.9", "ttl", "9", "via", "10.70.0.2")},
		{"route-v6", unix.RTM_NEWROUTE, ip("route", "add", "2001:db8:80::/48", "via", "2001:db8:70::2", "table", "100", "proto", "245")},
		{"route-v6-mapped", unix.RTM_NEWROUTE, ip("route", "add", "::ffff:10.60.0.0/112", "via", "2001:db8:70::2")},
		{"route-v6-multipath", unix.RTM_NEWROUTE, ip("route", "add", "2001:db8:81::/48", "nexthop", "via", "2001:db8:70::2", "dev", "nrc1", "nexthop", "via", "2001:db8:70::3", "dev", "nrc1", "weight", "2")},
		{"route-v6-seg6", unix.RTM_NEWROUTE, ip("route", "add", "2001:db8:82::/48", "encap", "seg6", "mode", "encap", "segs", "fc00::1,fc00::2", "dev", "nrc1")},
		{"route-v4-del", unix.RTM_DELROUTE, ip("route", "del", "10.80.0.0/16", "table", "100")},
		{"rule-v4", unix.RTM_NEWRULE, ip("rule", "add", "from", "10.90.0.0/16", "fwmark", "0x10/0xff", "iif", "nrc1", "lookup", "100", "priority", "500", "proto", "245", "suppress_prefixlength", "8")},
		{"rule-v6", unix.RTM_NEWRULE, ip("-6", "rule", "add", "to", "2001:db8:90::/48", "not", "lookup", "1000", "priority", "501", "ipproto", "tcp", "dport", "80-90", "uidrange", "10-20")},
		{"link-del", unix.RTM_DELLINK, ip("link", "del", "nrc0")},
	})
	nrc1 := index(t, ns, "nrc1")
	// Messages are found by what they say: the kernel sends some of its
	// own meanwhile (a link-local address, the routes of an address).
	route := func(typ uint16, dst string) rtnl.Route {
		t.Helper()
		for _, m := range msgs {
			var r rtnl.Route
			if m.typ == typ && rtnl.DecodeRoute(m.body, &r) == nil && r.Dst == netip.MustParsePrefix(dst) {
				return r
			}
		}
		t.Fatalf("no route message of type %d for %s", typ, dst)
		return rtnl.Route{}
	}
	if r := route(unix.RTM_NEWROUTE, "10.80.0.0/16"); r.Table != 100 || r.Protocol != 245 ||
		r.Gateway != netip.MustParseAddr("10.70.0.2") || r.OIF != nrc1 || r.Priority != 7 || r.MTU != 1400 {
		t.Errorf("route-v4: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "10.81.0.0/24"); r.Table != 1000 || r.PrefSrc != netip.MustParseAddr("10.70.0.1") {
		t.Errorf("route-v4-table-1000: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "0.0.0.0/0"); r.Table != 100 || r.Gateway != netip.MustParseAddr("10.70.0.2") {
		t.Errorf("route-v4-default: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "10.82.0.0/24"); r.Gateway != netip.MustParseAddr("2001:db8:70::2") {
		t.Errorf("route-v4-via-inet6: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "10.83.0.0/24"); len(r.NextHops) != 2 || r.NextHops[0].Weight != 3 || r.NextHops[1].Gateway != netip.MustParseAddr("10.70.0.3") {
		t.Errorf("route-v4-multipath: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "10.84.0.0/24"); r.Type != unix.RTN_BLACKHOLE || r.TOS != 0x10 {
		t.Errorf("route-v4-blackhole: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "10.85.0.0/24"); r.Encap == nil || r.Encap.Type != unix.LWTUNNEL_ENCAP_IP || r.Encap.ID != 5 ||
		r.Encap.Dst != netip.MustParseAddr("10.70.0.9") || r.Encap.TTL != 9 {
		t.Errorf("route-v4-encap: %+v %+v", r, r.Encap)
	}
	if r := route(unix.RTM_NEWROUTE, "2001:db8:80::/48"); r.Table != 100 || r.Priority != 1024 {
		t.Errorf("route-v6: %+v", r)
	}
	// An IPv4-mapped IPv6 destination stays IPv6.
	route(unix.RTM_NEWROUTE, "::ffff:10.60.0.0/112")
	if r := route(unix.RTM_NEWROUTE, "2001:db8:81::/48"); len(r.NextHops) != 2 {
		t.Errorf("route-v6-multipath: %+v", r)
	}
	if r := route(unix.RTM_NEWROUTE, "2001:db8:82::/48"); r.Encap == nil || r.Encap.Type != unix.LWTUNNEL_ENCAP_SEG6 ||
		fmt.Sprint(r.Encap.Segments) != "[fc00::1 fc00::2]" {
		t.Errorf("route-v6-seg6: %+v %+v", r, r.Encap)
	}
	route(unix.RTM_DELROUTE, "10.80.0.0/16")
	addr := func(local string) rtnl.Address {
		t.Helper()
		for _, m := range msgs {
			var a rtnl.Address
			if m.typ == unix.RTM_NEWADDR && rtnl.DecodeAddress(m.body, &a) == nil &&
				(a.Local == netip.MustParseAddr(local) || !a.Local.IsValid() && a.Address == netip.MustParseAddr(local)) {
				return a
			}
		}
		t.Fatalf("no address message for %s", local)
		return rtnl.Address{}
	}
	if a := addr("10.71.0.1"); a.PrefixLen != 24 || a.Label != "nrc1:x" || a.Broadcast.IsValid() || a.Index != nrc1 {
		t.Errorf("addr-v4: %+v", a)
	}
	if a := addr("2001:db8:71::1"); a.Flags&unix.IFA_F_NOPREFIXROUTE == 0 || a.Flags&unix.IFA_F_NODAD == 0 {
		t.Errorf("addr-v6: %+v", a)
	}
	if a, want := addr("10.72.0.1"), map[bool]uint8{true: 77, false: 0}[rtnl.AddressProtocols()]; a.Protocol != want {
		t.Errorf("addr-proto: protocol %d, want %d (the kernel records protocols: %v)", a.Protocol, want, rtnl.AddressProtocols())
	}
	byName := map[string]captured{}
	for _, m := range msgs {
		byName[m.name] = m
	}
	var ru rtnl.Rule
	if err := rtnl.DecodeRule(byName["rule-v4-1"].body, &ru); err != nil || ru.Priority != 500 || ru.Table != 100 || ru.Protocol != 245 ||
		ru.Src != netip.MustParsePrefix("10.90.0.0/16") || ru.Mark != 0x10 || ru.Mask != 0xff || ru.IIFName != "nrc1" || ru.SuppressPrefixLen != 8 {
		t.Errorf("rule-v4: %+v %v", ru, err)
	}
	if err := rtnl.DecodeRule(byName["rule-v6-1"].body, &ru); err != nil || ru.Priority != 501 || ru.Table != 1000 ||
		ru.Dst != netip.MustParsePrefix("2001:db8:90::/48") || ru.Flags&unix.FIB_RULE_INVERT == 0 || ru.IPProto != unix.IPPROTO_TCP ||
		ru.DportRange == nil || *ru.DportRange != (rtnl.PortRange{Start: 80, End: 90}) || ru.UIDRange == nil || *ru.UIDRange != (rtnl.UIDRange{Start: 10, End: 20}) {
		t.Errorf("rule-v6: %+v %v", ru, err)
	}
	var l rtnl.Link
	if err := rtnl.DecodeLink(byName["link-new-1"].body, &l); err != nil || l.Name != "nrc0" || l.Kind != "bridge" {
		t.Errorf("link-new: %+v %v", l, err)
	}
	nrc0 := uint32(l.Index)
	found := false
	for _, m := range msgs {
		if strings.HasPrefix(m.name, "link-alias") && rtnl.DecodeLink(m.body, &l) == nil && l.Alias == "netreconcile" {
			found = true
		}
	}
	if !found {
		t.Error("no link notification carries the alias")
	}
	found = false
	for _, m := range msgs {
		if strings.HasPrefix(m.name, "link-master") && rtnl.DecodeLink(m.body, &l) == nil && l.Name == "nrc2" && l.Master == nrc0 {
			found = true
		}
	}
	if !found {
		t.Error("no link notification of nrc2 carries its master")
	}
	found = false
	for _, m := range msgs {
		// The bridge's port goes first (an AF_BRIDGE message of nrc2).
		if m.typ == unix.RTM_DELLINK && rtnl.DecodeLink(m.body, &l) == nil && l.Name == "nrc0" && uint32(l.Index) == nrc0 {
			found = true
		}
	}
	if !found {
		t.Error("no RTM_DELLINK of nrc0")
	}
	testRouteLayout(t, msgs)
	if *update {
		writeKernelMessages(t, msgs)
	}
}

// testRouteLayout holds the offsets the daemon's socket prefilter reads
// (rtnl.OffsetRoute*) to the route notifications the kernel sent: the
// header fields, then RTA_TABLE first and RTA_DST second.
func testRouteLayout(t *testing.T, msgs []captured) {
	t.Helper()
	ne := binary.NativeEndian
	n := 0
	for _, m := range msgs {
		if m.typ != unix.RTM_NEWROUTE && m.typ != unix.RTM_DELROUTE {
			continue
		}
		var r rtnl.Route
		if err := rtnl.DecodeRoute(m.body, &r); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		b := m.raw
		if got := ne.Uint16(b[rtnl.OffsetType:]); got != m.typ {
			t.Errorf("%s: type %d at OffsetType, want %d", m.name, got, m.typ)
		}
		if b[rtnl.OffsetRouteFamily] != r.Family || b[rtnl.OffsetRouteDstLen] != uint8(r.Dst.Bits()) || b[rtnl.OffsetRouteProtocol] != r.Protocol {
			t.Errorf("%s: family %d, dst_len %d, protocol %d at the offsets; decoded %d, %d, %d", m.name,
				b[rtnl.OffsetRouteFamily], b[rtnl.OffsetRouteDstLen], b[rtnl.OffsetRouteProtocol], r.Family, r.Dst.Bits(), r.Protocol)
		}
		if l, typ := ne.Uint16(b[rtnl.OffsetRouteTable:]), ne.Uint16(b[rtnl.OffsetRouteTable+2:]); l != 8 || typ != unix.RTA_TABLE ||
			ne.Uint32(b[rtnl.OffsetRouteTable+4:]) != r.Table {
			t.Errorf("%s: the first attribute is %d of %d bytes, want RTA_TABLE %d", m.name, typ, l, r.Table)
		}
		if r.Dst.Bits() == 0 {
			continue
		}
		n++
		alen := len(r.Dst.Addr().AsSlice())
		l, typ := ne.Uint16(b[rtnl.OffsetRouteDst:]), ne.Uint16(b[rtnl.OffsetRouteDst+2:])
		if int(l) != 4+alen || typ != unix.RTA_DST {
			t.Errorf("%s: the second attribute is %d of %d bytes, want RTA_DST", m.name, typ, l)
		} else if a, _ := netip.AddrFromSlice(b[rtnl.OffsetRouteDst+4 : rtnl.OffsetRouteDst+4+alen]); a != r.Dst.Addr() {
			t.Errorf("%s: destination %s at OffsetRouteDst, decoded %s", m.name, a, r.Dst.Addr())
		}
	}
	if n < 5 {
		t.Errorf("the layout was held to %d route messages with a destination, want at least 5", n)
	}
}

// writeKernelMessages replaces testdata/kernel with msgs.
func writeKernelMessages(t *testing.T, msgs []captured) {
	t.Helper()
	if err := os.RemoveAll(kernelDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(kernelDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := os.WriteFile(filepath.Join(kernelDir, m.name+".bin"), m.raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d messages to %s", len(msgs), kernelDir)
}

// dial opens a routing netlink socket of the test's own in ns.
func dial(t *testing.T, ns string) *netlink.Conn {
	t.Helper()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(h)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// index is the index of a link in ns.
func index(t *testing.T, ns, name string) uint32 {
	t.Helper()
	var i uint32
	out := nettest.IP(t, ns, "-o", "link", "show", "dev", name)
	if _, err := fmt.Sscanf(out, "%d:", &i); err != nil {
		t.Fatalf("index of %s: %v (%q)", name, err, out)
	}
	return i
}
