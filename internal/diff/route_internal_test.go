package diff

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The merge walk over sorted lists plans what the map-based diff plans,
// duplicates, foreign routes, recreated and deleted links included.
func TestRoutesSortedMatchesMap(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	mine := model.DefaultProtocol
	d := &model.State{Protocol: mine, Links: map[string]*model.Link{"eth0": {Name: "eth0"}, "br0": {Name: "br0"}}, Routes: []model.Route{
		{Table: 100, Dst: p("10.0.0.0/24"), Dev: "eth0", Type: 1},
		{Table: 100, Dst: p("10.0.1.0/24"), Dev: "eth0", Type: 1, MTU: 1400},
		{Table: 100, Dst: p("10.0.2.0/24"), Dev: "eth0", Type: 1},
		{Table: 100, Dst: p("10.0.2.0/24"), Dev: "eth0", Type: 1}, // a duplicate
		{Table: 100, Dst: p("10.0.3.0/24"), Dev: "br0", Type: 1},
		{Table: 100, Dst: p("10.0.3.0/24"), Dev: "eth0", Type: 1, Metric: 5},
		{Table: 254, Dst: p("2001:db8::/32"), Dev: "eth0", Type: 1, Metric: 1024},
	}}
	a := &model.State{Protocol: mine, Links: map[string]*model.Link{"eth0": {Name: "eth0"}, "old0": {Name: "old0", Owned: true}, "br0": {Name: "br0", Owned: true}}, Routes: []model.Route{
		{Table: 100, Dst: p("10.0.0.0/24"), Dev: "eth0", Type: 1, Protocol: uint8(mine)},
		{Table: 100, Dst: p("10.0.0.128/25"), Dev: "eth0", Type: 1, Protocol: uint8(mine)}, // stale
		{Table: 100, Dst: p("10.0.1.0/24"), Dev: "eth0", Type: 1, Protocol: 4},             // foreign
		{Table: 100, Dst: p("10.0.1.0/24"), Dev: "eth0", Type: 1, Protocol: uint8(mine)},   // ours, other MTU
		{Table: 100, Dst: p("10.0.3.0/24"), Dev: "br0", Type: 1, Protocol: uint8(mine)},    // on a recreated link
		{Table: 100, Dst: p("10.0.4.0/24"), Dev: "old0", Type: 1, Protocol: uint8(mine)},   // goes with its link
		{Table: 100, Dst: p("10.0.5.0/24"), Dev: "eth0", Type: 1, Protocol: 3},             // foreign
		{Table: 254, Dst: p("2001:db8::/32"), Dev: "br0", Type: 1, Metric: 1024, Protocol: uint8(mine)},
	}}
	if !model.RoutesSorted(d.Routes) || !model.RoutesSorted(a.Routes) {
		t.Fatal("test lists are not sorted")
	}
	plan := func(f func(*computer)) []Op {
		c := &computer{d: d, a: a, plan: &Plan{}, recreated: map[string]bool{"br0": true}}
		f(c)
		return append(c.plan.Ops, c.deletes...)
	}
	got, want := plan(func(c *computer) { c.routesSorted() }), plan((*computer).routesByMap)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merge walk:\n%s\nmap:\n%s", (&Plan{Ops: got}).String(), (&Plan{Ops: want}).String())
	}
	if len(want) < 5 {
		t.Errorf("the case plans too little to compare:\n%s", (&Plan{Ops: want}).String())
	}
}

// Lists out of order take the map-based diff, whatever the walk planned.
func TestRoutesUnsortedFallBack(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	mine := model.DefaultProtocol
	d := &model.State{Protocol: mine, Routes: []model.Route{{Table: 100, Dst: p("10.0.1.0/24"), Type: 6}, {Table: 100, Dst: p("10.0.0.0/24"), Type: 6}}}
	a := &model.State{Protocol: mine, Routes: []model.Route{{Table: 100, Dst: p("10.0.2.0/24"), Type: 6, Protocol: uint8(mine)}, {Table: 100, Dst: p("10.0.0.0/24"), Type: 6, Protocol: uint8(mine)}}}
	plan, err := Compute(d, a)
	if err != nil {
		t.Fatal(err)
	}
	want := "+ route 10.0.1.0/24 table 100 (blackhole)\n- route 10.0.2.0/24 table 100 (blackhole)\n"
	if got := plan.String(); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
}

// Random sorted lists over a small key space (duplicates, foreign routes,
// recreated and owned links): the walk and the maps plan the same.
func TestRoutesSortedMatchesMapRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	devs := []string{"", "eth0", "br0", "old0"}
	route := func() model.Route {
		return model.Route{
			Table:    uint32(100 + rng.IntN(2)),
			Dst:      netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(rng.IntN(6)), 0}), 24),
			Metric:   uint32(rng.IntN(2)),
			Type:     1,
			Dev:      devs[rng.IntN(len(devs))],
			MTU:      uint32(1400 + rng.IntN(2)),
			Protocol: []uint8{model.DefaultProtocol, model.DefaultProtocol, 4}[rng.IntN(3)],
		}
	}
	for n := 0; n < 500; n++ {
		d := &model.State{Protocol: model.DefaultProtocol, Links: map[string]*model.Link{"eth0": {Name: "eth0"}, "br0": {Name: "br0"}}}
		a := &model.State{Protocol: model.DefaultProtocol, Links: map[string]*model.Link{"eth0": {Name: "eth0"}, "br0": {Name: "br0", Owned: true}, "old0": {Name: "old0", Owned: true}}}
		for m := rng.IntN(12); m > 0; m-- {
			d.Routes = append(d.Routes, route())
		}
		for m := rng.IntN(12); m > 0; m-- {
			a.Routes = append(a.Routes, route())
		}
		model.SortRoutes(d.Routes)
		model.SortRoutes(a.Routes)
		recreated := map[string]bool{"br0": rng.IntN(2) == 0}
		plan := func(f func(*computer)) []Op {
			c := &computer{d: d, a: a, plan: &Plan{}, recreated: recreated}
			f(c)
			return append(c.plan.Ops, c.deletes...)
		}
		got, want := plan(func(c *computer) {
			if !c.routesSorted() {
				t.Fatal("sorted lists refused")
			}
		}), plan((*computer).routesByMap)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: merge walk:\n%s\nmap:\n%s", n, (&Plan{Ops: got}).String(), (&Plan{Ops: want}).String())
		}
	}
}
