package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// State the kernel changes by itself (docs/config.md, "State the kernel
// changes by itself"): each rule there, on the real kernel.

// 76. A set with a default timeout that declares elements: the kernel
// expires them, diff then exits 2 and a daemon adds them back for ever.
// Refused now, with the reason, before anything is touched.
// Walk finding 76 (issue 30's report).
func TestWalkFinding76TimeoutSetWithDeclaredElementsRefused(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ file, want string }{
		{"version: 1\nnftables:\n  inet t:\n    sets:\n      s: {type: ipv4_addr, timeout: 30s, elements: [10.0.0.1]}\n",
			"f.yaml:5:52: nftables.inet t.sets.s.elements: a set with a default timeout cannot declare elements"},
		{"version: 1\nnftables:\n  inet t:\n    sets:\n      s: {type: ipv4_addr, timeout: 30s, elements-file: e.txt}\n",
			"f.yaml:5:57: nftables.inet t.sets.s.elements-file: a set with a default timeout cannot declare elements"},
	} {
		nettest.WriteFile(t, e.dir, "e.txt", "10.0.0.2\n")
		f := nettest.WriteFile(t, e.dir, "f.yaml", tc.file)
		r := e.cli("apply", "-c", f)
		got := strings.ReplaceAll(r.Stderr, f, "f.yaml")
		if r.Code == 0 || !strings.Contains(got, tc.want) {
			t.Errorf("apply of\n%s: exit %d, want an error containing %q:\n%s%s", tc.file, r.Code, tc.want, r.Stdout, got)
		}
	}
	if out, _ := exec.Command("ip", "netns", "exec", e.ns, "nft", "list", "ruleset").CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("a refused file touched the kernel:\n%s", out)
	}
}
