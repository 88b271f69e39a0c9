package kerneltest_test

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// rule is a rule as the engine hands it to the kernel: compiled.
func rule(text string) *model.NftRule {
	return &model.NftRule{Text: text, Compiled: &model.NftCompiled{Exprs: []byte(text), Fingerprint: "fp " + text}}
}

// A batch is committed whole or not at all: a rule that jumps to a chain
// the batch never made refuses the table it created too.
func TestNFTBatchIsAtomic(t *testing.T) {
	k := kerneltest.New()
	key := model.NftTableKey{Family: "inet", Name: "t"}
	in := &model.NftChain{Name: "in", Type: "filter", Hook: "input", Policy: "accept"}
	batch := []model.NftOp{
		{Op: model.NftAddTable, Table: key},
		{Op: model.NftAddChain, Table: key, Chain: in},
		{Op: model.NftAddRule, Table: key, Chain: in, Rule: rule("jump helper")},
	}
	if err := k.NFTApply(batch); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("got %v, want ENOENT for the missing chain", err)
	}
	if got := k.Dump(); got != "link lo device mtu 65536 up\n" {
		t.Errorf("a refused batch changed the kernel:\n%s", got)
	}
	batch[2].Rule = rule("accept")
	k.FailOnce(kerneltest.CallNFTApply, key.String(), syscall.ENOBUFS)
	if err := k.NFTApply(batch); !errors.Is(err, syscall.ENOBUFS) {
		t.Fatalf("got %v, want the injected ENOBUFS", err)
	}
	if err := k.NFTApply(batch); err != nil {
		t.Fatal(err)
	}
	want := "link lo device mtu 65536 up\n" +
		"nft table inet t handle 1\n" +
		"nft chain inet t in { type filter hook input priority 0; policy accept }\n" +
		"nft rule inet t in handle 1: accept\n"
	if got := k.Dump(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A chain with rules cannot go alone.
	if err := k.NFTApply([]model.NftOp{{Op: model.NftDelChain, Table: key, Chain: in}}); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("got %v, want EBUSY", err)
	}
}

// Peers are patched in order; a refused peer ends the call, and the peers
// before it stay changed.
func TestWireGuardPeerRefused(t *testing.T) {
	k := kerneltest.New()
	if err := k.AddLink(&model.Link{Name: "wg0", Kind: model.KindWireGuard}); err != nil {
		t.Fatal(err)
	}
	a, b := model.Key{1}, model.Key{2}
	ip := netip.MustParsePrefix("10.0.0.0/24")
	port := 51820
	k.FailOnce(kerneltest.CallConfigureWireGuardPeer, b.String(), syscall.EINVAL)
	err := k.ConfigureWireGuard("wg0", &kernel.WireGuardConfig{ListenPort: &port, Peers: []kernel.PeerPatch{
		{PublicKey: a, ReplaceAllowedIPs: true, AllowedIPs: []netip.Prefix{ip}},
		{PublicKey: b, ReplaceAllowedIPs: true, AllowedIPs: []netip.Prefix{ip}},
	}})
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("got %v, want the injected EINVAL", err)
	}
	w, err := k.WireGuardDevice("wg0")
	if err != nil {
		t.Fatal(err)
	}
	if w.ListenPort != port || len(w.Peers) != 1 || w.Peers[0].PublicKey != a {
		t.Errorf("got %+v, want port %d and peer a alone", w, port)
	}
	// Again without the failure: the allowed IP moves to b.
	err = k.ConfigureWireGuard("wg0", &kernel.WireGuardConfig{Peers: []kernel.PeerPatch{{PublicKey: b, AllowedIPs: []netip.Prefix{ip}}}})
	if err != nil {
		t.Fatal(err)
	}
	w, _ = k.WireGuardDevice("wg0")
	if len(w.Peers) != 2 || len(w.Peers[0].AllowedIPs) != 0 || len(w.Peers[1].AllowedIPs) != 1 {
		t.Errorf("the allowed IP did not move to b: %+v", w.Peers)
	}
	if got := k.Fired(); len(got) != 1 {
		t.Errorf("fired %q, want one failure", got)
	}
}

// Without the module a wireguard link is unsupported; wireguard-go makes a
// tun link whose device is userspace; without either, ErrUnsupported.
func TestWireGuardUnsupported(t *testing.T) {
	k := kerneltest.New()
	k.NoWireGuardModule = true
	if err := k.AddLink(&model.Link{Name: "wg0", Kind: model.KindWireGuard}); !errors.Is(err, kernel.ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
	if err := k.StartUserspaceWireGuard("wg0"); err != nil {
		t.Fatal(err)
	}
	if w, err := k.WireGuardDevice("wg0"); err != nil || w.Implementation != kernel.WireGuardUserspace {
		t.Errorf("got %+v, %v; want a userspace device", w, err)
	}
	k.NoUserspaceWireGuard = true
	if err := k.StartUserspaceWireGuard("wg1"); !errors.Is(err, kernel.ErrUnsupported) {
		t.Errorf("got %v, want ErrUnsupported", err)
	}
}

// Failures fire once or always, on one object or any.
func TestFailureInjection(t *testing.T) {
	k := kerneltest.New()
	k.FailOnce(kerneltest.CallLinks, "", syscall.EINTR)
	if _, err := k.Links(); !errors.Is(err, syscall.EINTR) {
		t.Errorf("got %v, want EINTR", err)
	}
	if _, err := k.Links(); err != nil {
		t.Errorf("a failure planned once fired twice: %v", err)
	}
	k.FailAlways(kerneltest.CallSetLinkUp, syscall.ENODEV)
	for range 2 {
		if err := k.SetLinkUp("lo", true); !errors.Is(err, syscall.ENODEV) {
			t.Errorf("got %v, want ENODEV", err)
		}
	}
	k.FailAlways(kerneltest.CallSetLinkUp, nil)
	if err := k.SetLinkUp("lo", true); err != nil {
		t.Error(err)
	}
}
