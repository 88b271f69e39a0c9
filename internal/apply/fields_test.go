package apply

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Each attribute an op names is written, and nothing else: a peer update
// patches only its fields, and a link update makes one write per field.
func TestFieldsAreWritten(t *testing.T) {
	p := &model.WireGuardPeer{PublicKey: model.Key{1}, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")},
		Keepalive: 25 * time.Second, Endpoint: netip.MustParseAddrPort("192.0.2.1:51820")}
	for _, c := range []struct {
		f     diff.PeerFields
		check func(kernel.PeerPatch) bool
	}{
		{diff.PeerFields{AllowedIPs: true}, func(pp kernel.PeerPatch) bool { return pp.ReplaceAllowedIPs && len(pp.AllowedIPs) == 1 }},
		{diff.PeerFields{Keepalive: true}, func(pp kernel.PeerPatch) bool { return pp.Keepalive != nil && *pp.Keepalive == p.Keepalive }},
		{diff.PeerFields{PresharedKey: true}, func(pp kernel.PeerPatch) bool { return pp.PresharedKey != nil }},
		{diff.PeerFields{Endpoint: true}, func(pp kernel.PeerPatch) bool { return pp.Endpoint == p.Endpoint }},
	} {
		pp := peerPatch(&diff.Op{Action: diff.Update, Kind: diff.KindWGPeer, WireGuard: &diff.WireGuardOp{Link: "wg0", Peer: p, PeerFields: c.f}})
		if !c.check(pp) || !pp.UpdateOnly {
			t.Errorf("%+v: patch %+v", c.f, pp)
		}
		n := 0
		for _, set := range []bool{pp.ReplaceAllowedIPs, pp.Keepalive != nil, pp.PresharedKey != nil, pp.Endpoint.IsValid(), pp.Remove} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%+v writes %d attributes: %+v", c.f, n, pp)
		}
	}

	k := kerneltest.New()
	k.PutLink(&model.Link{Name: "br0", Kind: model.KindBridge, MTU: 1500, Owned: true})
	k.PutLink(&model.Link{Name: "d0", Kind: model.KindDummy, MTU: 1500, Owned: true})
	want := &model.Link{Name: "d0", Kind: model.KindDummy, MTU: 1400, Master: "br0", Alias: "x", Up: true}
	f := diff.LinkFields{MTU: true, Master: true, Alias: true, State: true}
	if err := runLink(k, diff.Op{Action: diff.Update, Kind: diff.KindLink, ID: "d0", Link: want, LinkFields: f}); err != nil {
		t.Fatal(err)
	}
	if got := len(k.Log); got != 4 {
		t.Errorf("%d writes for 4 fields: %v", got, k.Log)
	}
}
