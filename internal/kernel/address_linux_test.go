package kernel_test

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Addresses parses dumps itself: without the protocol, it reads what the
// library reads (plain, secondary, point-to-point, noprefixroute, IPv6,
// scoped addresses); an address added with a protocol reads back with it on
// a kernel that records it; and what NLM_F_REPLACE does to the protocol of
// an address that exists is measured and pinned here.
func TestAddressesDumpAndProtocol(t *testing.T) {
	ns := nettest.NewNetNSPrefixed(t, "rte")
	nettest.IP(t, ns, "link", "add", "rteva", "type", "veth", "peer", "name", "rtevb")
	for _, a := range [][]string{
		{"10.40.0.1/24", "dev", "rteva"},
		{"10.40.0.2/24", "dev", "rteva"},
		{"10.41.0.1", "peer", "10.41.0.2/32", "dev", "rteva"},
		{"10.42.0.1/24", "dev", "rteva", "noprefixroute", "scope", "link"},
		{"2001:db8:40::1/64", "dev", "rteva", "nodad"},
		{"2001:db8:41::1", "peer", "2001:db8:41::2/128", "dev", "rteva", "nodad"},
	} {
		nettest.IP(t, ns, append([]string{"addr", "add"}, a...)...)
	}
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Links(); err != nil {
		t.Fatal(err)
	}
	got, err := k.Addresses()
	if err != nil {
		t.Fatal(err)
	}
	want, err := kernel.AddressesByLibrary(k)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("addresses differ from the library's:\nours: %v\nlibrary: %v", got, want)
	}
	if !k.AddressProtocols() {
		t.Skip("this kernel does not record address protocols (IFA_PROTO, Linux 6.3)")
	}
	protoOf := func(p string) int {
		t.Helper()
		as, err := k.Addresses()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.Prefix == netip.MustParsePrefix(p) {
				return a.Protocol
			}
		}
		t.Fatalf("address %s not found in %v", p, as)
		return 0
	}
	ours := model.DefaultProtocol
	for _, p := range []string{"10.43.0.1/24", "2001:db8:43::1/64", "10.44.0.1/32"} {
		a := &model.Address{Link: "rteva", Prefix: netip.MustParsePrefix(p)}
		if a.Prefix.Addr().Is6() {
			a.Scope = model.IPv6AddressScope(a.Prefix.Addr())
		}
		if err := k.ReplaceAddress(a, ours); err != nil {
			t.Fatal(err)
		}
		if got := protoOf(p); got != ours {
			t.Errorf("%s added with protocol %d reads back with %d", p, ours, got)
		}
	}
	// NLM_F_REPLACE on an address that exists changes its protocol to the
	// one the request carries, and a request without IFA_PROTO sets it to
	// 0 (measured on 6.18, both families): an address that exists without
	// a protocol is stamped in place, no delete and add, and every write
	// of an address must carry the protocol.
	for _, tc := range []struct {
		prefix     string
		with, want int
	}{
		{"10.40.0.1/24", ours, ours},
		{"2001:db8:40::1/64", ours, ours},
		{"10.43.0.1/24", 99, 99},
		{"2001:db8:43::1/64", 99, 99},
		{"10.43.0.1/24", 0, 0},
		{"2001:db8:43::1/64", 0, 0},
	} {
		a := &model.Address{Link: "rteva", Prefix: netip.MustParsePrefix(tc.prefix)}
		if a.Prefix.Addr().Is6() {
			a.Scope = model.IPv6AddressScope(a.Prefix.Addr())
		}
		if err := k.ReplaceAddress(a, tc.with); err != nil {
			t.Fatal(err)
		}
		if got := protoOf(tc.prefix); got != tc.want {
			t.Errorf("%s replaced with protocol %d: reads back with %d, want %d", tc.prefix, tc.with, got, tc.want)
		}
	}
}
