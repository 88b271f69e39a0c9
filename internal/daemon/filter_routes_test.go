package daemon

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The declared routes' sorted list answers as a set of (table, masked
// destination) would: random files of IPv4 and IPv6 routes, some with host
// bits set, some sharing a destination at another metric, asked about
// their own keys and others.
func TestDeclaredRoutesAnswerAsASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 32))
	prefix := func() netip.Prefix {
		if rng.IntN(3) == 0 {
			a := [16]byte{0x20, 0x01, 0x0d, 0xb8, byte(rng.IntN(4)), byte(rng.IntN(4))}
			a[15] = byte(rng.IntN(2))
			return netip.PrefixFrom(netip.AddrFrom16(a), []int{0, 32, 48, 64, 128}[rng.IntN(5)])
		}
		a := [4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(4)), byte(rng.IntN(2))}
		return netip.PrefixFrom(netip.AddrFrom4(a), []int{0, 8, 16, 24, 32}[rng.IntN(5)])
	}
	for round := range 200 {
		want := model.NewState()
		want.Protocol = model.DefaultProtocol
		oracle := map[[2]string]bool{}
		for range rng.IntN(40) {
			r := model.Route{Table: uint32(100 + rng.IntN(3)), Dst: prefix(), Metric: uint32(rng.IntN(2))}
			want.Routes = append(want.Routes, r)
			oracle[[2]string{model.TableName(int(r.Table)), r.Dst.Masked().String()}] = true
		}
		model.SortRoutes(want.Routes)
		d := newDeclaredRoutes(want)
		if len(d.keys) != len(oracle) {
			t.Fatalf("round %d: %d keys for %d (table, destination)s", round, len(d.keys), len(oracle))
		}
		for range 200 {
			table, dst := uint32(100+rng.IntN(4)), prefix()
			if len(want.Routes) > 0 && rng.IntN(2) == 0 {
				r := want.Routes[rng.IntN(len(want.Routes))]
				table, dst = r.Table, r.Dst
			}
			if got, w := d.has(newRouteDst(table, dst)), oracle[[2]string{model.TableName(int(table)), dst.Masked().String()}]; got != w {
				t.Fatalf("round %d: table %d %s: has %v, want %v", round, table, dst, got, w)
			}
		}
	}
}
