package contract

import "github.com/netreconcile/netreconcile/internal/model"

// Each scenario starts from promote_secondaries off, everywhere: a fresh
// namespace copies the initial namespace's IPv4 defaults, which the host's
// sysctl.d (systemd's 50-default.conf sets it) may have changed.
var noPromote = sysctls(
	"net.ipv4.conf.all.promote_secondaries", "0",
	"net.ipv4.conf.default.promote_secondaries", "0",
)

// A veth pair a/b, both up, a holding an address of each family and a
// route of each family through it.
var vethWithRoutes = []Step{
	{Name: "a veth pair, up", Do: seq(noPromote, addLinks(veth("a", "b", 1500)), up("a", "b"))},
	{Name: "addresses and routes on a", Do: seq(
		addAddrs(address("a", "10.1.0.1/24"), address("a", "fd00:1::1/64")),
		addRoutes(route("10.2.0.0/24", "10.1.0.254", "a"), route("fd00:2::/64", "fd00:1::fe", "a")),
	)},
}

// Scenarios are the side effects the diff plans around.
var Scenarios = []Scenario{
	{
		Name:  "link set down loses its IPv6 addresses and the routes through it",
		Kinds: []string{model.KindVeth},
		Links: []string{"a", "b"},
		Steps: append(vethWithRoutes[:2:2],
			Step{Name: "a down", Do: down("a")},
			Step{Name: "a up again", Do: up("a")},
		),
	},
	{
		Name:  "the last IPv4 address of a link takes the IPv4 routes through it",
		Kinds: []string{model.KindVeth},
		Links: []string{"a", "b"},
		Steps: append(vethWithRoutes[:2:2],
			Step{Name: "a second IPv4 address of another subnet", Do: addAddrs(address("a", "10.3.0.1/24"))},
			Step{Name: "delete the gateway's subnet", Do: delAddr(address("a", "10.1.0.1/24"))},
			Step{Name: "delete the last IPv4 address", Do: delAddr(address("a", "10.3.0.1/24"))},
		),
	},
	{
		Name:  "a primary IPv4 address takes its secondaries unless they are promoted",
		Kinds: []string{model.KindVeth},
		Links: []string{"a", "b"},
		Steps: []Step{
			vethWithRoutes[0],
			{Name: "a primary and two secondaries", Do: addAddrs(address("a", "10.1.0.1/24"), address("a", "10.1.0.2/24"), address("a", "10.1.0.3/24"))},
			{Name: "delete the primary", Do: delAddr(address("a", "10.1.0.1/24"))},
			{Name: "again, with promote_secondaries on the link", Do: seq(
				addAddrs(address("a", "10.1.0.1/24"), address("a", "10.1.0.2/24"), address("a", "10.1.0.3/24")),
				func(k kernelInterface) error { return k.PromoteSecondaries("a") },
			)},
			{Name: "delete the primary", Do: delAddr(address("a", "10.1.0.1/24"))},
			{Name: "delete the promoted one", Do: delAddr(address("a", "10.1.0.2/24"))},
		},
	},
	{
		Name:  "deleting a link takes its addresses, routes, veth peer and the links on it",
		Kinds: []string{model.KindVeth, model.KindMACVlan, model.KindVXLAN},
		Links: []string{"a", "b", "m", "x"},
		Steps: append(vethWithRoutes[:2:2],
			Step{Name: "a macvlan and a vxlan on a", Do: seq(
				addLinks(&model.Link{Name: "m", Kind: model.KindMACVlan, MTU: 1500, MACVlan: &model.MACVlan{Parent: "a", Mode: model.MACVlanBridge}},
					&model.Link{Name: "x", Kind: model.KindVXLAN, MTU: 1450, VXLAN: &model.VXLAN{ID: 7, Dev: "a", Port: 4789, Local: mustAddr("10.1.0.1")}}),
				up("m", "x"),
			)},
			Step{Name: "delete b, the other end", Do: func(k kernelInterface) error { return k.DeleteLink("b") }},
		),
	},
	{
		Name:  "a bridge keeps its MTU when ports join, change and leave",
		Kinds: []string{model.KindVeth, model.KindBridge},
		Links: []string{"br", "p", "q", "r", "s"},
		Steps: []Step{
			{Name: "a bridge of MTU 1450 and two veth pairs of MTU 9000", Do: seq(noPromote,
				addLinks(link("br", model.KindBridge, 1450), veth("p", "q", 9000), veth("r", "s", 9000)), up("br", "p", "q", "r", "s"))},
			{Name: "p joins", Do: master("p", "br")},
			{Name: "r joins", Do: master("r", "br")},
			{Name: "p's MTU changes", Do: mtu("p", 1500)},
			{Name: "p leaves", Do: master("p", "")},
			{Name: "the bridge's MTU changes", Do: mtu("br", 1400)},
			{Name: "r's pair is deleted", Do: func(k kernelInterface) error { return k.DeleteLink("s") }},
		},
	},
	{
		Name:  "a macvlan is lowered to its parent's MTU",
		Kinds: []string{model.KindVeth, model.KindMACVlan},
		Links: []string{"a", "b", "m"},
		Steps: []Step{
			{Name: "a veth pair of MTU 9000 and a macvlan of 9000 on it", Do: seq(noPromote,
				addLinks(veth("a", "b", 9000), &model.Link{Name: "m", Kind: model.KindMACVlan, MTU: 9000, MACVlan: &model.MACVlan{Parent: "a", Mode: model.MACVlanBridge}}),
				up("a", "b", "m"))},
			{Name: "the parent goes to 1500", Do: mtu("a", 1500)},
			{Name: "the parent goes back to 9000", Do: mtu("a", 9000)},
			{Name: "the macvlan to 4000", Do: mtu("m", 4000)},
			{Name: "the macvlan above its parent", Do: mtu("m", 9001), Fails: true},
		},
	},
	{
		Name:  "a macvlan and a vxlan made without an MTU take their lower device's",
		Kinds: []string{model.KindVeth, model.KindMACVlan, model.KindVXLAN},
		Links: []string{"a", "b", "m", "x", "x6"},
		Steps: []Step{
			{Name: "a veth pair of MTU 9000, a macvlan and two vxlans on it without an MTU", Do: seq(noPromote,
				addLinks(veth("a", "b", 9000), &model.Link{Name: "m", Kind: model.KindMACVlan, MACVlan: &model.MACVlan{Parent: "a", Mode: model.MACVlanBridge}},
					&model.Link{Name: "x", Kind: model.KindVXLAN, VXLAN: &model.VXLAN{ID: 7, Dev: "a", Port: 4789, Local: mustAddr("10.1.0.1")}},
					&model.Link{Name: "x6", Kind: model.KindVXLAN, VXLAN: &model.VXLAN{ID: 8, Dev: "a", Port: 4790, Remote: mustAddr("fd00::2")}}))},
		},
	},
	{
		Name:  "an ipvlan and a vlan made without an MTU take their parent's",
		Kinds: []string{model.KindDummy, model.KindIPVlan, model.KindVLAN},
		Links: []string{"d", "iv", "vl"},
		Steps: []Step{
			{Name: "a dummy of MTU 9000, an ipvlan and a vlan on it without an MTU", Do: seq(noPromote,
				addLinks(link("d", model.KindDummy, 9000), &model.Link{Name: "iv", Kind: model.KindIPVlan, IPVlan: &model.IPVlan{Parent: "d", Mode: model.IPVlanL3}},
					&model.Link{Name: "vl", Kind: model.KindVLAN, VLAN: &model.VLAN{Parent: "d", ID: 10, Protocol: model.VLAN8021Q}}))},
		},
	},

	{
		Name:  "a link's sysctls take default's values when it is made, and keep them",
		Kinds: []string{model.KindVeth},
		Links: []string{"a", "b"},
		Sysctls: []string{
			"net.ipv4.conf.a.rp_filter", "net.ipv4.conf.b.rp_filter", "net.ipv4.conf.default.rp_filter",
			"net.ipv6.conf.a.hop_limit", "net.ipv6.conf.b.hop_limit", "net.ipv6.conf.default.hop_limit",
			"net.ipv4.conf.a.promote_secondaries",
		},
		Steps: []Step{
			{Name: "defaults set, then a veth pair", Do: seq(noPromote,
				sysctls("net.ipv4.conf.default.rp_filter", "2", "net.ipv6.conf.default.hop_limit", "60"),
				addLinks(veth("a", "b", 1500)))},
			{Name: "a's own values", Do: sysctls("net.ipv4.conf.a.rp_filter", "1", "net.ipv6.conf.a.hop_limit", "50")},
			{Name: "default changes", Do: sysctls("net.ipv4.conf.default.rp_filter", "0", "net.ipv6.conf.default.hop_limit", "70")},
			{Name: "a's promote_secondaries", Do: func(k kernelInterface) error { return k.PromoteSecondaries("a") }},
		},
	},

	// The guest's kinds.
	{
		Name:  "a port joining a vrf loses its IPv4 routes and its IPv6 addresses",
		Kinds: []string{model.KindDummy, model.KindVRF},
		Links: []string{"d", "v"},
		Steps: []Step{
			{Name: "a dummy with addresses and routes, a vrf", Do: seq(noPromote,
				addLinks(link("d", model.KindDummy, 1500), &model.Link{Name: "v", Kind: model.KindVRF, MTU: 65575, VRF: &model.VRF{Table: 100}}),
				up("d", "v"),
				addAddrs(address("d", "10.1.0.1/24"), address("d", "fd00:1::1/64")),
				addRoutes(route("10.2.0.0/24", "10.1.0.254", "d"), route("fd00:2::/64", "fd00:1::fe", "d")))},
			{Name: "d joins the vrf", Do: master("d", "v")},
			{Name: "d leaves the vrf", Do: master("d", "")},
		},
	},
	{
		Name:  "a vlan follows its parent's state",
		Kinds: []string{model.KindDummy, model.KindVLAN},
		Links: []string{"d", "vl"},
		Steps: []Step{
			{Name: "a dummy and a vlan on it, up", Do: seq(noPromote,
				addLinks(link("d", model.KindDummy, 1500), &model.Link{Name: "vl", Kind: model.KindVLAN, MTU: 1500, VLAN: &model.VLAN{Parent: "d", ID: 10, Protocol: model.VLAN8021Q}}),
				up("d", "vl"))},
			{Name: "the parent goes down", Do: down("d")},
			{Name: "the vlan cannot come up on it", Do: up("vl"), Fails: true},
			{Name: "the parent comes up", Do: up("d")},
			{Name: "the vlan goes down", Do: down("vl")},
			{Name: "the parent goes down and up", Do: seq(down("d"), up("d"))},
		},
	},
	{
		Name:  "an ipvlan takes its parent's MTU whenever it changes, a vlan only when above it",
		Kinds: []string{model.KindDummy, model.KindIPVlan, model.KindVLAN},
		Links: []string{"d", "i", "vl"},
		Steps: []Step{
			{Name: "a dummy of 9000, an ipvlan and a vlan of 9000 on it", Do: seq(noPromote,
				addLinks(link("d", model.KindDummy, 9000),
					&model.Link{Name: "i", Kind: model.KindIPVlan, MTU: 9000, IPVlan: &model.IPVlan{Parent: "d", Mode: model.IPVlanL2}},
					&model.Link{Name: "vl", Kind: model.KindVLAN, MTU: 9000, VLAN: &model.VLAN{Parent: "d", ID: 10, Protocol: model.VLAN8021Q}}),
				up("d", "i", "vl"))},
			{Name: "the parent goes to 1500", Do: mtu("d", 1500)},
			{Name: "the parent goes back to 9000", Do: mtu("d", 9000)},
			{Name: "the ipvlan and the vlan to 4000", Do: seq(mtu("i", 4000), mtu("vl", 4000))},
			{Name: "the parent to 8000", Do: mtu("d", 8000)},
			{Name: "the vlan above its parent", Do: mtu("vl", 8001), Fails: true},
			{Name: "the ipvlan above its parent", Do: mtu("i", 8001)},
		},
	},
	{
		Name:  "a port released from a bond gets back its MTU from before it joined",
		Kinds: []string{model.KindDummy, model.KindBond},
		Links: []string{"d", "bd"},
		Steps: []Step{
			{Name: "a dummy of 1500 and a bond of 9000", Do: seq(noPromote,
				addLinks(link("d", model.KindDummy, 1500), &model.Link{Name: "bd", Kind: model.KindBond, MTU: 9000, Bond: &model.Bond{Mode: "active-backup", Miimon: 100}}),
				up("bd"))},
			{Name: "the dummy joins", Do: master("d", "bd")},
			{Name: "the bond's MTU changes", Do: mtu("bd", 4000)},
			{Name: "the dummy leaves", Do: master("d", "")},
			{Name: "addresses and routes on the bond", Do: seq(
				addAddrs(address("bd", "10.1.0.1/24"), address("bd", "fd00:1::1/64")),
				addRoutes(route("10.2.0.0/24", "10.1.0.254", "bd"), route("fd00:2::/64", "fd00:1::fe", "bd")))},
			{Name: "the bond's mode changes while it is up and has no port", Do: func(k kernelInterface) error {
				return k.ChangeLink(&model.Link{Name: "bd", Kind: model.KindBond, Bond: &model.Bond{Mode: "balance-xor", Miimon: 100}})
			}},
		},
	},
}
