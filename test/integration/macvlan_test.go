package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

const macvlanFile = `version: 1
links:
  p0: {kind: veth, veth: {peer: p1}}
  p1: {kind: veth, veth: {peer: p0}}
  mv1:
    kind: macvlan
    macvlan: {parent: p0, mode: MODE}
    addresses: [10.61.0.1/24]
  mv2:
    kind: macvlan
    mtu: MTU
    macvlan: {parent: p0}
`

// Two macvlans on one parent reach each other in bridge mode, and not in
// private mode; the mode and the MTU change in place (same ifindex). The
// other macvlan is made on the
// same parent by hand and moved to a namespace of its own, so that the
// ping crosses the parent's macvlan port instead of the local table.
func TestMACVlan(t *testing.T) {
	e := &env{t: t, ns: nettest.NewNetNSPrefixed(t, "lnk"), state: t.TempDir(), dir: t.TempDir()}
	peer := nettest.NewNetNSPrefixed(t, "lnk")
	file := func(mode, mtu string) string {
		return e.file("mv.yaml", strings.NewReplacer("MODE", mode, "MTU", mtu).Replace(macvlanFile))
	}
	f := file("bridge", "1500")
	e.apply(f)
	mustHave(t, "ip -d link show mv1", e.ip("-d", "link", "show", "mv1"), "macvlan mode bridge", "alias netreconcile", "@p0")
	mustHave(t, "ip -d link show mv2", e.ip("-d", "link", "show", "mv2"), "macvlan mode bridge")
	e.converged(f)

	e.ip("link", "add", "link", "p0", "name", "mvx", "type", "macvlan", "mode", "bridge")
	e.ip("link", "set", "mvx", "netns", peer)
	nettest.IP(t, peer, "addr", "add", "10.61.0.2/24", "dev", "mvx")
	nettest.IP(t, peer, "link", "set", "mvx", "up")
	ping := func() error {
		return exec.Command("ip", "netns", "exec", e.ns, "ping", "-c", "1", "-W", "2", "10.61.0.2").Run()
	}
	if err := ping(); err != nil {
		t.Errorf("bridge mode: mv1 does not reach a macvlan on the same parent: %v", err)
	}
	e.converged(f) // the moved macvlan is not this namespace's

	first := e.ifindex("mv1")
	f = file("private", "1400")
	out := e.apply(f)
	mustHave(t, "apply mode", out, "~ link mv1", "macvlan mode: bridge -> private", "~ link mv2", "mtu: 1500 -> 1400")
	if got := e.ifindex("mv1"); got != first {
		t.Errorf("a mode change recreated the macvlan: ifindex %s -> %s", first, got)
	}
	mustHave(t, "ip -d link show mv1 after", e.ip("-d", "link", "show", "mv1"), "macvlan mode private")
	e.converged(f)
	if err := ping(); err == nil {
		t.Errorf("private mode: mv1 still reaches a macvlan on the same parent")
	}

	f = file("bridge", "1400")
	e.apply(f)
	if err := ping(); err != nil {
		t.Errorf("back in bridge mode: no answer: %v", err)
	}
	e.converged(f)
}

func mustHave(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: missing %q in:\n%s", what, w, got)
		}
	}
}

// Walk finding 65, on this kernel: a veth end carries a macvlan or a bridge
// port, not both (each holds its receive handler: EBUSY). A file that drops
// the macvlan and puts its parent in a bridge applies in one go (the
// macvlan goes first), and back.
func TestMACVlanParentJoinsABridge(t *testing.T) {
	e := newEnv(t)
	base := "version: 1\nlinks:\n  b0: {kind: bridge}\n"
	mac := e.file("mac.yaml", base+"  v0a: {kind: veth, veth: {peer: v0b}}\n  v0b: {kind: veth, veth: {peer: v0a}}\n  m0: {kind: macvlan, macvlan: {parent: v0a, mode: bridge}}\n")
	port := e.file("port.yaml", base+"  v0a: {kind: veth, veth: {peer: v0b}, master: b0}\n  v0b: {kind: veth, veth: {peer: v0a}}\n")
	for _, f := range []string{mac, port, mac} {
		e.apply(f)
		e.noChanges(f)
	}
	if out := e.ip("-br", "link", "show"); !strings.Contains(out, "m0@v0a") {
		t.Errorf("links after the macvlan again:\n%s", out)
	}
}
