package integration

import (
	"strings"
	"testing"
)

// A recreate of a link went ahead beside a link on it that the plan
// leaves as it is (in conflict, or held): the kernel deletes the links on a
// link it deletes, and releases its ports, so the link left as it is went
// with the old one. The delete of a link already waited for such links; a
// recreate (a vxlan's id, a macvlan's move into passthru, a veth's new
// peer) now waits too, and says so. Here the macvlan on the vxlan is in
// conflict for its master, a device that does not exist.
func TestWalkFindingRecreateWaitsForTheLinksItTakes(t *testing.T) {
	for _, c := range []struct{ name, before, after, kid string }{{
		name:   "macvlan on a vxlan",
		before: "  x0: {kind: vxlan, vxlan: {id: 100, remote: 198.51.100.1}}\n  m0: {kind: macvlan, macvlan: {parent: x0, mode: bridge}}\n",
		after:  "  x0: {kind: vxlan, vxlan: {id: 101, remote: 198.51.100.1}}\n  m0: {kind: macvlan, master: w0, macvlan: {parent: x0, mode: bridge}}\n  w0: {kind: device}\n",
		kid:    "m0",
	}, {
		name:   "macvlan on a veth end whose pair changes",
		before: "  va: {kind: veth, veth: {peer: vb}}\n  vb: {kind: veth, veth: {peer: va}}\n  m1: {kind: macvlan, macvlan: {parent: vb, mode: bridge}}\n",
		after:  "  va: {kind: veth, veth: {peer: vc}}\n  vc: {kind: veth, veth: {peer: va}}\n  vb: {kind: veth, veth: {peer: vd}}\n  vd: {kind: veth, veth: {peer: vb}}\n  m1: {kind: macvlan, master: w0, macvlan: {parent: vb, mode: bridge}}\n  w0: {kind: device}\n",
		kid:    "m1",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\nlinks:\n"+c.before))
			before, indexes := e.links(), e.indexes()
			f := e.file("b.yaml", "version: 1\nlinks:\n"+c.after)
			for _, cmd := range []string{"diff", "apply"} {
				r := e.cli(cmd, "-c", f)
				if r.Code != 1 || !strings.Contains(r.Stderr, "is not recreated") {
					t.Errorf("%s: exit %d, want 1 with the recreate that waits\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
				} else if testing.Verbose() {
					t.Logf("%s:\n%s%s", cmd, r.Stdout, r.Stderr)
				}
			}
			after := e.links()
			if linkLine(after, c.kid) == "" || indexes[c.kid] != e.indexes()[c.kid] {
				t.Errorf("%s, left as it is for its conflict, went with the recreate:\n%s\n->\n%s", c.kid, before, after)
			}
		})
	}
}
