package integration

import (
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
