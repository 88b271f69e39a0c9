package actual

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

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
		want, err := Read(k, opt)
		if err != nil {
			t.Fatal(err)
		}
		if (len(got.Routes) != 0 || len(want.Routes) != 0) && !reflect.DeepEqual(got.Routes, want.Routes) {
			t.Fatalf("seed %d, tables %v read again:\n got %v\nwant %v", seed, dirty, got.Routes, want.Routes)
		}
		if !reflect.DeepEqual(prev.Routes, kept) {
			t.Fatalf("seed %d: the previous read changed", seed)
		}
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
