package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// newSysEnv is newEnv in a namespace named sys-…, told apart from other
// jobs' on a shared machine.
func newSysEnv(t *testing.T) *env {
	return &env{t: t, ns: nettest.NewNetNSPrefixed(t, "sys"), state: t.TempDir(), dir: t.TempDir()}
}

// sysctl reads a key in the namespace independently of netreconcile:
// sysctl(8) run inside it by ip netns exec.
func (e *env) sysctl(key string) string {
	e.t.Helper()
	return strings.Join(strings.Fields(nettest.InNS(e.t, e.ns, "sysctl", "-n", key)), " ")
}

func (e *env) setSysctl(key, value string) {
	e.t.Helper()
	nettest.InNS(e.t, e.ns, "sysctl", "-q", "-w", key+"="+value)
}

func (e *env) wantSysctl(key, want string) {
	e.t.Helper()
	if got := e.sysctl(key); got != want {
		e.t.Errorf("%s = %q, want %q", key, got, want)
	}
}

// TestSysctlApply: apply sets global and per-link keys in the target
// namespace (and not the host's), records the old values, a second apply
// writes nothing, drift is repaired, a per-link key follows its link when
// the link is made again, keys that leave the file get their old values
// back, a key never declared is never touched, and an unknown key refuses
// the whole apply.
func TestSysctlApply(t *testing.T) {
	e := newSysEnv(t)
	// A fresh namespace copies the host's IPv4 "all" and "default"
	// values (net.core.devconf_inherit_init_net=0): start from known ones.
	e.setSysctl("net.ipv4.ip_forward", "0")
	e.setSysctl("net.ipv4.conf.all.accept_local", "1") // someone else's
	portRange := e.sysctl("net.ipv4.ip_local_port_range")
	hostRange := strings.Join(strings.Fields(nettest.Exec(t, "sysctl", "-n", "net.ipv4.ip_local_port_range")), " ")
	if portRange == "1024 65000" || hostRange == "1024 65000" {
		t.Skip("the port range already holds the test's value")
	}
	const cfg = `version: 1
sysctls:
  net.ipv4.ip_forward: 1
  net.ipv4.ip_local_port_range: "1024   65000"
links:
  sys0:
    kind: veth
    veth: {peer: sys1}
    sysctls: {ipv4.rp_filter: 2, ipv6.disable_ipv6: 1, ipv4.neigh.base_reachable_time_ms: 15000}
  sys1:
    kind: veth
    veth: {peer: sys0}
`
	f := e.file("s.yaml", cfg)
	out := e.apply(f)
	for _, w := range []string{"~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n", "+ sysctl net.ipv4.conf.sys0.rp_filter", "+ sysctl net.ipv6.conf.sys0.disable_ipv6"} {
		if !strings.Contains(out, w) {
			t.Errorf("apply output lacks %q:\n%s", w, out)
		}
	}
	e.wantSysctl("net.ipv4.ip_forward", "1")
	e.wantSysctl("net.ipv4.ip_local_port_range", "1024 65000")
	e.wantSysctl("net.ipv4.conf.sys0.rp_filter", "2")
	e.wantSysctl("net.ipv6.conf.sys0.disable_ipv6", "1")
	e.wantSysctl("net.ipv4.neigh.sys0.base_reachable_time_ms", "15000")
	e.wantSysctl("net.ipv4.conf.sys1.rp_filter", e.sysctl("net.ipv4.conf.default.rp_filter"))
	if got := strings.Join(strings.Fields(nettest.Exec(t, "sysctl", "-n", "net.ipv4.ip_local_port_range")), " "); got != hostRange {
		t.Fatalf("the host's port range changed: %q, was %q", got, hostRange)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	show := e.cli("show")
	for _, w := range []string{"sysctls:\n    net.ipv4.ip_forward: 1\n    net.ipv4.ip_local_port_range: \"1024 65000\"\n", "ipv4.rp_filter: 2"} {
		if !strings.Contains(show.Stdout, w) {
			t.Errorf("show lacks %q:\n%s", w, show.Stdout)
		}
	}

	// Drift, as the daemon's resync would see it.
	e.setSysctl("net.ipv4.ip_forward", "0")
	if out := e.apply(f); !strings.Contains(out, "~ sysctl net.ipv4.ip_forward") {
		t.Errorf("drift not repaired:\n%s", out)
	}
	e.wantSysctl("net.ipv4.ip_forward", "1")

	// The link made again by hand: its keys are set again.
	e.ip("link", "del", "sys0")
	out = e.apply(f)
	if !strings.Contains(out, "+ link sys0") || !strings.Contains(out, "+ sysctl net.ipv4.conf.sys0.rp_filter") {
		t.Errorf("apply after the link went:\n%s", out)
	}
	e.wantSysctl("net.ipv4.conf.sys0.rp_filter", "2")
	e.wantSysctl("net.ipv6.conf.sys0.disable_ipv6", "1")

	// Unknown key: nothing is written, not even the known ones.
	bad := e.file("bad.yaml", "version: 1\nsysctls:\n  net.ipv4.ip_forward: 0\n  net.ipv4.no_such_key: 1\n")
	r := e.cli("apply", "-c", bad)
	if r.Code == 0 || !strings.Contains(r.Stderr, "sysctl net.ipv4.no_such_key (declared at "+bad+":4:3): the kernel in this namespace has no such key") {
		t.Errorf("apply of an unknown key: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.wantSysctl("net.ipv4.ip_forward", "1")
	if r := e.cli("validate", "-c", bad); r.Code != 0 {
		t.Errorf("validate is offline and takes the key: exit %d\n%s", r.Code, r.Stderr)
	}

	// The keys leave the file: their old values come back.
	e.apply(e.file("links.yaml", strings.SplitN(cfg, "links:", 2)[0][:len("version: 1\n")]+"links:"+strings.ReplaceAll(strings.SplitN(cfg, "links:", 2)[1], "    sysctls: {ipv4.rp_filter: 2, ipv6.disable_ipv6: 1, ipv4.neigh.base_reachable_time_ms: 15000}\n", "")))
	e.wantSysctl("net.ipv4.ip_forward", "0")
	e.wantSysctl("net.ipv4.ip_local_port_range", portRange)
	e.wantSysctl("net.ipv4.conf.sys0.rp_filter", e.sysctl("net.ipv4.conf.default.rp_filter"))
	e.wantSysctl("net.ipv6.conf.sys0.disable_ipv6", "0")
	e.wantSysctl("net.ipv4.conf.all.accept_local", "1")
	if show := e.cli("show"); strings.Contains(show.Stdout, "sysctl") {
		t.Errorf("show after the restore still lists sysctls:\n%s", show.Stdout)
	}
}

// TestSysctlForwarding: with traffic. Namespace a (10.1.0.2) reaches b
// (10.2.0.2) through the router namespace only while netreconcile sets
// net.ipv4.ip_forward there; pruned from the file, it is back at 0 and the
// ping fails.
func TestSysctlForwarding(t *testing.T) {
	r := newSysEnv(t)
	a := nettest.NewNetNSPrefixed(t, "sys-a")
	b := nettest.NewNetNSPrefixed(t, "sys-b")
	r.setSysctl("net.ipv4.ip_forward", "0")
	nettest.Exec(t, "ip", "link", "add", "ra", "netns", r.ns, "type", "veth", "peer", "name", "a0", "netns", a)
	nettest.Exec(t, "ip", "link", "add", "rb", "netns", r.ns, "type", "veth", "peer", "name", "b0", "netns", b)
	for _, c := range [][]string{
		{a, "addr", "add", "10.1.0.2/24", "dev", "a0"}, {a, "link", "set", "a0", "up"}, {a, "route", "add", "default", "via", "10.1.0.1"},
		{b, "addr", "add", "10.2.0.2/24", "dev", "b0"}, {b, "link", "set", "b0", "up"}, {b, "route", "add", "default", "via", "10.2.0.1"},
		// Devices are the host's: netreconcile never sets them up.
		{r.ns, "link", "set", "ra", "up"}, {r.ns, "link", "set", "rb", "up"},
	} {
		nettest.IP(t, c[0], c[1:]...)
	}
	ping := func() bool {
		return exec.Command("ip", "netns", "exec", a, "ping", "-c", "1", "-W", "1", "10.2.0.2").Run() == nil
	}
	const devices = `version: 1
links:
  ra: {kind: device, addresses: [10.1.0.1/24]}
  rb: {kind: device, addresses: [10.2.0.1/24]}
`
	r.apply(r.file("no.yaml", devices))
	if ping() {
		t.Fatal("a reaches b before forwarding is on")
	}
	r.apply(r.file("fwd.yaml", devices+"sysctls: {net.ipv4.ip_forward: 1}\n"))
	r.wantSysctl("net.ipv4.ip_forward", "1")
	if !ping() {
		t.Fatal("a does not reach b with forwarding on")
	}
	r.apply(r.file("no.yaml", devices))
	r.wantSysctl("net.ipv4.ip_forward", "0")
	if ping() {
		t.Fatal("a still reaches b after the key left the file")
	}
}

// TestSysctlPromoteSecondaries: apply turns promote_secondaries on to delete
// an IPv4 address of an owned link; a file that declares it 0 for the link
// has its 0 back after the same apply, and a second apply changes nothing.
func TestSysctlPromoteSecondaries(t *testing.T) {
	e := newSysEnv(t)
	const cfg = "version: 1\nlinks:\n  sysbr0:\n    kind: bridge\n    addresses: [10.0.0.1/24, 10.0.0.2/24, 10.0.1.1/24]\n    sysctls: {ipv4.promote_secondaries: 0}\n"
	e.apply(e.file("a.yaml", cfg))
	e.wantSysctl("net.ipv4.conf.sysbr0.promote_secondaries", "0")
	f := e.file("b.yaml", strings.Replace(cfg, "10.0.0.1/24, ", "", 1))
	out := e.apply(f)
	if !strings.Contains(out, "~ sysctl net.ipv4.conf.sysbr0.promote_secondaries: written again") {
		t.Errorf("apply:\n%s", out)
	}
	e.wantSysctl("net.ipv4.conf.sysbr0.promote_secondaries", "0")
	if got := e.ip("-4", "-br", "addr", "show", "dev", "sysbr0"); !strings.Contains(got, "10.0.0.2/24") {
		t.Errorf("the secondary went with the primary: %s", got)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestSysctlForwardingWriteThrough: net.ipv4.ip_forward sets every link's
// forwarding when written, and when given back. A link's own forwarding key
// in the file keeps its value either way, and a second apply writes nothing.
func TestSysctlForwardingWriteThrough(t *testing.T) {
	e := newSysEnv(t)
	e.setSysctl("net.ipv4.ip_forward", "0")
	const link = "links:\n  sysd0:\n    kind: bridge\n    sysctls: {ipv4.forwarding: %s}\n"
	both := e.file("both.yaml", "version: 1\nsysctls: {net.ipv4.ip_forward: 1}\n"+strings.Replace(link, "%s", "0", 1))
	e.apply(both)
	e.wantSysctl("net.ipv4.ip_forward", "1")
	e.wantSysctl("net.ipv4.conf.sysd0.forwarding", "0")
	if r := e.cli("apply", "-c", both); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// ip_forward leaves the file and goes back to 0; the link says 1.
	only := e.file("only.yaml", "version: 1\n"+strings.Replace(link, "%s", "1", 1))
	e.apply(only)
	e.wantSysctl("net.ipv4.ip_forward", "0")
	e.wantSysctl("net.ipv4.conf.sysd0.forwarding", "1")
	if r := e.cli("apply", "-c", only); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// Turning IPv4 forwarding on makes the kernel set
// net.ipv4.conf.all.accept_redirects to 0 (inet_forward_change): a file
// that declares it 1 gets it written again after ip_forward, so that the
// apply converges at once and the second one writes nothing.
func TestIPForwardKeepsDeclaredAcceptRedirects(t *testing.T) {
	e := newEnv(t)
	f := e.file("s.yaml", "version: 1\nsysctls:\n  net.ipv4.conf.all.accept_redirects: 1\n")
	e.apply(f)
	e.file("s.yaml", "version: 1\nsysctls:\n  net.ipv4.conf.all.accept_redirects: 1\n  net.ipv4.ip_forward: 1\n")
	e.apply(f)
	if got := strings.TrimSpace(nettest.InNS(t, e.ns, "sysctl", "-n", "net.ipv4.conf.all.accept_redirects")); got != "1" {
		t.Fatalf("accept_redirects %s after the apply, want the file's 1", got)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// IPv6 turned back on on a link that is up with carrier (disable_ipv6 from 1
// to 0) sets the link's IPv6 MTU to the link's MTU (NETDEV_UP): the file's
// ipv6.mtu, which the kernel held, was lost in the apply that turned IPv6
// on, and the next pass wrote it (walk seed 424242, step 28: p1b's 1280
// became 1500). Turned on by the link's key, by the key given back when the
// file drops it, and by net.ipv6.conf.all.disable_ipv6.
func TestIPv6TurnedBackOnKeepsTheDeclaredIPv6MTU(t *testing.T) {
	const pair = "  p0: {kind: veth, veth: {peer: p1}, sysctls: {SYSCTLS}}\n  p1: {kind: veth, veth: {peer: p0}}\n"
	links := func(sysctls string) string { return strings.Replace(pair, "SYSCTLS", sysctls, 1) }
	for _, c := range []struct{ name, off, on string }{
		{"own key", "version: 1\nlinks:\n" + links("ipv6.disable_ipv6: 1, ipv6.mtu: 1280"),
			"version: 1\nlinks:\n" + links("ipv6.disable_ipv6: 0, ipv6.mtu: 1280")},
		{"key given back", "version: 1\nlinks:\n" + links("ipv6.disable_ipv6: 1, ipv6.mtu: 1280"),
			"version: 1\nlinks:\n" + links("ipv6.mtu: 1280")},
		{"all", "version: 1\nsysctls:\n  net.ipv6.conf.all.disable_ipv6: 1\nlinks:\n" + links("ipv6.mtu: 1280"),
			"version: 1\nsysctls:\n  net.ipv6.conf.all.disable_ipv6: 0\nlinks:\n" + links("ipv6.mtu: 1280")},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			off, on := e.file("off.yaml", c.off), e.file("on.yaml", c.on)
			e.apply(off)
			e.wantSysctl("net.ipv6.conf.p0.disable_ipv6", "1")
			e.wantSysctl("net.ipv6.conf.p0.mtu", "1280")
			e.apply(on)
			e.wantSysctl("net.ipv6.conf.p0.disable_ipv6", "0")
			e.wantSysctl("net.ipv6.conf.p0.mtu", "1280")
			e.converged(on)
		})
	}
}
