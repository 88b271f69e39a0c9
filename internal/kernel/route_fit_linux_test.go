package kernel

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// A list read into an array that grew well past it is kept in one of its
// length; one read with a hint that held keeps its array.
func TestFittedRoutes(t *testing.T) {
	list := func(n, c int) []model.Route {
		rs := make([]model.Route, n, c)
		for i := range rs {
			rs[i] = model.Route{Table: 100, Dst: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24), Dev: "br0"}
		}
		return rs
	}
	grown := list(10000, 12500)
	got := fitted(grown)
	if cap(got) != len(got) || !slices.EqualFunc(got, grown, func(a, b model.Route) bool { return a.String() == b.String() }) {
		t.Errorf("grown: len %d cap %d", len(got), cap(got))
	}
	hinted := list(10000, 10625)
	if got := fitted(hinted); &got[0] != &hinted[0] {
		t.Error("a list read with the table's hint was copied")
	}
	if got := fitted(list(0, 16)); got == nil || len(got) != 0 {
		t.Errorf("empty: %#v", got)
	}
}
