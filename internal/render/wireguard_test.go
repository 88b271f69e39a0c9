package render

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
)

func TestRenderWireGuardHasNoSecret(t *testing.T) {
	dir := t.TempDir()
	testKey := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	const peerKey = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
	key := filepath.Join(dir, "k")
	if err := os.WriteFile(key, []byte(testKey), 0o600); err != nil {
		t.Fatal(err)
	}
	src := "version: 1\nlinks:\n  kubespan:\n    kind: wireguard\n    mtu: 1420\n    wireguard:\n" +
		"      private-key-file: " + key + "\n      peers:\n        - {public-key: " + peerKey + ", preshared-key-file: " + key + ", allowed-ips: [10.0.0.2/32]}\n"
	cfg, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "netreconcile.yaml"), Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := State(cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, testKey) || !strings.Contains(s, peerKey) || !strings.Contains(s, cfg.State.Links["kubespan"].WireGuard.PublicKey.String()) {
		t.Fatalf("render:\n%s", s)
	}
}

// show keeps what the kernel cannot give back: the device's private key
// (it prints the public key, which keeps the key the device holds) and a
// peer's preshared key (keep-preshared-key), so that its output loads and
// reads back to the same device and peers. It once printed a comment for
// each (issue 32: the preshared key's sat under "addresses:"), and its
// output did not load.
func TestRenderKeepsTheKeysItCannotRead(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if err := os.WriteFile(key, []byte(base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))), 0o600); err != nil {
		t.Fatal(err)
	}
	const withPSK, without = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqpDgg="
	src := "version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    addresses: [10.0.0.1/24]\n    wireguard:\n" +
		"      private-key-file: " + key + "\n      peers:\n" +
		"        - {public-key: " + withPSK + ", preshared-key-file: " + key + ", allowed-ips: [10.0.0.2/32]}\n" +
		"        - {public-key: " + without + ", allowed-ips: [10.0.0.3/32]}\n"
	cfg, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "netreconcile.yaml"), Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := State(cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "keep-preshared-key: true"); n != 1 {
		t.Errorf("%d peers keep their preshared key, want 1:\n%s", n, out)
	}
	shown, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "shown.yaml"), Data: out}})
	if err != nil {
		t.Fatalf("shown file: %v\n%s", err, out)
	}
	w, want := shown.State.Links["wg0"].WireGuard, cfg.State.Links["wg0"].WireGuard
	if !w.KeepPrivateKey || w.PrivateKey.IsSet() || w.PublicKey != want.PublicKey {
		t.Errorf("shown device: keep %v, private key set %v, public key %s; want kept, none, %s", w.KeepPrivateKey, w.PrivateKey.IsSet(), w.PublicKey, want.PublicKey)
	}
	for _, p := range w.Peers {
		if p.KeepPresharedKey != (p.PublicKey.String() == withPSK) {
			t.Errorf("shown peer %s: keep-preshared-key %v", p.PublicKey, p.KeepPresharedKey)
		}
	}
}
