package integration

import (
	"strings"
	"testing"
)

// A link left out for a conflict kept an address its pool had handed it
// while the pool was out of the file, and the file gave that address to
// another link meanwhile; when the pool came back, the address stayed on
// both links, the pool's allocation and its exported block with it. The
// pool takes it back when it returns, as when it stays in the file (walk
// finding 167): the other link has it alone. Host soak seed
// 128820325505437, step 82 (shrunk to 82 steps: p1a, out of the file with
// someone else's links on it since step 52, held 10.99.0.1/32 from pool
// pw; pw out of the file at steps 69-81; p9c declared 10.99.0.1/24 from
// step 74; pw back at step 82). Found on a tree before 167's fix, which
// this history needed too.
func TestWalkFindingLeftOutPoolAddressAfterItsPoolsAbsence(t *testing.T) {
	e := bridgeWithForeignPort(t, "{pool: p}")
	if got := e.ip("-4", "-o", "addr", "show", "dev", "b0"); !strings.Contains(got, "10.98.0.0/32") {
		t.Fatalf("b0 did not take 10.98.0.0 from the pool:\n%s", got)
	}
	links := "links:\n  lo: {kind: device, state: up}\n  b2: {kind: bridge, addresses: [10.98.0.0/24]}\n"
	for i, f := range []string{
		e.file("b.yaml", "version: 1\n"+links),
		e.file("c.yaml", "version: 1\n"+leftOutPools+links),
	} {
		if r := e.cli("apply", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, "link b0 cannot be deleted") {
			t.Fatalf("file %d: apply: exit %d, want b0's conflict\n%s%s", i+1, r.Code, r.Stdout, r.Stderr)
		}
		if got := e.ip("-4", "-o", "addr", "show", "dev", "b2"); !strings.Contains(got, "10.98.0.0/24") {
			t.Errorf("file %d: b2 lacks the address the file gives it:\n%s", i+1, got)
		}
	}
	f := e.file("c.yaml", "version: 1\n"+leftOutPools+links)
	if got := e.ip("-4", "-o", "addr", "show", "dev", "b0"); strings.Contains(got, "10.98.0.0") {
		t.Errorf("b0 keeps 10.98.0.0, which the file gives b2, once the pool is back:\n%s", got)
	}
	if got := e.ipam("list", "-c", f); strings.Contains(got, "config:link/b0") {
		t.Errorf("the registry keeps b0's address:\n%s", got)
	}
	if got := strings.TrimSpace(e.table119Of("120")); got != "" {
		t.Errorf("export routes of table 120:\n%s\nwant none", got)
	}
	if r := e.cli("diff", "-c", f); !strings.Contains(r.Stdout, "No changes planned") {
		t.Errorf("diff after the apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.roundTrip(f)
}
