package diff

import (
	"net/netip"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// BenchmarkComputeRoutesNoop diffs 100k routes against the same 100k in
// the kernel: the diff half of a no-op reconcile.
func BenchmarkComputeRoutesNoop(b *testing.B) {
	const n = 100000
	d := &model.State{Protocol: model.DefaultProtocol, Links: map[string]*model.Link{"bench0": {Name: "bench0", Kind: model.KindDevice}}}
	a := &model.State{Protocol: model.DefaultProtocol, Links: map[string]*model.Link{"bench0": {Name: "bench0", Kind: model.KindDevice}}}
	for i := 0; i < n; i++ {
		v := uint32(1<<16+i) << 8
		r := model.Route{Table: 100, Dst: netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24), Type: model.RouteUnicast, Dev: "bench0", Scope: model.ScopeLink}
		d.Routes = append(d.Routes, r)
		r.Protocol = model.DefaultProtocol
		a.Routes = append(a.Routes, r)
	}
	for b.Loop() {
		p, err := Compute(d, a)
		if err != nil || !p.Empty() {
			b.Fatalf("%v %v", p, err)
		}
	}
}
