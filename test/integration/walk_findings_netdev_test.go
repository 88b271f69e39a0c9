package integration

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// A netdev base chain keeps hooking its device when the apply makes the
// device again (a vxlan whose id changes, a veth end whose peer changes):
// the chain and its rules are there after the apply, a second apply
// writes nothing, and show round-trips. The table waits for the link, and
// the same apply writes it: kernels before 6.16 delete a base chain with
// the last device it hooks (test/e2e holds that case).
// Walk finding F-ND-1 (found by reading, issue 30).
func TestWalkFindingFND1NetdevChainOnARecreatedLink(t *testing.T) {
	nettest.RequireTool(t, "nft")
	for _, c := range []struct{ name, before, after, dev string }{{
		name:   "vxlan id",
		before: "  vx0: {kind: vxlan, vxlan: {id: 7}}\n",
		after:  "  vx0: {kind: vxlan, vxlan: {id: 8}}\n",
		dev:    "vx0",
	}, {
		name:   "veth peer",
		before: "  v0: {kind: veth, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
		after:  "  v0: {kind: veth, veth: {peer: v2}}\n  v2: {kind: veth, veth: {peer: v0}}\n",
		dev:    "v0",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			file := func(name, links string) string {
				return e.file(name, "version: 1\nlinks:\n"+links+
					"nftables:\n  netdev t:\n    chains:\n      in: {type: filter, hook: ingress, device: "+c.dev+", priority: 0, rules: [counter accept]}\n")
			}
			e.apply(file("a.yaml", c.before))
			before := e.ifindex(c.dev)
			f := file("b.yaml", c.after)
			// The plan says the table waits for the link, on every kernel:
			// one before 6.16 deletes the chain with its device.
			if r := e.cli("diff", "-c", f); !strings.Contains(r.Stdout+r.Stderr, "waits for link "+c.dev+", which a netdev chain of it hooks") {
				t.Errorf("diff does not say the table waits for %s:\n%s%s", c.dev, r.Stdout, r.Stderr)
			}
			e.apply(f)
			if after := e.ifindex(c.dev); after == before {
				t.Fatalf("%s was not made again (ifindex %s)", c.dev, after)
			}
			if out := nettest.InNS(t, e.ns, "nft", "list", "table", "netdev", "t"); !strings.Contains(out, `device "`+c.dev+`"`) || !strings.Contains(out, "counter") {
				t.Errorf("nft list table netdev t:\n%s", out)
			}
			e.converged(f)
			if shown := e.roundTrip(f); !strings.Contains(shown, "device: "+c.dev) {
				t.Errorf("show:\n%s", shown)
			}
		})
	}
}
