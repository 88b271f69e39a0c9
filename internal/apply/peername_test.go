package apply

import (
	"context"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// Two peers the kernel refuses are told apart in the error, by a prefix of
// their public keys; a whole key would be hidden by package redact and
// both would read "create wireguard peer [value hidden...]" (issue 32).
func TestFailedPeersNamedByKeyPrefix(t *testing.T) {
	k := kerneltest.New()
	k.PutLink(&model.Link{Name: "wg0", Kind: model.KindWireGuard, MTU: 1420, Owned: true})
	k.PutWireGuard("wg0", &model.WireGuard{})
	var ops []diff.Op
	var prefixes []string
	for i, b := range []byte{0x11, 0xee} {
		p := &model.WireGuardPeer{PublicKey: model.Key{b, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
			AllowedIPs: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 32)}}
		ops = append(ops, diff.Op{Action: diff.Create, Kind: diff.KindWGPeer, ID: p.PublicKey.String() + " on wg0",
			WireGuard: &diff.WireGuardOp{Link: "wg0", Peer: p, PeerFields: diff.PeerFields{AllowedIPs: true}}})
		prefixes = append(prefixes, p.PublicKey.String()[:8]+"…")
		k.FailOn(kerneltest.CallConfigureWireGuardPeer, p.PublicKey.String(), syscall.EINVAL)
	}
	res := Apply(context.Background(), k, &diff.Plan{Ops: ops, Protocol: model.DefaultProtocol}, Hooks{})
	if len(res.Failed) != 2 {
		t.Fatalf("%d failed, want 2", len(res.Failed))
	}
	msg := redact.String(res.Err().Error())
	for _, p := range prefixes {
		if !strings.Contains(msg, "create wireguard peer "+p+" on wg0: ") {
			t.Errorf("no %q in the error as printed:\n%s", p, msg)
		}
	}
	if prefixes[0] == prefixes[1] {
		t.Fatal("the test's keys share their prefix")
	}
}
