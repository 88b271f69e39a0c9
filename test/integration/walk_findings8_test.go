package integration

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// An IPv6 address's noprefixroute toggled in the file was deleted and added
// again: the address went through duplicate address detection, tentative
// and unusable as a source meanwhile, while the kernel changes the flag in
// place (NLM_F_REPLACE, as `ip addr change` does). The change is an update
// now, which keeps the flags the file has no key for (mngtmpaddr, set here
// by hand). Found by an adversarial review.
func TestWalkFindingIPv6NoPrefixRouteChangesInPlace(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "v0", "type", "veth", "peer", "name", "v1")
	e.ip("link", "set", "v1", "up")
	e.ip("link", "set", "v0", "up")
	e.ip("addr", "add", "2001:db8:7::1/64", "dev", "v0", "mngtmpaddr")
	plain := e.file("a.yaml", "version: 1\nlinks:\n  v0: {kind: device, addresses: [2001:db8:7::1/64]}\n")
	flagged := e.file("b.yaml", "version: 1\nlinks:\n  v0: {kind: device, addresses: [{address: 2001:db8:7::1/64, noprefixroute: true}]}\n")
	e.apply(plain)
	addr := func() string { return e.ip("-6", "-o", "addr", "show", "dev", "v0", "scope", "global") }
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(addr(), "tentative") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for i, c := range []struct {
		file, sign string
		route      bool
	}{{flagged, "~ address 2001:db8:7::1/64 dev v0", false}, {plain, "~ address 2001:db8:7::1/64 dev v0", true}} {
		r := e.cli("diff", "-c", c.file)
		if !strings.Contains(r.Stdout, c.sign+"\n    noprefixroute: ") {
			t.Fatalf("step %d: diff:\n%s%s\nwant %q", i, r.Stdout, r.Stderr, c.sign)
		}
		e.apply(c.file)
		a := addr()
		if strings.Contains(a, "tentative") || !strings.Contains(a, "mngtmpaddr") || strings.Contains(a, "noprefixroute") == c.route {
			t.Errorf("step %d: the address after the apply (not tentative, mngtmpaddr kept, noprefixroute %v):\n%s", i, !c.route, a)
		}
		if got := strings.Contains(e.ip("-6", "route", "show", "2001:db8:7::/64"), "proto kernel"); got != c.route {
			t.Errorf("step %d: prefix route present %v, want %v", i, got, c.route)
		}
		e.converged(c.file)
	}
}

// A macvlan planned on a parent the kernel will not give it, for links
// someone else made there, was a plain create, and apply failed with a bare
// "invalid argument" (or "device or resource busy"): a passthru macvlan
// beside another macvlan, a macvlan beside a passthru one, and an ipvlan
// and a macvlan on one parent. diff and apply report each as a conflict
// now, naming the links in the way, and apply writes nothing. Found by an
// adversarial review.
func TestWalkFindingMACVlanOnAParentSomeoneElseHolds(t *testing.T) {
	for _, c := range []struct {
		name, foreign, mine string
	}{
		{"passthru beside a vepa macvlan", "fm link e11 type macvlan mode vepa", "{kind: macvlan, macvlan: {parent: e11, mode: passthru}}"},
		{"bridge beside a passthru macvlan", "fm link e11 type macvlan mode passthru", "{kind: macvlan, macvlan: {parent: e11, mode: bridge}}"},
		{"macvlan beside an ipvlan", "fm link e11 type ipvlan mode l2", "{kind: macvlan, macvlan: {parent: e11}}"},
		{"ipvlan beside a macvlan", "fm link e11 type macvlan mode bridge", "{kind: ipvlan, ipvlan: {parent: e11}}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.ip("link", "add", "e11", "type", "veth", "peer", "name", "e11p")
			if out, err := exec.Command("ip", append([]string{"-n", e.ns, "link", "add"}, strings.Fields(c.foreign)...)...).CombinedOutput(); err != nil {
				if strings.Contains(string(out), "Unknown device type") {
					t.Skipf("this kernel has no %s (the guest's has)", strings.Fields(c.foreign)[4])
				}
				t.Fatalf("ip link add %s: %v: %s", c.foreign, err, out)
			}
			f := e.file("a.yaml", "version: 1\nlinks:\n  e11: {kind: device}\n  pt: "+c.mine+"\n")
			before := e.links()
			for _, cmd := range []string{"diff", "apply"} {
				r := e.cli(cmd, "-c", f)
				if r.Code != 1 || !strings.Contains(r.Stderr, "link pt cannot be made on e11") || !strings.Contains(r.Stderr, "[fm (") {
					t.Errorf("%s: exit %d, want 1 with the conflict naming fm\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
				}
			}
			check(t, "links after the apply", e.links(), before)
		})
	}
}

// A route of the file that is one the kernel makes for a declared address
// (its prefix route, its local route, an IPv4 subnet's broadcast route)
// validated: apply failed on it (EEXIST, the kernel's route in its place)
// and every later run reported a conflict. validate refuses it now, saying
// whose route it is; the same routes under another metric, or the prefix
// route of an address with noprefixroute, apply and converge. Found by an
// adversarial review.
func TestWalkFindingRouteTheKernelMakesForAnAddress(t *testing.T) {
	e := newEnv(t)
	links := "version: 1\nlinks:\n  b21: {kind: bridge, addresses: [10.21.0.1/24, \"2001:db8:21::1/64\", {address: 10.23.0.1/24, noprefixroute: true}]}\n"
	vrf := "  v21: {kind: vrf, vrf: {table: 21}, addresses: [10.24.0.1/24]}\n"
	for _, route := range []string{
		"{to: 10.21.0.0/24, dev: b21, scope: link, src: 10.21.0.1}",
		"{to: 10.21.0.1/32, type: local, dev: b21, table: local}",
		"{to: 10.21.0.255/32, dev: b21, table: local}",
		"{to: \"2001:db8:21::/64\", dev: b21, metric: 256}",
		"{to: 10.24.0.0/24, dev: v21, table: 21}",
		"{to: 10.24.0.1/32, type: local, dev: v21, table: 21}",
	} {
		f := e.file("bad.yaml", links+vrf+"routes:\n  - "+route+"\n")
		if r := e.cli("validate", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, "the kernel makes for address") {
			t.Errorf("validate %s: exit %d, want it refused as the kernel's route\n%s%s", route, r.Code, r.Stdout, r.Stderr)
		}
	}
	f := e.file("good.yaml", links+"routes:\n"+
		"  - {to: 10.21.0.0/24, dev: b21, scope: link, src: 10.21.0.1, metric: 10}\n"+
		"  - {to: 10.23.0.0/24, dev: b21, scope: link, src: 10.23.0.1}\n"+
		"  - {to: \"2001:db8:21::/64\", dev: b21}\n")
	e.apply(f)
	e.converged(f)
}
