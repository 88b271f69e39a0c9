package desired

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The S1 example validates once its key files exist (the paths are moved to
// a temporary directory).
func TestExampleKubeSpan(t *testing.T) {
	data, err := os.ReadFile("../../examples/kubespan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeKey(t, dir, "kubespan.key", testKey, 0o600)
	writeKey(t, dir, "node2.psk", testKey, 0o600)
	src := strings.ReplaceAll(string(data), "/etc/netreconcile/", dir+"/")
	cfg, err := Parse([]Source{{Name: filepath.Join(dir, "kubespan.yaml"), Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.State.Links["kubespan"].WireGuard
	if len(w.Peers) != 2 || w.FwMark != 0x20 || w.ListenPort != 51820 || cfg.State.Links["kubespan"].MTU != 1420 {
		t.Fatalf("example parsed as %+v", w)
	}
	tb := cfg.State.NFTables[0]
	for _, name := range []string{"kubespan_targets_ipv4", "kubespan_targets_ipv6"} {
		s := tb.Set(name)
		if s == nil || s.From == nil || s.From.WireGuard != "kubespan" || s.From.AllPeers || len(s.Elems) != 0 {
			t.Errorf("set %s: %+v", name, s)
		}
	}
}
