package integration

import (
	"strings"
	"testing"
)

// An adopted link is never recreated. It takes the marker in its first
// apply, and the next plan took it for one netreconcile made: a vxlan
// adopted, then given another remote, was recreated (its ifindex changed).
// A remote now changes in place; a change the kernel cannot make in place
// (the id) is a conflict, the link kept. Found in review.
func TestWalkFindingAdoptedVXLANIsNeverRecreated(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "fvx2", "type", "vxlan", "id", "99", "dstport", "4789", "remote", "192.0.2.4")
	first := e.ifindex("fvx2")
	file := func(name, vxlan string) string {
		return e.file(name, "version: 1\nlinks:\n  fvx2: {kind: vxlan, adopt: true, state: down, vxlan: {"+vxlan+"}}\n")
	}
	a := file("a.yaml", "id: 99, remote: 192.0.2.4, port: 4789")
	e.apply(a)
	e.converged(a)
	b := file("b.yaml", "id: 99, remote: 192.0.2.5, port: 4789, ttl: 9")
	out := e.apply(b)
	for _, w := range []string{"~ link fvx2", "vxlan remote: 192.0.2.4 -> 192.0.2.5", "vxlan ttl: 0 -> 9"} {
		if !strings.Contains(out, w) {
			t.Errorf("apply of another remote and ttl: no %q in\n%s", w, out)
		}
	}
	e.converged(b)
	if got := e.ifindex("fvx2"); got != first {
		t.Errorf("the adopted vxlan was recreated: ifindex %s -> %s", first, got)
	}
	if d := e.ip("-d", "link", "show", "fvx2"); !strings.Contains(d, "remote 192.0.2.5") || !strings.Contains(d, "ttl 9") {
		t.Errorf("the kernel does not hold the new remote and ttl:\n%s", d)
	}
	c := file("c.yaml", "id: 98, remote: 192.0.2.5, port: 4789, ttl: 9")
	r := e.cli("apply", "-c", c)
	if r.Code == 0 || !strings.Contains(r.Stderr, "link fvx2 is adopted (the file says adopt: true), and its vxlan id 99 -> 98 cannot change in place") {
		t.Errorf("apply of another id: exit %d, want a conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := e.ifindex("fvx2"); got != first {
		t.Errorf("the adopted vxlan was recreated for its id: ifindex %s -> %s", first, got)
	}
}

// A link the file adopts that sits on a link netreconcile recreates would
// go with it: that is a conflict, and both stay.
func TestWalkFindingAdoptedLinkOnARecreatedOneStays(t *testing.T) {
	e := newEnv(t)
	a := e.file("a.yaml", `version: 1
links:
  va: {kind: veth, veth: {peer: vb}}
`)
	e.apply(a)
	e.ip("link", "add", "link", "va", "name", "mv0", "type", "macvlan", "mode", "bridge")
	b := e.file("b.yaml", `version: 1
links:
  va: {kind: veth, veth: {peer: vb}}
  mv0: {kind: macvlan, adopt: true, macvlan: {parent: va}}
`)
	e.apply(b)
	va, mv := e.ifindex("va"), e.ifindex("mv0")
	c := e.file("c.yaml", `version: 1
links:
  va: {kind: veth, veth: {peer: vc}}
  mv0: {kind: macvlan, adopt: true, macvlan: {parent: va}}
`)
	r := e.cli("apply", "-c", c)
	if r.Code == 0 || !strings.Contains(r.Stderr, "link va cannot be deleted or recreated: the kernel would delete [mv0] with it, which the file adopts") {
		t.Errorf("apply of another peer: exit %d, want a conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if e.ifindex("va") != va || e.ifindex("mv0") != mv {
		t.Errorf("recreated: va %s -> %s, mv0 %s -> %s", va, e.ifindex("va"), mv, e.ifindex("mv0"))
	}
}

// A vxlan's local, remote, ttl and learning change in place (the kernel's
// vxlan_changelink): the ifindex, the address and the route through it stay.
// Its id, port, family, multicast group and dev are made again. Found in
// review: every change recreated it.
func TestWalkFindingVXLANChangesInPlace(t *testing.T) {
	e := newEnv(t)
	const rest = "addresses: [10.70.0.1/24]}\n  u0: {kind: veth, veth: {peer: u1}}\n  u1: {kind: veth, veth: {peer: u0}}\nroutes:\n  - {to: 10.71.0.0/24, dev: vx0}\n"
	apply := func(name, vxlan string) string {
		f := e.file(name, "version: 1\nlinks:\n  vx0: {kind: vxlan, vxlan: {"+vxlan+"}, "+rest)
		out := e.apply(f)
		e.converged(f)
		return out
	}
	apply("0.yaml", "id: 7, remote: 192.0.2.1, local: 192.0.2.2")
	first := e.ifindex("vx0")
	for i, s := range []struct{ vxlan, show string }{
		{"id: 7, remote: 192.0.2.3, local: 192.0.2.2", "remote 192.0.2.3 local 192.0.2.2"},
		{"id: 7, remote: 192.0.2.3, local: 192.0.2.9, ttl: 64", "local 192.0.2.9 srcport 0 0 dstport 4789 ttl 64"},
		{"id: 7, remote: 192.0.2.3, local: 192.0.2.9, ttl: 64, learning: false", "nolearning"},
		{"id: 7, local: 192.0.2.9", "vxlan id 7 local 192.0.2.9"},
		{"id: 7", "vxlan id 7 srcport"},
	} {
		out := apply("in.yaml", s.vxlan)
		if !strings.Contains(out, "~ link vx0") || strings.Contains(out, "address") || strings.Contains(out, "route") {
			t.Errorf("step %d: not an in-place change of the link alone:\n%s", i, out)
		}
		if got := e.ifindex("vx0"); got != first {
			t.Errorf("step %d: recreated: ifindex %s -> %s", i, first, got)
		}
		if d := e.ip("-d", "link", "show", "vx0"); !strings.Contains(d, s.show) {
			t.Errorf("step %d: no %q in\n%s", i, s.show, d)
		}
	}
	for i, s := range []struct{ vxlan, reason string }{
		{"id: 8", "vxlan id 7 -> 8"},
		{"id: 8, port: 4790", "vxlan port 4789 -> 4790"},
		{"id: 8, port: 4790, remote: '2001:db8::1'", "vxlan family IPv4 -> IPv6"},
		{"id: 8, port: 4790, remote: 192.0.2.1", "vxlan family IPv6 -> IPv4"},
		{"id: 8, port: 4790, group: 239.1.1.1, dev: u0", "vxlan group 192.0.2.1 -> 239.1.1.1"},
		{"id: 8, port: 4790, group: 239.1.1.1, dev: u1", "vxlan dev u0 -> u1"},
	} {
		before := e.ifindex("vx0")
		out := apply("re.yaml", s.vxlan)
		if !strings.Contains(out, "± link vx0") || !strings.Contains(out, s.reason) {
			t.Errorf("step %d: no recreate for %q:\n%s", i, s.reason, out)
		}
		if got := e.ifindex("vx0"); got == before {
			t.Errorf("step %d: %s: the link was not made again", i, s.reason)
		}
	}
}
