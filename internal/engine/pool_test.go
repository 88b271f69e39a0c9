package engine

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/pooldef"
)

func TestPreparePools(t *testing.T) {
	ctx := context.Background()
	pool := pooldef.Default("p", pooldef.Subnet{IPv4: netip.MustParsePrefix("10.2.0.0/24"), IPv6: netip.MustParsePrefix("fd01::/120")})
	pool.BlockSizeBits = 1
	reg, err := ipam.Open(t.TempDir(), []ipam.Pool{pool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewState()
	st.Pools = []model.Pool{{Pool: pool}}
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
	st.Routes = append(st.Routes, model.Route{Table: 119, Dst: netip.MustParsePrefix("10.2.0.0/31"), Dev: "lo", Origin: "f.yaml:9:5"})
	if _, err := PreparePools(ctx, reg, st, false); err == nil || !strings.Contains(err.Error(), "the file declares it too at f.yaml:9:5") {
		t.Errorf("duplicate export route: %v", err)
	}
}

// Walk finding 63: an address the last applied configuration declared
// statically, on a link that now takes from a pool that configuration did
// not declare, is no trace of a lost registry. Everything a registry could
// have left still is: the same address when the last configuration
// declared the pool (or nothing is known of it), on another link, or
// handed out by a pool; and every export route.
func TestLostRegistryForgivesOnlyWhatTheLastFileDeclared(t *testing.T) {
	pfx := netip.MustParsePrefix
	pool := pooldef.Default("pw", pooldef.Subnet{IPv4: pfx("10.99.0.0/24")})
	reg, err := ipam.Open(t.TempDir(), []ipam.Pool{pool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := model.NewState()
	want.Pools = []model.Pool{{Pool: pool}}
	want.PoolAddresses = []model.PoolAddress{{Link: "p9c", Pool: "pw", IPv4Bits: 24}}
	static := func(link, p string, pools ...string) *model.State {
		st := model.NewState()
		st.Addresses = []model.Address{{Link: link, Prefix: pfx(p)}}
		for _, name := range pools {
			st.Pools = append(st.Pools, model.Pool{Pool: pooldef.Default(name, pooldef.Subnet{IPv4: pfx("10.99.0.0/24")})})
		}
		return st
	}
	handedOut := model.NewState()
	handedOut.Pools = []model.Pool{{Pool: pooldef.Default("old", pooldef.Subnet{IPv4: pfx("10.99.0.0/24")})}}
	handedOut.PoolAddresses = []model.PoolAddress{{Link: "p9c", Pool: "old", IPv4Bits: 24}}
	onLink := model.NewState()
	onLink.Addresses = []model.Address{{Link: "p9c", Prefix: pfx("10.99.0.1/24")}}
	withRoute := model.NewState()
	withRoute.Addresses = onLink.Addresses
	withRoute.Routes = []model.Route{{Table: int(pool.ExportTable), Dst: pfx("10.99.0.0/26"), Dev: "lo"}}
	for _, tc := range []struct {
		name    string
		kernel  *model.State
		applied []*model.State
		lost    string // "" when the pool is new
	}{
		{"declared static before, no pool pw then", onLink, []*model.State{static("p9c", "10.99.0.1/24")}, ""},
		{"one of two applied files declared it", onLink, []*model.State{static("p9c", "10.99.0.1/24"), model.NewState()}, ""},
		{"nothing known of the last file", onLink, nil, "address 10.99.0.1/24 on p9c"},
		{"the last file declared pool pw", onLink, []*model.State{static("p9c", "10.99.0.1/24", "pw")}, "address 10.99.0.1/24 on p9c"},
		{"declared static on another link", onLink, []*model.State{static("p9d", "10.99.0.1/24")}, "address 10.99.0.1/24 on p9c"},
		{"another prefix length", onLink, []*model.State{static("p9c", "10.99.0.1/25")}, "address 10.99.0.1/24 on p9c"},
		{"handed out by a pool since renamed", onLink, []*model.State{handedOut}, "address 10.99.0.1/24 on p9c"},
		{"an export route stays a trace", withRoute, []*model.State{static("p9c", "10.99.0.1/24")}, "route 10.99.0.0/26 table 119"},
	} {
		calls := 0
		applied := func() []*model.State { calls++; return tc.applied }
		err := lostRegistries(reg, want, func() (*model.State, error) { return tc.kernel, nil }, applied)
		switch {
		case tc.lost == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.lost != "" && (err == nil || !strings.Contains(err.Error(), tc.lost)):
			t.Errorf("%s: got %v, want the registry lost for %q", tc.name, err, tc.lost)
		case calls > 1:
			t.Errorf("%s: the applied configurations were read %d times", tc.name, calls)
		}
	}
	// No address trace: the applied configurations are not read at all.
	calls := 0
	if err := lostRegistries(reg, want, func() (*model.State, error) { return model.NewState(), nil }, func() []*model.State { calls++; return nil }); err != nil || calls != 0 {
		t.Errorf("no traces: %v, applied read %d times", err, calls)
	}
}
