package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExampleRouter applies examples/router.yaml (issue 17: a bond, vlans on
// it, a vrf, a macvlan, an ECMP route and sysctls): a second apply changes
// nothing; the kernel holds what the file says; show --all renders it as a
// file that validates, and applying that rendering changes nothing either.
func TestExampleRouter(t *testing.T) {
	requireModules(t, "dummy", "bonding", "8021q", "vrf", "macvlan")
	ns := newNetNS(t, "")
	// The NICs, as the host has them.
	for _, n := range []string{"eth0", "eth1"} {
		ns.IP(t, "link", "add", n, "type", "dummy")
	}
	file := example(t, "router.yaml")
	state := t.TempDir()
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	out := runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	mustContain(t, "second apply", out, "No changes")

	mustContain(t, "ip -d link show bond0", ns.IP(t, "-d", "link", "show", "bond0"), "bond mode active-backup", "miimon 100")
	mustContain(t, "ip -d link show eth0", ns.IP(t, "-d", "link", "show", "eth0"), "master bond0")
	mustContain(t, "ip -d link show bond0.100", ns.IP(t, "-d", "link", "show", "bond0.100"), "vlan protocol 802.1Q id 100")
	mustContain(t, "ip -d link show bond0.200", ns.IP(t, "-d", "link", "show", "bond0.200"), "master mgmt")
	mustContain(t, "ip -d link show svc0", ns.IP(t, "-d", "link", "show", "svc0"), "macvlan mode bridge")
	mustContain(t, "ip route show", ns.IP(t, "route", "show"), "nexthop via 192.0.2.1 dev bond0", "nexthop via 192.0.2.3 dev bond0")
	mustContain(t, "ip route show vrf mgmt", ns.IP(t, "route", "show", "vrf", "mgmt"), "default via 10.200.0.254 dev bond0.200")
	mustContain(t, "sysctl", ns.Run(t, "sysctl", "-n", "net.ipv4.ip_forward", "net.ipv4.conf.bond0/100.rp_filter"), "1\n1")

	// show renders what netreconcile owns as a file: it validates, and
	// applying it changes nothing. show --all has the new kinds in the
	// schema too.
	shown := runNetreconcile(t, ns, "show", "--state-dir", state)
	rendered := filepath.Join(t.TempDir(), "shown.yaml")
	if err := os.WriteFile(rendered, []byte(shown), 0o644); err != nil {
		t.Fatal(err)
	}
	runNetreconcile(t, ns, "validate", "-c", rendered)
	runNetreconcile(t, ns, "diff", "-c", rendered, "--state-dir", state)
	all := runNetreconcile(t, ns, "show", "--all", "-c", file, "--state-dir", state)
	mustContain(t, "show --all", all, "bond: {mode: active-backup, miimon: 100}", "vlan: {parent: bond0, id: 100", "vrf: {table: 1000}", "macvlan: {parent: bond0.100",
		"nexthops:", "net.ipv4.ip_forward", "master: bond0", "type: broadcast")
}
