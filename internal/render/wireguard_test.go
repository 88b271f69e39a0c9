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
