package actual

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// A read that takes again the routes of some tables, and the others from
// the previous read, equals a full read whenever only those tables
// changed: seeded random kernels (ours and foreign routes, both families,
// several tables, the main one) and random changes (add, delete, change in
// place) in random tables, against a full Read as the oracle. A previous
// read out of key order takes the slow path and agrees too; the previous
// read is never written to.
func TestReadRouteTablesAgreesWithAFullRead(t *testing.T) {
	const proto = 245
	tables := []int{100, 101, 102, 254, 1000}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 16))
		k := kerneltest.New()
		route := func(table int) model.Route {
			var dst netip.Prefix
			if rng.IntN(3) == 0 {
				dst = netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0, byte(rng.IntN(4)), byte(rng.IntN(8))}), 32)
			} else {
				dst = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(8)), 0}), 24)
			}
			r := model.Route{Table: uint32(table), Dst: dst, Type: model.RouteUnicast, Dev: "d0", Scope: model.ScopeLink,
				Metric: uint32(rng.IntN(2)), Protocol: proto}
			if rng.IntN(4) == 0 {
				r.Protocol = 12
			}
			if rng.IntN(3) == 0 {
				r.MTU = uint32(1280 + rng.IntN(3))
			}
			return r
		}
		for range rng.IntN(60) {
			k.PutRoute(route(tables[rng.IntN(len(tables))]))
		}
		opt := Options{Protocol: proto}
		prev, err := Read(k, opt)
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(4) == 0 {
			rng.Shuffle(len(prev.Routes), func(i, j int) { prev.Routes[i], prev.Routes[j] = prev.Routes[j], prev.Routes[i] })
		}
		kept := slices.Clone(prev.Routes)
		dirty := map[int]bool{}
		for range 1 + rng.IntN(4) {
			table := tables[rng.IntN(len(tables))]
			dirty[table] = true
			all, _ := k.Routes(0)
			var in []model.Route
			for _, r := range all {
				if int(r.Table) == table {
					in = append(in, r)
				}
			}
			switch rng.IntN(3) {
			case 0:
				k.PutRoute(route(table))
			case 1:
				if len(in) > 0 {
					r := in[rng.IntN(len(in))]
					if errs := k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &r}}, int(r.Protocol)); errs[0] != nil {
						t.Fatal(errs[0])
					}
				}
			case 2:
				if len(in) > 0 {
					r := in[rng.IntN(len(in))]
					r.MTU++
					k.PutRoute(r)
				}
			}
		}
		got, _, err := ReadReusing(k, opt, prev, Fresh{Kinds: Routes, RouteTables: dirty})
		if err != nil {
			t.Fatal(err)
		}
		agreesWithARead(t, k, opt, got, prev, kept, fmt.Sprintf("seed %d, tables %v read again", seed, dirty))
	}
}

// Fresh.Add: kinds join; the route tables join, and every table (nil)
// wins over a list.
func TestFreshAdd(t *testing.T) {
	tables := func(ts ...int) map[int]bool {
		m := map[int]bool{}
		for _, t := range ts {
			m[t] = true
		}
		return m
	}
	for _, c := range []struct {
		a, b, want Fresh
	}{
		{Fresh{}, Fresh{}, Fresh{}},
		{Fresh{Kinds: Rules}, Fresh{Kinds: NFT}, Fresh{Kinds: Rules | NFT}},
		{Fresh{Kinds: Routes, RouteTables: tables(1)}, Fresh{Kinds: Rules}, Fresh{Kinds: Routes | Rules, RouteTables: tables(1)}},
		{Fresh{Kinds: Routes, RouteTables: tables(1)}, Fresh{Kinds: Routes, RouteTables: tables(2)}, Fresh{Kinds: Routes, RouteTables: tables(1, 2)}},
		{Fresh{Kinds: Routes, RouteTables: tables(1)}, Fresh{Kinds: Routes}, Fresh{Kinds: Routes}},
		{Fresh{Kinds: Routes, RouteTables: tables(1)}, All, All},
		// Tables without the Routes kind mean nothing.
		{Fresh{Kinds: Rules, RouteTables: tables(3)}, Fresh{Kinds: Routes, RouteTables: tables(1)}, Fresh{Kinds: Routes | Rules, RouteTables: tables(1)}},
	} {
		for _, got := range []Fresh{c.a.Add(c.b), c.b.Add(c.a)} {
			if got.Kinds != c.want.Kinds || (got.RouteTables == nil) != (c.want.RouteTables == nil) || len(got.RouteTables) != len(c.want.RouteTables) {
				t.Errorf("%+v + %+v = %+v, want %+v", c.a, c.b, got, c.want)
				continue
			}
			for tb := range c.want.RouteTables {
				if !got.RouteTables[tb] {
					t.Errorf("%+v + %+v = %+v, want %+v", c.a, c.b, got, c.want)
				}
			}
		}
	}
}

// A read that patches tables with the notifications of our routes equals a
// full read: seeded random kernels and random adds, replaces and deletes
// of routes of ours, each recorded as its notification would be; a few of
// the changes came before the previous read (it holds them already), and
// a notification of a route beside another of its key (which one change
// cannot follow) makes the table read instead. The previous read is never
// written to.
func TestReadPatchedRouteTablesAgreesWithAFullRead(t *testing.T) {
	const proto = 245
	tables := []int{100, 101, 254}
	patched, readAgain := 0, 0
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 34))
		k := kerneltest.New()
		route := func(table int) model.Route {
			dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(rng.IntN(3)), byte(rng.IntN(6)), 0}), 24)
			if rng.IntN(3) == 0 {
				dst = netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0, byte(rng.IntN(3)), byte(rng.IntN(6))}), 64)
			}
			r := model.Route{Table: uint32(table), Dst: dst, Type: model.RouteUnicast, Dev: "d0", Scope: model.ScopeLink,
				Metric: uint32(rng.IntN(2)), Protocol: proto, MTU: uint32(1280 + rng.IntN(3))}
			if dst.Addr().Is6() {
				r.Metric += 1024 // as the kernel holds it, and tells it
			}
			return r
		}
		ours := func() []model.Route {
			all, _ := k.Routes(proto)
			return all
		}
		var changes map[int][]RouteChange
		record := func(c RouteChange) {
			if changes == nil {
				changes = map[int][]RouteChange{}
			}
			changes[int(c.Route.Table)] = append(changes[int(c.Route.Table)], c)
		}
		change := func() {
			in := ours()
			switch n := rng.IntN(3); {
			case n == 0 || len(in) == 0:
				r := route(tables[rng.IntN(len(tables))])
				k.PutRoute(r)
				record(RouteChange{Route: r})
			case n == 1:
				r := in[rng.IntN(len(in))]
				if errs := k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &r}}, proto); errs[0] != nil {
					t.Fatal(errs[0])
				}
				record(RouteChange{Delete: true, Route: r})
			default:
				r := in[rng.IntN(len(in))]
				r.MTU++
				k.PutRoute(r)
				record(RouteChange{Route: r})
			}
		}
		for range rng.IntN(40) {
			k.PutRoute(route(tables[rng.IntN(len(tables))]))
		}
		for range rng.IntN(3) {
			change() // before the previous read, notified after it
		}
		opt := Options{Protocol: proto}
		prev, err := Read(k, opt)
		if err != nil {
			t.Fatal(err)
		}
		kept := slices.Clone(prev.Routes)
		for range 1 + rng.IntN(6) {
			change()
		}
		dup := -1
		if rng.IntN(10) == 0 {
			// Another route of a key than the one read, told gone
			// (IPv6 keeps one per device).
			if in := ours(); len(in) > 0 {
				r := in[rng.IntN(len(in))]
				r.Dev = "d1"
				dup = int(r.Table)
				record(RouteChange{Delete: true, Route: r})
			}
		}
		got, read, err := ReadReusing(k, opt, prev, Fresh{RouteChanges: changes})
		if err != nil {
			t.Fatal(err)
		}
		agreesWithARead(t, k, opt, got, prev, kept, fmt.Sprintf("seed %d, changes %v", seed, changes))
		if len(read.Tables)+len(read.Patched) != len(changes) || dup < 0 && len(read.Tables) != 0 {
			t.Fatalf("seed %d: tables read %v, patched %v, changes in %d", seed, read.Tables, read.Patched, len(changes))
		}
		if dup >= 0 {
			readAgain++
		} else {
			patched++
		}
	}
	if patched == 0 || readAgain == 0 {
		t.Fatalf("patched %d, read again %d: a case never came", patched, readAgain)
	}
}

// A table whose changes patchRoutes cannot follow is reported, and only
// that one: two routes of a key, next hops, a delete of another route of
// the key.
func TestPatchRoutesUnsure(t *testing.T) {
	r := func(table uint32, dst, dev string) model.Route {
		return model.Route{Table: table, Dst: netip.MustParsePrefix(dst), Dev: dev, Protocol: 245}
	}
	prev := []model.Route{r(100, "10.0.0.0/24", "a"), r(101, "10.0.1.0/24", "a")}
	mp := r(100, "10.0.9.0/24", "")
	mp.NextHops = []model.NextHop{{Dev: "a"}, {Dev: "b"}}
	two := slices.Insert(slices.Clone(prev), 1, r(100, "10.0.0.0/24", "b"))
	for _, c := range []struct {
		name string
		prev []model.Route
		c    RouteChange
	}{
		{"two routes of a key", two, RouteChange{Route: r(100, "10.0.0.0/24", "c")}},
		{"delete of another route of the key", prev, RouteChange{Delete: true, Route: r(100, "10.0.0.0/24", "b")}},
		{"next hops", prev, RouteChange{Route: mp}},
	} {
		out, unsure := patchRoutes(c.prev, map[int][]RouteChange{100: {c.c}, 101: {{Delete: true, Route: prev[1]}}})
		if !unsure[100] || unsure[101] || len(unsure) != 1 {
			t.Errorf("%s: unsure %v, want table 100", c.name, unsure)
		}
		if want := c.prev[:len(c.prev)-1]; !reflect.DeepEqual(out, want) {
			t.Errorf("%s: routes %v, want %v (101's delete applied, 100 left to the read)", c.name, out, want)
		}
	}
}

// agreesWithARead fails the test when got's routes are not what a full
// read of k gives, or when the read that reused prev changed prev's routes
// (kept is a copy of them).
func agreesWithARead(t *testing.T, k kernel.Reader, opt Options, got, prev *model.State, kept []model.Route, what string) {
	t.Helper()
	want, err := Read(k, opt)
	if err != nil {
		t.Fatal(err)
	}
	if (len(got.Routes) != 0 || len(want.Routes) != 0) && !reflect.DeepEqual(got.Routes, want.Routes) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got.Routes, want.Routes)
	}
	if !reflect.DeepEqual(prev.Routes, kept) {
		t.Fatalf("%s: the previous read changed", what)
	}
}

// A repair beside many routes of ours patches the previous read with one
// copy of its routes: the patch was most of a repair pass's CPU and garbage
// when it cloned the table, grew the clone for the insert and copied it
// all again. Bytes allocated, not time: the same on any machine.
func TestPatchRoutesCopiesTheRoutesOnce(t *testing.T) {
	const n = 10000
	prev := make([]model.Route, 0, n+1)
	for i := range n {
		prev = append(prev, model.Route{Table: 100, Protocol: 245, Dev: "d0",
			Dst: netip.PrefixFrom(netip.AddrFrom4([4]byte{1, byte(i >> 16), byte(i >> 8), byte(i)}), 32)})
	}
	prev = append(prev, model.Route{Table: 101, Protocol: 245, Dev: "d0", Dst: netip.MustParsePrefix("10.0.0.0/8")})
	gone := prev[n/2]
	kept := slices.Clone(prev)
	without := slices.Delete(slices.Clone(prev), n/2, n/2+1)
	changes := map[int][]RouteChange{100: {{Route: gone}}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, unsure := patchRoutes(without, changes)
	runtime.ReadMemStats(&after)
	if len(unsure) != 0 || !reflect.DeepEqual(out, kept) {
		t.Fatalf("patched: unsure %v, %d routes, want the %d read before the delete", unsure, len(out), len(kept))
	}
	one := uint64(len(prev)) * uint64(unsafe.Sizeof(model.Route{}))
	if got := after.TotalAlloc - before.TotalAlloc; got > one*3/2 {
		t.Errorf("patching one route into %d allocated %d bytes, %.1f copies of the routes; want one", len(prev), got, float64(got)/float64(one))
	}
}
