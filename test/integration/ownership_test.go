package integration

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// Changing a veth's peer recreates the pair: the new peer is marked and
// configured, the old one goes with the old pair, and the next apply is empty.
func TestVethPeerChange(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  pa: {kind: veth, veth: {peer: pb}}\n  pb: {kind: veth, veth: {peer: pa}}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  pb: {kind: veth, veth: {peer: pc}}\n  pc: {kind: veth, veth: {peer: pb}}\n")
	e.apply(f)
	links := e.ip("-o", "link", "show")
	if strings.Contains(links, " pa@") || !strings.Contains(links, " pc@pb") {
		t.Errorf("after the peer change:\n%s", links)
	}
	if out := e.ip("-d", "link", "show", "pc"); !strings.Contains(out, "alias netreconcile") || !strings.Contains(out, ",UP") {
		t.Errorf("the new peer end is not marked and up:\n%s", out)
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("diff after the peer change: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A link netreconcile created but the file dropped is not deleted while a
// foreign link sits on it (the kernel would delete that one too).
func TestForeignChildKeepsItsLowerLink(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  up1: {kind: veth, veth: {peer: up2}}\n"))
	e.ip("link", "add", "fvx", "type", "vxlan", "id", "7", "dstport", "4789", "dev", "up1")
	r := e.cli("apply", "-c", e.file("b.yaml", "version: 1\nlinks: {}\n"))
	if r.Code != 1 || !strings.Contains(r.Stderr, "the kernel would delete [fvx] with it") {
		t.Errorf("apply: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, l := range []string{"fvx", "up1"} {
		e.ip("link", "show", l) // fails the test if gone
	}
}

// The ledger forgets a table that vanished from the kernel: a foreign table
// made later under the same name is not taken for ours and deleted.
func TestLedgerForgetsVanishedTables(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nnftables:\n  inet rvt:\n    chains:\n      c: {rules: [counter]}\n"))
	nettest.InNS(t, e.ns, "nft", "delete", "table", "inet", "rvt")
	// A pass sees it gone. (A writer's pass: diff writes nothing, not even
	// the ledger; what protects a diff-only history is the table's handle.)
	e.apply(e.file("b.yaml", "version: 1\n"))
	nettest.InNS(t, e.ns, "nft", "add", "table", "inet", "rvt")
	nettest.InNS(t, e.ns, "nft", "add", "chain", "inet", "rvt", "theirs")
	if r := e.cli("apply", "-c", e.file("b.yaml", "version: 1\n")); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("apply without the table: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "rvt"); !strings.Contains(out, "chain theirs") {
		t.Errorf("the foreign table was changed:\n%s", out)
	}
}
