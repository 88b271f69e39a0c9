package integration

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nettest"
)

// A foreign nftables table with a declared family and name is a conflict:
// its chains are not deleted, and diff says so. With adopt: true it is
// taken over whole.
func TestForeignNftTableConflict(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	nettest.InNS(t, e.ns, "nft", "add", "table", "inet", "ft")
	nettest.InNS(t, e.ns, "nft", "add", "chain", "inet", "ft", "theirs")
	f := e.file("a.yaml", "version: 1\nnftables:\n  inet ft:\n    chains:\n      c: {rules: [counter]}\n")
	r := e.cli("diff", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "nftables table inet ft exists and netreconcile did not create it") || strings.Contains(r.Stdout, "nft") {
		t.Errorf("diff: exit %d, want 1 with the conflict and no nft op\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = e.cli("apply", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "nftables table inet ft exists") {
		t.Errorf("apply: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "ft"); !strings.Contains(out, "chain theirs") || strings.Contains(out, "chain c ") {
		t.Errorf("the foreign table was changed:\n%s", out)
	}
	// The file says it knows: taken over whole, then converged.
	f = e.file("b.yaml", "version: 1\nnftables:\n  inet ft:\n    adopt: true\n    chains:\n      c: {rules: [counter]}\n")
	e.apply(f)
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "ft"); strings.Contains(out, "chain theirs") || !strings.Contains(out, "chain c {") {
		t.Errorf("the adopted table:\n%s", out)
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("diff after adopting: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// Owned now: dropping adopt does not make it a conflict.
	if r := e.cli("diff", "-c", e.file("c.yaml", "version: 1\nnftables:\n  inet ft:\n    chains:\n      c: {rules: [counter]}\n")); r.Code != 0 {
		t.Errorf("diff of the owned table without adopt: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
