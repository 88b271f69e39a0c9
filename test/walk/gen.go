package walk

import (
	"fmt"
	"math/rand"
	"net/netip"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Defects is the table of defect switches: each gates a dimension of the
// generator that walks into a defect. Those fixed (Fixed: the defects issue
// 10 lists, and findings 15 and 8) are on by default, so the walk generates their
// paths and checks the fixed behaviour; the rest gate defects still open
// (docs/walk-findings.md) and are turned on with WALK_DEFECTS=name,name or
// -walk.defects once fixed. RuleNotIdentity stays off for another reason:
// validation now refuses the files it makes.
type Defects struct {
	// NftTableTakeover: a foreign nftables table with the name and family
	// of a declared one (issue 10: "a foreign nftables table ... is silently
	// taken over"). On: declared tables may take a foreign table's name; a
	// conflict is expected.
	NftTableTakeover bool
	// ConflictDependents: a declared link whose name a foreign link holds,
	// with addresses on it (issue 10: "whatever depends on a conflicting
	// object is left out with it"). On: the generator declares such links.
	ConflictDependents bool
	// ForeignChildren: a foreign vxlan on an owned veth end, a foreign port
	// in an owned bridge (issue 10: "a foreign link attached to an owned
	// one ... is deleted"). On: the foreign actor attaches such children
	// between steps.
	ForeignChildren bool
	// ForeignSameKeyRoute: a foreign route with the key of a declared one
	// (issue 10: "diff plans + route and only apply discovers the clash").
	// On: foreign routes share the declared routes' destinations.
	ForeignSameKeyRoute bool
	// AddressInSubnet: several IPv4 addresses of one subnet on a link, and
	// the change of an address within its subnet (issue 10: "changing an
	// address within its subnet ... loses every route through it").
	AddressInSubnet bool
	// PruneAllENODEV: removing a veth pair together with links the kernel
	// deletes with it (issue 10: "pruning everything ... exits 1 (delete
	// link …: no such device)"). On: a step may drop a pair and its
	// dependents at once.
	PruneAllENODEV bool
	// KernelWidth: numbers at the kernel's width and names of 15 bytes
	// (issue 10: "values the kernel mangles pass validation"). On: metrics
	// up to 4294967295, priorities up to 4294967295 and 15-byte link names.
	KernelWidth bool
	// SettingsProtocol: settings.protocol other than the default (issue 10:
	// "settings.protocol accepts numbers that other software owns"). On:
	// each walk picks its protocol.
	SettingsProtocol bool
	// NftTableHandle: an owned table deleted and recreated by someone else
	// (issue 10: "the ledger records the table's handle"). On: the foreign
	// actor recreates an owned table between steps and expects a conflict.
	NftTableHandle bool

	// Found by the walk (docs/walk-findings.md):

	// CatchAllRule: a rule with no selector and a non-lookup action (from
	// all prohibit), or not with a drop action, that stands before "lookup
	// main" while a route through a gateway is added: the kernel's gateway
	// check, a policy lookup, runs into the rule (EACCES). Fixed (finding
	// 8: apply retries such a write under a guard rule). On: such rules are
	// made.
	CatchAllRule bool
	// IPVlanModes: two ipvlans of different modes on one parent. The kernel
	// keeps one mode per parent, so the second silently changes the first.
	// Validation now refuses such files (finding 13), so it stays off. On:
	// such files are made.
	IPVlanModes bool
	// RuleNotIdentity: two rules that differ only in "not". The kernel's
	// rule identity ignores the flag (EEXIST on the second). Validation now
	// refuses such files (finding 14), so it stays off. On: such files are
	// made.
	RuleNotIdentity bool
	// PoolStaticAddress: a link that takes an address from a pool and also
	// declares a static address in the pool's subnet. The pool may hand
	// out that very address, and apply then refuses the file ("is also
	// declared") where diff, which allocates nothing, accepted it. Fixed
	// (finding 25: a pool reserves the file's static addresses in its
	// subnets). On: such links are made.
	PoolStaticAddress bool
	// RuleAddClash: two rules of one priority and action where one leaves
	// from or to unset that the other sets. The kernel compares from and
	// to only where the rule being added sets them, so the second add
	// fails with "file exists" (finding 36). Validation now refuses such
	// files, so it stays off; a stale rule of ours that clashes with a new
	// one is deleted first, and a foreign one is a conflict the plan shows.
	// On: such files are made.
	RuleAddClash bool
	// RulePartialDelete: two rules of one priority and family where one
	// has a selector the other lacks (fwmark). Deleting the one without
	// can delete the other: the kernel matches a delete on the attributes
	// it is given. On: such files are made.
	RulePartialDelete bool
	// KeptLowMTU: an MTU below 1280 taken out of the file, which the
	// kernel keeps (finding 103: IPv6 declared on such a link was refused
	// as a key the kernel "does not have", or failed the apply). On: a
	// step sometimes leaves the MTU out instead of giving 1500.
	KeptLowMTU bool
}

// switches maps the switch names of WALK_DEFECTS to the fields.
func (d *Defects) switches() map[string]*bool {
	return map[string]*bool{
		"nft-table-takeover":     &d.NftTableTakeover,
		"conflict-dependents":    &d.ConflictDependents,
		"foreign-children":       &d.ForeignChildren,
		"foreign-same-key-route": &d.ForeignSameKeyRoute,
		"address-in-subnet":      &d.AddressInSubnet,
		"prune-all-enodev":       &d.PruneAllENODEV,
		"kernel-width":           &d.KernelWidth,
		"settings-protocol":      &d.SettingsProtocol,
		"nft-table-handle":       &d.NftTableHandle,
		"catch-all-rule":         &d.CatchAllRule,
		"ipvlan-modes":           &d.IPVlanModes,
		"rule-not-identity":      &d.RuleNotIdentity,
		"rule-partial-delete":    &d.RulePartialDelete,
		"pool-static-address":    &d.PoolStaticAddress,
		"rule-add-clash":         &d.RuleAddClash,
		"kept-low-mtu":           &d.KeptLowMTU,
	}
}

// Fixed are the switches whose defects are fixed on main: on by default, so
// the walk generates those paths (the nine defects issue 10 lists, and the
// walk's own findings 15 and 8). The others still gate defects that are open.
var Fixed = []string{
	"nft-table-takeover", "conflict-dependents", "foreign-children",
	"foreign-same-key-route", "address-in-subnet", "prune-all-enodev",
	"kernel-width", "settings-protocol", "nft-table-handle",
	"rule-partial-delete", "catch-all-rule", "pool-static-address",
	"kept-low-mtu",
}

// ParseDefects turns on the Fixed switches and those named in a
// comma-separated list ("all" turns on every one, "none" first turns every
// one off).
func ParseDefects(s string) (Defects, error) {
	var d Defects
	sw := d.switches()
	for _, n := range Fixed {
		*sw[n] = true
	}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if n == "none" {
			for _, p := range sw {
				*p = false
			}
			continue
		}
		if n == "all" {
			for _, p := range sw {
				*p = true
			}
			continue
		}
		p, ok := sw[n]
		if !ok {
			var names []string
			for k := range sw {
				names = append(names, k)
			}
			sort.Strings(names)
			return d, fmt.Errorf("unknown defect switch %q; expected one of: %s", n, strings.Join(names, ", "))
		}
		*p = true
	}
	return d, nil
}

// String lists the switches that are on.
func (d Defects) String() string {
	var on []string
	for k, p := range d.switches() {
		if *p {
			on = append(on, k)
		}
	}
	sort.Strings(on)
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}

// Caps is what the kernel at hand supports (Detect).
type Caps struct {
	Dummy, IPVlan, IPIP, IP6Tnl, Fou bool
	VLAN, MACVlan, VRF, Bond         bool
	// WireGuard is true when a wireguard link can be made: the kernel
	// module, or wireguard-go with /dev/net/tun.
	WireGuard bool
	// WireGuardModule is the kernel module: a device may say
	// userspace: false.
	WireGuardModule bool
}

// Kinds lists the link kinds the generator makes with these capabilities.
func (c Caps) Kinds() []string {
	k := []string{"veth", "bridge", "vxlan"}
	if c.Dummy {
		k = append(k, "dummy")
	}
	if c.IPVlan && c.Dummy {
		k = append(k, "ipvlan")
	}
	if c.IPIP {
		k = append(k, "ipip")
	}
	if c.IP6Tnl {
		k = append(k, "ip6tnl")
	}
	if c.WireGuard {
		k = append(k, "wireguard")
	}
	if c.MACVlan {
		k = append(k, "macvlan")
	}
	if c.VLAN {
		k = append(k, "vlan")
	}
	if c.VRF {
		k = append(k, "vrf")
	}
	if c.Bond {
		k = append(k, "bond")
	}
	return k
}

// Gen generates configurations. Its random source is the walk's seed.
type Gen struct {
	// NftRules gives a family's rules to draw from, by chain of the
	// corpus's standard tables (nftrules.go); nil: the corpus's, unjudged
	// (for kernels that compile anything).
	NftRules func(family string) map[string][]string

	R *rand.Rand
	// W draws the sets, maps and objects in nft's words (gen_nft.go), a
	// sequence of its own so that R's, and the walks of every seed that
	// came before them, stay as they were; nil: seeded with 1.
	W *rand.Rand
	// K draws the keys of gen_keys.go, likewise; nil: seeded with 1.
	K *rand.Rand
	// P draws the static addresses in the pools' subnets of
	// gen_pooladdrs.go, likewise; nil: seeded with 1.
	P *rand.Rand
	// NoIPv6Keys leaves those keys out, for a kernel that does not take
	// IPv6 off a link (the fake).
	NoIPv6Keys bool
	Caps       Caps
	Defects    Defects
	// Tag makes the WireGuard device names unique on the host:
	// wireguard-go's control sockets are shared by every namespace.
	Tag string
	// KeyDir holds the private key files (mode 0600), one per device name.
	KeyDir string
	// Keys maps a WireGuard device name to its key file and public key,
	// AltKeys to its other one (WG.Alt).
	Keys, AltKeys map[string][2]string
	// PeerKeys are public keys for peers.
	PeerKeys []string
	// PoolBits and PoolTable are the pool's shape, fixed for a walk.
	PoolBits, PoolTable int
	// ForeignLinks are the names the foreign generator used (for
	// ConflictDependents).
	ForeignLinks []string
	// PeerNS and PeerNS2 are the named namespaces that take the peers of
	// veth pairs with peer-netns (the runner makes them).
	PeerNS, PeerNS2 string
	// PSKs are preshared key files and their keys.
	PSKs [][2]string
	// before is the configuration Next mutates (what the kernel holds
	// when the step starts).
	before *Config
	// owners numbers the other owners of pool addresses.
	owners int
}

// AdoptLink and AdoptTable are foreign objects (ForeignPlan makes them)
// that the file may declare with adopt: true; once adopted they are the
// walk's own.
const (
	AdoptLink  = "fa0"
	AdoptTable = "ip nrwa"
)

// slots are the names each kind may take; a rename moves a link to another
// free slot of its kind.
func (g *Gen) slots(kind string) []string {
	switch kind {
	case "bridge":
		s := []string{"b0", "b1", "b2"}
		if g.Defects.KernelWidth {
			s = append(s, "bridge-15bytes0")
		}
		return s
	case "vxlan":
		return []string{"x0", "x1", "x2"}
	case "dummy":
		return []string{"d0", "d1", "d2"}
	case "ipvlan":
		return []string{"i0", "i1"}
	case "ipip":
		return []string{"t0", "t1"}
	case "ip6tnl":
		return []string{"s0", "s1"}
	case "wireguard":
		return []string{"wg" + g.Tag + "0", "wg" + g.Tag + "1"}
	case "macvlan":
		return []string{"m0", "m1"}
	case "vlan":
		return []string{"v0", "v1"}
	case "vrf":
		return []string{"r0", "r1"}
	case "bond":
		return []string{"o0", "o1"}
	}
	return nil
}

// vethPairs is how many veth pairs a configuration may hold: pair i takes
// two of the names p{i}a..p{i}c.
var vethPairs = 3

func (g *Gen) pick(s []string) string { return s[g.R.Intn(len(s))] }

func (g *Gen) chance(p float64) bool { return g.R.Float64() < p }

// linkIndex gives each name a number for its address subnets.
func linkIndex(name string) int {
	h := 0
	for _, c := range name {
		h = h*31 + int(c)
	}
	if h < 0 {
		h = -h
	}
	return 1 + h%200
}

// Initial returns the first configuration of a walk.
func (g *Gen) Initial() *Config {
	c := &Config{Protocol: 245, Links: map[string]*Link{}}
	if g.Defects.SettingsProtocol {
		// 42 is babel's in the kernel's list: taken with
		// protocol-override (no program here speaks babel).
		c.Protocol = pickInt(g, []int{245, 200, 250, 42})
		c.ProtocolOverride = c.Protocol == 42 || g.chance(0.2)
	}
	n := 1 + g.R.Intn(4)
	for i := 0; i < n; i++ {
		g.addLink(c)
	}
	for i := 0; i < 3; i++ {
		g.mutate(c)
	}
	g.Repair(c)
	return c
}

// Next returns a mutation of c: one to three random changes, then repaired
// into a valid configuration.
func (g *Gen) Next(c *Config) (*Config, string) {
	g.before = c
	n := c.Clone()
	var what []string
	for i, k := 0, 1+g.R.Intn(3); i < k; i++ {
		what = append(what, g.mutate(n))
	}
	if w := g.changeKeys(n); w != "" {
		what = append(what, w)
	}
	if w := g.staticInPools(n); w != "" {
		what = append(what, w)
	}
	g.keepLowMTU(c, n)
	g.Repair(n)
	pinLowChildren(c, n)
	g.keepKeys(c, n)
	return n, strings.Join(what, "; ")
}

func (g *Gen) mutate(c *Config) string {
	switch x := g.R.Intn(130); {
	case x >= 110:
		return g.inPlace(c)
	case x >= 108:
		return g.changeSettings(c)
	case x >= 104:
		return g.interact(c)
	case x >= 100:
		return g.respell(c)
	case x < 11:
		return g.addLink(c)
	case x < 18:
		return g.removeLink(c)
	case x < 22:
		return g.renameLink(c)
	case x < 32:
		return g.changeLink(c)
	case x < 44:
		return g.changeAddrs(c)
	case x < 56:
		return g.changeRoutes(c)
	case x < 65:
		return g.changeRules(c)
	case x < 78:
		d := g.changeNft(c)
		if len(c.Tables) > 0 && g.w().Float64() < 0.8 {
			// Drawn from W: the main sequence stays a seed's.
			d += "; " + g.changeNftWords(c)
		}
		return d
	case x < 86:
		return g.changeSysctls(c)
	default:
		return g.changePoolsFou(c)
	}
}

func (g *Gen) freeSlot(c *Config, kind string) string {
	var free []string
	for _, s := range g.slots(kind) {
		if c.Links[s] == nil {
			free = append(free, s)
		}
	}
	if len(free) == 0 {
		return ""
	}
	return g.pick(free)
}

func (g *Gen) addLink(c *Config) string {
	if g.PeerNS != "" && g.chance(0.12) {
		// A pair whose peer lives in another namespace: only this end
		// is declared.
		name := g.pick([]string{"p9a", "p9c"})
		if c.Links["p9a"] != nil || c.Links["p9c"] != nil {
			return "noop"
		}
		l := g.newLink(c, name, "veth")
		l.Peer, l.PeerNS = g.pick([]string{"p9b", "p9d"}), g.PeerNS
		if c.Links[l.Peer] != nil {
			// A peer brought home (inPlacePeerHome) holds the name.
			return "noop"
		}
		if g.PeerNS2 != "" && g.chance(0.3) {
			l.PeerNS = g.PeerNS2
		}
		c.Links[name] = l
		return "add veth " + name + " with its peer in " + g.PeerNS
	}
	if c.Links[AdoptLink] == nil && g.chance(0.06) {
		l := g.newLink(c, AdoptLink, "bridge")
		l.Adopt = true
		c.Links[AdoptLink] = l
		return "adopt " + AdoptLink
	}
	if g.chance(0.08) {
		return g.changeKind(c)
	}
	kind := g.pick(g.Caps.Kinds())
	if kind == "veth" {
		for _, i := range g.R.Perm(vethPairs) {
			ends := []string{fmt.Sprintf("p%da", i), fmt.Sprintf("p%db", i), fmt.Sprintf("p%dc", i)}
			used := false
			for _, e := range ends {
				if c.Links[e] != nil {
					used = true
				}
			}
			if used {
				continue
			}
			p := g.R.Perm(3)
			a, b := ends[p[0]], ends[p[1]]
			c.Links[a] = g.newLink(c, a, "veth")
			c.Links[a].Peer = b
			c.Links[b] = g.newLink(c, b, "veth")
			c.Links[b].Peer = a
			return "add veth pair " + a + "/" + b
		}
		return "no free veth pair"
	}
	name := g.freeSlot(c, kind)
	if g.Defects.ConflictDependents && len(g.ForeignLinks) > 0 && g.chance(0.05) {
		name = g.pick(g.ForeignLinks)
		if c.Links[name] != nil {
			return "noop"
		}
		kind = "bridge"
	}
	if name == "" {
		return "no free " + kind
	}
	c.Links[name] = g.newLink(c, name, kind)
	return "add " + kind + " " + name
}

func (g *Gen) newLink(c *Config, name, kind string) *Link {
	l := &Link{Name: name, Kind: kind, Frag: g.frag(), Explicit: g.chance(0.15)}
	switch kind {
	case "vxlan":
		l.VXLAN = g.newVXLAN(c)
	case "ipvlan":
		l.Mode = g.pick([]string{"l2", "l3", "l3s"})
		l.Parent = g.pickLink(c, func(m *Link) bool { return m.Kind == "dummy" })
	case "ipip", "ip6tnl":
		l.Tunnel = g.newTunnel(kind)
	case "macvlan", "vlan", "vrf", "bond":
		g.newLowerOrMaster(c, l)
	case "wireguard":
		l.WG = &WG{Credential: g.chance(0.2), Kernel: g.Caps.WireGuardModule && g.chance(0.3)}
		g.wgKey(l.WG, name)
		g.changeWG(l.WG)
	}
	g.changeLinkAttr(c, l)
	for i := g.R.Intn(3); i > 0; i-- {
		g.addAddr(l)
	}
	return l
}

// lowerParent reports whether a vlan or macvlan goes on m in the walk: a
// veth, dummy, bond or bridge (an upper of a bridge is no port of it: the
// bridge's MTU does not follow the upper's, the upper's without an MTU
// follows the bridge's).
func lowerParent(m *Link) bool {
	return m.Kind == "veth" && m.PeerNS == "" || m.Kind == "dummy" || m.Kind == "bond" || m.Kind == "bridge"
}

// newLowerOrMaster draws the attributes of a macvlan, vlan, vrf or bond.
// bondModes are the bond modes the walk draws ("" is balance-rr).
var bondModes = []string{"", "active-backup", "balance-xor", "802.3ad", "broadcast", "balance-tlb", "balance-alb"}

func (g *Gen) newLowerOrMaster(c *Config, l *Link) {
	switch l.Kind {
	case "macvlan":
		l.Parent = g.pickLink(c, lowerParent)
		l.Mode = g.pick([]string{"", "bridge", "private", "vepa", "passthru"})
	case "vlan":
		l.Parent = g.pickLink(c, lowerParent)
		l.VlanID = pickInt(g, []int{10, 20, 4094})
		l.Mode = g.pick([]string{"", "", "802.1ad"})
	case "vrf":
		l.Table = pickInt(g, []int{1001, 1002})
	case "bond":
		l.Mode = g.pick(bondModes)
		l.Miimon = pickInt(g, []int{-1, 0, 50})
	}
}

func (g *Gen) newTunnel(kind string) *Tunnel {
	t := &Tunnel{Local: fmt.Sprintf("192.0.2.%d", 1+g.R.Intn(9)), Remote: fmt.Sprintf("198.51.100.%d", 1+g.R.Intn(9))}
	if kind == "ip6tnl" {
		t = &Tunnel{Local: fmt.Sprintf("2001:db8:ff::%d", 1+g.R.Intn(9)), Remote: fmt.Sprintf("2001:db8:fe::%d", 1+g.R.Intn(9))}
		t.Mode = g.pick([]string{"", "ip6ip6", "ipip6", "any"})
	}
	if g.chance(0.1) {
		// Flow-based: no endpoints, ttl or encap.
		return &Tunnel{Mode: t.Mode, External: true}
	}
	g.tunnelExtras(t)
	return t
}

func (g *Gen) tunnelExtras(t *Tunnel) {
	if t.External {
		return
	}
	t.TTL = pickInt(g, []int{0, 64, 225})
	t.EncapDport, t.EncapSport, t.EncapType = 0, 0, ""
	if g.chance(0.4) {
		t.EncapDport = pickInt(g, []int{5555, 5556})
		t.EncapType = g.pick([]string{"fou", "fou", "gue"})
		if g.chance(0.5) {
			t.EncapSport = pickInt(g, []int{6000, 6001})
		}
	}
}

// frag picks the file that declares a new object: mostly the main file.
func (g *Gen) frag() int {
	if g.chance(0.6) {
		return 0
	}
	return 1 + g.R.Intn(Frags-1)
}

func (g *Gen) newVXLAN(c *Config) *VXLAN {
	v := &VXLAN{ID: pickInt(g, []int{10, 20, 30, 16777215}), TTL: pickInt(g, []int{0, 0, 64, 128})}
	if g.chance(0.5) {
		v.Local, v.Remote = fmt.Sprintf("192.0.2.%d", 1+g.R.Intn(9)), fmt.Sprintf("198.51.100.%d", 1+g.R.Intn(9))
	} else {
		v.Local, v.Remote = fmt.Sprintf("2001:db8:ff::%d", 1+g.R.Intn(9)), fmt.Sprintf("2001:db8:fe::%d", 1+g.R.Intn(9))
	}
	if g.chance(0.3) {
		v.Local = ""
	}
	v.Port = pickInt(g, []int{0, 0, 8472, 4790})
	v.NoLearning = g.chance(0.2)
	if g.chance(0.6) {
		v.Dev = g.pickLink(c, func(m *Link) bool {
			// A vxlan on a veth end goes with the pair: the path of the
			// listed "prune-all ENODEV" defect.
			return (m.Kind == "veth" && g.Defects.PruneAllENODEV) || m.Kind == "dummy" || m.Kind == "bridge"
		})
	}
	if v.Dev != "" && g.chance(0.3) {
		// A multicast group instead of a remote: it needs a lower
		// device.
		if strings.Contains(v.Remote, ":") {
			v.Group = fmt.Sprintf("ff05::%d", 100+g.R.Intn(3))
		} else {
			v.Group = fmt.Sprintf("239.1.1.%d", 1+g.R.Intn(3))
		}
		v.Remote = ""
	}
	return v
}

// pickLink returns a random declared link that ok accepts, or "".
func (g *Gen) pickLink(c *Config, ok func(*Link) bool) string {
	var ns []string
	for _, n := range c.LinkNames() {
		if ok(c.Links[n]) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return ""
	}
	return g.pick(ns)
}

// MTU choices keep a vxlan's MTU (at most 1350) below what any lower device
// allows (1450 - 70), and every IPv6-capable link at 1280 or more: below it
// the kernel disables IPv6 on the link.
func (g *Gen) changeLinkAttr(c *Config, l *Link) {
	switch l.Kind {
	case "vxlan":
		l.MTU = pickInt(g, []int{0, 1280, 1350})
	case "wireguard":
		l.MTU = pickInt(g, []int{0, 1280, 1420})
	case "ipip", "ip6tnl", "ipvlan", "macvlan", "vlan":
		l.MTU = pickInt(g, []int{0, 1280, 1300})
	case "device":
	default:
		l.MTU = pickInt(g, []int{0, 1450, 1500, 9000})
	}
	l.Down = g.chance(0.15)
	l.Alias = g.pick([]string{"", "", "walk link", "x"})
	if l.Kind == "veth" || l.Kind == "vxlan" || l.Kind == "dummy" || l.Kind == "macvlan" || l.Kind == "vlan" {
		l.Master = ""
		if g.chance(0.4) {
			l.Master = g.pickLink(c, masterKind)
		}
	}
}

// masterKind says whether m can be a master (Repair drops what the kind of
// port does not fit).
func masterKind(m *Link) bool { return m.Kind == "bridge" || m.Kind == "vrf" || m.Kind == "bond" }

func (g *Gen) addAddr(l *Link) {
	idx := linkIndex(l.Name)
	a := &Addr{}
	if g.chance(0.12) {
		// Point to point: the kernel keeps the peer's prefix length,
		// which the address must share.
		switch g.R.Intn(3) {
		case 0:
			a.CIDR, a.Peer = fmt.Sprintf("10.%d.9.%d/32", idx, 1+g.R.Intn(2)), fmt.Sprintf("10.%d.9.%d/32", idx, 10+g.R.Intn(2))
		case 1:
			a.CIDR, a.Peer = fmt.Sprintf("10.%d.9.%d/24", idx, 1+g.R.Intn(2)), fmt.Sprintf("10.%d.8.0/24", idx)
		default:
			a.CIDR, a.Peer = fmt.Sprintf("fd00:%x:9::%x/128", idx, 1+g.R.Intn(2)), fmt.Sprintf("fd00:%x:9::%x/128", idx, 10+g.R.Intn(2))
		}
		a.NoPrefixRoute = g.chance(0.15)
		l.Addrs = append(l.Addrs, a)
		return
	}
	if g.chance(0.6) {
		a.CIDR = fmt.Sprintf("10.%d.%d.%d/24", idx, g.R.Intn(2), 1+g.R.Intn(4))
		a.Scope = g.pick([]string{"", "", "", "link", "host"})
	} else if g.chance(0.1) {
		a.CIDR = fmt.Sprintf("::ffff:10.%d.7.%d/120", idx, 1+g.R.Intn(4)) // IPv4-mapped: IPv6
	} else {
		a.CIDR = fmt.Sprintf("fd00:%x:%x::%x/64", idx, g.R.Intn(2), 1+g.R.Intn(4))
	}
	a.NoPrefixRoute = g.chance(0.15)
	l.Addrs = append(l.Addrs, a)
}

func (g *Gen) removeLink(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Kind != "device" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	delete(c.Links, n)
	if l.Kind == "veth" {
		delete(c.Links, l.Peer)
	}
	return "remove " + n
}

// renameJoinsHops says whether renaming link n to to would make two next
// hops of a route the same (one gateway, and one device or either none),
// which validation refuses (walk finding 64: a hop left on the name of a
// link the step removed, then given to another).
func renameJoinsHops(c *Config, n, to string) bool {
	dev := func(d string) string {
		if d == n {
			return to
		}
		return d
	}
	for _, r := range c.Routes {
		for i := range r.Hops {
			for j := range i {
				a, b := r.Hops[i], r.Hops[j]
				if a.Via == b.Via && (dev(a.Dev) == dev(b.Dev) || a.Dev == "" || b.Dev == "") {
					return true
				}
			}
		}
	}
	return false
}

// renameLink moves a link to another free name of its kind and updates the
// references to it.
func (g *Gen) renameLink(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Kind != "device" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	var to string
	if l.Adopt {
		return "noop"
	}
	switch {
	case l.PeerNS != "":
		// Between the end names: validation refuses a veth named like its
		// peer, though the peer is in another namespace.
		to = map[string]string{"p9a": "p9c", "p9c": "p9a"}[n]
	case l.Kind == "veth":
		pair := n[:len(n)-1]
		for _, s := range []string{"a", "b", "c"} {
			if c.Links[pair+s] == nil {
				to = pair + s
			}
		}
	default:
		to = g.freeSlot(c, l.Kind)
	}
	if to == "" || renameJoinsHops(c, n, to) {
		return "noop"
	}
	if l.Kind == "wireguard" {
		g.wgKey(l.WG, to)
		if l.WG.ListenPort != 0 {
			l.WG.ListenPort = wgPort(to, l.WG.ListenPort > 52000)
		}
	}
	delete(c.Links, n)
	l.Name = to
	c.Links[to] = l
	for _, m := range c.Links {
		if m.Master == n {
			m.Master = to
		}
		if m.Peer == n {
			m.Peer = to
		}
		if m.Parent == n {
			m.Parent = to
		}
		if m.VXLAN != nil && m.VXLAN.Dev == n {
			m.VXLAN.Dev = to
		}
	}
	for _, r := range c.Routes {
		if r.Dev == n {
			r.Dev = to
		}
		for i := range r.Hops {
			if r.Hops[i].Dev == n {
				r.Hops[i].Dev = to
			}
		}
	}
	for _, t := range c.Tables {
		for _, s := range t.Sets {
			if s.FromWG == n {
				s.FromWG = to
			}
		}
	}
	return "rename " + n + " to " + to
}

func (g *Gen) changeLink(c *Config) string {
	// Device links (lo, which pools need up) keep their attributes.
	n := g.pickLink(c, func(l *Link) bool { return l.Kind != "device" })
	if n == "" {
		return g.addLink(c)
	}
	l := c.Links[n]
	if l.Adopt && g.chance(0.2) {
		// Adopted: ours from now on, with or without the key.
		l.Adopt = false
		return "drop adopt of " + n
	}
	if l.PeerNS != "" && g.PeerNS2 != "" && g.chance(0.3) {
		l.PeerNS = map[bool]string{true: g.PeerNS2, false: g.PeerNS}[l.PeerNS == g.PeerNS]
		return "move the peer of " + n + " to " + l.PeerNS
	}
	switch g.R.Intn(4) {
	case 0:
		g.changeLinkAttr(c, l)
		return "change attributes of " + n
	case 1:
		switch {
		case l.VXLAN != nil:
			l.VXLAN = g.newVXLAN(c)
			return "change vxlan " + n
		case l.Tunnel != nil:
			if g.chance(0.3) {
				l.Tunnel = g.newTunnel(l.Kind)
			} else {
				g.tunnelExtras(l.Tunnel)
			}
			return "change tunnel " + n
		case l.WG != nil:
			if g.chance(0.5) {
				return g.changeWGIdentity(l)
			}
			g.changeWG(l.WG)
			return "change wireguard " + n
		case l.Kind == "ipvlan":
			l.Mode = g.pick([]string{"l2", "l3", "l3s"})
			return "change ipvlan " + n
		case l.Kind == "macvlan" || l.Kind == "vlan" || l.Kind == "vrf" || l.Kind == "bond":
			if g.chance(0.7) && l.Kind != "vrf" {
				// Mostly an attribute that changes in place.
				switch l.Kind {
				case "macvlan":
					l.Mode = g.pick([]string{"", "bridge", "private", "vepa"})
				case "bond":
					if g.chance(0.5) {
						l.Miimon = pickInt(g, []int{-1, 0, 50, 200})
					} else {
						// In place without members, else a replace.
						l.Mode = g.pick(bondModes)
					}
				default:
					if g.chance(0.5) {
						// Its protocol or its id: a replace. One pick, so
						// that the draws after it stay those of before.
						switch p := g.pick([]string{"", "802.1ad", "id", "id"}); p {
						case "id":
							l.VlanID = 1 + (l.VlanID+9)%4094
						default:
							l.Mode = p
						}
					} else {
						l.MTU = pickInt(g, []int{0, 1280, 1300})
					}
				}
			} else {
				g.newLowerOrMaster(c, l)
			}
			return "change " + l.Kind + " " + n
		}
		l.Down = !l.Down
		return "toggle state of " + n
	case 2:
		if l.Kind == "veth" || l.Kind == "vxlan" || l.Kind == "dummy" || l.Kind == "macvlan" || l.Kind == "vlan" {
			l.Master = g.pickLink(c, masterKind)
			return "move " + n + " to master " + l.Master
		}
		l.MTU = 0
		return "unset mtu of " + n
	default:
		l.Down = !l.Down
		return "toggle state of " + n
	}
}

func (g *Gen) changeWG(w *WG) {
	// Ports by name: two devices never want the same port in a row.
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(w.KeyFile), ".key"), ".alt")
	w.ListenPort = pickInt(g, []int{0, wgPort(name, false), wgPort(name, true)})
	w.Fwmark = pickInt(g, []int{0, 0x20, 0x40})
	w.Peers = nil
	for _, i := range g.R.Perm(len(g.PeerKeys))[:g.R.Intn(len(g.PeerKeys)+1)] {
		p := &WGPeer{PublicKey: g.PeerKeys[i]}
		for _, j := range g.R.Perm(4)[:g.R.Intn(3)] {
			p.AllowedIPs = append(p.AllowedIPs, fmt.Sprintf("10.24%d.%d.0/24", i, j))
		}
		if g.chance(0.3) {
			p.AllowedIPs = append(p.AllowedIPs, netip.MustParsePrefix(fmt.Sprintf("fd24:%d::/64", i)).String())
		}
		p.Keepalive = pickInt(g, []int{0, 25, 60})
		if g.chance(0.5) {
			// Candidates in order; apply sets the first (the device
			// has no handshake to judge another by).
			cands := []string{fmt.Sprintf("192.0.2.%d:51820", 10+i), fmt.Sprintf("[2001:db8:24::%d]:51820", 10+i), fmt.Sprintf("192.0.2.%d:51821", 20+i)}
			for _, j := range g.R.Perm(len(cands))[:1+g.R.Intn(len(cands))] {
				p.Endpoints = append(p.Endpoints, cands[j])
			}
		}
		if len(g.PSKs) > 0 && g.chance(0.4) {
			k := g.PSKs[g.R.Intn(len(g.PSKs))]
			p.PSKFile, p.PSK = k[0], k[1]
		}
		w.Peers = append(w.Peers, p)
	}
	w.Rotation = pickInt(g, []int{0, 0, 1, 2})
}

func (g *Gen) changeAddrs(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Kind != "device" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	if len(l.Addrs) > 0 && g.chance(0.4) {
		i := g.R.Intn(len(l.Addrs))
		l.Addrs = append(l.Addrs[:i], l.Addrs[i+1:]...)
		return "remove an address of " + n
	}
	if len(l.Addrs) > 0 && g.chance(0.3) {
		a := l.Addrs[g.R.Intn(len(l.Addrs))]
		if a.Peer != "" && g.chance(0.5) {
			// Another far end, or none (a /32 or /128 stands alone).
			p := netip.MustParsePrefix(a.Peer)
			if p.Bits() == p.Addr().BitLen() && g.chance(0.5) {
				a.Peer = ""
			} else if p.Bits() == p.Addr().BitLen() {
				a.Peer = netip.PrefixFrom(p.Addr().Next(), p.Bits()).String()
			}
			return "change the peer of an address of " + n
		}
		if a.Pool == "" {
			a.NoPrefixRoute = !a.NoPrefixRoute
			if !strings.Contains(a.CIDR, ":") { // IPv4 (an IPv4-mapped one is IPv6)
				a.Scope = g.pick([]string{"", "link", "host"})
			}
			return "change an address of " + n
		}
	}
	g.addAddr(l)
	return "add an address to " + n
}

var routeTables = []string{"", "", "100", "200", "300"}

// pickTable draws a route's table: one of routeTables, or sometimes the
// table of a vrf of the file (its ports' connected routes are there too,
// and it goes with the vrf's replace).
func (g *Gen) pickTable(c *Config) string {
	var vrfs []string
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; l.Kind == "vrf" {
			vrfs = append(vrfs, strconv.Itoa(l.Table))
		}
	}
	if len(vrfs) > 0 && g.chance(0.3) {
		return g.pick(vrfs)
	}
	return g.pick(routeTables)
}

// Caps on the numbers of routes and rules keep a long walk's files (and
// its steps' time) bounded: past them, a change removes one.
const maxRoutes, maxRules = 16, 12

func (g *Gen) changeRoutes(c *Config) string {
	if g.chance(0.12) {
		return g.changeRouteFiles(c)
	}
	if len(c.Routes) > 0 && g.chance(0.08) {
		return g.changeRouteMore(c)
	}
	if len(c.Routes) > 0 && (g.chance(0.3) || len(c.Routes) >= maxRoutes) {
		i := g.R.Intn(len(c.Routes))
		c.Routes = append(c.Routes[:i], c.Routes[i+1:]...)
		return "remove a route"
	}
	if len(c.Routes) > 0 && g.chance(0.4) {
		r := c.Routes[g.R.Intn(len(c.Routes))]
		switch g.R.Intn(6) {
		case 0:
			r.Table = g.pickTable(c)
			return "move a route to table " + r.Table
		case 4:
			r.TOS = g.tos(r.To)
			return "change the tos of a route"
		case 5:
			if len(c.Routes) > 1 {
				r.Frag = g.frag()
				return "move a route to file " + fmt.Sprint(r.Frag)
			}
			fallthrough
		case 1:
			r.Metric = g.metric()
		case 2:
			r.MTU = pickInt(g, []int{0, 1400, 1300})
		default:
			g.routeTarget(c, r)
		}
		return "change a route"
	}
	r := &Route{Table: g.pickTable(c), Metric: g.metric()}
	v6 := g.chance(0.35)
	switch {
	case g.chance(0.1):
		r.To = "default"
		if v6 {
			r.To = "::/0"
		}
	case v6 && g.chance(0.15):
		// IPv4-mapped: IPv6 to the kernel (a reader that unmapped it
		// took it for an invalid IPv4 prefix).
		r.To = fmt.Sprintf("::ffff:172.16.%d.0/120", g.R.Intn(6))
	case v6:
		r.To = netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x::/64", g.R.Intn(6))).String()
	default:
		r.To = fmt.Sprintf("172.16.%d.0/24", g.R.Intn(6))
	}
	g.routeTarget(c, r)
	r.TOS = g.tos(r.To)
	r.Frag = g.frag()
	if r.To == "default" && r.Via == "" && len(r.Hops) == 0 && g.chance(0.6) {
		// The family key: a default route of each family, or both.
		r.Family = g.pick([]string{"ipv4", "ipv6", "both"})
		if r.Family != "ipv4" {
			r.TOS, r.Scope, r.Src = 0, "", ""
		}
	}
	if len(c.RouteFiles) > 0 && r.Family == "" && g.chance(0.3) {
		r.Side = c.RouteFiles[g.R.Intn(len(c.RouteFiles))].Name
	}
	c.Routes = append(c.Routes, r)
	return "add a route"
}

// tos picks a route's tos: IPv4 only, a multiple of 4 (no ECN bits).
func (g *Gen) tos(to string) int {
	if strings.Contains(to, ":") || !g.chance(0.15) {
		return 0
	}
	// Values iproute2 prints as numbers (not as rt_dsfield names: EF is 184).
	return pickInt(g, []int{4, 8, 16})
}

func (g *Gen) metric() int {
	if g.Defects.KernelWidth && g.chance(0.1) {
		return 4294967295
	}
	return pickInt(g, []int{0, 0, 10, 100})
}

// routeTarget picks a route's type and next hop. Gateways come from the
// connected subnets of the device; Repair drops what no longer fits.
func (g *Gen) routeTarget(c *Config, r *Route) {
	r.Type, r.Via, r.Dev, r.Src, r.Scope, r.Onlink, r.Hops = "unicast", "", "", "", "", false, nil
	v6 := strings.Contains(r.To, ":")
	if g.chance(0.25) {
		r.Type = g.pick([]string{"blackhole", "unreachable", "prohibit", "throw"})
		return
	}
	if g.chance(0.15) && g.multipath(c, r, v6) {
		return
	}
	if !v6 && g.chance(0.08) {
		// RFC 5549: an IPv6 link-local next hop of an IPv4 route.
		if r.Dev = g.pickLink(c, func(l *Link) bool { return !l.Down && l.Name != "lo" }); r.Dev != "" {
			r.Via = fmt.Sprintf("fe80::%x", 1+g.R.Intn(3))
			return
		}
	}
	r.Dev = g.pickLink(c, func(l *Link) bool { return !l.Down })
	if r.Dev == "" {
		r.Type = "blackhole"
		return
	}
	l := c.Links[r.Dev]
	if g.chance(0.1) {
		r.Type = "local"
		return
	}
	if g.chance(0.5) {
		for _, a := range l.Addrs {
			if a.Pool != "" || a.Peer != "" || a.NoPrefixRoute || a.Scope != "" || strings.Contains(a.CIDR, ":") != v6 {
				continue
			}
			p := netip.MustParsePrefix(a.CIDR).Masked()
			gw := p.Addr()
			for i := 200 + g.R.Intn(2); i > 0; i-- {
				gw = gw.Next()
			}
			r.Via = gw.String()
			if !v6 && g.chance(0.3) {
				r.Src = netip.MustParsePrefix(a.CIDR).Addr().String()
			}
			return
		}
	}
	if !v6 && g.chance(0.2) {
		r.Via, r.Onlink = "10.201.0.1", true
		return
	}
	if !v6 && g.chance(0.3) {
		r.Scope = g.pick([]string{"global", "link"})
	}
}

// multipath makes r a route of two or three next hops on distinct links
// that are up: a gateway in a connected subnet of the route's family, or a
// link-local IPv6 one (RFC 5549 for an IPv4 route), with a weight now and
// then. It reports false, r unchanged, when fewer than two links qualify.
func (g *Gen) multipath(c *Config, r *Route, v6 bool) bool {
	var hops []Hop
	used := map[string]bool{}
	for i := 0; i < 6 && len(hops) < 3; i++ {
		// Not lo: the kernel refuses it as the link of an IPv6 gateway.
		dev := g.pickLink(c, func(l *Link) bool { return !l.Down && l.Name != "lo" })
		if dev == "" || used[dev] {
			continue
		}
		h := Hop{Dev: dev, Via: fmt.Sprintf("fe80::%x", 1+g.R.Intn(3))}
		if gw := connectedGateway(c.Links[dev], v6); gw != "" && g.chance(0.6) {
			h.Via = gw
			h.NoDev = g.chance(0.2)
		}
		if g.chance(0.3) {
			h.Weight = pickInt(g, []int{2, 5, 256})
		}
		used[dev] = true
		hops = append(hops, h)
	}
	if len(hops) < 2 {
		return false
	}
	r.Hops = hops
	return true
}

// connectedGateway is an address inside a connected subnet of l of the
// family asked for, as routeTarget picks one; "" when l has none.
func connectedGateway(l *Link, v6 bool) string {
	for _, a := range l.Addrs {
		if a.Pool != "" || a.Peer != "" || a.NoPrefixRoute || a.Scope != "" || strings.Contains(a.CIDR, ":") != v6 {
			continue
		}
		gw := netip.MustParsePrefix(a.CIDR).Masked().Addr()
		for i := 0; i < 200; i++ {
			gw = gw.Next()
		}
		return gw.String()
	}
	return ""
}

func (g *Gen) changeRules(c *Config) string {
	if len(c.Rules) > 0 && len(c.Rules) < maxRules && g.chance(0.25) {
		return g.changeRule(c)
	}
	if len(c.Rules) > 0 && (g.chance(0.35) || len(c.Rules) >= maxRules) {
		i := g.R.Intn(len(c.Rules))
		c.Rules = append(c.Rules[:i], c.Rules[i+1:]...)
		return "remove a rule"
	}
	r := &Rule{Priority: pickInt(g, []int{100, 200, 1000, 2000, 30000}), Family: g.pick([]string{"ipv4", "ipv6"})}
	if g.Defects.KernelWidth && g.chance(0.1) {
		r.Priority = 4294967295
	}
	v6 := r.Family == "ipv6"
	if g.chance(0.5) {
		r.From = map[bool]string{false: "10.50.0.0/16", true: g.pick([]string{"fd50::/48", "fd50::/48", "::ffff:10.50.0.0/112"})}[v6]
	}
	if g.chance(0.3) {
		r.To = map[bool]string{false: "172.17.0.0/16", true: "2001:db8:50::/48"}[v6]
	}
	if g.chance(0.3) {
		r.Fwmark = g.pick([]string{"0x10", "0x40/0x60"})
	}
	if g.chance(0.2) {
		r.IIF = g.pick([]string{"b0", "p0a", "x1", "lo"})
	}
	if g.chance(0.2) {
		r.OIF = g.pick([]string{"b1", "p1b", "x0"})
	}
	if r.From == "" && r.To == "" && r.Fwmark == "" && r.IIF == "" && r.OIF == "" && !g.Defects.CatchAllRule {
		r.Fwmark = "0x10"
	}
	r.Frag = g.frag()
	r.Not = g.chance(0.1)
	r.Action = g.pick([]string{"lookup", "lookup", "lookup", "blackhole", "unreachable", "prohibit"})
	// "not" with a drop action matches nearly everything: catch-all too.
	if r.Not && r.Action != "lookup" && !g.Defects.CatchAllRule {
		r.Not = false
	}
	if r.Action == "lookup" {
		r.Table = g.pick([]string{"100", "200", "main"})
		if g.chance(0.2) {
			r.Suppress, r.HasSuppress = pickInt(g, []int{0, 8, 32}), true
		}
	}
	r.Explicit = g.chance(0.1)
	c.Rules = append(c.Rules, r)
	return "add a rule"
}

var nftTables = [][2]string{{"inet", "nrw0"}, {"ip", "nrw1"}, {"ip6", "nrw2"}, {"bridge", "nrw3"}, {"arp", "nrw4"}, {"netdev", "nrw5"}}

var setElements = map[string][]string{
	"ipv4_addr":    {"10.0.0.0/8", "192.168.1.1", "11.250.0.5-11.250.0.9", "172.20.0.0/16"},
	"ipv6_addr":    {"fd00::/64", "2001:db8:5::1", "fd01::/48"},
	"inet_service": {"22", "80", "443"},
	"mark":         {"0x00000020", "0x00000040"},
}

// setTypes are the walk's set names. sw is fed by a WireGuard link's peers
// (elements-from).
var setTypes = map[string]string{"s4": "ipv4_addr", "s6": "ipv6_addr", "sp": "inet_service", "sm": "mark", "sw": "ipv4_addr"}

// l3 reports whether the family's rules may match IP headers.
func l3(family string) bool { return family == "ip" || family == "ip6" || family == "inet" }

// chainSpecs are the chains the walk declares in a table of the family:
// name, type, hook.
func chainSpecs(family string) [][3]string {
	switch family {
	case "bridge":
		return [][3]string{{"in", "filter", "input"}, {"out", "filter", "output"}, {"fwd", "filter", "forward"}, {"helper", "", ""}}
	case "arp":
		return [][3]string{{"in", "filter", "input"}, {"out", "filter", "output"}, {"helper", "", ""}}
	case "netdev":
		return [][3]string{{"ing", "filter", "ingress"}, {"helper", "", ""}}
	}
	return [][3]string{{"in", "filter", "input"}, {"out", "filter", "output"}, {"fwd", "filter", "forward"}, {"helper", "", ""},
		{"nat", "nat", "postrouting"}, {"pre", "nat", "prerouting"}, {"rtc", "route", "output"}}
}

func (g *Gen) chainPriority(family string, ch *Chain) string {
	switch {
	case ch.Type == "nat" && ch.Hook == "postrouting":
		return g.pick([]string{"srcnat", "srcnat + 10"})
	case ch.Type == "nat":
		return g.pick([]string{"dstnat", "dstnat - 5"})
	case ch.Type == "route":
		return g.pick([]string{"mangle", "filter"})
	case !l3(family):
		return g.pick([]string{"filter", "filter + 10"})
	}
	return g.pick([]string{"filter", "mangle", "raw", "filter + 10", "security"})
}

func (g *Gen) changeNft(c *Config) string {
	if g.chance(0.05) {
		// The foreign table, taken over whole.
		f := strings.Fields(AdoptTable)
		for i, x := range c.Tables {
			if x.Family == f[0] && x.Name == f[1] {
				c.Tables = append(c.Tables[:i], c.Tables[i+1:]...)
				return "remove table " + AdoptTable
			}
		}
		c.Tables = append(c.Tables, &Table{Family: f[0], Name: f[1], Adopt: true, Frag: g.frag()})
		return "adopt table " + AdoptTable
	}
	if len(c.Tables) > 0 && g.chance(0.2) {
		return g.changeNftMore(c)
	}
	if len(c.Tables) == 0 || g.chance(0.15) {
		t := nftTables[g.R.Intn(len(nftTables))]
		for i, x := range c.Tables {
			if x.Family == t[0] && x.Name == t[1] {
				c.Tables = append(c.Tables[:i], c.Tables[i+1:]...)
				return "remove table " + t[0] + " " + t[1]
			}
		}
		c.Tables = append(c.Tables, &Table{Family: t[0], Name: t[1], Frag: g.frag()})
		return "add table " + t[0] + " " + t[1]
	}
	t := c.Tables[g.R.Intn(len(c.Tables))]
	switch g.R.Intn(5) {
	case 4:
		t.Frag = g.frag()
		return "move table " + t.Family + " " + t.Name + " to file " + fmt.Sprint(t.Frag)
	case 0:
		names := []string{"sp", "sm"}
		switch t.Family {
		case "ip":
			names = append(names, "s4", "sw")
		case "inet":
			names = append(names, "s4", "s6", "sw")
		case "ip6":
			names = append(names, "s6")
		}
		n := g.pick(names)
		for i, s := range t.Sets {
			if s.Name == n {
				if g.chance(0.5) {
					t.Sets = append(t.Sets[:i], t.Sets[i+1:]...)
					return "remove set " + n
				}
				s.Elements = g.elements(s.Type)
				if !s.Interval {
					// Validation refuses prefixes and ranges in a
					// set without flags [interval], as at its creation.
					s.Elements = withoutIntervals(s.Elements)
				}
				if s.ElemFile != "" {
					s.Elements, s.FileElements = s.Elements[:len(s.Elements)/2], s.Elements[len(s.Elements)/2:]
				}
				if s.Timeout != "" && s.Timeout != "flag" {
					s.Elements, s.FileElements = nil, nil
				}
				if s.FromWG != "" {
					s.FromPeers = g.pick([]string{"up", "all"})
				}
				return "change elements of set " + n
			}
		}
		s := &Set{Name: n, Type: setTypes[n]}
		s.Interval = (s.Type == "ipv4_addr" || s.Type == "ipv6_addr") && g.chance(0.7)
		if n == "sw" {
			// Fed by a WireGuard link's peers: an interval set.
			s.Interval = true
			s.FromWG = g.pickLink(c, func(l *Link) bool { return l.Kind == "wireguard" })
			// All its peers: where none shakes hands (wireguard-go
			// here) the up ones feed nothing the oracle could see
			// (inPlaceSetFeed makes the other choices). One draw of
			// three, as before: a seed walks the same steps.
			s.FromPeers = g.pick([]string{"all", "all", "all"})
		}
		s.Elements = g.elements(s.Type)
		if !s.Interval {
			s.Elements = withoutIntervals(s.Elements)
			if g.chance(0.3) {
				s.Timeout = g.pick([]string{"flag", "1h"})
			}
			if s.Timeout == "1h" {
				// A set whose elements expire declares none
				// (validation refuses them).
				s.Elements = nil
			}
		}
		t.Sets = append(t.Sets, s)
		return "add set " + n
	default:
		spec := chainSpecs(t.Family)
		sp := spec[g.R.Intn(len(spec))]
		n := sp[0]
		for i, ch := range t.Chains {
			if ch.Name == n {
				switch g.R.Intn(3) {
				case 0:
					t.Chains = append(t.Chains[:i], t.Chains[i+1:]...)
					return "remove chain " + n
				case 1:
					if ch.Hook != "" {
						ch.Priority = g.chainPriority(t.Family, ch)
						ch.Policy = g.pick([]string{"accept", "drop"})
						if ch.Type == "nat" {
							ch.Policy = "accept"
						}
						return "change chain " + n
					}
				}
				ch.Rules = g.rules(t.Family, ch)
				return "change rules of chain " + n
			}
		}
		ch := &Chain{Name: n, Type: sp[1], Hook: sp[2]}
		if ch.Hook != "" {
			ch.Priority = g.chainPriority(t.Family, ch)
			ch.Policy = g.pick([]string{"accept", "accept", "drop"})
			if ch.Type == "nat" {
				ch.Policy = "accept"
			}
			if t.Family == "netdev" {
				ch.Device = "lo"
			}
		}
		ch.Rules = g.rules(t.Family, ch)
		t.Chains = append(t.Chains, ch)
		return "add chain " + n
	}
}

// rules draws a chain's rules from the corpus's (nftrules.go), a few
// verdicts, and jumps to the walk's regular chain. One draw per rule, as
// before the corpus: a seed walks the same steps.
func (g *Gen) rules(family string, ch *Chain) []string {
	var out []string
	pool := append([]string{"accept", "drop", "counter accept"}, g.nftPool(family)[corpusChain(ch)]...)
	if ch.Name != "helper" {
		pool = append(pool, "jump helper", "goto helper")
	}
	for i := g.R.Intn(4); i > 0; i-- {
		out = append(out, g.pick(pool))
	}
	return out
}

// nftPool returns the rules a family's chains may draw from: NftRules's,
// or the corpus's unjudged.
func (g *Gen) nftPool(family string) map[string][]string {
	if g.NftRules != nil {
		return g.NftRules(family)
	}
	return corpusPool(family)
}

func (g *Gen) elements(typ string) []string {
	var out []string
	for _, e := range setElements[typ] {
		if g.chance(0.5) {
			out = append(out, e)
		}
	}
	return out
}

func withoutIntervals(es []string) []string {
	var out []string
	for _, e := range es {
		if !strings.ContainsAny(e, "/-") {
			out = append(out, e)
		}
	}
	return out
}

// moveFrag moves an object to another file (the main file or a fragment).
func (g *Gen) moveFrag(c *Config) string {
	to := g.R.Intn(Frags)
	switch g.R.Intn(4) {
	case 0:
		if n := g.pickLink(c, func(*Link) bool { return true }); n != "" {
			c.Links[n].Frag = to
			return fmt.Sprintf("move link %s to file %d", n, to)
		}
	case 1:
		if len(c.Rules) > 0 {
			c.Rules[g.R.Intn(len(c.Rules))].Frag = to
			return fmt.Sprintf("move a rule to file %d", to)
		}
	case 2:
		if len(c.Pools) > 0 {
			c.Pools[g.R.Intn(len(c.Pools))].Frag = to
			return fmt.Sprintf("move a pool to file %d", to)
		}
	default:
		if len(c.Fou) > 0 {
			c.Fou[g.R.Intn(len(c.Fou))].Frag = to
			return fmt.Sprintf("move a fou port to file %d", to)
		}
	}
	return "noop"
}

// pools are the walk's IPAM pools: one of each family, disjoint.
var pools = map[string]string{"pw": "10.99.0.0/24", "pv": "fd99::/120"}

func (g *Gen) changePoolsFou(c *Config) string {
	if g.chance(0.2) {
		return g.moveFrag(c)
	}
	if g.Caps.Fou && g.chance(0.4) {
		if len(c.Fou) > 0 && g.chance(0.3) {
			return g.changeFou(c)
		}
		f := &Fou{Port: pickInt(g, []int{5555, 5556, 5557}), Family: g.pick([]string{"ipv4", "ipv6"}), Frag: g.frag(), Explicit: g.chance(0.2)}
		f.IPProto = pickInt(g, []int{4, 41})
		f.GUE = g.chance(0.25)
		for i, x := range c.Fou {
			if x.Port == f.Port && x.Family == f.Family {
				c.Fou = append(c.Fou[:i], c.Fou[i+1:]...)
				return "remove a fou port"
			}
		}
		c.Fou = append(c.Fou, f)
		return "add a fou port"
	}
	if g.chance(0.2) {
		return g.changeOthers(c)
	}
	name := g.pick([]string{"pw", "pv", dualPool[0]})
	var pool *Pool
	for i, p := range c.Pools {
		if p.Name != name {
			continue
		}
		if g.chance(0.3) {
			// Not while another owner holds an address of it: the
			// runner gives those back with the pool's file.
			if g.othersHold(g.before, name) || g.othersHold(c, name) {
				return "noop"
			}
			c.Pools = append(c.Pools[:i], c.Pools[i+1:]...)
			return "remove pool " + name
		}
		if g.chance(0.4) {
			return g.changePool(c, p)
		}
		pool = p
	}
	if pool == nil {
		// A pool's block size cannot change while it holds blocks (apply
		// refuses it, as documented): one shape per walk, but for
		// changePool's when nothing holds an address of it.
		p := &Pool{Name: name, Subnet: pools[name], Bits: g.PoolBits, Table: g.PoolTable, Frag: g.frag(), Delay: "0s"}
		if name == dualPool[0] {
			p.Subnet, p.Subnet6 = dualPool[1], dualPool[2]
		}
		c.Pools = append(c.Pools, p)
		sort.Slice(c.Pools, func(i, j int) bool { return c.Pools[i].Name < c.Pools[j].Name })
	}
	n := g.pickLink(c, func(l *Link) bool { return l.Kind != "device" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	for i, a := range l.Addrs {
		if a.Pool == name {
			if g.chance(0.3) {
				// The same entry, its prefix lengths changed, or
				// another pool of the file.
				other := c.Pools[g.R.Intn(len(c.Pools))].Name
				l.Addrs[i] = g.poolAddr(c, other)
				return "change the pool " + name + " address of " + n + " (now of " + other + ")"
			}
			l.Addrs = append(l.Addrs[:i], l.Addrs[i+1:]...)
			return "release the pool " + name + " address of " + n
		}
	}
	l.Addrs = append(l.Addrs, g.poolAddr(c, name))
	return "take a pool " + name + " address for " + n
}

// othersHold says whether another owner holds an address of pool in c.
func (g *Gen) othersHold(c *Config, pool string) bool {
	if c == nil {
		return false
	}
	for _, o := range c.Others {
		if o.Pool == pool {
			return true
		}
	}
	return false
}

func pickInt(g *Gen, s []int) int { return s[g.R.Intn(len(s))] }
