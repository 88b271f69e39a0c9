package engine

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

// wgStates is desired and actual with one device of n peers, converged.
func wgStates(n int) (want, have *model.State) {
	want, have = model.NewState(), model.NewState()
	dw := &model.WireGuard{Rotation: model.DefaultRotation}
	hw := &model.WireGuard{}
	for i := range n {
		var k model.Key
		binary.BigEndian.PutUint32(k[:], uint32(i))
		ep := fmt.Sprintf("192.0.2.%d:%d", 1+i%250, 51820+i/250)
		ap := netip.MustParseAddrPort(ep)
		ips := []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)}
		dw.Peers = append(dw.Peers, model.WireGuardPeer{PublicKey: k, AllowedIPs: ips, Keepalive: 25 * time.Second, Endpoints: []string{ep}, EndpointCandidate: -1})
		hw.Peers = append(hw.Peers, model.WireGuardPeer{PublicKey: k, AllowedIPs: ips, Keepalive: 25 * time.Second, Endpoint: ap, LastHandshake: time.Unix(1700000000, 0), EndpointCandidate: -1})
	}
	want.Links["wg0"] = &model.Link{Name: "wg0", Kind: model.KindWireGuard, WireGuard: dw}
	have.Links["wg0"] = &model.Link{Name: "wg0", Kind: model.KindWireGuard, WireGuard: hw, Owned: true}
	return want, have
}

// BenchmarkDecide is the endpoint rotation of a pass over 10,000 converged
// peers, and the diff of their device.
func BenchmarkDecide(b *testing.B) {
	want, have := wgStates(10000)
	now := time.Unix(1700000010, 0)
	e := &Engine{}
	e.SetTracker(wgpeer.New(func() time.Time { return now }, nil))
	e.decide(want, have)
	b.ReportAllocs()
	for b.Loop() {
		d, _, _ := e.decide(want, have)
		if _, err := diff.ComputeWith(d, have, diff.Inputs{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitRotation is Apply's commit of 10,000 peers' first
// endpoints.
func BenchmarkCommitRotation(b *testing.B) {
	want, _ := wgStates(10000)
	empty := model.NewState()
	empty.Links["wg0"] = &model.Link{Name: "wg0", Kind: model.KindWireGuard, WireGuard: &model.WireGuard{}, Owned: true}
	now := time.Unix(1700000010, 0)
	b.ReportAllocs()
	for b.Loop() {
		e := &Engine{}
		e.SetTracker(wgpeer.New(func() time.Time { return now }, nil))
		d, pending, _ := e.decide(want, empty)
		plan, err := diff.ComputeWith(d, empty, diff.Inputs{})
		if err != nil {
			b.Fatal(err)
		}
		res := &apply.Result{}
		for i := range plan.Ops {
			res.Done = append(res.Done, &plan.Ops[i])
		}
		e.rot.pending = pending
		e.commitRotation(res)
	}
}

// A pass judges a device's peers at one reading of the clock, and the
// commit of their new endpoints at one more: not a reading per peer, which
// is a system call where the clock source has no vDSO (the qemu guest of
// make bench-wg-vm spent 1.6% of a configure of 5,000 peers in them).
func TestDecideReadsTheClockOncePerDevice(t *testing.T) {
	want, _ := wgStates(1000)
	empty := model.NewState()
	empty.Links["wg0"] = &model.Link{Name: "wg0", Kind: model.KindWireGuard, WireGuard: &model.WireGuard{}, Owned: true}
	reads := 0
	e := &Engine{}
	e.SetTracker(wgpeer.New(func() time.Time { reads++; return time.Unix(1700000010, 0) }, nil))
	d, pending, _ := e.decide(want, empty)
	if len(pending) != 1000 {
		t.Fatalf("%d endpoints to write, want 1000", len(pending))
	}
	if reads != 1 {
		t.Errorf("judging 1,000 peers read the clock %d times, want 1", reads)
	}
	plan, err := diff.ComputeWith(d, empty, diff.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	res := &apply.Result{}
	for i := range plan.Ops {
		res.Done = append(res.Done, &plan.Ops[i])
	}
	reads = 0
	e.rot.pending = pending
	e.commitRotation(res)
	if reads != 1 {
		t.Errorf("committing 1,000 endpoints read the clock %d times, want 1", reads)
	}
	for _, s := range e.PeerStates() {
		if s.State != wgpeer.Unknown {
			t.Fatalf("peer %s judged %v after its endpoint was written, want unknown (waiting for a first handshake)", s.PublicKey.Short(), s.State)
		}
	}
}
