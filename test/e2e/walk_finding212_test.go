package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkFinding212RaiseToIPv6ThatWaitsLeavesTheLinkOut: d0 is at 1200,
// below IPv6's minimum, so the kernel holds it without IPv6. The file
// raises it to 1500 and gives it IPv6, but someone else's ipvlan on it
// would move with it, so the raise waits (a conflict). The IPv6 address and
// route were still written, and the kernel refused them: the apply
// failed where it should only have reported the conflict. The link now
// waits whole, with what needs it.
func TestWalkFinding212RaiseToIPv6ThatWaitsLeavesTheLinkOut(t *testing.T) {
	requireModules(t, "dummy", "ipvlan")
	before := "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1200}\n"
	after := "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1500, addresses: [fd00::1/64, 10.0.0.1/24]}\nroutes:\n  - {to: \"fd00:1::/64\", dev: d0}\n"
	ns := newNetNS(t, "")
	out, errOut, err := applyAround(t, ns, before, after, "link", "add", "fi", "link", "d0", "type", "ipvlan", "mode", "l2")
	t.Logf("apply (a conflict is expected): err=%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	if err == nil || !strings.Contains(errOut, "link d0 keeps its mtu 1200, not 1500") {
		t.Errorf("apply: want d0's raise reported as waiting for fi")
	}
	if strings.Contains(errOut, "operations failed") {
		t.Errorf("apply wrote what the kernel refused")
	}
	if got := ns.IP(t, "-o", "addr", "show", "dev", "d0"); strings.Contains(got, "inet") {
		t.Errorf("d0 has addresses, want none while it waits:\n%s", got)
	}
	if got := ns.IP(t, "-o", "link", "show", "d0"); !strings.Contains(got, "mtu 1200") {
		t.Errorf("d0 moved: %s", got)
	}
}

// applyAround applies before in ns, runs ip with foreign (someone else's
// change), and applies after over the same state directory, returning
// the second apply's output and error.
func applyAround(t *testing.T, ns *NetNS, before, after string, foreign ...string) (string, string, error) {
	t.Helper()
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(file, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	ns.IP(t, foreign...)
	if err := os.WriteFile(file, []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}
	return ns.Exec("", netreconcileBin(t), "apply", "-c", file, "--state-dir", state)
}
