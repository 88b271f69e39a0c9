package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// 82. An IPv6 address whose prefix length changes (the same address, a
// static one or a link's pool entry given another prefix-length) is the
// kernel's address changed: the kernel knows an IPv6 address by the
// address alone. The plan added the new one and deleted the old: the add,
// a replace to the kernel, only refreshed the old address, and the delete
// took it away, leaving the link without it (and a pool's export route
// without its address).
// Walk finding 82 (host seed 90934393032559, step 72: "change the prefix
// lengths of the pool pv entry of p1a", fd99::1/128 -> /120).
func TestWalkFinding82IPv6PrefixLengthChange(t *testing.T) {
	e := newEnv(t)
	file := func(name, static, pool string) string {
		return e.file(name, "version: 1\npools:\n  pv: {subnets: [\"fd99::/120\"], block-size-bits: 0, reuse-delay: 0s}\n"+
			"links:\n  lo: {kind: device, state: up}\n  b0: {kind: bridge, addresses: [\""+static+"\", {pool: pv"+pool+"}]}\n")
	}
	e.apply(file("a.yaml", "fd00:78::1/64", ""))
	f := file("b.yaml", "fd00:78::1/120", ", prefix-length: 120")
	e.apply(f)
	got := e.ip("-6", "addr", "show", "dev", "b0")
	for _, want := range []string{"fd00:78::1/120", "fd99::/120"} {
		if !strings.Contains(got, want) {
			t.Errorf("b0 lacks %s:\n%s", want, got)
		}
	}
	e.converged(f)
	e.roundTrip(f)
}

// 83. A link left out for a conflict keeps the pool address it holds when
// the file changes that address's prefix length: the pool still gives the
// link the address, so it is not given back. The give-back deleted the old
// length while the conflict held back the new one, and the link was left
// with half of a dual-stack pool's block (show then printed the other half
// as a static address, and applying its output planned the export routes'
// deletes).
// Walk finding 83 (host seed 90934393032559, step 122: p9a, a port of the
// foreign bridge fa0 whose delete is a conflict, changed its pd entry from
// ipv4-prefix-length 32 to 24).
func TestWalkFinding83PoolAddressOfALinkInConflict(t *testing.T) {
	e := newEnv(t)
	file := func(name, link string) string {
		return e.file(name, "version: 1\npools:\n  pd: {subnets: [{ipv4: 10.98.0.0/24, ipv6: \"fd98::/120\"}], block-size-bits: 0, reuse-delay: 0s}\n"+
			"links:\n  lo: {kind: device, state: up}\n  br0: "+link+"\n")
	}
	e.apply(file("a.yaml", "{kind: bridge, addresses: [{pool: pd, ipv4-prefix-length: 32}]}"))
	// A port netreconcile did not enslave: recreating br0 would release it.
	e.ip("link", "add", "fp0", "type", "veth", "peer", "name", "fp1")
	e.ip("link", "set", "fp0", "master", "br0")
	f := file("b.yaml", "{kind: vxlan, vxlan: {id: 79, remote: 192.0.2.79}, addresses: [{pool: pd, ipv4-prefix-length: 24}]}")
	if r := e.cli("apply", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, "br0") {
		t.Fatalf("apply %s: exit %d, want a conflict on br0\n%s%s", f, r.Code, r.Stdout, r.Stderr)
	}
	got := e.ip("addr", "show", "dev", "br0")
	for _, want := range []string{"10.98.0.0/32", "fd98::/128"} {
		if !strings.Contains(got, want) {
			t.Errorf("br0, left out for its conflict, lost %s:\n%s", want, got)
		}
	}
}

// 84. A veth whose peer was in another namespace (peer-netns) and is now
// declared here, under the same name, is a new pair: the link is recreated
// with its peer here. The plan took the end for unchanged (the kernel names
// no peer for an end whose peer is elsewhere) and refused the peer's
// create: "its declared peer p9a exists already", a conflict of its own
// making, on every pass.
// Walk finding 84 (failure-injection walk seed 52481162296392, step 37:
// "bring the peer p9d of p9a here").
func TestWalkFinding84VethPeerBroughtHome(t *testing.T) {
	e := newEnv(t)
	peer := e.ns + "-p"
	if out, err := exec.Command("ip", "netns", "add", peer).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", peer).Run() })
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  p9a: {kind: veth, veth: {peer: p9d, peer-netns: "+peer+"}}\n"))
	f := e.file("b.yaml", "version: 1\nlinks:\n  p9a: {kind: veth, veth: {peer: p9d}}\n  p9d: {kind: veth, veth: {peer: p9a}}\n")
	e.apply(f)
	if got := e.ip("-o", "link", "show", "p9d"); !strings.Contains(got, "p9d@p9a") {
		t.Errorf("p9d here: %s", got)
	}
	if out, _ := exec.Command("ip", "-n", peer, "-o", "link", "show").CombinedOutput(); strings.Contains(string(out), "p9d") {
		t.Errorf("the old peer stays in %s:\n%s", peer, out)
	}
	e.converged(f)
}
