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

// The comment that a peer has a preshared key is written on that peer's
// line, never under the link's next key (issue 32: it sat under
// "addresses:").
func TestRenderPresharedKeyCommentOnItsPeer(t *testing.T) {
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
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, "preshared") {
			continue
		}
		n++
		if !strings.Contains(line, "- public-key: "+withPSK+" # preshared-key-file: a preshared key is set") {
			t.Errorf("comment not on its peer's line: %q\n%s", line, out)
		}
	}
	if n != 1 {
		t.Errorf("%d preshared-key comments, want 1:\n%s", n, out)
	}
	// What show prints is a file that reads back to the same peers.
	if _, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "shown.yaml"), Data: out}}); err != nil &&
		!strings.Contains(err.Error(), "private-key-file") {
		t.Errorf("shown file: %v", err)
	}
}
