package apply

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// A peer's patch carries what the op writes, read from the desired peer,
// and a batch of patches costs no allocation per peer: a device configured
// from empty patches ten thousand peers.
func TestPeerPatchesAllocateNothingPerPeer(t *testing.T) {
	p := &model.WireGuardPeer{PublicKey: model.Key{1}, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}, Keepalive: 25 * time.Second, Endpoint: netip.MustParseAddrPort("192.0.2.1:51820")}
	ops := make([]diff.Op, 100)
	for i := range ops {
		ops[i] = diff.Op{Action: diff.Create, Kind: diff.KindWGPeer, WireGuard: &diff.WireGuardOp{Link: "wg0", Peer: p, PeerFields: diff.PeerFields{AllowedIPs: true, Keepalive: true, Endpoint: true}}}
	}
	dst := make([]kernel.PeerPatch, len(ops))
	if n := testing.AllocsPerRun(10, func() { peerPatches(dst, ops) }); n > 1 {
		t.Errorf("the patches of 100 peers made %v allocations, want at most 1", n)
	}
	for _, pp := range dst {
		if pp.PublicKey != p.PublicKey || pp.Keepalive == nil || *pp.Keepalive != 25*time.Second || pp.Endpoint != p.Endpoint || !pp.ReplaceAllowedIPs || len(pp.AllowedIPs) != 1 || pp.UpdateOnly || pp.Remove || pp.PresharedKey != nil {
			t.Fatalf("patch %+v of peer %+v", pp, p)
		}
	}
	if pp := peerPatch(&diff.Op{Action: diff.Delete, Kind: diff.KindWGPeer, WireGuard: &diff.WireGuardOp{Link: "wg0", Peer: p}}); !pp.Remove || pp.Keepalive != nil || pp.AllowedIPs != nil {
		t.Errorf("delete patch %+v", pp)
	}
}
