package engine

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
)

func TestPreparePools(t *testing.T) {
	ctx := context.Background()
	pool := model.DefaultPoolSpec("p", model.PoolSubnet{IPv4: netip.MustParsePrefix("10.2.0.0/24"), IPv6: netip.MustParsePrefix("fd01::/120")})
	pool.BlockSizeBits = 1
	reg, err := ipam.Open(t.TempDir(), []ipam.Pool{pool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewState()
	st.Pools = []model.Pool{{PoolSpec: pool}}
	st.PoolAddresses = []model.PoolAddress{{Link: "a", Pool: "p", IPv4Bits: 32, IPv6Bits: 64}}
	st.Routes = []model.Route{{Table: 100, Dst: netip.MustParsePrefix("10.9.0.0/16"), Dev: "a"}}

	// A dry run allocates nothing and says so.
	dry, err := PreparePools(ctx, reg, st, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Pending) != 1 || dry.Pending[0].Pool != "p" || dry.Pending[0].Link != "a" || len(dry.Desired.Routes) != 1 {
		t.Fatalf("dry run: pending %+v, routes %v", dry.Pending, dry.Desired.Routes)
	}
	if as, _ := reg.List(ctx, ""); len(as) != 0 {
		t.Fatalf("dry run allocated %v", as)
	}

	got, err := PreparePools(ctx, reg, st, false)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range got.Desired.Addresses {
		lines = append(lines, a.String())
	}
	for _, r := range got.Desired.Routes {
		lines = append(lines, r.String())
	}
	want := "10.2.0.0/32 dev a\nfd01::/64 dev a\n10.9.0.0/16 table 100 dev a\n10.2.0.0/31 table 119 dev lo\nfd01::/127 table 119 metric 1024 dev lo"
	if g := strings.Join(lines, "\n"); g != want {
		t.Errorf("desired:\n%s\nwant:\n%s", g, want)
	}
	if len(st.Addresses) != 0 || len(st.Routes) != 1 {
		t.Errorf("the given state was changed")
	}

	// The link leaves the file: a dry run shows the block withdrawn, an apply gives it back.
	gone := model.NewState()
	gone.Pools = st.Pools
	dry, err = PreparePools(ctx, reg, gone, true)
	if err != nil || len(dry.Released) != 1 || len(dry.Desired.Routes) != 0 {
		t.Fatalf("dry run without the link: %v, released %v, routes %v", err, dry.Released, dry.Desired.Routes)
	}
	if _, err := PreparePools(ctx, reg, gone, false); err != nil {
		t.Fatal(err)
	}
	if u, _ := reg.Usage(ctx, "p"); u.Allocated != 0 || u.BlocksHeld != 0 {
		t.Errorf("after the link left: %+v", u)
	}

	// An export route the file declares too is an error.
	st.Routes = append(st.Routes, model.Route{Table: 119, Dst: netip.MustParsePrefix("10.2.0.0/31"), Dev: "lo", Origin: model.OriginText("f.yaml:9:5")})
	if _, err := PreparePools(ctx, reg, st, false); err == nil || !strings.Contains(err.Error(), "the file declares it too at f.yaml:9:5") {
		t.Errorf("duplicate export route: %v", err)
	}
}

// A link that takes the place of another in a full pool (renamed: the old
// name leaves the file as the new one comes) gets the address the other
// gives back, in the same pass, as diff plans it: the apply gives back
// before it allocates. Walk finding 89 (host seed 69241692121183, step 57:
// rename wg02ea0 to wg02ea1, a pool of one block this host may hold: "pool
// exhausted", though diff had planned the address).
func TestWalkFinding89RenamedLinkTakesTheAddressBack(t *testing.T) {
	ctx := context.Background()
	pool := model.DefaultPoolSpec("p", model.PoolSubnet{IPv4: netip.MustParsePrefix("10.3.0.0/24")})
	pool.BlockSizeBits, pool.ReuseDelay = 0, 0
	pool.AllowedBlocks = []model.PoolRange{{First: 0, Last: 0}}
	reg, err := ipam.Open(t.TempDir(), []ipam.Pool{pool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := func(link string) *model.State {
		st := model.NewState()
		st.Pools = []model.Pool{{PoolSpec: pool}}
		st.PoolAddresses = []model.PoolAddress{{Link: link, Pool: "p", IPv4Bits: 32}}
		return st
	}
	if _, err := PreparePools(ctx, reg, file("wg0"), false); err != nil {
		t.Fatal(err)
	}
	dry, err := PreparePools(ctx, reg, file("wg1"), true)
	if err != nil || len(dry.Pending) != 1 || len(dry.Released) != 1 {
		t.Fatalf("dry run: %v, pending %v, released %v", err, dry.Pending, dry.Released)
	}
	got, err := PreparePools(ctx, reg, file("wg1"), false)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(got.Allocated) != 1 || got.Allocated[0].Owner != poolOwner("wg1") || got.Allocated[0].IPv4 != netip.MustParseAddr("10.3.0.0") {
		t.Errorf("allocated %+v, want wg1's 10.3.0.0", got.Allocated)
	}
}

// diff fails where apply would: two links that take an address from a pool
// with room for one. The dry run allocates nothing, so it planned both
// addresses, and apply then failed with "pool exhausted". Walk finding 97
// (host soak seed 26776111397937, shrunk to one step: pool pv of blocks "2",
// single addresses, two links taking from it).
func TestWalkFinding97DiffPredictsAnExhaustedPool(t *testing.T) {
	ctx := context.Background()
	pool := model.DefaultPoolSpec("pv", model.PoolSubnet{IPv4: netip.MustParsePrefix("10.4.0.0/24")})
	pool.BlockSizeBits, pool.ReuseDelay = 0, 0
	pool.AllowedBlocks = []model.PoolRange{{First: 2, Last: 2}}
	reg, err := ipam.Open(t.TempDir(), []ipam.Pool{pool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewState()
	st.Pools = []model.Pool{{PoolSpec: pool}}
	st.PoolAddresses = []model.PoolAddress{
		{Link: "v0", Pool: "pv", IPv4Bits: 32, Origin: "f.yaml:3:5"},
		{Link: "v1", Pool: "pv", IPv4Bits: 32, Origin: "f.yaml:7:5"},
	}
	_, dryErr := PreparePools(ctx, reg, st, true)
	_, applyErr := PreparePools(ctx, reg, st, false)
	if !errors.Is(dryErr, ipam.ErrPoolExhausted) || !errors.Is(applyErr, ipam.ErrPoolExhausted) {
		t.Fatalf("dry run: %v; apply: %v; want both pool exhausted", dryErr, applyErr)
	}
	if dryErr.Error() != applyErr.Error() {
		t.Errorf("dry run says %q, apply %q: the same error, at the same link", dryErr, applyErr)
	}
	if !strings.Contains(dryErr.Error(), "link v1 (f.yaml:7:5)") {
		t.Errorf("error %q: want the link that gets no address, and where the file gives it one", dryErr)
	}
	// The apply that fails has taken nothing: v0's address is not held
	// for a file that was refused.
	if held, err := reg.List(ctx, ""); err != nil || len(held) != 0 {
		t.Errorf("after the refused apply the registry holds %v (%v), want nothing", held, err)
	}
}

// keptPools reserves, in each pool, the addresses inside its subnets that
// links left as they are keep, beside the file's own; a pool whose subnets
// hold none is as it was, and nothing to reserve is nil.
func TestKeptPoolsReserveWhatLeftOutLinksKeep(t *testing.T) {
	p4 := model.DefaultPoolSpec("p4", model.PoolSubnet{IPv4: netip.MustParsePrefix("10.98.0.0/24")})
	p4.Reserved = []netip.Addr{netip.MustParseAddr("10.98.0.9")}
	p6 := model.DefaultPoolSpec("p6", model.PoolSubnet{IPv6: netip.MustParsePrefix("fd98::/120")})
	pools := []model.PoolSpec{p4, p6}
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	kept := map[string]map[netip.Addr]bool{
		"b0": {a("10.98.0.4"): true, a("10.98.0.3"): true, a("10.250.0.1"): true},
		"b2": {a("fe80::1"): true},
	}
	got := keptPools(pools, kept)
	if len(got) != 2 || got[0].Name != "p4" || got[1].Name != "p6" {
		t.Fatalf("pools: %+v", got)
	}
	if want := []netip.Addr{a("10.98.0.9"), a("10.98.0.3"), a("10.98.0.4")}; !slices.Equal(got[0].Reserved, want) {
		t.Errorf("p4 reserves %v, want %v", got[0].Reserved, want)
	}
	if len(got[1].Reserved) != 0 {
		t.Errorf("p6 reserves %v", got[1].Reserved)
	}
	if len(pools[0].Reserved) != 1 {
		t.Errorf("the pools given changed: %v", pools[0].Reserved)
	}
	if got := keptPools(pools, map[string]map[netip.Addr]bool{"b2": {a("fe80::1"): true}}); got != nil {
		t.Errorf("nothing kept in a pool's subnets: %+v", got)
	}
}

// Walk finding 63: an address the ledger records as one a pass added as the
// file's static address is no trace of a lost registry on a link that now
// takes from the pool (the pool is new); the same address without the
// record, another length or another link's record, and an export route,
// whatever the ledger says, still are.
func TestWalkFinding63LostRegistryForgivesOnlyOurStaticAddresses(t *testing.T) {
	pool := model.DefaultPoolSpec("p", model.PoolSubnet{IPv4: netip.MustParsePrefix("10.2.0.0/24")})
	reg, err := ipam.Open(t.TempDir(), []ipam.Pool{pool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	desired := model.NewState()
	desired.Pools = []model.Pool{{PoolSpec: pool}}
	desired.PoolAddresses = []model.PoolAddress{{Link: "a", Pool: "p", IPv4Bits: 24}}
	addr := func(link, p string) model.Address { return model.Address{Link: link, Prefix: netip.MustParsePrefix(p)} }
	key := func(link, p string) model.AddressKey {
		return model.AddressKey{Link: link, Prefix: netip.MustParsePrefix(p)}
	}
	export := model.Route{Table: pool.ExportTable, Dst: netip.MustParsePrefix("10.2.0.0/30"), Dev: ExportDev}
	for _, tc := range []struct {
		name   string
		addrs  []model.Address
		routes []model.Route
		ours   map[model.AddressKey]bool
		traces string // "": accepted
	}{
		{"recorded", []model.Address{addr("a", "10.2.0.0/24")}, nil, map[model.AddressKey]bool{key("a", "10.2.0.0/24"): true}, ""},
		{"not recorded", []model.Address{addr("a", "10.2.0.0/24")}, nil, nil, "address 10.2.0.0/24 on a"},
		{"recorded at another length", []model.Address{addr("a", "10.2.0.0/24")}, nil, map[model.AddressKey]bool{key("a", "10.2.0.0/25"): true}, "address 10.2.0.0/24 on a"},
		{"recorded on another link", []model.Address{addr("a", "10.2.0.0/24")}, nil, map[model.AddressKey]bool{key("b", "10.2.0.0/24"): true}, "address 10.2.0.0/24 on a"},
		{"an export route", []model.Address{addr("a", "10.2.0.0/24")}, []model.Route{export}, map[model.AddressKey]bool{key("a", "10.2.0.0/24"): true}, "(route 10.2.0.0/30 table 119)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			act := model.NewState()
			act.Addresses, act.Routes = tc.addrs, tc.routes
			err := lostRegistries(reg, desired, func() (*model.State, error) { return act, nil }, tc.ours)
			switch {
			case tc.traces == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.traces != "" && (!errors.Is(err, ErrRegistryLost) || !strings.Contains(err.Error(), tc.traces)):
				t.Errorf("got %v, want a lost registry with %s", err, tc.traces)
			}
		})
	}
}

// The record of a static address is dropped before a pass in which its link
// takes from a pool without declaring it (the pool may hand it out under
// the same key), and kept otherwise, also for a link the plan leaves out
// (it is given nothing); Apply records the static addresses it
// made, not the pools', and forgets those it deleted, and those of a link
// it deleted or made again.
func TestWalkFinding63StaticAddressRecords(t *testing.T) {
	l, err := ledger.OpenIn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := func(link, p string) model.AddressKey {
		return model.AddressKey{Link: link, Prefix: netip.MustParsePrefix(p)}
	}
	e := &Engine{Ledger: l}
	for _, k := range []model.AddressKey{key("a", "10.2.0.1/24"), key("a", "10.2.0.2/24"), key("b", "10.2.0.3/24")} {
		l.SetStaticAddr(k, true)
	}
	desired := model.NewState()
	desired.PoolAddresses = []model.PoolAddress{{Link: "a", Pool: "p", IPv4Bits: 24}}
	desired.Addresses = []model.Address{{Link: "a", Prefix: netip.MustParsePrefix("10.2.0.2/24")}}
	desired.PoolAddresses = append(desired.PoolAddresses, model.PoolAddress{Link: "b", Pool: "p", IPv4Bits: 24})
	if _, err := e.dropStaticAddrs(desired, map[string]bool{"b": true}); err != nil {
		t.Fatal(err)
	}
	if want := map[model.AddressKey]bool{key("a", "10.2.0.2/24"): true, key("b", "10.2.0.3/24"): true}; !maps.Equal(l.StaticAddrs, want) {
		t.Errorf("after the drop: %v, want %v", l.StaticAddrs, want)
	}

	pooled := map[string]map[netip.Addr]bool{"c": {netip.MustParseAddr("10.2.0.9"): true}}
	a := func(link, p string) *model.Address {
		return &model.Address{Link: link, Prefix: netip.MustParsePrefix(p)}
	}
	e.recordStaticAddrs(pooled, []*diff.Op{
		{Action: diff.Create, Kind: diff.KindAddress, Address: a("c", "10.2.0.9/24")},
		{Action: diff.Create, Kind: diff.KindAddress, Address: a("c", "10.2.0.8/24")},
		{Action: diff.Delete, Kind: diff.KindAddress, Address: a("a", "10.2.0.2/24")},
		{Action: diff.Delete, Kind: diff.KindLink, Link: &model.Link{Name: "b"}},
	})
	if want := map[model.AddressKey]bool{key("c", "10.2.0.8/24"): true}; !maps.Equal(l.StaticAddrs, want) {
		t.Errorf("after the ops: %v, want %v", l.StaticAddrs, want)
	}
}
