package integration

// Regression tests for the defects the walk found once its generator
// covered more of the schema (docs/walk-findings.md, from 31).

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// 31. An IPv4 local route survives its link going down (the kernel flushes
// only next hops of another scope than nowhere): a file that drops the
// route while it sets the link down deletes it.
// Walk finding 31 (host seed 84211073134406, step 2).
func TestWalkFindingLocalRouteOnLinkDown(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  pa: {kind: veth, veth: {peer: pb}}
  pb: {kind: veth, veth: {peer: pa}}
routes:
  - {to: 172.16.4.0/24, type: local, dev: pb, table: 100, metric: 100}
`))
	f := e.file("b.yaml", `version: 1
links:
  pa: {kind: veth, veth: {peer: pb}}
  pb: {kind: veth, state: down, veth: {peer: pa}}
`)
	e.apply(f)
	if out := e.ip("route", "show", "table", "all"); strings.Contains(out, "172.16.4.0/24") {
		t.Errorf("the local route the file dropped is still there:\n%s", out)
	}
	e.converged(f)
}

// 32. Renaming the local end of a veth pair whose peer is in another
// namespace, the peer's name kept: the old pair goes first, since the peer
// namespace holds the peer's name.
// Walk finding 32 (host seed 63642688899507, step 61).
func TestWalkFindingRenameVethWithRemotePeer(t *testing.T) {
	e := newEnv(t)
	peer := e.ns + "-p"
	if out, err := exec.Command("ip", "netns", "add", peer).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", peer).Run() })
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  p9a: {kind: veth, veth: {peer: p9b, peer-netns: "+peer+"}}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  p9c: {kind: veth, veth: {peer: p9b, peer-netns: "+peer+"}}\n")
	e.apply(f)
	if out := e.ip("-o", "link", "show"); strings.Contains(out, " p9a") || !strings.Contains(out, " p9c") {
		t.Errorf("after the rename:\n%s", out)
	}
	e.converged(f)
}

// 35. A veth whose peer in another namespace would take a name that a kept
// pair's peer holds there (the stale end cannot go: a foreign vxlan sits on
// it) is a conflict, not a create that fails with file exists.
// Walk finding 35 (host seed 10887133408000, step 10).
func TestWalkFindingRemotePeerNameHeld(t *testing.T) {
	e := newEnv(t)
	peer := e.ns + "-p"
	if out, err := exec.Command("ip", "netns", "add", peer).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", peer).Run() })
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  p9c: {kind: veth, veth: {peer: p9b, peer-netns: "+peer+"}}\n"))
	e.ip("link", "add", "fc8", "type", "vxlan", "id", "4008", "dstport", "4789", "dev", "p9c")
	f := e.file("b.yaml", "version: 1\nlinks:\n  p9a: {kind: veth, veth: {peer: p9b, peer-netns: "+peer+"}}\n")
	for _, cmd := range []string{"diff", "apply"} {
		r := e.cli(cmd, "-c", f)
		if strings.Contains(r.Stderr, "file exists") || !strings.Contains(r.Stderr, "link p9a: its peer's name p9b") {
			t.Errorf("%s: exit %d\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
		}
	}
	if out := e.ip("-o", "link", "show"); strings.Contains(out, " p9a") || !strings.Contains(out, " p9c") || !strings.Contains(out, " fc8") {
		t.Errorf("after the apply:\n%s", out)
	}
}

// 38. A veth whose peer in another namespace is renamed there (p9d ->
// p9b, the local end kept): a new pair, recreated, as for a peer here. The
// plan used to change the local end in place and leave the old peer name
// (guest soak, walk seed 88226300499134, step 45).
// Walk finding 38 (guest seed 88226300499134, step 45).
func TestWalkFindingRemotePeerRenamed(t *testing.T) {
	e := newEnv(t)
	peer := e.ns + "-p"
	if out, err := exec.Command("ip", "netns", "add", peer).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", peer).Run() })
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  p9c: {kind: veth, veth: {peer: p9d, peer-netns: "+peer+"}}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  p9c: {kind: veth, mtu: 1450, veth: {peer: p9b, peer-netns: "+peer+"}}\n")
	e.apply(f)
	out, err := exec.Command("ip", "-n", peer, "-o", "link", "show").CombinedOutput()
	if err != nil || strings.Contains(string(out), " p9d") || !strings.Contains(string(out), " p9b") {
		t.Errorf("links in %s after the apply (%v):\n%s", peer, err, out)
	}
	e.converged(f)
}

// 39. A link released from its bridge to become the parent of an ipvlan
// made in the same apply: released first (the kernel refuses an ipvlan on
// a bridge port, EBUSY; guest soak, walk seed 88176676504984, step 65).
// The guest has ipvlan; this kernel shows the order in the plan.
// Walk finding 39 (guest seed 88176676504984, step 65).
func TestWalkFindingReleaseBeforeIPVlan(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  b1: {kind: bridge}\n  p1a: {kind: veth, master: b1, veth: {peer: p1b}}\n  p1b: {kind: veth, veth: {peer: p1a}}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  b1: {kind: bridge}\n  p1a: {kind: veth, veth: {peer: p1b}}\n  p1b: {kind: veth, veth: {peer: p1a}}\n  i0: {kind: ipvlan, ipvlan: {parent: p1a}}\n")
	d := e.cli("diff", "-c", f)
	rel, mk := strings.Index(d.Stdout, "~ link p1a"), strings.Index(d.Stdout, "+ link i0")
	if rel < 0 || mk < 0 || rel > mk {
		t.Errorf("the plan does not release p1a before it makes i0:\n%s%s", d.Stdout, d.Stderr)
	}
}

// 47. A vxlan on bridge b2 joining bridge b1 while a vxlan on b1 is still
// b2's port, the file releasing that port in the same apply: the kernel
// refuses the join (EBUSY: b1 -> x0 -> b2 -> x1 -> b1 would be a loop of
// upper and lower devices) until the release. Releases now go before the
// creates (host walk seed 49737547370500, step 82).
// Walk finding 47 (host seed 90934393032559).
func TestWalkFindingReleaseBeforeJoinLoop(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  b1: {kind: bridge}
  b2: {kind: bridge}
  x0: {kind: vxlan, master: b2, vxlan: {id: 20, local: "2001:db8:ff::8", remote: "2001:db8:fe::6", port: 8472, dev: b1}}
`))
	f := e.file("b.yaml", `version: 1
links:
  b1: {kind: bridge}
  b2: {kind: bridge}
  x0: {kind: vxlan, vxlan: {id: 20, local: "2001:db8:ff::8", remote: "2001:db8:fe::6", port: 8472, dev: b1}}
  x1: {kind: vxlan, master: b1, vxlan: {id: 21, local: "2001:db8:ff::1", remote: "2001:db8:fe::9", dev: b2}}
`)
	e.apply(f)
	if out := e.ip("-d", "link", "show", "x1"); !strings.Contains(out, "master b1") {
		t.Errorf("x1 did not join b1:\n%s", out)
	}
	e.converged(f)
}

// 60. A bridge follows its ports' MTU: the kernel moves it to the smallest
// whenever a port's MTU changes, as when one joins or leaves. A port that
// leaves an adopted bridge declared at 1500 with a new MTU of 9000 left the
// bridge at 9000 (the MTU was written first, and the pin of the master's
// MTU missed releases); a port whose MTU changes in a bridge the file names
// as a device (with no MTU) moved that bridge's.
// Walk finding 60 (host seed 34978741412786, step 72).
func TestWalkFindingPortMTUMovesItsBridge(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "fa0", "type", "bridge")
	e.ip("link", "set", "fa0", "up")
	e.ip("link", "add", "fd0", "type", "bridge")
	f := e.file("a.yaml", `version: 1
links:
  fa0: {kind: bridge, mtu: 1500, adopt: true}
  fd0: {kind: device}
  pa: {kind: veth, master: fa0, veth: {peer: pb}}
  pb: {kind: veth, master: fd0, veth: {peer: pa}}
`)
	e.apply(f)
	e.converged(f)
	mtu := func(when, link, want string) {
		t.Helper()
		if out := e.ip("link", "show", link); !strings.Contains(out, "mtu "+want+" ") {
			t.Errorf("%s: %s", when, out)
		}
	}
	for _, m := range []string{"9000", "1400"} {
		f = e.file("b.yaml", `version: 1
links:
  fa0: {kind: bridge, mtu: 1500, adopt: true}
  fd0: {kind: device}
  pa: {kind: veth, mtu: `+m+`, master: fa0, veth: {peer: pb}}
  pb: {kind: veth, mtu: `+m+`, master: fd0, veth: {peer: pa}}
`)
		e.apply(f)
		mtu("ports at "+m, "fa0", "1500")
		mtu("ports at "+m, "fd0", "1500")
		e.converged(f)
	}
	f = e.file("c.yaml", `version: 1
links:
  fa0: {kind: bridge, mtu: 1500, adopt: true}
  fd0: {kind: device}
  pa: {kind: veth, mtu: 9000, veth: {peer: pb}}
  pb: {kind: veth, mtu: 9000, veth: {peer: pa}}
`)
	e.apply(f)
	mtu("ports released at 9000", "fa0", "1500")
	mtu("ports released at 9000", "fd0", "1500")
	e.converged(f)
}

// 61. A passthru macvlan that joined a bridge down, came up and left the
// bridge up took its parent's allmulti count below zero (the macvlan driver
// counts the bridge's allmulti flag on the parent only while the macvlan is
// up, and not when a passthru one opens or stops): the next macvlan on that
// parent to come up in a bridge met EOVERFLOW. A passthru macvlan now
// changes master down, and gets back what that takes.
// Walk finding 61 (host seed 60436971485681, step 45).
func TestWalkFindingPassthruMacvlanLeavesBridge(t *testing.T) {
	e := newEnv(t)
	const pair = `
  p2b: {kind: veth, veth: {peer: p2c}}
  p2c: {kind: veth, veth: {peer: p2b}}
  b1: {kind: bridge}
  b2: {kind: bridge}
`
	allmulti := func(when string) {
		t.Helper()
		out := e.ip("-d", "link", "show", "p2b")
		if m := regexp.MustCompile(`allmulti (\d+)`).FindStringSubmatch(out); m == nil || m[1] != "0" {
			t.Errorf("%s: p2b's allmulti count is not 0:\n%s", when, out)
		}
	}
	f := e.file("a.yaml", "version: 1\nlinks:"+pair+`  m1: {kind: macvlan, master: b2, macvlan: {parent: p2b, mode: passthru}, addresses: ["fd00:1d::4/64", 10.29.1.2/24]}
`)
	e.apply(f)
	e.converged(f)
	allmulti("in the bridge")
	f = e.file("b.yaml", "version: 1\nlinks:"+pair+`  m1: {kind: macvlan, macvlan: {parent: p2b, mode: passthru}, addresses: ["fd00:1d::4/64", 10.29.1.2/24]}
routes:
  - {to: "2001:db8:7::/64", dev: m1}
`)
	e.apply(f)
	e.converged(f)
	allmulti("out of the bridge")
	f = e.file("c.yaml", "version: 1\nlinks:"+pair+`  m1: {kind: macvlan, master: b2, macvlan: {parent: p2b, mode: passthru}, addresses: ["fd00:1d::4/64", 10.29.1.2/24]}
routes:
  - {to: "2001:db8:7::/64", dev: m1}
`)
	e.apply(f)
	e.converged(f)
	allmulti("back in the bridge")
	f = e.file("d.yaml", "version: 1\nlinks:"+pair+`  m0: {kind: macvlan, master: b1, macvlan: {parent: p2b, mode: vepa}}
`)
	e.apply(f)
	e.converged(f)
	if out := e.ip("link", "show", "m0"); !strings.Contains(out, ",UP") {
		t.Errorf("m0 is not up:\n%s", out)
	}
}
