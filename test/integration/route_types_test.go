package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// The route types beyond unicast do what users declare them for, on the
// wire: a rule sends everything to table 100, where a throw route makes the
// lookup of the sink's prefix fall through to main (the ping answers) while
// the rest of table 100 is prohibit (the kernel refuses: EACCES); a local
// route in table local makes an address answer on this host without being
// on any link; an unreachable route answers EHOSTUNREACH at once.
func TestRouteTypesTraffic(t *testing.T) {
	e := newRteEnv(t)
	twoUplinks(t, e)
	f := e.file("a.yaml", `version: 1
links:
  up0: {kind: device}
  up1: {kind: device}
  lo: {kind: device, state: up}
routes:
  - {to: 198.51.100.0/24, via: 10.0.0.1, dev: up0}
  - {to: 203.0.113.0/24, via: 10.0.1.1, dev: up1}
  - {to: 198.51.100.0/24, type: throw, table: 100}
  - {to: 0.0.0.0/0, type: prohibit, table: 100}
  - {to: 192.0.2.77/32, type: local, dev: lo, table: local}
  - {to: 192.0.2.128/25, type: unreachable}
rules:
  - {priority: 100, table: 100}
`)
	e.apply(f)
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	ping := func(dst string) (string, error) {
		out, err := exec.Command("ip", "netns", "exec", e.ns, "ping", "-c", "1", "-W", "2", dst).CombinedOutput()
		return string(out), err
	}
	// throw: table 100 gives the lookup back, main routes it.
	if out, err := ping("198.51.100.1"); err != nil {
		t.Errorf("ping through the throw route: %v\n%s", err, out)
	}
	// prohibit: the rest of table 100; main's route to 203.0.113.0/24 is
	// never reached.
	out, err := ping("203.0.113.1")
	// iputils reads EACCES as a broadcast refused ("… check your local
	// firewall rules").
	if err == nil || !strings.Contains(out, "firewall") && !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Errorf("ping past the prohibit route: err %v, want the kernel's refusal (EACCES)\n%s", err, out)
	}
	// local: the address answers here.
	if out, err := ping("192.0.2.77"); err != nil {
		t.Errorf("ping the local route's address: %v\n%s", err, out)
	}
	nettest.IP(t, e.ns, "route", "show", "table", "local", "192.0.2.77")
	// unreachable, through main (the rule's table 100 is asked first: move
	// the rule away to reach main alone).
	e.ip("rule", "del", "priority", "100")
	out, err = ping("192.0.2.200")
	if err == nil || !strings.Contains(out, "No route to host") {
		t.Errorf("ping into the unreachable route: err %v, want EHOSTUNREACH\n%s", err, out)
	}
}
