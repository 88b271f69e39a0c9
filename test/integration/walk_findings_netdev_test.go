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
// Walk finding 198 (found by reading, issue 30).
func TestWalkFinding198NetdevChainOnARecreatedLink(t *testing.T) {
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

// The MTUs apply sets again after the link ops, where the kernel moved
// them on the way (a master's declared MTU when its ports change, a link
// without an MTU following its lower device), obey the rule the plan's
// MTU writes do: a write the kernel would pass on to a link netreconcile
// did not create waits. A bridge's MTU write that waited for a foreign
// macvlan on it was made anyway once a port joined the bridge, and a
// vxlan's that waited for a foreign macvlan on it once its device's MTU
// changed; each lowered the macvlan.
// Walk finding 199 (found by reading, issue 30).
func TestWalkFinding199MTUWrittenAfterTheLinkOpsWaitsToo(t *testing.T) {
	for _, c := range []struct{ name, before, after, on, link string }{{
		name:   "a bridge's MTU pinned when a port joins",
		before: "  b0: {kind: bridge, mtu: 1500}\n",
		after:  "  b0: {kind: bridge, mtu: 1400}\n  pa: {kind: veth, veth: {peer: pb}}\n  pb: {kind: veth, master: b0, veth: {peer: pa}}\n",
		on:     "b0",
		link:   "link b0 keeps its mtu 1500, not 1400",
	}, {
		name:   "a vxlan following its device",
		before: "  b0: {kind: bridge, mtu: 1500}\n  x0: {kind: vxlan, vxlan: {id: 5, dev: b0}}\n",
		after:  "  b0: {kind: bridge, mtu: 1400}\n  x0: {kind: vxlan, vxlan: {id: 5, dev: b0}}\n",
		on:     "x0",
		link:   "link x0 keeps its mtu 1450, not 1350",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\nlinks:\n"+c.before))
			e.ip("link", "add", "fm0", "link", c.on, "type", "macvlan")
			before := e.mtu("fm0")
			f := e.file("b.yaml", "version: 1\nlinks:\n"+c.after)
			r := e.cli("apply", "-c", f)
			if r.Code != 1 || !strings.Contains(r.Stderr, c.link+": the kernel would change the mtu of fm0 with it, which netreconcile did not create") {
				t.Errorf("apply: exit %d, want 1 with the MTU write that waits\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if after := e.mtu("fm0"); after != before {
				t.Errorf("fm0, not netreconcile's, changed its mtu: %s -> %s\n%s", before, after, r.Stdout)
			}
		})
	}
}
