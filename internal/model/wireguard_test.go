package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSecretNeverPrints(t *testing.T) {
	var b [KeyLen]byte
	copy(b[:], "0123456789abcdef0123456789abcdef")
	s := NewSecret(b)
	p := WireGuardPeer{PresharedKey: s}
	j, err := json.Marshal(struct{ K Secret }{s})
	if err != nil {
		t.Fatal(err)
	}
	outs := []string{fmt.Sprint(s), fmt.Sprintf("%v %s %x %X %q %#v %+v %d", s, s, s, s, s, s, p, s), string(j), fmt.Sprintf("%#v", p)}
	for _, o := range outs {
		if strings.Contains(o, "0123456789") || strings.Contains(o, "MDEyMzQ1Njc4") || strings.Contains(o, "3031323334") {
			t.Errorf("secret printed: %s", o)
		}
	}
	if !strings.Contains(outs[0], SecretMarker) {
		t.Errorf("marker missing: %s", outs[0])
	}
}

// SortPeers orders by key, whatever the order given, keeps every peer
// whole, and leaves a sorted list as it is.
func TestSortPeers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 10, 1000} {
		ps := make([]WireGuardPeer, n)
		for i := range ps {
			for j := range ps[i].PublicKey {
				ps[i].PublicKey[j] = byte(r.IntN(4)) // duplicates' first bytes
			}
			ps[i].Keepalive = time.Duration(i)
			ps[i].Origin = fmt.Sprint(ps[i].PublicKey)
		}
		want := slices.Clone(ps)
		slices.SortStableFunc(want, func(a, b WireGuardPeer) int { return bytes.Compare(a.PublicKey[:], b.PublicKey[:]) })
		SortPeers(ps)
		for i := range ps {
			if ps[i].PublicKey != want[i].PublicKey || ps[i].Keepalive != want[i].Keepalive || ps[i].Origin != fmt.Sprint(ps[i].PublicKey) {
				t.Fatalf("n=%d: peer %d = %v %v, want %v %v", n, i, ps[i].PublicKey, ps[i].Keepalive, want[i].PublicKey, want[i].Keepalive)
			}
		}
		SortPeers(ps)
		for i := range ps {
			if ps[i].Keepalive != want[i].Keepalive {
				t.Fatalf("n=%d: sorting a sorted list moved peer %d", n, i)
			}
		}
	}
}
