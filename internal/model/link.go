package model

import (
	"fmt"
	"net/netip"
	"sort"
)

// Link kinds.
const (
	KindDevice    = "device" // exists already (a NIC, or made by someone else): never created or deleted
	KindVeth      = "veth"
	KindBridge    = "bridge"
	KindVXLAN     = "vxlan"
	KindDummy     = "dummy"
	KindIPVlan    = "ipvlan"
	KindIPIP      = "ipip"
	KindIP6Tnl    = "ip6tnl"
	KindWireGuard = "wireguard"
	KindVLAN      = "vlan"
	KindMACVlan   = "macvlan"
	KindVRF       = "vrf"
	KindBond      = "bond"
)

// Kinds lists the kinds the file may declare.
var Kinds = []string{KindDevice, KindVeth, KindBridge, KindVXLAN, KindDummy, KindIPVlan, KindIPIP, KindIP6Tnl, KindWireGuard, KindVLAN, KindMACVlan, KindVRF, KindBond}

// LinkMarker is written into IFLA_IFALIAS of every link netreconcile creates.
// The alias is the only free-form, persistent, per-link attribute every kernel
// keeps and every tool shows (`ip link` prints it), so a restarted daemon can
// tell its links from foreign ones without a state file. A user alias is kept
// after the marker: "netreconcile: <alias>".
const LinkMarker = "netreconcile"

// Link is a network interface.
type Link struct {
	Name string
	Kind string
	// MTU 0 means "whatever the kernel chose".
	MTU int
	// Up is the administrative state. StateSet says the file gave it: a
	// device link's state is only changed when the file says so.
	Up       bool
	StateSet bool
	// Master is the bridge, vrf or bond this link is enslaved to ("" = none).
	Master string
	// Alias is the user's alias, without the ownership marker.
	Alias string
	// Adopt lets the file take over a same-kind link that exists unmarked.
	Adopt bool

	Veth      *Veth
	VXLAN     *VXLAN
	IPVlan    *IPVlan
	Tunnel    *Tunnel // ipip and ip6tnl
	WireGuard *WireGuard
	VLAN      *VLAN
	MACVlan   *MACVlan
	VRF       *VRF
	Bond      *Bond

	// Actual-only fields.
	Index int
	// Lower is the link this one sits on (IFLA_LINK of an ipvlan, macvlan
	// or vlan), whose deletion takes this one with it.
	Lower string
	Owned bool // carries the marker
	// Settling says the link is up and has carrier, but the kernel has not
	// yet caught up with it (its operational state lags: linkwatch runs
	// the link's "ready" event, which sets IPv6 state such as its
	// net.ipv6.conf.LINK.mtu, later).
	Settling bool
	// NoCarrier says the link is up without carrier (IFF_LOWER_UP clear),
	// so perhaps not yet ready for IPv6: the carrier it gets then makes it
	// ready, which sets its net.ipv6.conf.LINK.mtu to its MTU.
	NoCarrier bool
	// Origin is where the object was declared ("file:line:col"); desired only.
	Origin string
}

// Veth is one end of a veth pair.
type Veth struct {
	Peer string
	// PeerNetNS places the peer end in a named network namespace (desired only;
	// the kernel reports the peer's netns as a number we cannot name).
	PeerNetNS string

	// Actual only, for an end whose peer is in another namespace (the
	// kernel reports it by netnsid and ifindex, which name nothing here):
	// PeerNSID is that namespace's netnsid as this one sees it (-1 when
	// the peer is here), PeerIndex the peer's ifindex there.
	PeerNSID, PeerIndex int
	// Remote is the peer's side, read for the ends netreconcile owns: the
	// diff needs it to see the links sitting on the peer, which the kernel
	// deletes with the pair.
	Remote *RemotePeer
}

// RemotePeer is the peer end of a veth pair in another namespace, with the
// links of that namespace (actual only).
type RemotePeer struct {
	// NetNS is the namespace's name under /run/netns, and Name the peer's
	// name there.
	NetNS, Name string
	// Links are the links of that namespace, Lower, Master and VXLAN.Dev
	// naming links there.
	Links []*Link
	// Unreadable says why the peer's side could not be read (its namespace
	// has no name, or could not be entered): then nobody can tell what
	// deleting the pair would delete with it.
	Unreadable string
}

// VXLAN attributes. The kernel's changelink changes Local, Remote (a
// unicast one), TTL and Learning in place; it refuses a new ID or Port, or
// an address of the other family, so such a change replaces the link (as
// does a new Dev or multicast group: see diff's fixedChange).
type VXLAN struct {
	ID       uint32
	Local    netip.Addr
	Remote   netip.Addr // unicast remote or multicast group
	Port     uint16     // 0 = kernel default 8472; the file defaults to 4789
	Dev      string
	TTL      uint8
	Learning bool
}

// IPVlan modes.
const (
	IPVlanL2  = "l2"
	IPVlanL3  = "l3"
	IPVlanL3S = "l3s"
)

// IPVlan attributes.
type IPVlan struct {
	Parent string
	Mode   string
}

// VLAN protocols (IFLA_VLAN_PROTOCOL), as ip link names them.
const (
	VLAN8021Q  = "802.1q"
	VLAN8021AD = "802.1ad"
)

// VLAN attributes. The kernel's changelink of a vlan takes only its flags
// and QoS maps: the id, protocol and parent are fixed at creation.
type VLAN struct {
	Parent   string
	ID       uint16
	Protocol string
}

// MACVlan modes, as ip link names them.
const (
	MACVlanPrivate  = "private"
	MACVlanVEPA     = "vepa"
	MACVlanBridge   = "bridge"
	MACVlanPassthru = "passthru"
)

// MACVlan attributes. The mode changes in place (macvlan_changelink),
// except into or out of passthru; the parent is fixed.
type MACVlan struct {
	Parent string
	Mode   string
}

// VRF attributes. The vrf driver has no changelink: the table is fixed.
type VRF struct {
	Table uint32
}

// Bond modes, as ip link and /sys/class/net/BOND/bonding/mode name them.
var BondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// Bond attributes. Both change in place, the mode only while the bond has
// no members and is down (the bonding driver's BOND_OPTFLAG_NOSLAVES and
// BOND_OPTFLAG_IFDOWN).
type Bond struct {
	Mode string
	// Miimon is the MII link monitoring interval in milliseconds; 0 off.
	Miimon uint32
}

// Tunnel is an ipip or ip6tnl link.
type Tunnel struct {
	Local  netip.Addr
	Remote netip.Addr
	TTL    uint8
	// Mode is "ipip" for ipip links; for ip6tnl: "ip6ip6", "ipip6" or "any".
	Mode string
	// External is the flow-based (collect_md) device: no local/remote.
	External bool
	Encap    *Encap
}

// Encap is FoU or GUE encapsulation of a tunnel.
type Encap struct {
	Type  string // "fou" or "gue"
	Sport uint16 // 0 = auto
	Dport uint16
}

// Key identifies a link.
func (l *Link) Key() string { return l.Name }

// String is the link's one-line summary, in ip-link words.
func (l *Link) String() string { return fmt.Sprintf("link %s (%s)", l.Name, l.Kind) }

// Parent names the link a vlan, macvlan or ipvlan sits on ("" for other
// kinds): the kernel deletes it with its parent.
func (l *Link) Parent() string {
	switch {
	case l.IPVlan != nil:
		return l.IPVlan.Parent
	case l.MACVlan != nil:
		return l.MACVlan.Parent
	case l.VLAN != nil:
		return l.VLAN.Parent
	}
	return ""
}

// Creatable reports whether netreconcile creates and deletes links of this kind.
func (l *Link) Creatable() bool { return l.Kind != KindDevice }

// SortedLinkNames returns the link names in order.
func (s *State) SortedLinkNames() []string {
	names := make([]string, 0, len(s.Links))
	for n := range s.Links {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MarkedAlias is the IFLA_IFALIAS value of an owned link with the user's alias.
func MarkedAlias(alias string) string {
	if alias == "" {
		return LinkMarker
	}
	return LinkMarker + ": " + alias
}

// ParseAlias splits a kernel alias into the user's alias and the ownership marker.
func ParseAlias(raw string) (alias string, owned bool) {
	switch {
	case raw == LinkMarker:
		return "", true
	case len(raw) > len(LinkMarker)+2 && raw[:len(LinkMarker)+2] == LinkMarker+": ":
		return raw[len(LinkMarker)+2:], true
	}
	return raw, false
}
