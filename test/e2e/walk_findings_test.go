package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Finding 33 (docs/walk-findings.md): a GUE FoU port is opened without
// FOU_ATTR_IPPROTO. Kernels that refuse an ipproto of 0 (the guest's 6.1.192
// among them) answered the library's request with ERANGE.
func TestWalkFindingFouGUE(t *testing.T) {
	requireModules(t, "fou", "fou6")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "gue.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nfou:\n  - {port: 5556, gue: true}\n  - {port: 5557, family: ipv6, gue: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	mustContain(t, "ip fou show", ns.IP(t, "fou", "show"), "port 5556 gue", "port 5557 gue -6")
	// A second diff exits 0 (runNetreconcile fails the test otherwise).
	runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
}

// Finding G2 (docs/walk-findings.md): a flow-based (external) ip6tnl was
// created without its protocol (the library sends IFLA_IPTUN_COLLECT_METADATA
// alone), so the kernel made each one ip6ip6 and a file saying any or ipip6
// replaced the tunnel on every apply. The kernel refuses a change to a
// collect_md tunnel: the mode must be right at the create.
// Walk finding 44 (guest seed 108845286634944, step 5).
func TestWalkFindingExternalIP6TnlMode(t *testing.T) {
	requireModules(t, "ip6_tunnel")
	for mode, want := range map[string]string{"any": "any", "ipip6": "ipip6", "ip6ip6": "ip6ip6", "": "ip6ip6"} {
		t.Run("mode="+mode, func(t *testing.T) {
			ns := newNetNS(t, "")
			dir, state := t.TempDir(), t.TempDir()
			file := filepath.Join(dir, "t.yaml")
			m := ""
			if mode != "" {
				m = "mode: " + mode + ", "
			}
			cfg := "version: 1\nlinks:\n  t6: {kind: ip6tnl, ip6tnl: {" + m + "external: true}}\n"
			if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
			// iproute2 prints the protocol of an ip6tnl as "ipip6", "ip6ip6" or "any".
			mustContain(t, "ip -d -j link show t6", ns.IP(t, "-d", "-j", "link", "show", "t6"), `"external":true`, `"proto":"`+want+`"`)
			// A second diff exits 0 (runNetreconcile fails the test otherwise).
			runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		})
	}
}

// Finding 45 (docs/walk-findings.md): a link whose ipvlan the file drops and
// which joins a bridge in the same apply met EBUSY: the join ran before the
// stale ipvlan's delete, and a device carries a bridge port or ipvlans, not
// both.
func TestWalkFindingIPVlanGoneBeforeParentJoins(t *testing.T) {
	requireModules(t, "dummy", "ipvlan")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "j.yaml")
	for i, cfg := range []string{
		"version: 1\nlinks:\n  b0: {kind: bridge}\n  d1: {kind: dummy}\n  i1: {kind: ipvlan, ipvlan: {parent: d1, mode: l3s}}\n",
		"version: 1\nlinks:\n  b0: {kind: bridge}\n  d1: {kind: dummy, master: b0}\n",
	} {
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		if i == 1 {
			mustContain(t, "ip link show d1", ns.IP(t, "link", "show", "d1"), "master b0")
		}
	}
}

// Finding 48 (docs/walk-findings.md): the kernel gives a vlan its parent's
// admin state. A parent brought up brought up the vlan the file wants down
// (a second apply set it down again), a vlan set up before its parent (name
// order) met ENETDOWN, and a vlan whose parent joined a vrf lost its IPv6
// addresses with the cycle.
func TestWalkFindingVLANFollowsParent(t *testing.T) {
	requireModules(t, "dummy", "8021q", "vrf")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "v.yaml")
	vlans := func(a5, z6 string) string {
		return "  a5: {kind: vlan, state: " + a5 + ", vlan: {parent: p0, id: 5}, addresses: [10.5.0.1/24, 'fd00:5::1/64']}\n" +
			"  z6: {kind: vlan, state: " + z6 + ", vlan: {parent: p0, id: 6}, addresses: ['fd00:6::1/64']}\n"
	}
	for i, cfg := range []string{
		"version: 1\nlinks:\n  p0: {kind: dummy}\n" + vlans("up", "down"),
		"version: 1\nlinks:\n  p0: {kind: dummy, state: down}\n" + vlans("down", "down"),
		"version: 1\nlinks:\n  p0: {kind: dummy}\n" + vlans("up", "down"),
		"version: 1\nlinks:\n  blue: {kind: vrf, vrf: {table: 10}}\n  p0: {kind: dummy, master: blue}\n" + vlans("up", "down"),
	} {
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		// A second diff exits 0 (runNetreconcile fails the test otherwise).
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		if i >= 2 {
			if out := ns.IP(t, "-o", "link", "show", "z6"); strings.Contains(out, ",UP") || strings.Contains(out, "<UP") {
				t.Errorf("step %d: z6 is up, the file wants it down: %s", i+1, out)
			}
			mustContain(t, "ip -o link show a5", ns.IP(t, "-o", "link", "show", "a5"), ",UP,")
			mustContain(t, "ip -6 addr show dev a5", ns.IP(t, "-6", "addr", "show", "dev", "a5"), "fd00:5::1/64")
			mustContain(t, "ip -6 addr show dev z6", ns.IP(t, "-6", "addr", "show", "dev", "z6"), "fd00:6::1/64")
		}
	}
}

// Findings 50 and 51 (docs/walk-findings.md): a link that is down loses
// nothing when it joins a bond, so the IPv6 address the file drops must be
// deleted (it was taken for flushed and kept); a link that joins a vrf
// loses every IPv4 route through it, local ones included (they were taken
// to survive, as they do a plain down, and went missing).
// Walk finding 50 (guest seed 115480027701323, step 95).
// Walk finding 51 (guest seed 115479798538653, step 67).
func TestWalkFindingMasterChangeTakes(t *testing.T) {
	requireModules(t, "dummy", "bonding", "vrf")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	for i, cfg := range []string{
		"version: 1\nlinks:\n  o0: {kind: bond}\n  d0: {kind: dummy, state: down, addresses: ['fd00:95::2/64']}\n" +
			"  r1: {kind: vrf, vrf: {table: 1001}}\n  m0: {kind: dummy, addresses: [10.150.0.1/24, 'fd00:1c::3/64']}\n" +
			"routes:\n  - {to: 172.16.0.0/24, type: local, dev: m0}\n",
		"version: 1\nlinks:\n  o0: {kind: bond}\n  d0: {kind: dummy, master: o0}\n" +
			"  r1: {kind: vrf, vrf: {table: 1001}}\n  m0: {kind: dummy, master: r1, addresses: [10.150.0.1/24, 'fd00:1c::3/64']}\n" +
			"routes:\n  - {to: 172.16.0.0/24, type: local, dev: m0}\n",
	} {
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		// A second diff exits 0 (runNetreconcile fails the test otherwise).
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		mustContain(t, "ip route show table main type local", ns.IP(t, "route", "show", "table", "main", "type", "local"), "local 172.16.0.0/24 dev m0")
		mustContain(t, "ip -6 addr show dev m0", ns.IP(t, "-6", "addr", "show", "dev", "m0"), "fd00:1c::3/64")
		if i == 1 {
			if out := ns.IP(t, "-6", "addr", "show", "dev", "d0"); strings.Contains(out, "fd00:95::2") {
				t.Errorf("d0 keeps fd00:95::2/64, which the file dropped:\n%s", out)
			}
		}
	}
}

// Walk guest seed 136258132862932, step 72: the bonding driver gives a
// member it releases back the MTU it had before it joined. A dummy in a
// 9000-byte bond shows 9000; once the bond is gone, the file declares it
// with MTU 9000: the MTU is written again, after the release (it was left
// at 1500, and the next diff planned it).
// Walk finding 57 (guest seed 136258132862932, step 72).
func TestWalkFindingBondReleaseMTU(t *testing.T) {
	requireModules(t, "dummy", "bonding")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	for i, cfg := range []string{
		"version: 1\nlinks:\n  o1: {kind: bond, mtu: 9000}\n  d0: {kind: dummy, master: o1}\n",
		"version: 1\nlinks:\n  d0: {kind: dummy, mtu: 9000}\n",
	} {
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		// A second diff exits 0 (runNetreconcile fails the test otherwise).
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		out := ns.IP(t, "-o", "link", "show", "d0")
		mustContain(t, "ip -o link show d0", out, " mtu 9000 ")
		if i == 1 && strings.Contains(out, "master") {
			t.Errorf("d0 is still enslaved: %s", out)
		}
	}
}

// Guest soak on 80677b9, walk seed 139974179019904, step 86: the kernel
// gives an ipvlan its parent's MTU whenever the parent's changes. An
// ipvlan declared with MTU 1280 on a dummy going from 9000 to 1500 gets
// its MTU written again, after the dummy's (it was left at 1500, and the
// next diff planned it).
// Walk finding 59 (guest seed 139974179019904, step 86).
func TestWalkFindingIPVlanMTUFollowsParent(t *testing.T) {
	requireModules(t, "dummy", "ipvlan")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	// The third step also makes i1 while d0 changes: the creates go
	// first, and d0's change then resets the new ipvlan too.
	for i, mtu := range []string{"9000", "1500", "9000"} {
		cfg := "version: 1\nlinks:\n  d0: {kind: dummy, mtu: " + mtu + "}\n  i0: {kind: ipvlan, mtu: 1280, ipvlan: {parent: d0, mode: l2}}\n"
		if i == 2 {
			cfg += "  i1: {kind: ipvlan, mtu: 1280, ipvlan: {parent: d0, mode: l2}}\n"
		}
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		// A second diff exits 0 (runNetreconcile fails the test otherwise).
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		mustContain(t, "ip -o link show i0", ns.IP(t, "-o", "link", "show", "i0"), " mtu 1280 ")
		mustContain(t, "ip -o link show d0", ns.IP(t, "-o", "link", "show", "d0"), " mtu "+mtu+" ")
		if i == 2 {
			mustContain(t, "ip -o link show i1", ns.IP(t, "-o", "link", "show", "i1"), " mtu 1280 ")
		}
	}
}

// 62. A route through a vrf, in a table other than the vrf's, behind a
// catch-all blackhole rule: the kernel's gateway check falls back to a
// policy lookup, which the rule takes before the kernel's l3mdev rule, and
// the guard rule of the retry looked the gateway up in main, where a vrf's
// connected routes are not. The guard looks it up in the vrf's table.
// Walk finding 62 (guest seed 84443809358117, step 103).
func TestWalkFindingGatewayThroughVRF(t *testing.T) {
	requireModules(t, "vrf")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "v.yaml")
	// The rule is there before the routes: the plan adds routes before
	// rules, and a rule the same plan adds is not in the way yet.
	base := `version: 1
links:
  r1: {kind: vrf, vrf: {table: 1002}, addresses: [10.184.0.1/24]}
rules:
  - {priority: 200, family: ipv4, action: blackhole}
`
	for _, cfg := range []string{base, base + `routes:
  - {to: 172.16.5.0/24, via: 10.184.0.200, dev: r1, table: 1001, tos: 16}
  - {to: 172.16.6.0/24, via: 10.184.0.200, dev: r1, table: 1001}
`} {
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
	}
	mustContain(t, "ip route show table 1001", ns.IP(t, "route", "show", "table", "1001"), "172.16.5.0/24 tos 0x10 via 10.184.0.200 dev r1")
	// No guard is left.
	if out := ns.IP(t, "rule", "show"); strings.Contains(out, "10.184.0.200") {
		t.Errorf("a guard rule is left:\n%s", out)
	}
}

// Walk finding 65 (guest soak, seed 136921388777499, step 18): a device
// carries macvlans or ipvlans, not both (each holds its receive handler:
// EBUSY, "Device is already in use"). A file that trades the macvlan of a
// parent for an ipvlan, and back, applies in one go: the stale one goes
// first.
func TestWalkFindingMacvlanTradedForIPVlan(t *testing.T) {
	requireModules(t, "dummy", "macvlan", "ipvlan")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	base := "version: 1\nlinks:\n  d1: {kind: dummy, state: up}\n"
	mac := base + "  m0: {kind: macvlan, macvlan: {parent: d1, mode: bridge}}\n"
	ipv := base + "  i0: {kind: ipvlan, ipvlan: {parent: d1, mode: l2}}\n"
	for _, c := range []struct{ cfg, has, gone string }{{mac, "m0", "i0"}, {ipv, "i0", "m0"}, {mac, "m0", "i0"}} {
		if err := os.WriteFile(file, []byte(c.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		out := ns.IP(t, "-br", "link", "show")
		if !strings.Contains(out, c.has+"@d1") || strings.Contains(out, c.gone+"@") {
			t.Fatalf("links after the file with %s:\n%s", c.has, out)
		}
	}
}

// Walk seed 31120218735296 (guest): a route outside a VRF's table whose
// IPv4 source is an address of the VRF (or of one of its ports) met EINVAL
// at apply. The kernel looks a source up among the local addresses of the
// route's table and of table local, and a VRF's are in its own table. Shown
// here with ip on the real kernel (refused in table 200, taken in the VRF's
// table 1001), then netreconcile's validation refuses the first with the
// reason and takes the second.
// Walk finding 67 (guest seed 31120218735296, step 52).
func TestWalkFindingVRFSourceOutsideItsTable(t *testing.T) {
	requireModules(t, "vrf")
	ns := newNetNS(t, "")
	ns.IP(t, "link", "add", "r1", "type", "vrf", "table", "1001")
	ns.IP(t, "link", "set", "r1", "up")
	ns.IP(t, "addr", "add", "10.183.1.3/24", "dev", "r1")
	if _, errOut, err := ns.Exec("", ipBin, "route", "add", "172.16.5.0/24", "via", "10.183.1.200", "dev", "r1", "src", "10.183.1.3", "table", "200"); err == nil || !strings.Contains(errOut, "Invalid prefsrc") {
		t.Errorf("the kernel took a source of a VRF for table 200: %v %s", err, errOut)
	}
	ns.IP(t, "route", "add", "172.16.5.0/24", "via", "10.183.1.200", "dev", "r1", "src", "10.183.1.3", "table", "1001")
	ns.IP(t, "link", "del", "r1")

	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "v.yaml")
	links := "version: 1\nlinks:\n  r1: {kind: vrf, vrf: {table: 1001}, addresses: [10.183.1.3/24]}\nroutes:\n"
	if err := os.WriteFile(file, []byte(links+"  - {to: 172.16.5.0/24, via: 10.183.1.200, dev: r1, src: 10.183.1.3, table: 200}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := ns.Exec("", netreconcileBin(t), "apply", "-c", file, "--state-dir", state); err == nil || !strings.Contains(errOut, "in VRF r1 (table 1001)") {
		t.Fatalf("apply of a VRF's source outside its table: %v\n%s%s", err, out, errOut)
	}
	if err := os.WriteFile(file, []byte(links+"  - {to: 172.16.5.0/24, via: 10.183.1.200, dev: r1, src: 10.183.1.3, table: 1001}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
}

// 105. net.ipv6.conf.*.ignore_routes_with_linkdown on Debian 12's 6.1
// answers a write of "1\n" with a count of 1 after it has set the value
// (the handler returns its own result, not the bytes it took); Go's
// File.Write then wrote the newline alone, which the kernel refused with
// EINVAL: the apply failed on a key the kernel had set (every link's too,
// through all.), and the ledger never recorded the value to give back.
// The value, family-wide and a link's, is applied, converges, and goes
// back when the file drops it.
// Walk finding 105 (guest soak seed 50322676071162, step 9).
func TestWalkFinding105IgnoreRoutesWithLinkdownTakenOnAShortWrite(t *testing.T) {
	requireModules(t, "dummy")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	all := "/proc/sys/net/ipv6/conf/all/ignore_routes_with_linkdown"
	link := "/proc/sys/net/ipv6/conf/d5/ignore_routes_with_linkdown"
	for _, step := range []struct{ cfg, all, link string }{
		{"version: 1\nlinks:\n  d5: {kind: dummy}\n", "0", "0"},
		{"version: 1\nsysctls:\n  net.ipv6.conf.all.ignore_routes_with_linkdown: 1\nlinks:\n  d5: {kind: dummy, sysctls: {ipv6.ignore_routes_with_linkdown: 0}}\n", "1", "0"},
		{"version: 1\nlinks:\n  d5: {kind: dummy, sysctls: {ipv6.ignore_routes_with_linkdown: 1}}\n", "0", "1"},
		{"version: 1\nlinks:\n  d5: {kind: dummy}\n", "0", "0"},
	} {
		if err := os.WriteFile(file, []byte(step.cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		// A second diff exits 0 (runNetreconcile fails the test otherwise).
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		if got := strings.TrimSpace(ns.Run(t, "cat", all)); got != step.all {
			t.Errorf("after\n%s%s: %s, want %s", step.cfg, all, got, step.all)
		}
		if got := strings.TrimSpace(ns.Run(t, "cat", link)); got != step.link {
			t.Errorf("after\n%s%s: %s, want %s", step.cfg, link, got, step.link)
		}
	}
}

// An MTU write that the kernel passes on to a link netreconcile did not
// make waits, and the link written keeps its MTU: an ipvlan takes its
// parent's MTU either way (here raised), and a bond gives its MTU to its
// ports. The host holds the macvlan case (test/integration,
// TestWalkFindingMTUWriteWaitsForTheLinksItLowers); these kinds are the
// guest's. Walk finding 191 (found by reading, issue 30).
func TestWalkFindingMTUWriteWaitsForForeignIPVlanAndBondPort(t *testing.T) {
	requireModules(t, "dummy", "ipvlan", "bonding")
	for _, c := range []struct {
		name, before, after, setup, link, foreign, mtu string
	}{{
		name:    "ipvlan",
		before:  "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 1500}\n",
		after:   "version: 1\nlinks:\n  d0: {kind: dummy, mtu: 9000}\n",
		setup:   "link add fi0 link d0 type ipvlan mode l2",
		link:    "d0",
		foreign: "fi0",
		mtu:     "1500",
	}, {
		name:    "bond port",
		before:  "version: 1\nlinks:\n  bond0: {kind: bond, mtu: 1500}\n",
		after:   "version: 1\nlinks:\n  bond0: {kind: bond, mtu: 1400}\n",
		setup:   "link add fd1 type dummy\nlink set fd1 master bond0",
		link:    "bond0",
		foreign: "fd1",
		mtu:     "1500",
	}, {
		// A port of ours joins in the same apply: apply sets a master's
		// declared MTU again after the link ops, and did so here
		// whatever the plan had held back (walk finding 199).
		name:    "bond port, a port joins (199)",
		before:  "version: 1\nlinks:\n  bond0: {kind: bond, mtu: 1500}\n",
		after:   "version: 1\nlinks:\n  bond0: {kind: bond, mtu: 1400}\n  d2: {kind: dummy, master: bond0}\n",
		setup:   "link add fd1 type dummy\nlink set fd1 master bond0",
		link:    "bond0",
		foreign: "fd1",
		mtu:     "1500",
	}} {
		t.Run(c.name, func(t *testing.T) {
			ns := newNetNS(t, "")
			dir, state := t.TempDir(), t.TempDir()
			file := filepath.Join(dir, "m.yaml")
			if err := os.WriteFile(file, []byte(c.before), 0o644); err != nil {
				t.Fatal(err)
			}
			runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
			for _, line := range strings.Split(c.setup, "\n") {
				ns.IP(t, strings.Fields(line)...)
			}
			if err := os.WriteFile(file, []byte(c.after), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := ns.Exec("", netreconcileBin(t), "apply", "-c", file, "--state-dir", state)
			want := "link " + c.link + " keeps its mtu " + c.mtu
			if err == nil || !strings.Contains(errOut, want) || !strings.Contains(errOut, c.foreign) {
				t.Errorf("apply: %v, want a conflict saying %q\nstdout:\n%s\nstderr:\n%s", err, want, out, errOut)
			}
			mustContain(t, "ip -o link show "+c.foreign, ns.IP(t, "-o", "link", "show", c.foreign), " mtu "+c.mtu+" ")
			mustContain(t, "ip -o link show "+c.link, ns.IP(t, "-o", "link", "show", c.link), " mtu "+c.mtu+" ")
		})
	}
}

// A netdev base chain hooks its device again when the apply makes the
// device again: before 6.16 the kernel deletes a base chain, rules and
// all, with the last device it hooks, so the table waits for the link
// and the same apply writes the chain back. The host's kernel keeps the
// hook by name (test/integration holds that case).
// Walk finding 198 (found by reading, issue 30).
func TestWalkFinding198NetdevChainOnARecreatedLink(t *testing.T) {
	requireModules(t, "vxlan", "veth", "nf_tables")
	for _, c := range []struct{ name, before, after, dev string }{{
		name:   "vxlan id",
		before: "  vx0: {kind: vxlan, vxlan: {id: 7}}\n",
		after:  "  vx0: {kind: vxlan, vxlan: {id: 8}}\n",
		dev:    "vx0",
	}, {
		name:   "veth peer",
		before: "  v0: {kind: veth, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
		after:  "  v0: {kind: veth, veth: {peer: v2}}\n  v2: {kind: veth, veth: {peer: v0}}\n",
		dev:    "v0",
	}} {
		t.Run(c.name, func(t *testing.T) {
			ns := newNetNS(t, "")
			dir, state := t.TempDir(), t.TempDir()
			file := filepath.Join(dir, "n.yaml")
			write := func(links string) {
				cfg := "version: 1\nlinks:\n" + links +
					"nftables:\n  netdev t:\n    chains:\n      in: {type: filter, hook: ingress, device: " + c.dev + ", priority: 0, rules: [counter accept]}\n"
				if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(c.before)
			runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
			before := ifindex(t, ns, c.dev)
			write(c.after)
			runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
			if after := ifindex(t, ns, c.dev); after == before {
				t.Fatalf("%s was not made again (ifindex %s)", c.dev, after)
			}
			mustContain(t, "nft list table netdev t", ns.Nft(t, "list", "table", "netdev", "t"), `device "`+c.dev+`"`, "counter")
			// A second diff exits 0 (runNetreconcile fails the test otherwise).
			runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
			shown := runNetreconcile(t, ns, "show", "-c", file, "--state-dir", state)
			mustContain(t, "show", shown, "device: "+c.dev)
			if err := os.WriteFile(file, []byte(shown), 0o644); err != nil {
				t.Fatal(err)
			}
			runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		})
	}
}
