package diff

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

func secret(b byte) model.Secret {
	var k [model.KeyLen]byte
	for i := range k {
		k[i] = b
	}
	return model.NewSecret(k)
}

func pfx(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func wgState(w *model.WireGuard, owned bool) *model.State {
	st := model.NewState()
	st.Links["kubespan"] = &model.Link{Name: "kubespan", Kind: model.KindWireGuard, MTU: 1420, Up: true, Owned: owned, WireGuard: w}
	return st
}

func TestWireGuardPeersPlan(t *testing.T) {
	priv, psk, oldPSK := secret(7), secret(9), secret(11)
	keyA, keyB, keyC, keyD := model.Key{1}, model.Key{2}, model.Key{3}, model.Key{4}
	want := &model.WireGuard{PrivateKey: priv, PublicKey: priv.PublicKey(), ListenPort: 51820, FwMark: 0x20, Peers: []model.WireGuardPeer{
		{PublicKey: keyA, AllowedIPs: pfx("10.0.0.1/32"), Keepalive: 25 * time.Second, PresharedKey: psk},
		{PublicKey: keyB, AllowedIPs: pfx("10.0.0.2/32", "10.244.2.0/24"), Keepalive: 25 * time.Second, Endpoint: netip.MustParseAddrPort("192.0.2.2:51820")},
		{PublicKey: keyC, AllowedIPs: pfx("10.0.0.3/32"), PresharedKey: psk},
	}}
	have := &model.WireGuard{PublicKey: priv.PublicKey(), ListenPort: 51820, FwMark: 0x20, Peers: []model.WireGuardPeer{
		{PublicKey: keyA, AllowedIPs: pfx("10.0.0.1/32"), Keepalive: 25 * time.Second, PresharedKey: psk, LastHandshake: time.Unix(1, 0)},
		{PublicKey: keyB, AllowedIPs: pfx("10.0.0.2/32"), Keepalive: 25 * time.Second, Endpoint: netip.MustParseAddrPort("192.0.2.9:51820")},
		{PublicKey: keyD, AllowedIPs: pfx("10.0.0.4/32"), PresharedKey: oldPSK},
	}}
	for _, owned := range []bool{true, false} {
		plan, err := Compute(wgState(want, true), wgState(have, owned))
		if !owned {
			if err == nil {
				t.Fatal("a foreign device with the same name is not a conflict")
			}
			for _, op := range plan.Ops {
				if op.Kind == KindWGPeer {
					t.Errorf("a foreign device's peer is planned: %+v", op)
				}
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		text := plan.String()
		wantText := "" +
			"~ wireguard peer " + keyB.String() + " on kubespan\n" +
			"    allowed-ips: 10.0.0.2/32 -> 10.0.0.2/32, 10.244.2.0/24\n" +
			"    endpoint: 192.0.2.9:51820 -> 192.0.2.2:51820\n" +
			"+ wireguard peer " + keyC.String() + " on kubespan (allowed-ips 10.0.0.3/32, preshared-key (set))\n"
		deleteLine := "- wireguard peer " + keyD.String() + " on kubespan (not in the configuration)\n"
		if text != deleteLine+wantText {
			t.Errorf("plan:\n%s\nwant:\n%s%s", text, deleteLine, wantText)
		}
		js, err := plan.JSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []model.Secret{priv, psk, oldPSK} {
			b := s.Bytes()
			enc := model.Key(b).String()
			if strings.Contains(text, enc) || strings.Contains(string(js), enc) {
				t.Errorf("a secret is in the plan:\n%s\n%s", text, js)
			}
		}
	}
}

func TestWireGuardDevicePlan(t *testing.T) {
	priv, other := secret(7), secret(8)
	want := &model.WireGuard{PrivateKey: priv, PublicKey: priv.PublicKey(), ListenPort: 51820, FwMark: 0x20}
	// A new link: the device op follows the link's create.
	plan, err := Compute(wgState(want, true), model.NewState())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Ops) != 2 || plan.Ops[0].Kind != KindLink || plan.Ops[1].Kind != KindWireGuard || plan.Ops[1].Action != Create {
		t.Fatalf("plan for a new device:\n%s", plan)
	}
	// A changed private key shows as its public key; the port and mark change in place.
	have := &model.WireGuard{PublicKey: other.PublicKey(), ListenPort: 1, FwMark: 0}
	plan, err = Compute(wgState(want, true), wgState(have, true))
	if err != nil {
		t.Fatal(err)
	}
	want1 := "~ wireguard kubespan\n    public-key: " + other.PublicKey().String() + " -> " + priv.PublicKey().String() + "\n    listen-port: 1 -> 51820\n    fwmark: none -> 0x20\n"
	if plan.String() != want1 {
		t.Errorf("plan:\n%s\nwant:\n%s", plan, want1)
	}
	// Equal: nothing.
	plan, _ = Compute(wgState(want, true), wgState(&model.WireGuard{PublicKey: priv.PublicKey(), ListenPort: 51820, FwMark: 0x20}, true))
	if !plan.Empty() {
		t.Errorf("plan for an equal device:\n%s", plan)
	}
}

// A device configured from empty plans its peers into a plan sized for
// them: the ops array is made once, not grown (ten thousand ops of a few
// hundred bytes each were copied about twice over), and a device that
// already holds them sizes nothing.
func TestColdPeersSizeThePlan(t *testing.T) {
	const n = 2000
	w := &model.WireGuard{PublicKey: model.Key{0xff}}
	for i := range n {
		w.Peers = append(w.Peers, model.WireGuardPeer{PublicKey: model.Key{byte(i >> 8), byte(i)}, AllowedIPs: pfx(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String() + "/32")})
	}
	empty := &model.WireGuard{PublicKey: w.PublicKey}
	plan, err := Compute(wgState(w, true), wgState(empty, true))
	if err != nil {
		t.Fatal(err)
	}
	if hint := sizeHint(wgState(w, true), wgState(empty, true)); hint < len(plan.Ops) {
		t.Errorf("size hint %d for a plan of %d ops", hint, len(plan.Ops))
	}
	if len(plan.Ops) != n {
		t.Errorf("%d ops, want %d", len(plan.Ops), n)
	}
	if hint := sizeHint(wgState(w, true), wgState(w, true)); hint != 0 {
		t.Errorf("size hint %d for a device that holds every peer", hint)
	}
}

// A duration in a peer's summary reads as durStr writes it.
func TestAppendDurIsDurStr(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 25 * time.Second, 59 * time.Second, time.Minute, 90 * time.Second, 1500 * time.Millisecond, 65535 * time.Second, -time.Second} {
		if got, want := string(appendDur([]byte("x "), d)), "x "+durStr(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
