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

// Finding G2 (docs/walk-findings.md): a flow-based (external) ip6tnl was
// created without its protocol (the library sends IFLA_IPTUN_COLLECT_METADATA
// alone), so the kernel made each one ip6ip6 and a file saying any or ipip6
// replaced the tunnel on every apply. The kernel refuses a change to a
// collect_md tunnel: the mode must be right at the create.
func TestWalkFindingExternalIP6TnlMode(t *testing.T) {
	requireModules(t, "ip6_tunnel")
	for mode, want := range map[string]string{"any": "any", "ipip6": "ipip6", "ip6ip6": "ip6ip6", "": "ip6ip6"} {
		t.Run("mode="+mode, func(t *testing.T) {
			ns := newNetNS(t, "")
			dir, state := t.TempDir(), t.TempDir()
			file := filepath.Join(dir, "t.yaml")
			m := ""
			if mode != "" {
				m = "mode: " + mode + ", "
			}
			cfg := "version: 1\nlinks:\n  t6: {kind: ip6tnl, ip6tnl: {" + m + "external: true}}\n"
			if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
			// iproute2 prints the protocol of an ip6tnl as "ipip6", "ip6ip6" or "any".
			mustContain(t, "ip -d -j link show t6", ns.IP(t, "-d", "-j", "link", "show", "t6"), `"external":true`, `"proto":"`+want+`"`)
			// A second diff exits 0 (runNetreconcile fails the test otherwise).
			runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		})
	}
}

// Finding 45 (docs/walk-findings.md): a link whose ipvlan the file drops and
// which joins a bridge in the same apply met EBUSY: the join ran before the
// stale ipvlan's delete, and a device carries a bridge port or ipvlans, not
// both.
func TestWalkFindingIPVlanGoneBeforeParentJoins(t *testing.T) {
	requireModules(t, "dummy", "ipvlan")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "j.yaml")
	for i, cfg := range []string{
		"version: 1\nlinks:\n  b0: {kind: bridge}\n  d1: {kind: dummy}\n  i1: {kind: ipvlan, ipvlan: {parent: d1, mode: l3s}}\n",
		"version: 1\nlinks:\n  b0: {kind: bridge}\n  d1: {kind: dummy, master: b0}\n",
	} {
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		if i == 1 {
			mustContain(t, "ip link show d1", ns.IP(t, "link", "show", "d1"), "master b0")
		}
	}
}
