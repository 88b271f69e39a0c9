package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The vlan, macvlan, vrf and bond blocks: every wrong value is reported at
// its position, with the field path and what would be accepted.
// Walk finding 48 (guest seed 114581640004126, step 20).
// Walk finding 52 (guest seed 118039732938391, step 42).
func TestLinkKindErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{{
		name: "vlan id, protocol, parent",
		file: "version: 1\nlinks:\n  eth0: {kind: device}\n" +
			"  v1: {kind: vlan, vlan: {parent: eth0, id: 4095, protocol: 802.1x}}\n" +
			"  v2: {kind: vlan, vlan: {parent: eth9}}\n" +
			"  v3: {kind: vlan}\n",
		want: "f.yaml:4:45: links.v1.vlan.id: expected a VLAN id from 0 to 4094, found 4095\n" +
			"f.yaml:4:61: links.v1.vlan.protocol: expected 802.1q or 802.1ad, found \"802.1x\"\n" +
			"f.yaml:5:26: links.v2.vlan.id: missing; expected a VLAN id from 0 to 4094\n" +
			"f.yaml:5:35: links.v2.vlan.parent: link \"eth9\" is not declared; declare it (kind device for an existing NIC)\n" +
			"f.yaml:6:7: links.v3.vlan: missing; a vlan link needs a \"vlan\" block",
	}, {
		name: "macvlan mode and parent",
		file: "version: 1\nlinks:\n  eth0: {kind: device}\n  wg0: {kind: ipip, ipip: {remote: 192.0.2.1}}\n" +
			"  m0: {kind: macvlan, macvlan: {parent: eth0, mode: l2}}\n" +
			"  m1: {kind: macvlan, macvlan: {parent: m0}}\n" +
			"  m2: {kind: macvlan, macvlan: {parent: wg0}}\n" +
			"  m3: {kind: macvlan, macvlan: {parent: eth0, mode: passthru}}\n",
		want: "f.yaml:5:53: links.m0.macvlan.mode: expected private, vepa, bridge or passthru, found \"l2\"\n" +
			"f.yaml:6:41: links.m1.macvlan.parent: link \"m0\" is a macvlan; a macvlan sits on its real parent (the kernel would put it there)\n" +
			"f.yaml:7:41: links.m2.macvlan.parent: link \"wg0\" is a ipip; a macvlan sits on an Ethernet link (a NIC, veth, bond, bridge...)\n" +
			"f.yaml:8:53: links.m3.macvlan.mode: a passthru macvlan is the only macvlan on its parent, and macvlan \"m0\" sits on \"eth0\" too",
	}, {
		name: "vrf table",
		file: "version: 1\nlinks:\n  a: {kind: vrf, vrf: {table: 254}}\n  b: {kind: vrf, vrf: {table: 10}}\n  c: {kind: vrf, vrf: {table: 10}}\n  d: {kind: vrf, vrf: {}}\n  e: {kind: vrf, master: b, vrf: {table: 11}}\n",
		want: "f.yaml:3:31: links.a.vrf.table: expected a table from 1 to 4294967295 other than 253 (default), 254 (main) and 255 (local), found 254\n" +
			"f.yaml:4:31: links.b.vrf.table: vrf \"c\" uses table 10 too; give each vrf a table of its own\n" +
			"f.yaml:5:31: links.c.vrf.table: vrf \"b\" uses table 10 too; give each vrf a table of its own\n" +
			"f.yaml:6:23: links.d.vrf.table: missing; expected the routing table of the vrf (1-4294967295, not 253, 254 or 255)\n" +
			"f.yaml:7:26: links.e.master: a vrf link cannot be enslaved to vrf \"b\": the kernel does not nest vrfs",
	}, {
		name: "bond mode and members",
		file: "version: 1\nlinks:\n  lo: {kind: device}\n  b0: {kind: bond, bond: {mode: lacp}}\n" +
			"  t0: {kind: ipip, master: b0, ipip: {remote: 192.0.2.1}}\n" +
			"  d0: {kind: dummy, master: b0, mtu: 1400}\n" +
			"  lo2: {kind: dummy, master: d0}\n" +
			"  d1: {kind: dummy, master: b0}\n  mv: {kind: macvlan, macvlan: {parent: d1}}\n",
		want: "f.yaml:4:33: links.b0.bond.mode: expected one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb, found \"lacp\"\n" +
			"f.yaml:5:28: links.t0.master: a ipip link cannot be a member of bond \"b0\": a bond takes Ethernet devices, and this is an IP tunnel\n" +
			"f.yaml:6:38: links.d0.mtu: a member of bond \"b0\" takes the bond's MTU (the kernel sets it on every member); give the mtu on the bond\n" +
			"f.yaml:7:30: links.lo2.master: link \"d0\" is a dummy; a master must be a bridge, vrf or bond\n" +
			"f.yaml:8:29: links.d1.master: a dummy link cannot be a member of bond \"b0\": it is the parent of macvlan \"mv\", and a link has one receive handler, for the bond or for the macvlan",
	}, {
		name: "a bridge port cannot carry macvlans",
		file: "version: 1\nlinks:\n  br0: {kind: bridge}\n  d0: {kind: dummy, master: br0}\n  mv: {kind: macvlan, macvlan: {parent: d0}}\n",
		want: "f.yaml:4:29: links.d0.master: a dummy link cannot be a port of bridge \"br0\": it is the parent of macvlan \"mv\", and a link has one receive handler, for the bridge or for the macvlan",
	}, {
		name: "two vlans of one id on one parent",
		file: "version: 1\nlinks:\n  eth0: {kind: device}\n  a: {kind: vlan, vlan: {parent: eth0, id: 5}}\n  b: {kind: vlan, vlan: {parent: eth0, id: 5, protocol: 802.1q}}\n  c: {kind: vlan, vlan: {parent: eth0, id: 5, protocol: 802.1ad}}\n",
		want: "f.yaml:4:44: links.a.vlan.id: vlan \"b\" has id 5 on \"eth0\" with the same protocol; the kernel holds one vlan per parent, protocol and id\n" +
			"f.yaml:5:44: links.b.vlan.id: vlan \"a\" has id 5 on \"eth0\" with the same protocol; the kernel holds one vlan per parent, protocol and id",
	}, {
		name: "a vlan or macvlan parent loop",
		file: "version: 1\nlinks:\n  v1: {kind: vlan, vlan: {parent: v2, id: 1}}\n  v2: {kind: vlan, vlan: {parent: v1, id: 2}}\n",
		want: "f.yaml:4:35: links.v2.vlan.parent: links reference each other in a cycle (v1 parent v2, v2 parent v1); each link's master, dev or parent must be created before it",
	}, {
		name: "the MTU a vrf has by default, and lo's, validate",
		file: "version: 1\nlinks:\n  lo: {kind: device, mtu: 65536}\n  a: {kind: vrf, mtu: 65575, vrf: {table: 10}}\n  b: {kind: vrf, mtu: 65576, vrf: {table: 11}}\n  c: {kind: dummy, mtu: 65536}\n",
		want: "f.yaml:5:23: links.b.mtu: expected an MTU from 68 to 65575 for a vrf link, found 65576\n" +
			"f.yaml:6:25: links.c.mtu: expected an MTU from 68 to 65535 for a dummy link, found 65536",
	}, {
		name: "a macvlan and an ipvlan on one parent",
		file: "version: 1\nlinks:\n  d0: {kind: dummy}\n  i1: {kind: ipvlan, ipvlan: {parent: d0}}\n  m0: {kind: macvlan, macvlan: {parent: d0}}\n",
		want: "f.yaml:5:41: links.m0.macvlan.parent: \"d0\" is the parent of ipvlan \"i1\", and a link has one receive handler, for its ipvlans or for its macvlans",
	}, {
		name: "a vlan up on a parent declared down",
		file: "version: 1\nlinks:\n  d0: {kind: dummy, state: down}\n  v1: {kind: vlan, vlan: {parent: d0, id: 1}}\n  v2: {kind: vlan, state: up, vlan: {parent: d0, id: 2}}\n  v3: {kind: vlan, state: down, vlan: {parent: d0, id: 3}}\n",
		want: "f.yaml:4:35: links.v1.vlan.parent: a vlan is up only while its parent is, and \"d0\" is declared down (the kernel takes its vlans down with it); give this link state: down too, or bring \"d0\" up\n" +
			"f.yaml:5:27: links.v2.state: a vlan is up only while its parent is, and \"d0\" is declared down (the kernel takes its vlans down with it); give this link state: down too, or bring \"d0\" up",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(t, src("f.yaml", tc.file)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Omitted keys take the documented defaults.
func TestLinkKindDefaults(t *testing.T) {
	cfg, err := Parse([]Source{src("f.yaml", "version: 1\nlinks:\n  eth0: {kind: device}\n"+
		"  v1: {kind: vlan, vlan: {parent: eth0, id: 7}}\n"+
		"  m1: {kind: macvlan, macvlan: {parent: eth0}}\n"+
		"  b0: {kind: bond}\n"+
		"  b1: {kind: bond, bond: {mode: 802.3ad, miimon: 0}}\n"+
		"  r: {kind: vrf, vrf: {table: 4000000000}}\n")})
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.State
	got := map[string]any{"v1": *st.Links["v1"].VLAN, "m1": *st.Links["m1"].MACVlan, "b0": *st.Links["b0"].Bond, "b1": *st.Links["b1"].Bond, "r": *st.Links["r"].VRF}
	want := map[string]any{
		"v1": model.VLAN{Parent: "eth0", ID: 7, Protocol: "802.1q"},
		"m1": model.MACVlan{Parent: "eth0", Mode: "bridge"},
		"b0": model.Bond{Mode: "balance-rr", Miimon: 100},
		"b1": model.Bond{Mode: "802.3ad", Miimon: 0},
		"r":  model.VRF{Table: 4000000000},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
}

// Walk finding 151 (issue 30, guest probe): a bond's miimon above INT_MAX
// validated, and the kernel refused the bond at apply (EINVAL).
func TestWalkFinding151BondMiimonAboveIntMax(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nlinks:\n  b0: {kind: bond, bond: {miimon: 2147483648}}\n  b1: {kind: bond, bond: {miimon: 2147483647}}\n"))
	want := "f.yaml:3:35: links.b0.bond.miimon: expected milliseconds from 0 (off) to 2147483647 (the kernel keeps it in an int), found 2147483648"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}
