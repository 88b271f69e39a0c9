package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
)

// heldPass makes the service's pass over file f under max-disruption max:
// the engine with the file's limit, as the daemon builds it. It returns the
// plan applied.
func (e *env) heldPass(f string, max diff.Disruption) *diff.Plan {
	e.t.Helper()
	cfg, err := desired.Load(f, "")
	if err != nil {
		e.t.Fatal(err)
	}
	eng, _ := e.engine()
	eng.MaxDisruption = &max
	ctx := context.Background()
	plan, _, err := eng.PlanDesired(ctx, cfg.State, false)
	if err != nil {
		e.t.Fatalf("plan under max-disruption %s: %v", max, err)
	}
	res, err := eng.Apply(ctx, plan)
	if err != nil || res.Err() != nil {
		e.t.Fatalf("apply under max-disruption %s: %v %v", max, err, res.Err())
	}
	return plan
}

// A vxlan held by the service's max-disruption (its dev taken away: a
// recreate) was deleted all the same: the step dropped the veth it was made
// on (p9a and its peer p9d; p9a was the vxlan's device), the delete of
// the pair was in place and went ahead, and the kernel deletes a vxlan with
// its device. A delete now waits, as the veth pair's other end did (walk
// finding 85), for every link it would take with it that is held or in
// conflict: a link on it (a vxlan, macvlan, ipvlan, vlan, on either end of a
// pair, and on those), and a port it would release. Host walk seed
// 61494414667499, step 20 (shrunk to 6 steps): remove p9a and p9d; x0's vxlan dev
// p9a dropped, under max-disruption link-flapped.
func TestWalkFindingHeldLinkKeepsItsLowerDevice(t *testing.T) {
	for _, c := range []struct {
		name, before, after string
		gone                []string
	}{{
		name: "vxlan on a veth end",
		before: "  b0: {kind: bridge}\n  p9a: {kind: veth, veth: {peer: p9d}}\n  p9d: {kind: veth, veth: {peer: p9a}}\n" +
			"  x0: {kind: vxlan, master: b0, vxlan: {id: 100, remote: 198.51.100.1, dev: p9a}, addresses: [10.169.0.3/24]}\n",
		after: "  b0: {kind: bridge}\n" +
			"  x0: {kind: vxlan, master: b0, vxlan: {id: 100, remote: 198.51.100.1}, addresses: [10.169.0.3/24]}\n",
		gone: []string{"p9a", "p9d"},
	}, {
		name:   "macvlan on a bridge",
		before: "  b1: {kind: bridge}\n  m0: {kind: macvlan, macvlan: {parent: b1, mode: bridge}}\n",
		after:  "  b2: {kind: bridge}\n  m0: {kind: macvlan, macvlan: {parent: b2, mode: bridge}}\n",
		gone:   []string{"b1"},
	}, {
		name:   "port of a bridge",
		before: "  b1: {kind: bridge}\n  v0: {kind: veth, master: b1, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
		after:  "  v0: {kind: veth, veth: {peer: v2}}\n  v2: {kind: veth, veth: {peer: v0}}\n",
		gone:   []string{"b1"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\nlinks:\n"+c.before))
			before, indexes := e.links(), e.indexes()
			f := e.file("b.yaml", "version: 1\nsettings: {max-disruption: link-flapped}\nlinks:\n"+c.after)
			plan := e.heldPass(f, diff.LinkFlapped)
			if len(plan.Held) == 0 {
				t.Fatalf("nothing held; the plan:\n%s", plan)
			}
			deps := strings.Join(plan.HeldDependents, "\n")
			for _, n := range c.gone {
				if !strings.Contains(before, n+" ") {
					t.Fatalf("%s not made by the first file:\n%s", n, before)
				}
			}
			after := e.links()
			for _, op := range plan.Held {
				if b, a := linkLine(before, op.ID), linkLine(after, op.ID); b != a || indexes[op.ID] != e.indexes()[op.ID] {
					t.Errorf("link %s held (%s %s), yet it changed:\n%s (ifindex %s)\n-> %s (ifindex %s)\nthe plan:\n%s\nheld dependents:\n%s",
						op.ID, op.Action, op.Disruption, b, indexes[op.ID], a, e.indexes()[op.ID], plan, deps)
				}
			}
			if !strings.Contains(deps, "is not deleted: the kernel would") {
				t.Errorf("held dependents:\n%s\nwant the delete that waits", deps)
			}
			// What was held waits for an apply by hand, which makes the
			// whole file.
			e.apply(f)
			e.converged(f)
			for _, n := range c.gone {
				if strings.Contains(e.links(), n+" ") {
					t.Errorf("%s is still there after the apply by hand:\n%s", n, e.links())
				}
			}
		})
	}
}

// linkLine is the line of links (env.links) for the link name, "" when it
// has none.
func linkLine(links, name string) string {
	for _, l := range strings.Split(links, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}
