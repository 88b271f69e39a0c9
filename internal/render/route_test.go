package render

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Multipath routes, IPv6 next hops of IPv4 routes and addresses with a
// protocol render in the schema, and the rendering loads back as the same
// routes.
func TestRenderMultipathAndAddressProtocol(t *testing.T) {
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	st := model.NewState()
	st.Links["eth0"] = &model.Link{Name: "eth0", Kind: model.KindDevice, Up: true, MTU: 1500}
	st.Links["eth1"] = &model.Link{Name: "eth1", Kind: model.KindDevice, Up: true, MTU: 1500}
	st.Addresses = []model.Address{{Link: "eth0", Prefix: p("10.0.0.2/24"), Protocol: 245}, {Link: "eth1", Prefix: p("10.0.1.2/24")}}
	st.Routes = []model.Route{
		{Table: 254, Dst: p("0.0.0.0/0"), Type: 1, NextHops: []model.NextHop{{Gateway: a("10.0.1.1"), Dev: "eth1", Weight: 1}, {Gateway: a("fe80::1"), Dev: "eth0", Weight: 3}}, Protocol: 245},
		{Table: 254, Dst: p("10.9.0.0/16"), Type: 1, Gateway: a("fe80::1"), Dev: "eth0", Protocol: 245},
	}
	out, err := State(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- 10.0.0.2/24 # proto 245\n",
		"{to: default, family: ipv4, nexthops: [{via: 10.0.1.1, dev: eth1}, {via: 'fe80::1', dev: eth0, weight: 3}], table: main, scope: global} # proto 245",
		"{to: 10.9.0.0/16, via: 'fe80::1', dev: eth0, table: main, scope: global} # proto 245",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendering lacks %q:\n%s", want, out)
		}
	}
	cfg, err := desired.Parse([]desired.Source{{Name: "show.yaml", Data: out}})
	if err != nil {
		t.Fatalf("the rendering does not load: %v\n%s", err, out)
	}
	if got := cfg.State.Routes; len(got) != 2 || got[0].String() != st.Routes[0].String() || got[1].String() != st.Routes[1].String() {
		t.Errorf("loaded back: %v\nwant: %v", got, st.Routes)
	}
}
