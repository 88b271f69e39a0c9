package apply

import (
	"net/netip"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// connectedDev finds a gateway as the kernel's lookup of it out of a link
// does, link state aside: the most specific route out of that link decides,
// and only a unicast one without a gateway has it on the link.
func TestConnectedDev(t *testing.T) {
	r := func(dst, gw, dev string, metric uint32, typ uint8) model.Route {
		x := model.Route{Dst: netip.MustParsePrefix(dst), Dev: dev, Metric: metric, Type: typ, Table: model.TableMain}
		if gw != "" {
			x.Gateway = netip.MustParseAddr(gw)
		}
		return x
	}
	main := []model.Route{
		r("fd00:61::/64", "", "v0", 256, model.RouteUnicast),
		r("fd00:61::/64", "", "v2", 256, model.RouteUnicast),
		r("fd00:61::c0/124", "fd00:61::1", "v0", 1024, model.RouteUnicast),
		r("fd00:62::/64", "", "v2", 256, model.RouteUnicast),
		r("fd00:62::/64", "fd00:61::1", "v2", 100, model.RouteUnicast),
		r("fd00:63::/64", "", "lo", 1024, model.RouteBlackhole),
		{Dst: netip.MustParsePrefix("fd00:64::/64"), Type: model.RouteUnicast, NextHops: []model.NextHop{{Gateway: netip.MustParseAddr("fd00:61::1"), Dev: "v0"}, {Gateway: netip.MustParseAddr("fd00:61::2"), Dev: "v2"}}},
		r("::/0", "fd00:61::1", "v0", 1024, model.RouteUnicast),
	}
	for _, c := range []struct{ gw, dev, want string }{
		{"fd00:61::9", "v0", "v0"},
		{"fd00:61::9", "v2", "v2"},
		{"fd00:61::c9", "v0", ""},   // a more specific route with a gateway
		{"fd00:61::c9", "v2", "v2"}, // that one is v0's
		{"fd00:61::9", "v3", ""},
		{"fd00:62::9", "v2", ""}, // the lower metric has a gateway
		{"fd00:62::9", "", ""},
		{"fd00:62::9", "v0", ""}, // v0's default route
		{"fd00:61::9", "", "v0"}, // either link has it: the first listed
		{"fd00:63::9", "", ""},
		{"fd00:64::9", "v0", ""},
		{"fd00:65::9", "v0", ""},
	} {
		if got := connectedDev(main, netip.MustParseAddr(c.gw), c.dev); got != c.want {
			t.Errorf("connectedDev(%s, %q) = %q, want %q", c.gw, c.dev, got, c.want)
		}
	}
}
