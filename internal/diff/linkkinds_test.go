package diff_test

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// vlan, macvlan, vrf and bond: what the kernel changes in place is an
// update, what it fixes at creation a replace, and the plan says which.
func TestLinkKindsInPlaceOrReplace(t *testing.T) {
	eth := model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}
	vlan := func(id uint16, proto string) model.Link {
		return model.Link{Name: "v0", Kind: model.KindVLAN, Owned: true, Up: true, Lower: "eth0", VLAN: &model.VLAN{Parent: "eth0", ID: id, Protocol: proto}}
	}
	mv := func(mode string) model.Link {
		return model.Link{Name: "mv0", Kind: model.KindMACVlan, Owned: true, Up: true, Lower: "eth0", MACVlan: &model.MACVlan{Parent: "eth0", Mode: mode}}
	}
	vrf := func(table uint32) model.Link {
		return model.Link{Name: "blue", Kind: model.KindVRF, Owned: true, Up: true, VRF: &model.VRF{Table: table}}
	}
	bond := func(mode string, miimon uint32) model.Link {
		return model.Link{Name: "bond0", Kind: model.KindBond, Owned: true, Up: true, Bond: &model.Bond{Mode: mode, Miimon: miimon}}
	}
	member := model.Link{Name: "a0", Kind: model.KindDummy, Owned: true, Up: true, Master: "bond0"}
	run(t, []tc{{
		name: "create each kind after its parent",
		file: "links:\n  eth0: {kind: device}\n  v0: {kind: vlan, vlan: {parent: eth0, id: 10}}\n  mv0: {kind: macvlan, master: blue, macvlan: {parent: v0}}\n" +
			"  blue: {kind: vrf, vrf: {table: 10}}\n  bond0: {kind: bond}\n  a0: {kind: dummy, master: bond0}\n",
		kernel: newKernel().link(eth),
		plan: `
+ link blue (vrf table 10)
+ link bond0 (bond mode balance-rr miimon 100)
+ link v0 (vlan parent eth0 id 10 protocol 802.1q)
+ link a0 (dummy master bond0)
+ link mv0 (macvlan parent v0 mode bridge master blue)
`,
	}, {
		name:   "unchanged: nothing to do",
		file:   "links:\n  eth0: {kind: device}\n  v0: {kind: vlan, vlan: {parent: eth0, id: 10}}\n  mv0: {kind: macvlan, macvlan: {parent: eth0, mode: vepa}}\n  blue: {kind: vrf, vrf: {table: 10}}\n  bond0: {kind: bond, bond: {mode: active-backup}}\n",
		kernel: newKernel().link(eth).link(vlan(10, "802.1q")).link(mv("vepa")).link(vrf(10)).link(bond("active-backup", 100)),
		plan:   "",
	}, {
		name:   "vlan id: replace",
		file:   "links:\n  eth0: {kind: device}\n  v0: {kind: vlan, vlan: {parent: eth0, id: 11}}\n",
		kernel: newKernel().link(eth).link(vlan(10, "802.1q")),
		plan: `
± link v0 (vlan parent eth0 id 11 protocol 802.1q): vlan id 10 -> 11 [link recreated]
`,
	}, {
		name:   "vlan protocol: replace",
		file:   "links:\n  eth0: {kind: device}\n  v0: {kind: vlan, vlan: {parent: eth0, id: 10, protocol: 802.1ad}}\n",
		kernel: newKernel().link(eth).link(vlan(10, "802.1q")),
		plan: `
± link v0 (vlan parent eth0 id 10 protocol 802.1ad): vlan protocol 802.1q -> 802.1ad [link recreated]
`,
	}, {
		name:   "vlan mtu: in place",
		file:   "links:\n  eth0: {kind: device}\n  v0: {kind: vlan, mtu: 1400, vlan: {parent: eth0, id: 10}}\n",
		kernel: newKernel().link(eth).link(vlan(10, "802.1q")),
		plan: `
~ link v0
    mtu: 1500 -> 1400
`,
	}, {
		name:   "macvlan mode: in place",
		file:   "links:\n  eth0: {kind: device}\n  mv0: {kind: macvlan, macvlan: {parent: eth0, mode: private}}\n",
		kernel: newKernel().link(eth).link(mv("bridge")),
		plan: `
~ link mv0
    macvlan mode: bridge -> private
`,
	}, {
		name:   "macvlan mode into passthru: replace",
		file:   "links:\n  eth0: {kind: device}\n  mv0: {kind: macvlan, macvlan: {parent: eth0, mode: passthru}}\n",
		kernel: newKernel().link(eth).link(mv("bridge")),
		plan: `
± link mv0 (macvlan parent eth0 mode passthru): macvlan mode bridge -> passthru (into or out of passthru) [link recreated]
`,
	}, {
		name:   "vrf table: replace",
		file:   "links:\n  blue: {kind: vrf, vrf: {table: 11}}\n",
		kernel: newKernel().link(vrf(10)),
		plan: `
± link blue (vrf table 11): vrf table 10 -> 11 [link recreated]
`,
	}, {
		name:   "bond without members: mode and miimon in place",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: 802.3ad, miimon: 50}}\n",
		kernel: newKernel().link(bond("balance-rr", 100)),
		plan: `
~ link bond0: down and up: the kernel changes a bond's mode only while it is down [link flapped]
    bond mode: balance-rr -> 802.3ad
    bond miimon: 100 -> 50
`,
	}, {
		// The bond goes down for the change: its IPv6 addresses go with it.
		name:   "bond mode in place on a bond that is up brings its IPv6 addresses back",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: 802.3ad}, addresses: [fd00::1/64]}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).addr("bond0", "fd00::1/64", 0),
		plan: `
~ link bond0: down and up: the kernel changes a bond's mode only while it is down [link flapped]
    bond mode: balance-rr -> 802.3ad
+ address fd00::1/64 dev bond0
`,
	}, {
		name:   "bond with members: miimon in place",
		file:   "links:\n  bond0: {kind: bond, bond: {miimon: 50}}\n  a0: {kind: dummy, master: bond0}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).link(member),
		plan: `
~ link bond0
    bond miimon: 100 -> 50
`,
	}, {
		// The members are released with the old bond and enslaved again.
		name:   "bond with members: mode replaces",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: active-backup}}\n  a0: {kind: dummy, master: bond0}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).link(member),
		plan: `
± link bond0 (bond mode active-backup miimon 100): bond mode balance-rr -> active-backup (the kernel changes it only on a bond without members) [link recreated]
~ link a0: down and up: released with bond bond0, which is recreated, and enslaved again [link flapped]
    master: none (bond0 is recreated) -> bond0
`,
	}, {
		// A member that sorts before its bond joins after the mode change.
		name:   "bond mode changes before a member joins",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: active-backup}}\n  a0: {kind: dummy, master: bond0}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).link(model.Link{Name: "a0", Kind: model.KindDummy, Owned: true, Up: true}),
		plan: `
~ link bond0: down and up: the kernel changes a bond's mode only while it is down [link flapped]
    bond mode: balance-rr -> active-backup
~ link a0: down and up: a link joins a bond only while it is down [link flapped]
    master: bond0
`,
	}, {
		// A device is never owned, but the file enslaves it: it is
		// enslaved again, not a foreign port blocking the recreate.
		name:   "a declared device member does not block its bond's recreate",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: active-backup}}\n  eth1: {kind: device, master: bond0}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).link(model.Link{Name: "eth1", Kind: model.KindDevice, Up: true, Master: "bond0"}),
		plan: `
± link bond0 (bond mode active-backup miimon 100): bond mode balance-rr -> active-backup (the kernel changes it only on a bond without members) [link recreated]
~ link eth1: down and up: released with bond bond0, which is recreated, and enslaved again [link flapped]
    master: none (bond0 is recreated) -> bond0
`,
	}, {
		// The vrf driver cycles a port that joins it: the kernel drops
		// its IPv6 addresses, which the plan adds again.
		name:   "a link joining a vrf gets its IPv6 addresses again",
		file:   "links:\n  blue: {kind: vrf, vrf: {table: 10}}\n  d0: {kind: dummy, master: blue, addresses: [10.1.0.1/24, fd00::1/64]}\n",
		kernel: newKernel().link(vrf(10)).link(model.Link{Name: "d0", Kind: model.KindDummy, Owned: true, Up: true}).addr("d0", "10.1.0.1/24", 0).addr("d0", "fd00::1/64", 0),
		plan: `
~ link d0: down and up: the vrf driver cycles a port that joins or leaves it [link flapped]
    master: blue
+ address fd00::1/64 dev d0
`,
	}, {
		// The same when the vrf is the host's own, declared as a device:
		// the kernel's kind decides, not the file's.
		name:   "a link joining a vrf declared as a device gets its IPv6 addresses again",
		file:   "links:\n  blue: {kind: device}\n  d0: {kind: dummy, master: blue, addresses: [10.1.0.1/24, fd00::1/64]}\n",
		kernel: newKernel().link(model.Link{Name: "blue", Kind: model.KindVRF, Up: true, VRF: &model.VRF{Table: 10}}).link(model.Link{Name: "d0", Kind: model.KindDummy, Owned: true, Up: true}).addr("d0", "10.1.0.1/24", 0).addr("d0", "fd00::1/64", 0),
		plan: `
~ link d0: down and up: the vrf driver cycles a port that joins or leaves it [link flapped]
    master: blue
+ address fd00::1/64 dev d0
`,
	}, {
		// The bonding driver closes a member it releases.
		name:   "a link leaving a bond is set up again",
		file:   "links:\n  bond0: {kind: bond}\n  a0: {kind: dummy}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).link(member),
		plan: `
~ link a0: down and up: the bonding driver closes a member it releases [link flapped]
    master: bond0 -> (none)
    state: down (released from bond bond0) -> up
`,
	}, {
		name:   "a vlan on a recreated parent is recreated with it",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: active-backup}}\n  a0: {kind: dummy, master: bond0}\n  v0: {kind: vlan, vlan: {parent: bond0, id: 5}}\n",
		kernel: newKernel().link(bond("balance-rr", 100)).link(member).link(model.Link{Name: "v0", Kind: model.KindVLAN, Owned: true, Up: true, Lower: "bond0", VLAN: &model.VLAN{Parent: "bond0", ID: 5, Protocol: "802.1q"}}),
		plan: `
± link bond0 (bond mode active-backup miimon 100): bond mode balance-rr -> active-backup (the kernel changes it only on a bond without members) [link recreated]
± link v0 (vlan parent bond0 id 5 protocol 802.1q): the kernel deletes it with bond0, which is recreated [link recreated]
~ link a0: down and up: released with bond bond0, which is recreated, and enslaved again [link flapped]
    master: none (bond0 is recreated) -> bond0
`,
	}})
}

// A foreign child on an owned parent blocks the parent's delete and
// recreate, as for vxlans; a foreign link of the same name is a conflict.
func TestLinkKindsConflicts(t *testing.T) {
	eth := model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}
	run(t, []tc{{
		name: "a foreign vlan on an owned bond blocks its recreate",
		file: "links:\n  bond0: {kind: bond, bond: {mode: active-backup}}\n  a0: {kind: dummy, master: bond0}\n",
		kernel: newKernel().link(model.Link{Name: "bond0", Kind: model.KindBond, Owned: true, Up: true, Bond: &model.Bond{Mode: "balance-rr", Miimon: 100}}).
			link(model.Link{Name: "a0", Kind: model.KindDummy, Owned: true, Up: true, Master: "bond0"}).
			link(model.Link{Name: "bond0.7", Kind: model.KindVLAN, Up: true, Lower: "bond0", VLAN: &model.VLAN{Parent: "bond0", ID: 7, Protocol: "802.1q"}}),
		plan: "",
		conflict: `
link bond0 cannot be deleted or recreated: the kernel would delete [bond0.7] with it
link a0 is left out: it needs link bond0, which is in conflict
`,
	}, {
		name: "a foreign macvlan on a stale owned veth blocks its delete",
		file: "links:\n  eth0: {kind: device}\n",
		kernel: newKernel().link(eth).link(model.Link{Name: "ve0", Kind: model.KindVeth, Owned: true, Up: true, Veth: &model.Veth{Peer: "ve1", PeerNSID: -1}}).
			link(model.Link{Name: "ve1", Kind: model.KindVeth, Owned: true, Up: true, Veth: &model.Veth{Peer: "ve0", PeerNSID: -1}}).
			link(model.Link{Name: "mvx", Kind: model.KindMACVlan, Up: true, Lower: "ve1", MACVlan: &model.MACVlan{Parent: "ve1", Mode: "bridge"}}),
		plan: "",
		conflict: `
link ve0 cannot be deleted or recreated: the kernel would delete [mvx] with it
link ve1 cannot be deleted or recreated: the kernel would delete [mvx] with it
`,
	}, {
		name:     "a foreign vrf of the same name",
		file:     "links:\n  blue: {kind: vrf, vrf: {table: 10}}\n",
		kernel:   newKernel().link(model.Link{Name: "blue", Kind: model.KindVRF, Up: true, VRF: &model.VRF{Table: 10}}),
		plan:     "",
		conflict: `link blue exists and netreconcile did not create it`,
	}, {
		name:     "an adopted vrf whose table differs is not recreated",
		file:     "links:\n  blue: {kind: vrf, adopt: true, vrf: {table: 11}}\n",
		kernel:   newKernel().link(model.Link{Name: "blue", Kind: model.KindVRF, Up: true, VRF: &model.VRF{Table: 10}}),
		plan:     "",
		conflict: `link blue is adopted, not created by netreconcile, and its vrf table 10 -> 11 cannot change in place`,
	}, {
		name:   "an adopted macvlan's mode changes in place",
		file:   "links:\n  eth0: {kind: device}\n  mv0: {kind: macvlan, adopt: true, macvlan: {parent: eth0, mode: vepa}}\n",
		kernel: newKernel().link(eth).link(model.Link{Name: "mv0", Kind: model.KindMACVlan, Up: true, Lower: "eth0", MACVlan: &model.MACVlan{Parent: "eth0", Mode: "bridge"}}),
		plan: `
~ link mv0
    owner: foreign -> netreconcile (adopted)
    macvlan mode: bridge -> vepa
    alias
`,
	}})
}

// TestVLANsFollowTheirParent: the kernel gives a vlan its parent's admin
// state. A parent brought up brings its vlans up, so one the file wants
// down is set down after it, and one the file wants up is set up after it
// (before, the kernel refuses: ENETDOWN); a parent cycled by joining a vrf
// cycles its vlans, which get their IPv6 addresses again.
// Walk finding 48 (guest seed 114581640004126, step 20).
func TestVLANsFollowTheirParent(t *testing.T) {
	p0 := func(up bool) model.Link {
		return model.Link{Name: "p0", Kind: model.KindDummy, Owned: true, Up: up}
	}
	vl := func(name string, id uint16, up bool) model.Link {
		return model.Link{Name: name, Kind: model.KindVLAN, Owned: true, Up: up, Lower: "p0", VLAN: &model.VLAN{Parent: "p0", ID: id, Protocol: "802.1q"}}
	}
	run(t, []tc{{
		name:   "a vlan the file wants down is set down again after its parent comes up",
		file:   "links:\n  p0: {kind: dummy}\n  a5: {kind: vlan, state: down, vlan: {parent: p0, id: 5}}\n  z6: {kind: vlan, vlan: {parent: p0, id: 6}}\n",
		kernel: newKernel().link(p0(false)).link(vl("a5", 5, false)).link(vl("z6", 6, false)),
		plan: `
~ link p0
    state: down -> up
~ link a5
    state: up (with its parent p0) -> down
~ link z6
    state: down -> up
`,
	}, {
		name:   "a vlan the file wants down gets its IPv6 address again after it is set down",
		file:   "links:\n  p0: {kind: dummy}\n  a5: {kind: vlan, state: down, vlan: {parent: p0, id: 5}, addresses: ['fd00:5::1/64']}\n",
		kernel: newKernel().link(p0(false)).link(vl("a5", 5, false)).addr("a5", "fd00:5::1/64", 0),
		plan: `
~ link p0
    state: down -> up
~ link a5
    state: up (with its parent p0) -> down
+ address fd00:5::1/64 dev a5
`,
	}, {
		name:   "a vlan the file wants up comes up after its parent",
		file:   "links:\n  p0: {kind: dummy}\n  a5: {kind: vlan, vlan: {parent: p0, id: 5}}\n",
		kernel: newKernel().link(p0(false)).link(vl("a5", 5, false)),
		plan: `
~ link p0
    state: down -> up
~ link a5
    state: down -> up
`,
	}, {
		name:   "a vlan created down on a parent that comes up",
		file:   "links:\n  p0: {kind: dummy}\n  a5: {kind: vlan, state: down, vlan: {parent: p0, id: 5}}\n",
		kernel: newKernel().link(p0(false)),
		plan: `
+ link a5 (vlan parent p0 id 5 protocol 802.1q down)
~ link p0
    state: down -> up
~ link a5
    state: up (with its parent p0) -> down
`,
	}, {
		name: "a vlan on a parent that joins a vrf gets its IPv6 addresses again",
		file: "links:\n  blue: {kind: vrf, vrf: {table: 10}}\n  p0: {kind: dummy, master: blue}\n  a5: {kind: vlan, vlan: {parent: p0, id: 5}, addresses: [fd00::5/64, 10.5.0.1/24]}\n",
		kernel: newKernel().link(model.Link{Name: "blue", Kind: model.KindVRF, Owned: true, Up: true, VRF: &model.VRF{Table: 10}}).link(p0(true)).link(vl("a5", 5, true)).
			addr("a5", "fd00::5/64", 0).addr("a5", "10.5.0.1/24", 0),
		plan: `
~ link p0: down and up: the vrf driver cycles a port that joins or leaves it; with the vlans on it: a5 [link flapped]
    master: blue
+ address fd00::5/64 dev a5
`,
	}, {
		name:   "unchanged: nothing to do",
		file:   "links:\n  p0: {kind: dummy}\n  a5: {kind: vlan, state: down, vlan: {parent: p0, id: 5}}\n",
		kernel: newKernel().link(p0(true)).link(vl("a5", 5, false)),
		plan:   "",
	}})
}

// TestVLANOnVLANFollowsInOrder: a vlan on a vlan (802.1Q in 802.1ad) comes
// up after the vlan it is on, whatever their names.
// Walk finding 48 (guest seed 114581640004126, step 20).
func TestVLANOnVLANFollowsInOrder(t *testing.T) {
	run(t, []tc{{
		name: "inner after outer",
		file: "links:\n  p0: {kind: dummy}\n  z1: {kind: vlan, vlan: {parent: p0, id: 5, protocol: 802.1ad}}\n  a2: {kind: vlan, vlan: {parent: z1, id: 6}}\n",
		kernel: newKernel().link(model.Link{Name: "p0", Kind: model.KindDummy, Owned: true}).
			link(model.Link{Name: "z1", Kind: model.KindVLAN, Owned: true, Lower: "p0", VLAN: &model.VLAN{Parent: "p0", ID: 5, Protocol: "802.1ad"}}).
			link(model.Link{Name: "a2", Kind: model.KindVLAN, Owned: true, Lower: "z1", VLAN: &model.VLAN{Parent: "z1", ID: 6, Protocol: "802.1q"}}),
		plan: `
~ link p0
    state: down -> up
~ link z1
    state: down -> up
~ link a2
    state: down -> up
`,
	}})
}

// TestWhatAMasterChangeTakes: a link that is down loses nothing when it
// joins a bond, so an IPv6 address the file drops is deleted (guest soak,
// walk seed 115480027701323, step 95); a link that joins a vrf loses every
// IPv4 route through it, local ones included, and its IPv6 addresses, up
// or down (walk seed 115479798538653, step 67).
// Walk finding 50 (guest seed 115480027701323, step 95).
// Walk finding 51 (guest seed 115479798538653, step 67).
func TestWhatAMasterChangeTakes(t *testing.T) {
	bond := model.Link{Name: "o0", Kind: model.KindBond, Owned: true, Up: true, Bond: &model.Bond{Mode: "balance-rr", Miimon: 100}}
	vrf := model.Link{Name: "r1", Kind: model.KindVRF, Owned: true, Up: true, VRF: &model.VRF{Table: 1001}}
	run(t, []tc{{
		name:   "a down link joining a bond keeps its addresses: one the file drops is deleted",
		file:   "links:\n  o0: {kind: bond}\n  d0: {kind: dummy, master: o0}\n",
		kernel: newKernel().link(bond).link(model.Link{Name: "d0", Kind: model.KindDummy, Owned: true}).addr("d0", "fd00:95::2/64", 0),
		plan: `
~ link d0
    master: o0
    state: down -> up
- address fd00:95::2/64 dev d0
`,
	}, {
		name: "a link joining a vrf gets its local route and its IPv6 address again",
		file: "links:\n  r1: {kind: vrf, vrf: {table: 1001}}\n  m0: {kind: dummy, master: r1, addresses: ['fd00:1c::3/64']}\nroutes:\n  - {to: 172.16.0.0/24, type: local, dev: m0}\n",
		kernel: newKernel().link(vrf).link(model.Link{Name: "m0", Kind: model.KindDummy, Owned: true, Up: true}).addr("m0", "fd00:1c::3/64", 0).
			route(model.Route{Table: model.TableMain, Dst: pfx("172.16.0.0/24"), Type: model.RouteLocal, Dev: "m0", Protocol: ours, Scope: 254}),
		plan: `
~ link m0: down and up: the vrf driver cycles a port that joins or leaves it [link flapped]
    master: r1
+ address fd00:1c::3/64 dev m0
+ route 172.16.0.0/24 table main (local dev m0 scope host)
`,
	}, {
		name:   "a down link joining a vrf loses its IPv6 address too",
		file:   "links:\n  r1: {kind: vrf, vrf: {table: 1001}}\n  m0: {kind: dummy, state: down, master: r1, addresses: ['fd00:1c::3/64']}\n",
		kernel: newKernel().link(vrf).link(model.Link{Name: "m0", Kind: model.KindDummy, Owned: true}).addr("m0", "fd00:1c::3/64", 0),
		plan: `
~ link m0
    master: r1
+ address fd00:1c::3/64 dev m0
`,
	}})
}

// TestVLANLeavingAVRFFollowsItsParent: a vlan released from a vrf in the
// plan that brings its parent up is released after the parent's update,
// not with the other releases before it (it would meet ENETDOWN coming up).
// Walk finding 48 (guest seed 114581640004126, step 20).
func TestVLANLeavingAVRFFollowsItsParent(t *testing.T) {
	run(t, []tc{{
		name: "release after the parent comes up",
		file: "links:\n  r1: {kind: vrf, vrf: {table: 10}}\n  p0: {kind: dummy}\n  a5: {kind: vlan, vlan: {parent: p0, id: 5}}\n",
		kernel: newKernel().link(model.Link{Name: "r1", Kind: model.KindVRF, Owned: true, Up: true, VRF: &model.VRF{Table: 10}}).
			link(model.Link{Name: "p0", Kind: model.KindDummy, Owned: true}).
			link(model.Link{Name: "a5", Kind: model.KindVLAN, Owned: true, Master: "r1", Lower: "p0", VLAN: &model.VLAN{Parent: "p0", ID: 5, Protocol: "802.1q"}}),
		plan: `
~ link p0
    state: down -> up
~ link a5
    master: r1 -> (none)
    state: down -> up
`,
	}})
}

// Walk guest seed 136258132862932, step 72: the bonding driver gives a
// member it releases back the MTU it had before it joined (the bond had set
// its own). A member that leaves a 9000-byte bond and is declared with MTU
// 9000 already shows 9000 while in the bond: the MTU is written again, and
// after the release, or the release undoes it (the port was left at 1500).
// Walk finding 57 (guest seed 136258132862932, step 72).
func TestReleasedFromBondWritesMTUAfter(t *testing.T) {
	bond := model.Link{Name: "bond0", Kind: model.KindBond, Owned: true, Up: true, MTU: 9000, Bond: &model.Bond{Mode: "balance-rr", Miimon: 100}}
	member := model.Link{Name: "a0", Kind: model.KindDummy, Owned: true, Up: true, Master: "bond0", MTU: 9000}
	for _, c := range []struct {
		name, file, plan string
		after            bool
	}{{
		name:  "declared MTU equal to the bond's",
		file:  "links:\n  a0: {kind: dummy, mtu: 9000}\n",
		plan:  "~ link a0: down and up: the bonding driver closes a member it releases [link flapped]\n    master: bond0 -> (none)\n    state: down (released from bond bond0) -> up\n    mtu: 9000 (bond bond0's, until released) -> 9000\n- link bond0 (bond)\n",
		after: true,
	}, {
		name:  "declared MTU other than the bond's",
		file:  "links:\n  a0: {kind: dummy, mtu: 1400}\n",
		plan:  "~ link a0: down and up: the bonding driver closes a member it releases [link flapped]\n    mtu: 9000 -> 1400\n    master: bond0 -> (none)\n    state: down (released from bond bond0) -> up\n- link bond0 (bond)\n",
		after: true,
	}, {
		name: "no MTU declared: the kernel's",
		file: "links:\n  a0: {kind: dummy}\n",
		plan: "~ link a0: down and up: the bonding driver closes a member it releases [link flapped]\n    master: bond0 -> (none)\n    state: down (released from bond bond0) -> up\n- link bond0 (bond)\n",
	}} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := diff.Compute(parse(t, c.file), newKernel().link(bond).link(member).st)
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.String(); got != c.plan {
				t.Fatalf("plan:\n%s\nwant:\n%s", got, c.plan)
			}
			f := plan.Ops[0].LinkFields
			if f.MTUAfterMaster != c.after {
				t.Errorf("MTUAfterMaster %v, want %v", f.MTUAfterMaster, c.after)
			}
			var order []string
			if err := f.Write(recordWriter{&order}); err != nil {
				t.Fatal(err)
			}
			want := "master state"
			if c.after {
				want = "master mtu state"
			}
			if got := strings.Join(order, " "); got != want {
				t.Errorf("writes %q, want %q", got, want)
			}
		})
	}
}

// recordWriter records the attributes LinkFields.Write writes, in order.
type recordWriter struct{ order *[]string }

func (w recordWriter) rec(s string) error { *w.order = append(*w.order, s); return nil }
func (w recordWriter) Kind() error        { return w.rec("kind") }
func (w recordWriter) MTU() error         { return w.rec("mtu") }
func (w recordWriter) Master() error      { return w.rec("master") }
func (w recordWriter) Alias() error       { return w.rec("alias") }
func (w recordWriter) State() error       { return w.rec("state") }

// Guest soak on 80677b9, walk seed 139974179019904, step 86: the kernel
// gives an ipvlan its parent's MTU whenever the parent's changes, and lowers
// a macvlan or a vlan to it when above it. A child that declares an MTU has
// it written again, after its parent's update; a child's own MTU write goes
// after its parent's in any case.
// Walk finding 59 (guest seed 139974179019904, step 86).
func TestChildMTUFollowsParent(t *testing.T) {
	dummy := func(name string, mtu int) model.Link {
		return model.Link{Name: name, Kind: model.KindDummy, Owned: true, Up: true, MTU: mtu}
	}
	ipvlan := func(name, parent string, mtu int) model.Link {
		return model.Link{Name: name, Kind: model.KindIPVlan, Owned: true, Up: true, MTU: mtu, Lower: parent, IPVlan: &model.IPVlan{Parent: parent, Mode: "l2"}}
	}
	macvlan := func(name, parent string, mtu int) model.Link {
		return model.Link{Name: name, Kind: model.KindMACVlan, Owned: true, Up: true, MTU: mtu, Lower: parent, MACVlan: &model.MACVlan{Parent: parent, Mode: "bridge"}}
	}
	run(t, []tc{{
		name:   "ipvlan: its MTU again, after the parent's",
		file:   "links:\n  d0: {kind: dummy, mtu: 1500}\n  i0: {kind: ipvlan, mtu: 1280, ipvlan: {parent: d0, mode: l2}}\n",
		kernel: newKernel().link(dummy("d0", 9000)).link(ipvlan("i0", "d0", 1280)),
		plan: `
~ link d0
    mtu: 9000 -> 1500
~ link i0
    mtu: 1500 (with its parent d0) -> 1280
`,
	}, {
		name:   "ipvlan with the parent's new MTU: nothing",
		file:   "links:\n  d0: {kind: dummy, mtu: 1500}\n  i0: {kind: ipvlan, mtu: 1500, ipvlan: {parent: d0, mode: l2}}\n",
		kernel: newKernel().link(dummy("d0", 9000)).link(ipvlan("i0", "d0", 1500)),
		plan: `
~ link d0
    mtu: 9000 -> 1500
`,
	}, {
		name:   "macvlan below the parent's new MTU: nothing",
		file:   "links:\n  d0: {kind: dummy, mtu: 1500}\n  m0: {kind: macvlan, mtu: 1400, macvlan: {parent: d0, mode: bridge}}\n",
		kernel: newKernel().link(dummy("d0", 9000)).link(macvlan("m0", "d0", 1400)),
		plan: `
~ link d0
    mtu: 9000 -> 1500
`,
	}, {
		// Lowered to 1500 by the kernel, then 1400 written: after d0's.
		name:   "macvlan above the parent's new MTU, declared below it",
		file:   "links:\n  z0: {kind: dummy, mtu: 1500}\n  a0: {kind: macvlan, mtu: 1400, macvlan: {parent: z0, mode: bridge}}\n",
		kernel: newKernel().link(dummy("z0", 9000)).link(macvlan("a0", "z0", 4000)),
		plan: `
~ link z0
    mtu: 9000 -> 1500
~ link a0
    mtu: 4000 -> 1400
`,
	}, {
		// a0 sorts before z0: its own write is moved after z0's, which
		// it could not exceed before.
		name:   "a child's MTU going up goes after its parent's",
		file:   "links:\n  z0: {kind: dummy, mtu: 9000}\n  a0: {kind: macvlan, mtu: 9000, macvlan: {parent: z0, mode: bridge}}\n",
		kernel: newKernel().link(dummy("z0", 1500)).link(macvlan("a0", "z0", 1500)),
		plan: `
~ link z0
    mtu: 1500 -> 9000
~ link a0
    mtu: 1500 -> 9000
`,
	}})
}

// A child this plan creates gets its MTU before its parent's update runs
// (the creates go first): an ipvlan then takes the parent's new MTU, and
// has its own written again after it.
// Walk finding 59 (guest seed 139974179019904, step 86).
func TestNewChildMTUFollowsParent(t *testing.T) {
	run(t, []tc{{
		name:   "new ipvlan on a parent whose MTU changes",
		file:   "links:\n  d0: {kind: dummy, mtu: 1500}\n  i0: {kind: ipvlan, mtu: 1280, ipvlan: {parent: d0, mode: l2}}\n",
		kernel: newKernel().link(model.Link{Name: "d0", Kind: model.KindDummy, Owned: true, Up: true, MTU: 9000}),
		plan: `
+ link i0 (ipvlan parent d0 mode l2 mtu 1280)
~ link d0
    mtu: 9000 -> 1500
~ link i0
    mtu: 1500 (with its parent d0) -> 1280
`,
	}})
}

// A declared master with an MTU is pinned (Plan.PinMTU: its MTU written
// again after the links moved, if the kernel moved it) whenever a port
// joins, changes or leaves it; a port's release counts too, though it goes
// before the other updates (host walk seed 34978741412786, step 72).
// Walk finding 60 (host seed 34978741412786, step 72).
func TestPinMTUOfMastersPortsMove(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true, MTU: 1500}
	port := model.Link{Name: "p0", Kind: model.KindDummy, Owned: true, Up: true, Master: "br0", MTU: 1500}
	for _, c := range []struct{ name, file, pinned string }{
		{"port released", "links:\n  br0: {kind: bridge, mtu: 1500}\n  p0: {kind: dummy, mtu: 9000}\n", "br0"},
		{"port released, MTU kept", "links:\n  br0: {kind: bridge, mtu: 1500}\n  p0: {kind: dummy}\n", "br0"},
		{"port's MTU changed", "links:\n  br0: {kind: bridge, mtu: 1500}\n  p0: {kind: dummy, master: br0, mtu: 9000}\n", "br0"},
		{"nothing moves", "links:\n  br0: {kind: bridge, mtu: 1500}\n  p0: {kind: dummy, master: br0, mtu: 1500}\n", ""},
		{"no MTU declared", "links:\n  br0: {kind: bridge}\n  p0: {kind: dummy, mtu: 9000}\n", ""},
	} {
		plan, err := diff.Compute(parse(t, c.file), newKernel().link(br).link(port).st)
		if err != nil {
			t.Fatal(err)
		}
		var pinned []string
		for _, l := range plan.PinMTU {
			pinned = append(pinned, l.Name)
		}
		if got := strings.Join(pinned, " "); got != c.pinned {
			t.Errorf("%s: pinned %q, want %q\n%s", c.name, got, c.pinned, plan)
		}
	}
}

// Walk finding 154 (issue 30, guest probe): the kernel keeps one ipvlan
// mode per parent and sets it from every ipvlan it makes there, so an
// ipvlan of the file made (or made again) in another mode than someone
// else's on the same parent changed theirs: a conflict now.
func TestWalkFinding154ForeignIPVlanModeIsAConflict(t *testing.T) {
	d0 := model.Link{Name: "d0", Kind: model.KindDevice, Up: true}
	fi0 := model.Link{Name: "fi0", Kind: model.KindIPVlan, Up: true, Lower: "d0", IPVlan: &model.IPVlan{Parent: "d0", Mode: model.IPVlanL2}}
	run(t, []tc{{
		name:     "a new ipvlan in another mode",
		file:     "links:\n  d0: {kind: device}\n  i0: {kind: ipvlan, ipvlan: {parent: d0, mode: l3}}\n",
		kernel:   newKernel().link(d0).link(fi0),
		plan:     "",
		conflict: "link i0 cannot be made in mode l3 on d0: the kernel keeps one ipvlan mode per parent and would set it on [fi0 (l2)] too",
	}, {
		name:   "a new ipvlan in the same mode",
		file:   "links:\n  d0: {kind: device}\n  i0: {kind: ipvlan, ipvlan: {parent: d0, mode: l2}}\n",
		kernel: newKernel().link(d0).link(fi0),
		plan:   "\n+ link i0 (ipvlan parent d0 mode l2)\n",
	}, {
		name:     "an ipvlan of ours whose mode changes",
		file:     "links:\n  d0: {kind: device}\n  i0: {kind: ipvlan, ipvlan: {parent: d0, mode: l3}}\n",
		kernel:   newKernel().link(d0).link(fi0).link(model.Link{Name: "i0", Kind: model.KindIPVlan, Owned: true, Up: true, Lower: "d0", IPVlan: &model.IPVlan{Parent: "d0", Mode: model.IPVlanL2}}),
		plan:     "",
		conflict: "link i0 cannot be made in mode l3 on d0",
	}})
}
