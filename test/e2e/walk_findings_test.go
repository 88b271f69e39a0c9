package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// Finding 33 (docs/walk-findings.md): a GUE FoU port is opened without
// FOU_ATTR_IPPROTO. Kernels that refuse an ipproto of 0 (the guest's 6.1.192
// among them) answered the library's request with ERANGE.
func TestWalkFindingFouGUE(t *testing.T) {
	requireModules(t, "fou", "fou6")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "gue.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nfou:\n  - {port: 5556, gue: true}\n  - {port: 5557, family: ipv6, gue: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	mustContain(t, "ip fou show", ns.IP(t, "fou", "show"), "port 5556 gue", "port 5557 gue -6")
	// A second diff exits 0 (runNetreconcile fails the test otherwise).
	runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
}
