package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkFinding200IPVlanKeepsItsIPv6MTUWhenItsParentMoves: an ipvlan
// takes its parent's MTU by a plain assignment (ipvlan_adjust_mtu), with no
// change event of its own, so the kernel leaves its net.ipv6.conf.LINK.mtu
// where it was when the parent's MTU moves: the plan must not count on a
// reset of the key there (a first fix of finding 200 did, and wrote
// nothing where the file's value was the parent's new MTU).
func TestWalkFinding200IPVlanKeepsItsIPv6MTUWhenItsParentMoves(t *testing.T) {
	requireModules(t, "dummy", "ipvlan")
	for _, c := range []struct{ name, before, after, want string }{{
		name:   "declared value equals the new MTU",
		before: "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1400}\n  i0: {kind: ipvlan, ipvlan: {parent: d0}, sysctls: {ipv6.mtu: \"1300\"}}\n",
		after:  "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1500}\n  i0: {kind: ipvlan, ipvlan: {parent: d0}, sysctls: {ipv6.mtu: \"1500\"}}\n",
		want:   "1500",
	}, {
		name:   "key dropped",
		before: "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1400}\n  i0: {kind: ipvlan, ipvlan: {parent: d0}, sysctls: {ipv6.mtu: \"1300\"}}\n",
		after:  "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1500}\n  i0: {kind: ipvlan, ipvlan: {parent: d0}}\n",
		want:   "",
	}, {
		name:   "parent lowered, declared value equals the new MTU",
		before: "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1500}\n  i0: {kind: ipvlan, ipvlan: {parent: d0}, sysctls: {ipv6.mtu: \"1300\"}}\n",
		after:  "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1400}\n  i0: {kind: ipvlan, ipvlan: {parent: d0}, sysctls: {ipv6.mtu: \"1400\"}}\n",
		want:   "1400",
	}} {
		t.Run(c.name, func(t *testing.T) {
			ns := newNetNS(t, "")
			dir, state := t.TempDir(), t.TempDir()
			file := filepath.Join(dir, "m.yaml")
			if err := os.WriteFile(file, []byte(c.before), 0o644); err != nil {
				t.Fatal(err)
			}
			runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
			if err := os.WriteFile(file, []byte(c.after), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := ns.Exec("", netreconcileBin(t), "apply", "-c", file, "--state-dir", state)
			t.Logf("apply: err=%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			t.Logf("i0: %s ipv6 mtu %s", ns.IP(t, "-o", "link", "show", "i0"), strings.TrimSpace(ns.Run(t, "cat", "/proc/sys/net/ipv6/conf/i0/mtu")))
			dout, derr, dexit := ns.Exec("", netreconcileBin(t), "diff", "-c", file, "--state-dir", state)
			t.Logf("diff: err=%v\nstdout:\n%s\nstderr:\n%s", dexit, dout, derr)
			if err != nil || dexit != nil {
				t.Errorf("apply or diff failed")
			}
			if c.want != "" {
				if got := strings.TrimSpace(ns.Run(t, "cat", "/proc/sys/net/ipv6/conf/i0/mtu")); got != c.want {
					t.Errorf("ipv6 mtu of i0 %s, want %s", got, c.want)
				}
			}
		})
	}
}

// TestWalkFinding200UpperIPv6MTUWhenItsLowerMTUWaits: the MTU write of a
// lower link waits (someone else's macvlan on it would move), and the
// upper link, which keeps its MTU, must have its declared
// net.ipv6.conf.LINK.mtu written: no MTU change resets it (a first fix of
// finding 200 took the lower's declared MTU for the upper's, counted on a
// reset, and wrote nothing while the conflict lasted).
func TestWalkFinding200UpperIPv6MTUWhenItsLowerMTUWaits(t *testing.T) {
	requireModules(t, "macvlan")
	before := "version: 1\nlinks:\n  b0: {kind: bridge, mtu: 1500}\n  m0: {kind: macvlan, macvlan: {parent: b0, mode: bridge}, mtu: 1500, sysctls: {ipv6.mtu: \"1300\"}}\n"
	after := "version: 1\nlinks:\n  b0: {kind: bridge, mtu: 1400}\n  m0: {kind: macvlan, macvlan: {parent: b0, mode: bridge}, mtu: 1500, sysctls: {ipv6.mtu: \"1400\"}}\n"
	ns := newNetNS(t, "")
	out, errOut, err := applyAround(t, ns, before, after, "link", "add", "fm", "link", "b0", "type", "macvlan", "mode", "bridge")
	t.Logf("apply (a conflict is expected): err=%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	if got := strings.TrimSpace(ns.Run(t, "cat", "/proc/sys/net/ipv6/conf/m0/mtu")); got != "1400" {
		t.Errorf("ipv6 mtu of m0 %s, want 1400 (the file's; m0 stays at 1500)", got)
	}
}
