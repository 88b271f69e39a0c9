package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// The read that follows our own batch of rule replaces and deletes takes
// the table as the read before it plus that batch, the replaced rules read
// back by handle (an apply's verification re-read the 1,000 rules of a
// table to check one: bench-nft). It must list what a whole read
// lists, once; a commit of someone else's in between, a batch that adds a
// rule, or a rule the kernel holds otherwise than written make it a whole
// read.
func TestNftReadAfterOurBatchIsCarried(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	dir := t.TempDir()
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, _ := ledger.OpenIn(nil, 0)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	key := model.NftTableKey{Family: "inet", Name: "t"}
	n := 0
	pass := func(rules ...string) int {
		t.Helper()
		var b strings.Builder
		b.WriteString("version: 1\nnftables:\n  inet t:\n    sets:\n      s:\n        type: ipv4_addr\n        elements: [10.9.9.9]\n    chains:\n      in:\n        type: filter\n        hook: input\n        priority: filter\n        rules:\n")
		for _, r := range rules {
			fmt.Fprintf(&b, "          - %q\n", r)
		}
		n++
		cfg, err := desired.Load(nettest.WriteFile(t, dir, fmt.Sprintf("c%d.yaml", n), b.String()), "")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
		return len(plan.Ops)
	}
	// What a whole read lists: a handle of its own, nothing kept.
	whole := func() []model.NftChain {
		t.Helper()
		k2, err := kernel.Open("/run/netns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		defer k2.Close()
		tb, err := k2.NFTTable(key)
		if err != nil || tb == nil {
			t.Fatalf("whole read: %v, %v", tb, err)
		}
		return tb.Chains
	}
	read := func() []model.NftChain {
		t.Helper()
		tb, err := k.NFTTable(key)
		if err != nil || tb == nil {
			t.Fatalf("read: %v, %v", tb, err)
		}
		return tb.Chains
	}
	same := func(step string) {
		t.Helper()
		if d := cmp.Diff(whole(), read()); d != "" {
			t.Fatalf("%s: the read after our batch differs from a whole read (-whole +read):\n%s", step, d)
		}
	}
	r0, r1, r2, r3 := "tcp dport 1 accept", "ip saddr 10.0.0.0/24 tcp dport { 22, 80 } counter accept", "ip daddr @s drop", "udp dport 53 accept"
	pass(r0, r1, r2, r3)
	if kernel.NFTCarried(k, key) {
		t.Fatal("carried after a batch that made the table")
	}
	read() // the whole read a plan makes

	// One rule replaced (with an anonymous set), one deleted.
	pass(r0, "ip saddr 10.0.1.0/24 tcp dport { 22, 443 } counter accept", r2)
	if !kernel.NFTCarried(k, key) {
		t.Fatal("a batch of a replace and a delete: the next read is not carried")
	}
	same("a replace and a delete")
	if kernel.NFTCarried(k, key) {
		t.Fatal("still carried after the read that took it")
	}
	if ops := pass(r0, "ip saddr 10.0.1.0/24 tcp dport { 22, 443 } counter accept", r2); ops != 0 {
		t.Fatalf("the plan after a carried read has %d ops", ops)
	}

	// A batch that adds a rule: read whole.
	read()
	pass(r0, "ip saddr 10.0.1.0/24 tcp dport { 22, 443 } counter accept", r2, r3)
	if kernel.NFTCarried(k, key) {
		t.Fatal("carried after a batch that added a rule")
	}
	same("an added rule")

	// Someone else's commit between our batch and the read.
	read()
	pass(r0, "ip saddr 10.0.1.0/24 tcp dport { 22, 443 } counter drop", r2, r3)
	if !kernel.NFTCarried(k, key) {
		t.Fatal("a batch of a replace: the next read is not carried")
	}
	nettest.InNS(t, ns, "nft", "add", "rule", "inet", "t", "in", "tcp", "dport", "9", "drop")
	same("a foreign commit in between")
	if got := read(); len(got[0].Rules) != 5 {
		t.Fatalf("the foreign rule is not listed: %+v", got[0].Rules)
	}
}
