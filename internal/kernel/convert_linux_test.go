package kernel

import (
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The family of a prefix from the libraries (WireGuard's allowed IPs) is
// its mask's: an IPv4 prefix in net.IP's 16-byte form is IPv4, an
// IPv4-mapped IPv6 one stays IPv6 (read unmapped, it became an IPv4 prefix
// of length 104, invalid, and never matched the file).
// Walk finding 66 (host).
func TestToPrefixKeepsTheFamily(t *testing.T) {
	for _, tc := range []struct {
		n    *net.IPNet
		want string
	}{
		{&net.IPNet{IP: net.IPv4(10, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)}, "10.0.0.0/8"},
		{&net.IPNet{IP: net.IPv4(10, 0, 0, 0), Mask: net.CIDRMask(8, 32)}, "10.0.0.0/8"},
		{&net.IPNet{IP: net.ParseIP("::ffff:10.0.0.0"), Mask: net.CIDRMask(104, 128)}, "::ffff:10.0.0.0/104"},
		{&net.IPNet{IP: net.ParseIP("fd00::"), Mask: net.CIDRMask(64, 128)}, "fd00::/64"},
	} {
		if got := toPrefix(tc.n); got != netip.MustParsePrefix(tc.want) {
			t.Errorf("toPrefix(%v) = %v, want %s", tc.n, got, tc.want)
		}
	}
	// A tunnel's or a vxlan's endpoint: as long as its attribute.
	for _, tc := range []struct {
		ip   net.IP
		want netip.Addr
	}{
		{net.IP{192, 0, 2, 1}, netip.MustParseAddr("192.0.2.1")},
		{net.ParseIP("::ffff:192.0.2.1"), netip.MustParseAddr("::ffff:192.0.2.1")},
		{net.ParseIP("2001:db8::1"), netip.MustParseAddr("2001:db8::1")},
		{net.IP{0, 0, 0, 0}, netip.Addr{}},
		{net.IPv6zero, netip.Addr{}},
		{nil, netip.Addr{}},
	} {
		if got := optAddr(tc.ip); got != tc.want {
			t.Errorf("optAddr(%v) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

// A route an IPv6 dump sent twice (the FIB changed under it) is dropped;
// two routes of one key that differ (fe80::/64 on two links) are both
// kept, in any order within their key.
func TestDropCopies(t *testing.T) {
	// restOf compares every field of a route but its key's.
	if n := reflect.TypeOf(model.Route{}).NumField(); n != 14 {
		t.Errorf("model.Route has %d fields; restOf compares the 10 outside its key of 14", n)
	}
	ll := netip.MustParsePrefix("fe80::/64")
	a := model.Route{Table: 254, Dst: ll, Metric: 256, Dev: "a", Protocol: 2}
	b := model.Route{Table: 254, Dst: ll, Metric: 256, Dev: "b", Protocol: 2}
	c := model.Route{Table: 100, Dst: netip.MustParsePrefix("2001:db8::/64"), Metric: 1024, Dev: "a", NextHops: []model.NextHop{{Dev: "a", Weight: 1}}}
	for _, tc := range []struct{ in, want []model.Route }{
		{[]model.Route{c, a, b}, []model.Route{c, a, b}},
		{[]model.Route{c, c, a, b, a}, []model.Route{c, a, b}},
		{[]model.Route{c, a, b, a, b}, []model.Route{c, a, b}},
		{nil, nil},
	} {
		got := dropCopies(append([]model.Route(nil), tc.in...))
		if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("dropCopies(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
