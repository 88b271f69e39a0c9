package integration

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// An owned table set dormant by hand (every hook of it off) is repaired:
// diff shows the flag, apply clears it in place, and a second diff is empty.
func TestNftDormantTableRepaired(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("a.yaml", "version: 1\nnftables:\n  inet t1:\n    chains:\n      c: {type: filter, hook: input, priority: filter, rules: [counter]}\n")
	e.apply(f)
	nettest.InNS(t, e.ns, "nft", "add", "table", "inet", "t1", "{ flags dormant; }")
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "t1"); !strings.Contains(out, "dormant") {
		t.Fatalf("the table is not dormant after nft set it:\n%s", out)
	}
	r := e.cli("diff", "-c", f)
	if r.Code != 2 || !strings.Contains(r.Stdout, "dormant") {
		t.Errorf("diff of the dormant table: exit %d, want 2 with the flag\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.apply(f)
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "t1"); strings.Contains(out, "dormant") || !strings.Contains(out, "chain c") {
		t.Errorf("apply did not wake the table in place:\n%s", out)
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("second diff: exit %d, want 0\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
