package desired

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The schema of this kind (see conf.go): what the file holds, before the
// builder below checks it.

type linkConf struct {
	Meta
	Kind      string         `yaml:"kind" schema:"required,enum=linkKinds"`
	MTU       int            `yaml:"mtu" schema:"limits=linkMTU"`
	State     string         `yaml:"state" schema:"enum=linkStates"`
	Master    string         `yaml:"master"`
	Alias     string         `yaml:"alias"`
	Adopt     bool           `yaml:"adopt"`
	Addresses []*addressConf `yaml:"addresses" schema:"unique"`
	Sysctls   *sysctlsConf   `yaml:"sysctls"`

	Veth      *vethConf      `yaml:"veth" schema:"block"`
	VXLAN     *vxlanConf     `yaml:"vxlan" schema:"block"`
	IPVlan    *ipvlanConf    `yaml:"ipvlan" schema:"block"`
	IPIP      *tunnelConf    `yaml:"ipip" schema:"block"`
	IP6Tnl    *tunnelConf    `yaml:"ip6tnl" schema:"block"`
	WireGuard *wireguardConf `yaml:"wireguard" schema:"block"`
	VLAN      *vlanConf      `yaml:"vlan" schema:"block"`
	MACVlan   *macvlanConf   `yaml:"macvlan" schema:"block"`
	VRF       *vrfConf       `yaml:"vrf" schema:"block"`
	Bond      *bondConf      `yaml:"bond" schema:"block"`
}

type vlanConf struct {
	Meta
	Parent   string `yaml:"parent" schema:"required"`
	ID       uint16 `yaml:"id" schema:"required,limits=vlanID"`
	Protocol string `yaml:"protocol" schema:"enum=vlanProtocols"`
}

type macvlanConf struct {
	Meta
	Parent string `yaml:"parent" schema:"required"`
	Mode   string `yaml:"mode" schema:"enum=macvlanModes"`
}

type vrfConf struct {
	Meta
	Table uint32 `yaml:"table" schema:"required,limits=vrfTable"`
}

type bondConf struct {
	Meta
	Mode   string  `yaml:"mode" schema:"enum=bondModes"`
	Miimon *uint32 `yaml:"miimon" schema:"limits=miimon"`
}

type vethConf struct {
	Meta
	Peer      string `yaml:"peer" schema:"required"`
	PeerNetNS string `yaml:"peer-netns"`
}

type vxlanConf struct {
	Meta
	ID       uint32 `yaml:"id" schema:"required,limits=vni"`
	Local    *Addr  `yaml:"local"`
	Remote   *Addr  `yaml:"remote"`
	Group    *Addr  `yaml:"group"`
	Port     uint16 `yaml:"port" schema:"limits=udpPort"`
	Dev      string `yaml:"dev"`
	TTL      uint8  `yaml:"ttl"`
	Learning *bool  `yaml:"learning"`
}

type ipvlanConf struct {
	Meta
	Parent string `yaml:"parent" schema:"required"`
	Mode   string `yaml:"mode" schema:"enum=ipvlanModes"`
}

type tunnelConf struct {
	Meta
	Mode     string     `yaml:"mode" schema:"enum=tunnelModes"`
	Local    *Addr      `yaml:"local"`
	Remote   *Addr      `yaml:"remote"`
	TTL      *uint8     `yaml:"ttl"`
	External bool       `yaml:"external"`
	Encap    *encapConf `yaml:"encap"`
}

type encapConf struct {
	Meta
	Type  string `yaml:"type" schema:"required,enum=encapTypes"`
	Sport *Sport `yaml:"sport"`
	Dport uint16 `yaml:"dport" schema:"required,limits=udpPort"`
}

// The words of the link attributes that take one of a few: the builder
// checks with these lists, and the schema lists them (schema.go).
var (
	linkStates    = []string{"up", "down"}
	ipvlanModes   = []string{model.IPVlanL2, model.IPVlanL3, model.IPVlanL3S}
	macvlanModes  = []string{model.MACVlanPrivate, model.MACVlanVEPA, model.MACVlanBridge, model.MACVlanPassthru}
	vlanProtocols = []string{model.VLAN8021Q, model.VLAN8021AD}
	ipipModes     = []string{"ipip"}
	ip6tnlModes   = []string{"ip6ip6", "ipip6", "any"}
	encapTypes    = []string{"fou", "gue"}
)

// kindBlocks are the kinds whose attributes are a block named after the
// kind, and whether a link of the kind needs its block.
var kindBlocks = map[string]bool{
	model.KindVeth: true, model.KindVXLAN: true, model.KindIPVlan: true, model.KindIPIP: true, model.KindIP6Tnl: true,
	model.KindVLAN: true, model.KindMACVlan: true, model.KindVRF: true,
	// A bond's block may be left out (all defaults); a wireguard link
	// without one is refused for its missing key.
	model.KindBond: false, model.KindWireGuard: false,
}

// Kernel limits on link attributes.
const (
	minMTU = 68 // IPv4's minimum (RFC 791)
	maxMTU = 65535
	// maxL3MTU is IP6_MAX_MTU (65535 + the IPv6 header): a vrf's own
	// MTU, and what the kernel lets a device such as lo (65536) have.
	maxL3MTU        = 65575
	minWireGuardMTU = 1280 // IPv6's minimum: WireGuard carries IPv6, and KubeSpan refuses less
	maxVNI          = 1<<24 - 1
	// defaultVXLANPort is the IANA port. The kernel's default (8472) is the
	// pre-standard Linux one; the file defaults to what peers expect.
	defaultVXLANPort = 4789
	// maxVLANID: 4095 is reserved (802.1Q), and the kernel refuses it (ERANGE).
	maxVLANID = 4094
	// defaultMiimon is the bond's link check interval when the file gives
	// none: the value bonding.rst calls a good starting point. With 0 (the
	// kernel's default for a bond made through netlink) a bond never sees a
	// member's link go down.
	defaultMiimon = 100
	// maxMiimon: the bonding driver keeps miimon in an int and refuses
	// more than INT_MAX (EINVAL) at create and in place.
	maxMiimon = math.MaxInt32
)

func (b *builder) link(name string, lc *linkConf) {
	path := "links." + name
	l := &model.Link{Name: name, Kind: lc.Kind, MTU: lc.MTU, Up: true, Master: lc.Master, Alias: lc.Alias, Adopt: lc.Adopt, Origin: lc.Pos.String()}
	if !validLinkName(name) {
		b.errs.add(lc.Pos, path, "%q is not a valid interface name; expected %s", name, linkNameRule)
	}
	switch {
	case !lc.has("kind"):
		b.errs.add(lc.Pos, path+".kind", "missing; expected one of: %s", strings.Join(model.Kinds, ", "))
	case !contains(model.Kinds, lc.Kind):
		b.errs.add(lc.at("kind"), path+".kind", "unknown kind %q; expected one of: %s", lc.Kind, strings.Join(model.Kinds, ", "))
	}
	if lc.has("mtu") {
		lo, hi := minMTU, maxMTU
		switch lc.Kind {
		case model.KindWireGuard:
			lo = minWireGuardMTU
		case model.KindVRF, model.KindDevice:
			// What show prints for a vrf (65575) or lo (65536) is a
			// file that validates.
			hi = maxL3MTU
		}
		if lc.MTU < lo || lc.MTU > hi {
			b.errs.add(lc.at("mtu"), path+".mtu", "expected an MTU from %d to %d for a %s link, found %d", lo, hi, lc.Kind, lc.MTU)
		}
	}
	l.StateSet = lc.has("state")
	switch {
	case !l.StateSet:
	case !contains(linkStates, lc.State):
		b.errs.add(lc.at("state"), path+".state", "expected %s, found %q", orList(linkStates), lc.State)
	case lc.State == "down":
		l.Up = false
	}
	if vc := lc.VLAN; vc != nil && l.Up {
		// The kernel takes a vlan down with its parent and refuses to
		// bring it up on a parent that is down (vlan_dev_open: ENETDOWN):
		// the file could never converge.
		if pc := b.links[vc.Parent]; pc != nil && pc.State == "down" {
			at, p := lc.at("state"), path+".state"
			if !lc.has("state") {
				at, p = vc.at("parent"), path+".vlan.parent"
			}
			b.errs.add(at, p, "a vlan is up only while its parent is, and %q is declared down (the kernel takes its vlans down with it); give this link state: down too, or bring %q up", vc.Parent, vc.Parent)
		}
	}
	if lc.Alias != "" && strings.HasPrefix(lc.Alias, model.LinkMarker) {
		b.errs.add(lc.at("alias"), path+".alias", "must not start with %q: that word marks links netreconcile owns", model.LinkMarker)
	}
	if lc.Adopt && lc.Kind == model.KindDevice {
		b.errs.add(lc.at("adopt"), path+".adopt", "a device link is never owned; adopt applies to kinds netreconcile creates")
	}
	if lc.Master != "" {
		ml, ok := b.links[lc.Master]
		switch {
		case !ok:
			b.errs.add(lc.at("master"), path+".master", "link %q is not declared; declare it (kind bridge, vrf or bond, or kind device for an existing one)", lc.Master)
		case ml.Kind != model.KindBridge && ml.Kind != model.KindVRF && ml.Kind != model.KindBond && ml.Kind != model.KindDevice:
			b.errs.add(lc.at("master"), path+".master", "link %q is a %s; a master must be a bridge, vrf or bond", lc.Master, ml.Kind)
		case lc.Master == name:
			b.errs.add(lc.at("master"), path+".master", "a link cannot be its own master")
		case ml.Kind == model.KindVRF:
			if lc.Kind == model.KindVRF {
				b.errs.add(lc.at("master"), path+".master", "a vrf link cannot be enslaved to vrf %q: the kernel does not nest vrfs", lc.Master)
			}
		case ml.Kind == model.KindBond:
			if why := notBondMember(name, lc, b.ipvlanOf()); why != "" {
				b.errs.add(lc.at("master"), path+".master", "a %s link cannot be a member of bond %q: %s", lc.Kind, lc.Master, why)
			} else if lc.has("mtu") {
				b.errs.add(lc.at("mtu"), path+".mtu", "a member of bond %q takes the bond's MTU (the kernel sets it on every member); give the mtu on the bond", lc.Master)
			}
		default:
			if why := notBridgePort(name, lc, b.ipvlanOf()); why != "" {
				b.errs.add(lc.at("master"), path+".master", "a %s link cannot be a port of bridge %q: %s", lc.Kind, lc.Master, why)
			}
		}
	}
	b.kindBlock(name, lc, l)
	for i, ac := range lc.Addresses {
		if ac != nil && ac.unparsable {
			continue
		}
		b.address(name, func() string { return path + ".addresses[" + strconv.Itoa(i) + "]" }, ac)
	}
	if lc.Sysctls != nil {
		b.linkSysctls(name, lc)
	}
	if mtu, why, raise := b.kernelMTU(name, nil); mtu != 0 && mtu < ipv6MinMTU {
		// The kernel takes IPv6 off a link below IPv6's minimum MTU
		// (addrconf_notify): its IPv6 addresses, routes and keys go, and
		// an IPv6 address added is refused. The MTU is the one the kernel
		// gives the link, which a lower device can hold below the file's.
		at, p, below, fix := lc.at("mtu"), path+".mtu", fmt.Sprintf("below %d, IPv6's minimum", ipv6MinMTU), fmt.Sprintf("give an MTU of %d or more", ipv6MinMTU)
		if why != "" {
			at, p = b.lowerAt(name, lc, path)
			below = fmt.Sprintf("the kernel gives the link MTU %d (%s), below %d, IPv6's minimum", mtu, why, ipv6MinMTU)
			fix = raise
		}
		for _, ac := range lc.Addresses {
			if ac != nil && ac.Address != nil && ac.Address.P.Addr().Is6() {
				b.errs.add(at, p, "%s, the kernel takes IPv6 off the link, and the link declares IPv6 address %s; %s, or remove the address", below, ac.Address.P, fix)
				break
			}
			if ac != nil && ac.Address == nil && b.poolHasIPv6(ac.Pool) {
				b.errs.add(at, p, "%s, the kernel takes IPv6 off the link, and the link takes an IPv6 address from pool %s; %s, or remove the address", below, ac.Pool, fix)
				break
			}
		}
		if lc.Sysctls != nil {
			for _, e := range lc.Sysctls.entries {
				if strings.HasPrefix(e.key, "ipv6.") {
					b.errs.add(at, p, "%s, the kernel takes IPv6 off the link, and with it key %s; %s, or remove the key", below, e.key, fix)
					break
				}
			}
		}
	}
	if vc := lc.VXLAN; vc != nil && l.Up && vc.Group != nil && vc.Group.A.Is6() && vc.Dev != "" {
		// A vxlan joins its group on its device when it comes up
		// (vxlan_open), which the kernel refuses (EINVAL) on a device
		// without IPv6.
		if mtu, why, raise := b.kernelMTU(vc.Dev, nil); mtu != 0 && mtu < ipv6MinMTU {
			has, fix := fmt.Sprintf("MTU %d", mtu), fmt.Sprintf("give %s an MTU of %d or more", vc.Dev, ipv6MinMTU)
			if why != "" {
				has, fix = fmt.Sprintf("MTU %d (%s)", mtu, why), raise
			}
			b.errs.add(vc.at("group"), path+".vxlan.group", "the vxlan joins IPv6 group %s on its device %s, which the kernel gives %s, below %d, IPv6's minimum: the device has no IPv6 and the kernel refuses to set the vxlan up; %s, or give the vxlan state: down", vc.Group.A, vc.Dev, has, ipv6MinMTU, fix)
		}
	}
	b.st.Links[name] = l
}

// ipv6MinMTU is IPv6's minimum MTU (IPV6_MIN_MTU): below it, a link has no
// IPv6.
const ipv6MinMTU = 1280

// VXLAN's encapsulation over its device (VXLAN_HEADROOM, VXLAN6_HEADROOM):
// the outer IP, UDP and VXLAN headers and the inner Ethernet header.
const (
	vxlanHeadroom4 = 50
	vxlanHeadroom6 = 70
)

// kernelMTU is the largest MTU the kernel gives a declared link, as far as
// the file says, and why when that is not the link's own mtu; 0 when the
// file cannot say (no mtu on a device, or on a lower device not declared).
// The kernel makes a vxlan at most its device's MTU less the
// encapsulation, whatever mtu the file gives (vxlan_config_apply); a
// macvlan, vlan or ipvlan takes its parent's when it has none, and is
// lowered to it when the parent's is lowered (macvlan_device_event,
// vlan_device_event, ipvlan_device_event; above it, the kernel refuses);
// a bond's member takes the bond's. A bridge with no mtu of its own is
// not held by its ports: the kernel would move it to their smallest
// (br_mtu_auto_adjust), but apply sets it back whenever a port it adds,
// removes or changes moves it, so it keeps the MTU it has (1500 when apply
// makes it), which only the kernel can tell. raise says how to lift
// a held MTU to IPv6's minimum. seen guards against a cycle of references,
// which linkCycles reports.
func (b *builder) kernelMTU(name string, seen map[string]bool) (mtu int, why, raise string) {
	lc := b.links[name]
	if lc == nil || seen[name] {
		return 0, "", ""
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[name] = true
	own := lc.MTU
	if !lc.has("mtu") {
		own = 0
	}
	if ml := b.links[lc.Master]; ml != nil && ml.Kind == model.KindBond {
		if m, _, _ := b.kernelMTU(lc.Master, seen); m != 0 {
			return m, "bond " + lc.Master + "'s", fmt.Sprintf("give bond %s an MTU of %d or more", lc.Master, ipv6MinMTU)
		}
		return 0, "", ""
	}
	if vc := lc.VXLAN; vc != nil && vc.Dev != "" {
		m, _, _ := b.kernelMTU(vc.Dev, seen)
		if m == 0 {
			return own, "", ""
		}
		headroom, family := vxlanHeadroom4, 4
		for _, a := range []*Addr{vc.Local, vc.Remote, vc.Group} {
			if a != nil && a.A.Is6() {
				headroom, family = vxlanHeadroom6, 6
			}
		}
		most := max(m-headroom, minMTU)
		if own == 0 || own > most {
			return most, fmt.Sprintf("its device %s's %d less the %d bytes of VXLAN encapsulation over IPv%d", vc.Dev, m, headroom, family),
				fmt.Sprintf("give %s an MTU of %d or more", vc.Dev, ipv6MinMTU+headroom)
		}
		return own, "", ""
	}
	if _, parent, _ := lc.parentConf(); parent != "" {
		m, _, _ := b.kernelMTU(parent, seen)
		if m != 0 && (own == 0 || own > m) {
			return m, "its parent " + parent + "'s", fmt.Sprintf("give %s an MTU of %d or more", parent, ipv6MinMTU)
		}
		return own, "", ""
	}
	return own, "", ""
}

// poolHasIPv6 reports whether the declared pool hands out IPv6 addresses.
func (b *builder) poolHasIPv6(name string) bool {
	for i := range b.st.Pools {
		if p := &b.st.Pools[i]; p.Name == name && len(p.Subnets) > 0 && p.Subnets[0].IPv6.IsValid() {
			return true
		}
	}
	return false
}

// lowerAt is where the file gives the link whose MTU holds the declared
// link's: its mtu if it has one, else its reference to that link.
func (b *builder) lowerAt(name string, lc *linkConf, path string) (Pos, string) {
	switch {
	case lc.has("mtu"):
		return lc.at("mtu"), path + ".mtu"
	case lc.Master != "" && b.links[lc.Master] != nil && b.links[lc.Master].Kind == model.KindBond:
		return lc.at("master"), path + ".master"
	case lc.VXLAN != nil && lc.VXLAN.Dev != "":
		return lc.VXLAN.at("dev"), path + ".vxlan.dev"
	}
	if kind, parent, m := lc.parentConf(); parent != "" {
		return m.at("parent"), path + "." + kind + ".parent"
	}
	return lc.Pos, path
}

// notBridgePort says why the kernel's br_add_if would refuse to make the
// link a bridge port, or "" if it would not. Checked at validation because
// apply creates the master first and fails only at "set master", with part
// of the file applied and an error such as "too many levels of symbolic
// links" (ELOOP, for a bridge in a bridge).
//
// ipvlanOf maps a link's name to the first ipvlan (by name) whose parent it is.
func notBridgePort(name string, lc *linkConf, ipvlanOf map[string]string) string {
	switch lc.Kind {
	case model.KindBridge:
		return "the kernel does not enslave a bridge to a bridge"
	case model.KindVRF:
		return "a vrf is a routing domain, not a port"
	case model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard:
		// br_add_if takes only ARPHRD_ETHER devices; these are IP tunnels
		// without an Ethernet header (EINVAL).
		return "a bridge takes only Ethernet links, and this is an IP tunnel"
	case model.KindDevice:
		if name == "lo" {
			return "a bridge does not take the loopback device"
		}
	}
	// A bridge port and an ipvlan or macvlan parent each claim the
	// device's one receive handler: whichever comes second fails with EBUSY.
	if other, ok := ipvlanOf[name]; ok {
		return fmt.Sprintf("it is the parent of %s, and a link has one receive handler, for the bridge or for the %s", other, strings.Fields(other)[0])
	}
	return ""
}

// notBondMember says why the bonding driver would refuse the link as a
// member, or "" if it would not (checked at validation for the reason
// notBridgePort gives).
func notBondMember(name string, lc *linkConf, ipvlanOf map[string]string) string {
	switch lc.Kind {
	case model.KindBridge, model.KindVRF, model.KindBond:
		return "a bond takes Ethernet devices, not masters"
	case model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard:
		return "a bond takes Ethernet devices, and this is an IP tunnel"
	case model.KindDevice:
		if name == "lo" {
			return "a bond does not take the loopback device"
		}
	}
	// The bond claims the member's receive handler, as a bridge does.
	if other, ok := ipvlanOf[name]; ok {
		return fmt.Sprintf("it is the parent of %s, and a link has one receive handler, for the bond or for the %s", other, strings.Fields(other)[0])
	}
	return ""
}

// ipvlanOf returns, made once, each ipvlan or macvlan parent's first such
// child by name, as "ipvlan NAME" or "macvlan NAME" (notBridgePort). Looking
// through every link for each bridge port made a megabyte of ports take
// minutes.
func (b *builder) ipvlanOf() map[string]string {
	if b.ipvlanParents != nil {
		return b.ipvlanParents
	}
	b.ipvlanParents = map[string]string{}
	for _, other := range b.linkNames {
		oc := b.links[other]
		if oc == nil {
			continue
		}
		var parent string
		switch {
		case oc.Kind == model.KindIPVlan && oc.IPVlan != nil:
			parent = oc.IPVlan.Parent
		case oc.Kind == model.KindMACVlan && oc.MACVlan != nil:
			parent = oc.MACVlan.Parent
		default:
			continue
		}
		if _, seen := b.ipvlanParents[parent]; !seen {
			b.ipvlanParents[parent] = fmt.Sprintf("%s %q", oc.Kind, other)
		}
	}
	return b.ipvlanParents
}

// kindBlock checks that only the block matching the kind is present and converts it.
func (b *builder) kindBlock(name string, lc *linkConf, l *model.Link) {
	path := "links." + name
	blocks := map[string]bool{"veth": lc.Veth != nil, "vxlan": lc.VXLAN != nil, "ipvlan": lc.IPVlan != nil, "ipip": lc.IPIP != nil, "ip6tnl": lc.IP6Tnl != nil, "wireguard": lc.WireGuard != nil,
		"vlan": lc.VLAN != nil, "macvlan": lc.MACVlan != nil, "vrf": lc.VRF != nil, "bond": lc.Bond != nil}
	for blk, present := range blocks {
		if present && blk != lc.Kind {
			b.errs.add(lc.at(blk), path+"."+blk, "a %q block belongs to kind %s, but this link is kind %q", blk, blk, lc.Kind)
		}
	}
	need := func(blk string) bool {
		if kindBlocks[blk] && !blocks[blk] {
			b.errs.add(lc.Pos, path+"."+blk, "missing; a %s link needs a %q block", blk, blk)
			return false
		}
		return true
	}
	switch lc.Kind {
	case model.KindVeth:
		if need("veth") {
			b.veth(name, lc.Veth, l)
		}
	case model.KindVXLAN:
		if need("vxlan") {
			b.vxlan(path+".vxlan", lc.VXLAN, l)
		}
	case model.KindIPVlan:
		if need("ipvlan") {
			b.ipvlan(path+".ipvlan", lc.IPVlan, l)
		}
	case model.KindIPIP:
		if need("ipip") {
			b.tunnel(path+".ipip", lc.IPIP, l, false)
		}
	case model.KindIP6Tnl:
		if need("ip6tnl") {
			b.tunnel(path+".ip6tnl", lc.IP6Tnl, l, true)
		}
	case model.KindVLAN:
		if need("vlan") {
			b.vlan(path+".vlan", lc.VLAN, l)
		}
	case model.KindMACVlan:
		if need("macvlan") {
			b.macvlan(path+".macvlan", lc.MACVlan, l)
		}
	case model.KindVRF:
		if need("vrf") {
			b.vrf(path+".vrf", lc.VRF, l)
		}
	case model.KindBond:
		bc := lc.Bond
		if bc == nil {
			bc = &bondConf{Meta: Meta{Pos: lc.Pos}}
		}
		b.bond(path+".bond", bc, l)
	case model.KindWireGuard:
		wc := lc.WireGuard
		if wc == nil {
			wc = &wireguardConf{Meta: Meta{Pos: lc.Pos}}
		}
		b.wireguard(path+".wireguard", wc, l)
	}
}

func (b *builder) veth(name string, vc *vethConf, l *model.Link) {
	path := "links." + name + ".veth"
	l.Veth = &model.Veth{Peer: vc.Peer, PeerNetNS: vc.PeerNetNS}
	switch {
	case vc.Peer == "":
		b.errs.add(vc.Pos, path+".peer", "missing; expected the name of the other end")
	case !validLinkName(vc.Peer):
		b.errs.add(vc.at("peer"), path+".peer", "%q is not a valid interface name; expected %s", vc.Peer, linkNameRule)
	case vc.Peer == name:
		b.errs.add(vc.at("peer"), path+".peer", "a veth cannot be its own peer")
	}
	if pc, ok := b.links[vc.Peer]; ok && vc.PeerNetNS == "" {
		if pc.Kind != model.KindVeth || pc.Veth == nil || pc.Veth.Peer != name {
			b.errs.add(vc.at("peer"), path+".peer", "link %q is declared too but is not a veth whose peer is %q", vc.Peer, name)
		}
	}
	if vc.PeerNetNS != "" && !validNetnsName(vc.PeerNetNS) {
		b.errs.add(vc.at("peer-netns"), path+".peer-netns", "expected a network namespace name as in /run/netns, found %q", vc.PeerNetNS)
	}
}

func validNetnsName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00") && len(s) < 256
}

func (b *builder) vxlan(path string, vc *vxlanConf, l *model.Link) {
	v := &model.VXLAN{ID: vc.ID, Port: defaultVXLANPort, Dev: vc.Dev, TTL: vc.TTL, Learning: true}
	if !vc.has("id") {
		b.errs.add(vc.Pos, path+".id", "missing; expected a VXLAN network identifier from 0 to %d", maxVNI)
	} else if vc.ID > maxVNI {
		b.errs.add(vc.at("id"), path+".id", "expected a VXLAN network identifier from 0 to %d, found %d", maxVNI, vc.ID)
	}
	if vc.has("port") {
		v.Port = vc.Port
		if vc.Port == 0 {
			b.errs.add(vc.at("port"), path+".port", "expected a UDP port from 1 to 65535")
		}
	}
	if vc.Learning != nil {
		v.Learning = *vc.Learning
	}
	if vc.Local != nil {
		v.Local = vc.Local.A
	}
	switch {
	case vc.Remote != nil && vc.Group != nil:
		b.errs.add(vc.at("group"), path+".group", "give either remote (unicast) or group (multicast), not both")
	case vc.Remote != nil:
		v.Remote = vc.Remote.A
		if v.Remote.IsMulticast() {
			b.errs.add(vc.at("remote"), path+".remote", "%s is a multicast address; use group", v.Remote)
		}
	case vc.Group != nil:
		v.Remote = vc.Group.A
		if !v.Remote.IsMulticast() {
			b.errs.add(vc.at("group"), path+".group", "expected a multicast address, found %s", v.Remote)
		}
		if vc.Dev == "" {
			b.errs.add(vc.at("group"), path+".dev", "a multicast group needs dev, the link to join it on")
		}
	}
	// The netlink library sends an IPv4-mapped address as IPv4
	// (IFLA_VXLAN_GROUP, not GROUP6): the kernel would hold another
	// address than the file's.
	for _, k := range []string{"local", "remote", "group"} {
		if a := map[string]*Addr{"local": vc.Local, "remote": vc.Remote, "group": vc.Group}[k]; a != nil && a.A.Is4In6() {
			b.errs.add(vc.at(k), path+"."+k, "%s is an IPv4-mapped IPv6 address, which a vxlan cannot take: write %s", a.A, a.A.Unmap())
		}
	}
	if v.Local.IsValid() && v.Remote.IsValid() && v.Local.Is4() != v.Remote.Is4() {
		b.errs.add(vc.at("local"), path+".local", "local %s and remote %s are of different families", v.Local, v.Remote)
	}
	if vc.Dev != "" && !b.declared(vc.Dev) {
		b.errs.add(vc.at("dev"), path+".dev", "link %q is not declared; declare it (kind device for an existing NIC)", vc.Dev)
	}
	l.VXLAN = v
}

func (b *builder) ipvlan(path string, ic *ipvlanConf, l *model.Link) {
	v := &model.IPVlan{Parent: ic.Parent, Mode: model.IPVlanL2}
	switch {
	case !ic.has("mode"):
	case contains(ipvlanModes, ic.Mode):
		v.Mode = ic.Mode
	default:
		b.errs.add(ic.at("mode"), path+".mode", "expected %s, found %q", orList(ipvlanModes), ic.Mode)
	}
	switch {
	case ic.Parent == "":
		b.errs.add(ic.Pos, path+".parent", "missing; expected the link the ipvlan sits on")
	case !b.declared(ic.Parent):
		b.errs.add(ic.at("parent"), path+".parent", "link %q is not declared; declare it (kind device for an existing NIC)", ic.Parent)
	case b.links[ic.Parent].Kind == model.KindIPVlan:
		b.errs.add(ic.at("parent"), path+".parent", "link %q is an ipvlan; the parent must be a real or virtual ethernet link", ic.Parent)
	default:
		// The kernel keeps one mode per parent (the ipvlan port): an
		// ipvlan created in another mode silently switches its siblings,
		// and the next pass recreates them, which switches it back.
		if first, ok := b.ipvlanOn[ic.Parent]; !ok {
			b.ipvlanOn[ic.Parent] = ipvlanAt{l.Name, v.Mode, ic.Pos}
		} else if first.mode != v.Mode {
			at := ic.at("mode")
			if !ic.has("mode") {
				at = ic.Pos
			}
			b.errs.add(at, path+".mode", "ipvlan %s is in mode %s on parent %q, ipvlan %s (at %s) in mode %s; the kernel keeps one mode per parent: give both the same mode",
				l.Name, v.Mode, ic.Parent, first.name, first.pos, first.mode)
		}
	}
	l.IPVlan = v
}

// lowerParent checks the parent of a vlan or macvlan: declared, and a link
// of a kind the kernel puts it on (an Ethernet device; not a macvlan for a
// macvlan, which the kernel would put on the macvlan's own parent).
func (b *builder) lowerParent(path, kind, parent string, m Meta, l *model.Link) {
	switch {
	case parent == "":
		b.errs.add(m.Pos, path+".parent", "missing; expected the link the %s sits on", kind)
	case parent == l.Name:
		b.errs.add(m.at("parent"), path+".parent", "a %s cannot be its own parent", kind)
	case !b.declared(parent):
		b.errs.add(m.at("parent"), path+".parent", "link %q is not declared; declare it (kind device for an existing NIC)", parent)
	default:
		switch pk := b.links[parent].Kind; pk {
		case model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard, model.KindVRF:
			b.errs.add(m.at("parent"), path+".parent", "link %q is a %s; a %s sits on an Ethernet link (a NIC, veth, bond, bridge...)", parent, pk, kind)
		case model.KindMACVlan, model.KindIPVlan:
			if kind == model.KindMACVlan {
				b.errs.add(m.at("parent"), path+".parent", "link %q is a %s; a macvlan sits on its real parent (the kernel would put it there)", parent, pk)
			}
		}
	}
}

func (b *builder) vlan(path string, vc *vlanConf, l *model.Link) {
	v := &model.VLAN{Parent: vc.Parent, ID: vc.ID, Protocol: model.VLAN8021Q}
	if !vc.has("id") {
		b.errs.add(vc.Pos, path+".id", "missing; expected a VLAN id from 0 to %d", maxVLANID)
	} else if vc.ID > maxVLANID {
		b.errs.add(vc.at("id"), path+".id", "expected a VLAN id from 0 to %d, found %d", maxVLANID, vc.ID)
	}
	switch {
	case !vc.has("protocol"):
	case contains(vlanProtocols, vc.Protocol):
		v.Protocol = vc.Protocol
	default:
		b.errs.add(vc.at("protocol"), path+".protocol", "expected %s, found %q", orList(vlanProtocols), vc.Protocol)
	}
	b.lowerParent(path, model.KindVLAN, vc.Parent, vc.Meta, l)
	// The kernel holds one vlan per parent, protocol and id (EEXIST).
	if vc.Parent != "" && vc.has("id") {
		for _, other := range b.linkNames {
			oc := b.links[other]
			if other == l.Name || oc == nil || oc.Kind != model.KindVLAN || oc.VLAN == nil || oc.VLAN.Parent != vc.Parent || oc.VLAN.ID != vc.ID {
				continue
			}
			if op := oc.VLAN.Protocol; op == vc.Protocol || op == "" && vc.Protocol == model.VLAN8021Q || vc.Protocol == "" && op == model.VLAN8021Q {
				b.errs.add(vc.at("id"), path+".id", "vlan %q has id %d on %q with the same protocol; the kernel holds one vlan per parent, protocol and id", other, vc.ID, vc.Parent)
				break
			}
		}
	}
	l.VLAN = v
}

func (b *builder) macvlan(path string, mc *macvlanConf, l *model.Link) {
	v := &model.MACVlan{Parent: mc.Parent, Mode: model.MACVlanBridge}
	switch {
	case !mc.has("mode"):
	case contains(macvlanModes, mc.Mode):
		v.Mode = mc.Mode
	default:
		b.errs.add(mc.at("mode"), path+".mode", "expected %s, found %q", orList(macvlanModes), mc.Mode)
	}
	b.lowerParent(path, model.KindMACVlan, mc.Parent, mc.Meta, l)
	// A link has one receive handler: for its macvlans or its ipvlans,
	// not both (netdev_rx_handler_register: EBUSY).
	for _, other := range b.linkNames {
		if oc := b.links[other]; mc.Parent != "" && oc != nil && oc.Kind == model.KindIPVlan && oc.IPVlan != nil && oc.IPVlan.Parent == mc.Parent {
			b.errs.add(mc.at("parent"), path+".parent", "%q is the parent of ipvlan %q, and a link has one receive handler, for its ipvlans or for its macvlans", mc.Parent, other)
			break
		}
	}
	if v.Mode == model.MACVlanPassthru && mc.Parent != "" {
		// A passthru macvlan takes its parent alone (macvlan_port_create
		// refuses a second macvlan on that port, EINVAL).
		for _, other := range b.linkNames {
			if oc := b.links[other]; other != l.Name && oc != nil && oc.Kind == model.KindMACVlan && oc.MACVlan != nil && oc.MACVlan.Parent == mc.Parent {
				b.errs.add(mc.at("mode"), path+".mode", "a passthru macvlan is the only macvlan on its parent, and macvlan %q sits on %q too", other, mc.Parent)
				break
			}
		}
	}
	l.MACVlan = v
}

func (b *builder) vrf(path string, vc *vrfConf, l *model.Link) {
	switch {
	case !vc.has("table"):
		b.errs.add(vc.Pos, path+".table", "missing; expected the routing table of the vrf (1-4294967295, not 253, 254 or 255)")
	case vc.Table == 0 || vc.Table >= 253 && vc.Table <= 255:
		b.errs.add(vc.at("table"), path+".table", "expected a table from 1 to 4294967295 other than 253 (default), 254 (main) and 255 (local), found %d", vc.Table)
	default:
		// Two vrfs on one table would share their routes: each is a
		// routing domain of its own.
		for _, other := range b.linkNames {
			if oc := b.links[other]; other != l.Name && oc != nil && oc.Kind == model.KindVRF && oc.VRF != nil && oc.VRF.Table == vc.Table {
				b.errs.add(vc.at("table"), path+".table", "vrf %q uses table %d too; give each vrf a table of its own", other, vc.Table)
				break
			}
		}
	}
	l.VRF = &model.VRF{Table: vc.Table}
}

func (b *builder) bond(path string, bc *bondConf, l *model.Link) {
	v := &model.Bond{Mode: "balance-rr", Miimon: defaultMiimon}
	if bc.has("mode") {
		if !contains(model.BondModes, bc.Mode) {
			b.errs.add(bc.at("mode"), path+".mode", "expected one of %s, found %q", strings.Join(model.BondModes, ", "), bc.Mode)
		}
		v.Mode = bc.Mode
	}
	if bc.Miimon != nil {
		if *bc.Miimon > maxMiimon {
			b.errs.add(bc.at("miimon"), path+".miimon", "expected milliseconds from 0 (off) to %d (the kernel keeps it in an int), found %d", maxMiimon, *bc.Miimon)
		}
		v.Miimon = *bc.Miimon
	}
	l.Bond = v
}

// ipvlanAt is an ipvlan, its mode and where it was declared.
type ipvlanAt struct {
	name, mode string
	pos        Pos
}

func (b *builder) tunnel(path string, tc *tunnelConf, l *model.Link, v6 bool) {
	t := &model.Tunnel{External: tc.External, Mode: "ipip"}
	if v6 {
		t.Mode = "ip6ip6"
		switch {
		case !tc.has("mode"):
		case contains(ip6tnlModes, tc.Mode):
			t.Mode = tc.Mode
		default:
			b.errs.add(tc.at("mode"), path+".mode", "expected %s, found %q", orList(ip6tnlModes), tc.Mode)
		}
	} else if tc.has("mode") && !contains(ipipModes, tc.Mode) {
		b.errs.add(tc.at("mode"), path+".mode", "an ipip link has only mode %s; found %q", orList(ipipModes), tc.Mode)
	}
	if tc.TTL != nil {
		t.TTL = *tc.TTL
	}
	famOK := func(key string, a *Addr) netip.Addr {
		if a == nil {
			return netip.Addr{}
		}
		if a.A.Is6() != v6 {
			want := "an IPv4"
			if v6 {
				want = "an IPv6"
			}
			b.errs.add(tc.at(key), path+"."+key, "expected %s address for a %s link, found %s", want, l.Kind, a.A)
		}
		return a.A
	}
	t.Local, t.Remote = famOK("local", tc.Local), famOK("remote", tc.Remote)
	if tc.External {
		for _, k := range []string{"local", "remote", "encap", "ttl"} {
			if tc.has(k) {
				b.errs.add(tc.at(k), path+"."+k, "a flow-based (external) tunnel takes no %s: each packet carries its own", k)
			}
		}
	}
	if ec := tc.Encap; ec != nil {
		e := &model.Encap{Type: ec.Type, Dport: ec.Dport}
		switch {
		case !ec.has("type"):
			b.errs.add(ec.Pos, path+".encap.type", "missing; expected %s", orList(encapTypes))
		case !contains(encapTypes, ec.Type):
			b.errs.add(ec.at("type"), path+".encap.type", "expected %s, found %q", orList(encapTypes), ec.Type)
		}
		if ec.Dport == 0 {
			b.errs.add(ec.at("dport"), path+".encap.dport", "missing; expected the FoU port of the far end (1-65535)")
		}
		if ec.Sport != nil && !ec.Sport.Auto {
			e.Sport = ec.Sport.Port
		}
		t.Encap = e
	}
	l.Tunnel = t
}

// orList joins words as a message says them: "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
