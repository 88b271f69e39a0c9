package integration

import (
	"testing"
)

// A write of net.ipv4.conf.default.rp_filter set rp_filter on every link
// whose own key was never written (the kernel copies default's to those):
// a link declaring ipv4.rp_filter at the value it already held was moved,
// so a second apply wrote it again, and a link someone else made, which
// the file does not name, was changed. The plan now writes the file's
// keys again after default's, gives the file's links that do not declare
// the key default's new value (what a link made under the file starts
// with, whatever happened to the link before), and writes a foreign
// link's own value back. Found by an adversarial review.
func TestWalkFindingDefaultSysctlSpreadsToLinks(t *testing.T) {
	e := newEnv(t)
	const dflt = "net.ipv4.conf.default.rp_filter"
	v0 := e.sysctl(dflt)
	v1, v2 := "1", "2"
	switch v0 {
	case "1":
		v1, v2 = "2", "0"
	case "2":
		v1, v2 = "0", "1"
	}
	// Someone else's links, made before any write of default's key: one
	// with no address (the kernel moves it with default's), one with an
	// IPv4 address (the kernel holds its keys as written).
	e.ip("link", "add", "fb0", "type", "bridge")
	e.ip("link", "add", "fb1", "type", "bridge")
	e.ip("addr", "add", "10.9.0.1/24", "dev", "fb1")
	if e.sysctl("net.ipv4.conf.fb0.rp_filter") != v0 {
		t.Fatalf("fb0's rp_filter is not default's %s", v0)
	}
	first := e.file("a.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: "+v0+"}}\n")
	e.apply(first)
	e.converged(first)
	for i, c := range []struct{ dflt, file string }{
		{v1, "version: 1\nsysctls: {" + dflt + ": " + v1 + "}\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: " + v0 + "}}\n  br2: {kind: bridge}\n"},
		// br0 and br2 were written when default's changed: the kernel no
		// longer moves them with it.
		{v2, "version: 1\nsysctls: {" + dflt + ": " + v2 + "}\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: " + v0 + "}}\n  br2: {kind: bridge}\n"},
		// Default's given back.
		{v0, "version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge, sysctls: {ipv4.rp_filter: " + v1 + "}}\n  br2: {kind: bridge}\n"},
	} {
		f := e.file("b.yaml", c.file)
		e.apply(f)
		e.converged(f)
		want := map[string]string{"default": c.dflt, "br0": c.dflt, "br2": c.dflt, "br1": v0, "fb0": v0, "fb1": v0}
		if i == 2 {
			want["br1"] = v1
		}
		for _, n := range []string{"default", "br0", "br1", "br2", "fb0", "fb1"} {
			if got := e.sysctl("net.ipv4.conf." + n + ".rp_filter"); got != want[n] {
				t.Errorf("step %d: net.ipv4.conf.%s.rp_filter = %s, want %s", i+1, n, got, want[n])
			}
		}
	}
}
