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

// A foreign link with a declared name is a conflict, and whatever needs it
// is left out with it, in diff and in apply: its addresses, routes through
// it, a link enslaved to it.
func TestForeignLinkLeavesOutDependents(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "fbr", "type", "bridge")
	f := e.file("a.yaml", `version: 1
links:
  fbr: {kind: bridge, addresses: [10.41.0.1/24]}
  p0: {kind: veth, veth: {peer: p1}, master: fbr}
  p1: {kind: veth, veth: {peer: p0}}
  ok0: {kind: bridge, addresses: [10.42.0.1/24]}
routes:
  - {to: 10.43.0.0/16, dev: fbr}
  - {to: 10.44.0.0/16, dev: ok0}
`)
	r := e.cli("diff", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "link fbr exists and netreconcile did not create it") {
		t.Errorf("diff: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, s := range []string{"fbr", "p0", "p1", "10.41.", "10.43."} {
		if strings.Contains(r.Stdout, s) {
			t.Errorf("diff plans %s, which needs the conflicting link:\n%s", s, r.Stdout)
		}
	}
	if !strings.Contains(r.Stdout, "+ address 10.42.0.1/24 dev ok0") || !strings.Contains(r.Stdout, "+ route 10.44.0.0/16") {
		t.Errorf("diff leaves out what does not need the conflict:\n%s", r.Stdout)
	}
	if r := e.cli("apply", "-c", f); r.Code != 1 {
		t.Errorf("apply: exit %d, want 1\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("-o", "addr", "show", "dev", "fbr"); strings.Contains(out, "10.41.") {
		t.Errorf("an address was added to the foreign link:\n%s", out)
	}
	if out := e.ip("-o", "link", "show"); strings.Contains(out, "p0") || !strings.Contains(out, "ok0") {
		t.Errorf("links after apply:\n%s", out)
	}
	if out := e.ip("route", "show", "10.43.0.0/16"); out != "" {
		t.Errorf("a route through the foreign link was added: %s", out)
	}
}
