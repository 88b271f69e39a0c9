package kernel

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	mdnl "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// parentRefused says why the kernel may have refused an ipvlan or macvlan
// with err, by what it refuses one for on its parent: "" for another
// error. The diff reports these cases as conflicts when it sees the links
// that cause them; this is for those that came between the read and the
// write.
func parentRefused(l *model.Link, err error) string {
	switch {
	case l.MACVlan != nil && errors.Is(err, unix.EINVAL):
		// The kernel gives no message with it: both causes are named.
		mtu := ""
		if l.MTU != 0 {
			mtu = fmt.Sprintf("its MTU %d is above %s's, or ", l.MTU, l.MACVlan.Parent)
		}
		return fmt.Sprintf("the kernel refuses this when %s%s has a passthru macvlan, or any macvlan and this one is passthru: a passthru macvlan is the only macvlan on its parent", mtu, l.MACVlan.Parent)
	case l.MACVlan != nil && errors.Is(err, unix.EBUSY):
		return fmt.Sprintf("the kernel refuses this when %s is a bridge port, a bond member or an ipvlan's parent: a macvlan needs its parent's receive handler", l.MACVlan.Parent)
	case l.IPVlan != nil && errors.Is(err, unix.EBUSY):
		return fmt.Sprintf("the kernel refuses this when %s is a bridge port, a bond member or a macvlan's parent: an ipvlan needs its parent's receive handler", l.IPVlan.Parent)
	}
	return ""
}

// Links lists every link.
func (k *Netlink) Links() ([]*model.Link, error) {
	var ls []netlink.Link
	if err := retry("links", func() (err error) { ls, err = k.h.LinkList(); return }); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.byName, k.byIndex = map[string]int{}, map[int]string{}
	for _, l := range ls {
		k.byName[l.Attrs().Name] = l.Attrs().Index
		k.byIndex[l.Attrs().Index] = l.Attrs().Name
	}
	k.mu.Unlock()
	out := make([]*model.Link, 0, len(ls))
	for _, l := range ls {
		out = append(out, k.fromLink(l))
	}
	return out, nil
}

func (k *Netlink) fromLink(nl netlink.Link) *model.Link {
	a := nl.Attrs()
	l := &model.Link{Name: a.Name, Kind: nl.Type(), MTU: a.MTU, Up: a.Flags&net.FlagUp != 0, Index: a.Index, Master: k.name(a.MasterIndex)}
	l.Alias, l.Owned = model.ParseAlias(a.Alias)
	l.Settling = l.Up && a.RawFlags&unix.IFF_LOWER_UP != 0 && a.RawFlags&unix.IFF_RUNNING == 0
	l.NoCarrier = l.Up && a.RawFlags&unix.IFF_LOWER_UP == 0
	if _, veth := nl.(*netlink.Veth); !veth && a.ParentIndex != 0 && a.NetNsID < 0 {
		l.Lower = k.name(a.ParentIndex)
	}
	switch v := nl.(type) {
	case *netlink.Veth:
		if a.NetNsID < 0 {
			l.Veth = &model.Veth{Peer: k.name(a.ParentIndex), PeerNSID: -1}
		} else {
			l.Veth = &model.Veth{PeerNSID: a.NetNsID, PeerIndex: a.ParentIndex}
		}
	case *netlink.Vxlan:
		l.VXLAN = &model.VXLAN{ID: uint32(v.VxlanId), Local: optAddr(v.SrcAddr), Remote: optAddr(v.Group), Port: uint16(v.Port), Dev: k.name(v.VtepDevIndex), TTL: uint8(v.TTL), Learning: v.Learning}
	case *netlink.IPVlan:
		l.IPVlan = &model.IPVlan{Parent: k.name(a.ParentIndex), Mode: ipvlanModeName(v.Mode)}
	case *netlink.Iptun:
		l.Tunnel = &model.Tunnel{Mode: "ipip", Local: optAddr(v.Local), Remote: optAddr(v.Remote), TTL: v.Ttl, External: v.FlowBased, Encap: encapFrom(v.EncapType, v.EncapSport, v.EncapDport)}
	case *netlink.Ip6tnl:
		l.Tunnel = &model.Tunnel{Mode: ip6tnlModeName(v.Proto), Local: optAddr(v.Local), Remote: optAddr(v.Remote), TTL: v.Ttl, External: v.FlowBased, Encap: encapFrom(v.EncapType, v.EncapSport, v.EncapDport)}
	case *netlink.Vlan:
		l.VLAN = &model.VLAN{Parent: k.name(a.ParentIndex), ID: uint16(v.VlanId), Protocol: vlanProtocolName(v.VlanProtocol)}
	case *netlink.Macvlan:
		l.MACVlan = &model.MACVlan{Parent: k.name(a.ParentIndex), Mode: macvlanModeName(v.Mode)}
	case *netlink.Vrf:
		l.VRF = &model.VRF{Table: v.Table}
	case *netlink.Bond:
		l.Bond = &model.Bond{Mode: v.Mode.String(), Miimon: uint32(max(v.Miimon, 0))}
	case *netlink.Wireguard:
		l.WireGuard = &model.WireGuard{}
	case *netlink.Device:
		l.Kind = model.KindDevice
	}
	return l
}

// Encapsulation types of IFLA_IPTUN_ENCAP_TYPE.
const (
	encapNone = 0
	encapFOU  = 1
	encapGUE  = 2
)

func encapFrom(typ, sport, dport uint16) *model.Encap {
	switch typ {
	case encapFOU:
		return &model.Encap{Type: "fou", Sport: sport, Dport: dport}
	case encapGUE:
		return &model.Encap{Type: "gue", Sport: sport, Dport: dport}
	}
	return nil
}

func encapTo(e *model.Encap) (typ, sport, dport uint16) {
	if e == nil {
		return encapNone, 0, 0
	}
	typ = encapFOU
	if e.Type == "gue" {
		typ = encapGUE
	}
	return typ, e.Sport, e.Dport
}

func ipvlanModeName(m netlink.IPVlanMode) string {
	switch m {
	case netlink.IPVLAN_MODE_L3:
		return model.IPVlanL3
	case netlink.IPVLAN_MODE_L3S:
		return model.IPVlanL3S
	}
	return model.IPVlanL2
}

func ipvlanMode(s string) netlink.IPVlanMode {
	switch s {
	case model.IPVlanL3:
		return netlink.IPVLAN_MODE_L3
	case model.IPVlanL3S:
		return netlink.IPVLAN_MODE_L3S
	}
	return netlink.IPVLAN_MODE_L2
}

func vlanProtocolName(p netlink.VlanProtocol) string {
	if p == netlink.VLAN_PROTOCOL_8021AD {
		return model.VLAN8021AD
	}
	return model.VLAN8021Q
}

func vlanProtocol(s string) netlink.VlanProtocol {
	if s == model.VLAN8021AD {
		return netlink.VLAN_PROTOCOL_8021AD
	}
	return netlink.VLAN_PROTOCOL_8021Q
}

var macvlanModes = map[netlink.MacvlanMode]string{
	netlink.MACVLAN_MODE_PRIVATE:  model.MACVlanPrivate,
	netlink.MACVLAN_MODE_VEPA:     model.MACVlanVEPA,
	netlink.MACVLAN_MODE_BRIDGE:   model.MACVlanBridge,
	netlink.MACVLAN_MODE_PASSTHRU: model.MACVlanPassthru,
	netlink.MACVLAN_MODE_SOURCE:   "source",
}

func macvlanModeName(m netlink.MacvlanMode) string {
	if s, ok := macvlanModes[m]; ok {
		return s
	}
	// MACVLAN_MODE_DEFAULT: the library's word for a mode it did not read.
	return fmt.Sprintf("mode-%d", m)
}

func macvlanMode(s string) netlink.MacvlanMode {
	for m, name := range macvlanModes {
		if name == s {
			return m
		}
	}
	return netlink.MACVLAN_MODE_BRIDGE
}

// IP protocol numbers that name an ip6tnl mode.
const (
	protoIPIP = 4  // ipip6: IPv4 over IPv6
	protoIPv6 = 41 // ip6ip6
)

func ip6tnlModeName(p uint8) string {
	switch p {
	case protoIPIP:
		return "ipip6"
	case protoIPv6:
		return "ip6ip6"
	}
	return "any"
}

func ip6tnlProto(mode string) uint8 {
	switch mode {
	case "ipip6":
		return protoIPIP
	case "any":
		return 0
	}
	return protoIPv6
}

// AddLink creates a link, marked as ours, administratively down.
func (k *Netlink) AddLink(l *model.Link) error {
	if l.Kind == model.KindIP6Tnl && l.Tunnel.External {
		if err := k.addExternalIP6Tnl(l.Name, l.MTU, ip6tnlProto(l.Tunnel.Mode)); err != nil {
			return err
		}
		return k.markNew(l)
	}
	nl, err := k.netlinkOf(l)
	if err != nil {
		return err
	}
	if v, ok := nl.(*netlink.IPVlan); ok {
		if v.Flag, err = k.ipvlanPortFlag(v.ParentIndex); err != nil {
			return fmt.Errorf("add link %s: %w", l.Name, err)
		}
	}
	if l.Kind == model.KindVeth && l.Veth.PeerNetNS != "" {
		ns, err := netns.GetFromName(l.Veth.PeerNetNS)
		if err != nil {
			return fmt.Errorf("add link %s: peer network namespace %s: %w", l.Name, l.Veth.PeerNetNS, err)
		}
		defer ns.Close()
		nl.(*netlink.Veth).PeerNamespace = netlink.NsFd(ns)
	}
	k.wrote()
	if err := k.h.LinkAdd(nl); err != nil {
		if errnoUnsupported(err) {
			return fmt.Errorf("add link %s: kind %s: %w (%v)", l.Name, l.Kind, ErrUnsupported, err)
		}
		if why := parentRefused(l, err); why != "" {
			return fmt.Errorf("add link %s: %w (%s)", l.Name, err, why)
		}
		return fmt.Errorf("add link %s: %w", l.Name, err)
	}
	if a := nl.Attrs(); a.Index != 0 {
		k.remember(l.Name, a.Index)
	} else {
		k.forget(l.Name)
	}
	return k.markNew(l)
}

// netlinkOf is the create request of a link, in the library's types: every
// kind the model has but device (TestEveryKindHasACreate), its parents
// resolved to indexes. A veth's peer namespace is opened by AddLink.
// ipvlanPortFlag is the flag (bridge, private or vepa) of the ipvlans on
// the link of index parent, bridge when it has none. The kernel keeps one
// flag per parent and sets it from every ipvlan made there, and the
// library always sends one: a new ipvlan is given the one the parent's
// ipvlans have, so that theirs (someone else's, maybe) stays.
func (k *Netlink) ipvlanPortFlag(parent int) (netlink.IPVlanFlag, error) {
	var ls []netlink.Link
	if err := retry("links", func() (err error) { ls, err = k.h.LinkList(); return }); err != nil {
		return 0, err
	}
	for _, l := range ls {
		if v, ok := l.(*netlink.IPVlan); ok && v.ParentIndex == parent {
			return v.Flag, nil
		}
	}
	return netlink.IPVLAN_FLAG_BRIDGE, nil
}

func (k *Netlink) netlinkOf(l *model.Link) (netlink.Link, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = l.Name
	attrs.MTU = l.MTU
	var nl netlink.Link
	switch l.Kind {
	case model.KindDummy:
		nl = &netlink.Dummy{LinkAttrs: attrs}
	case model.KindBridge:
		nl = &netlink.Bridge{LinkAttrs: attrs}
	case model.KindVeth:
		// The peer end starts at the kernel's own default (ether_setup's
		// 1500), as it does without the library, which would otherwise
		// copy this end's MTU to it: a peer the file gives no MTU then
		// gets the same one whichever end is made first. One the file
		// gives an MTU gets it from its own change.
		nl = &netlink.Veth{LinkAttrs: attrs, PeerName: l.Veth.Peer, PeerMTU: vethDefaultMTU}
	case model.KindVXLAN:
		x := l.VXLAN
		v := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: int(x.ID), SrcAddr: fromAddr(x.Local), Group: fromAddr(x.Remote), Port: int(x.Port), TTL: int(x.TTL), Learning: x.Learning}
		if x.Dev != "" {
			i, err := k.index(x.Dev)
			if err != nil {
				return nil, fmt.Errorf("add link %s: %w", l.Name, err)
			}
			v.VtepDevIndex = i
		}
		nl = v
	case model.KindIPVlan:
		i, err := k.index(l.IPVlan.Parent)
		if err != nil {
			return nil, fmt.Errorf("add link %s: %w", l.Name, err)
		}
		attrs.ParentIndex = i
		nl = &netlink.IPVlan{LinkAttrs: attrs, Mode: ipvlanMode(l.IPVlan.Mode)}
	case model.KindVLAN:
		i, err := k.index(l.VLAN.Parent)
		if err != nil {
			return nil, fmt.Errorf("add link %s: %w", l.Name, err)
		}
		attrs.ParentIndex = i
		nl = &netlink.Vlan{LinkAttrs: attrs, VlanId: int(l.VLAN.ID), VlanProtocol: vlanProtocol(l.VLAN.Protocol)}
	case model.KindMACVlan:
		i, err := k.index(l.MACVlan.Parent)
		if err != nil {
			return nil, fmt.Errorf("add link %s: %w", l.Name, err)
		}
		attrs.ParentIndex = i
		nl = &netlink.Macvlan{LinkAttrs: attrs, Mode: macvlanMode(l.MACVlan.Mode)}
	case model.KindVRF:
		nl = &netlink.Vrf{LinkAttrs: attrs, Table: l.VRF.Table}
	case model.KindBond:
		b := netlink.NewLinkBond(attrs)
		b.Mode = netlink.StringToBondMode(l.Bond.Mode)
		b.Miimon = int(l.Bond.Miimon)
		nl = b
	case model.KindIPIP:
		t := l.Tunnel
		typ, sport, dport := encapTo(t.Encap)
		// PMTU discovery on: what `ip link add type ipip` does, and required
		// by the kernel for a fixed TTL.
		nl = &netlink.Iptun{LinkAttrs: attrs, Local: fromAddr(t.Local), Remote: fromAddr(t.Remote), Ttl: t.TTL, PMtuDisc: 1, EncapType: typ, EncapSport: sport, EncapDport: dport, FlowBased: t.External}
	case model.KindIP6Tnl:
		t := l.Tunnel
		typ, sport, dport := encapTo(t.Encap)
		nl = &netlink.Ip6tnl{LinkAttrs: attrs, Local: fromAddr(t.Local), Remote: fromAddr(t.Remote), Ttl: t.TTL, Proto: ip6tnlProto(t.Mode), EncapLimit: 4, EncapType: typ, EncapSport: sport, EncapDport: dport, FlowBased: t.External}
	case model.KindWireGuard:
		nl = &netlink.Wireguard{LinkAttrs: attrs}
	default:
		return nil, fmt.Errorf("add link %s: kind %s cannot be created", l.Name, l.Kind)
	}
	return nl, nil
}

// markNew finishes a create: the ownership marker, and a bridge's MTU pinned.
func (k *Netlink) markNew(l *model.Link) error {
	// The kernel ignores IFLA_IFALIAS in a create request (only a change
	// sets it), so the marker takes a second write.
	if err := k.SetLinkAlias(l.Name, l.Alias, true); err != nil {
		return fmt.Errorf("add link %s: %w: %w", l.Name, ErrUnmarked, err)
	}
	if l.Kind == model.KindBridge && l.MTU != 0 {
		if err := k.pinBridgeMTU(l.Name, l.MTU); err != nil {
			return fmt.Errorf("add link %s: %w", l.Name, err)
		}
	}
	return nil
}

// pinBridgeMTU marks a new bridge's declared MTU as set by the user, so that
// the kernel never moves it to its ports' smallest (br_mtu_auto_adjust). The
// MTU given in the create message is not marked, and keepBridgeMTU puts a
// moved MTU back only after the fact: meanwhile the kernel has moved the MTU
// of the IPv6 routes through the bridge down with it and, on the way back,
// up to the bridge's (rt6_mtu_change_route), so a route's declared MTU was
// lost to a port joining. Only a
// change through RTM_SETLINK marks it, and the kernel ignores a change to
// the same value: two writes, while the new bridge is down and holds no
// route.
func (k *Netlink) pinBridgeMTU(name string, mtu int) error {
	other := mtu + 1
	if mtu >= 65535 {
		other = mtu - 1
	}
	for _, m := range []int{other, mtu} {
		if err := k.SetLinkMTU(name, m); err != nil {
			return fmt.Errorf("pin the mtu of bridge %s: %w", name, err)
		}
	}
	return nil
}

// addExternalIP6Tnl creates a flow-based (collect_md) ip6tnl with its
// protocol. The library sends IFLA_IPTUN_COLLECT_METADATA alone for a
// flow-based tunnel, so the kernel made every one ip6ip6 whatever the file
// said (mode any was replaced on every apply), and the kernel refuses any change to a collect_md tunnel
// afterwards: the protocol must be in the create. The mode matters: such a
// tunnel drops IPv4 packets unless it is ipip6 or any.
func (k *Netlink) addExternalIP6Tnl(name string, mtu int, proto uint8) error {
	data := mdnl.NewAttributeEncoder()
	data.Flag(nl.IFLA_IPTUN_COLLECT_METADATA, true)
	data.Uint8(nl.IFLA_IPTUN_PROTO, proto)
	info, err := data.Encode()
	if err != nil {
		return fmt.Errorf("add link %s: %w", name, err)
	}
	body, err := rtnl.MarshalLink(&rtnl.Link{Name: name, MTU: uint32(mtu), Kind: "ip6tnl", InfoData: info})
	if err != nil {
		return fmt.Errorf("add link %s: %w", name, err)
	}
	k.wrote()
	if err := k.request(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, body); err != nil {
		if errnoUnsupported(err) {
			return fmt.Errorf("add link %s: kind ip6tnl: %w (%v)", name, ErrUnsupported, err)
		}
		return fmt.Errorf("add link %s: %w", name, err)
	}
	k.forget(name)
	return nil
}

// DeleteLink deletes a link (a veth takes its peer with it).
func (k *Netlink) DeleteLink(name string) error {
	ref, err := k.linkRef(name)
	if err != nil {
		return fmt.Errorf("delete link: %w", err)
	}
	// A veth takes its peer with it: the bridges of both ends lose a port.
	err = k.keepBridgeMTU(k.masterOf(name), 0, func() error {
		return k.keepBridgeMTU(k.peerMasterOf(name), 0, func() error {
			k.wrote()
			err := k.h.LinkDel(ref)
			k.forget(name)
			return err
		})
	})
	if errors.Is(err, unix.ENODEV) {
		// The index came from the last dump: the kernel deleted the link
		// since, with its veth peer or its lower link. Gone is what a
		// delete wants.
		return fmt.Errorf("delete link %s: %w (%v)", name, ErrNotFound, err)
	}
	if err != nil {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

// ChangeLink writes a macvlan's mode, a bond's mode and miimon, a tunnel's
// or a vxlan's attributes in one RTM_NEWLINK on the existing link (the
// library's LinkModify sends the link's common attributes too, which a
// change must not touch). A bond's
// mode is refused while the bond is up (BOND_OPTFLAG_IFDOWN), so a bond
// that is up goes down for the write and comes up again; while it has
// members the kernel refuses it whatever its state (the diff replaces such
// a bond instead).
func (k *Netlink) ChangeLink(l *model.Link) error {
	ref, err := k.linkRef(l.Name)
	if err != nil {
		return fmt.Errorf("change link: %w", err)
	}
	change := rtnl.Link{Index: int32(ref.Attrs().Index)}
	data := mdnl.NewAttributeEncoder()
	var bounce bool
	switch {
	case l.MACVlan != nil:
		change.Kind = "macvlan"
		data.Uint32(nl.IFLA_MACVLAN_MODE, uint32(macvlanModeBits[macvlanMode(l.MACVlan.Mode)]))
	case l.Bond != nil:
		change.Kind = "bond"
		cur, err := k.h.LinkByIndex(ref.Attrs().Index)
		if err != nil {
			return fmt.Errorf("change link %s: %w", l.Name, err)
		}
		if b, ok := cur.(*netlink.Bond); ok && b.Mode.String() != l.Bond.Mode {
			data.Uint8(nl.IFLA_BOND_MODE, uint8(netlink.StringToBondMode(l.Bond.Mode)))
			bounce = cur.Attrs().Flags&net.FlagUp != 0
		}
		data.Uint32(nl.IFLA_BOND_MIIMON, l.Bond.Miimon)
	case l.Tunnel != nil && (l.Kind == model.KindIPIP || l.Kind == model.KindIP6Tnl):
		// The kernel takes the whole set of parameters (a missing one is
		// reset), so what the file does not model is sent back as the
		// tunnel has it: an adopted tunnel keeps its TOS, fwmark, flow
		// label, PMTU discovery and encapsulation flags, and one of ours
		// keeps what its create set.
		t := l.Tunnel
		typ, sport, dport := encapTo(t.Encap)
		if l.Kind == model.KindIPIP {
			change.Kind = "ipip"
		} else {
			change.Kind = "ip6tnl"
			data.Uint8(nl.IFLA_IPTUN_PROTO, ip6tnlProto(t.Mode))
		}
		if err := k.keepTunnelParams(ref.Attrs().Index, data, l.Kind == model.KindIP6Tnl); err != nil {
			return fmt.Errorf("change link %s: %w", l.Name, err)
		}
		// An endpoint left out is "any": the kernel's parameters start
		// zeroed.
		for _, e := range []struct {
			typ uint16
			a   netip.Addr
		}{{nl.IFLA_IPTUN_LOCAL, t.Local}, {nl.IFLA_IPTUN_REMOTE, t.Remote}} {
			if e.a.IsValid() {
				data.Bytes(e.typ, e.a.AsSlice())
			}
		}
		data.Uint8(nl.IFLA_IPTUN_TTL, t.TTL)
		data.Uint16(nl.IFLA_IPTUN_ENCAP_TYPE, typ)
		data.Bytes(nl.IFLA_IPTUN_ENCAP_SPORT, binary.BigEndian.AppendUint16(nil, sport))
		data.Bytes(nl.IFLA_IPTUN_ENCAP_DPORT, binary.BigEndian.AppendUint16(nil, dport))
	case l.VXLAN != nil:
		// The kernel starts from the vxlan's configuration and changes
		// what the message carries, refusing an id or port even when
		// unchanged: only what changes in place is sent. An address
		// taken away is sent as the family's zero (the family itself
		// cannot change), a dev never (a change of it replaces the link).
		change.Kind = "vxlan"
		x := l.VXLAN
		group, local := uint16(nl.IFLA_VXLAN_GROUP), uint16(nl.IFLA_VXLAN_LOCAL)
		zero := netip.IPv4Unspecified()
		if x.Remote.Is6() || x.Local.Is6() {
			group, local, zero = nl.IFLA_VXLAN_GROUP6, nl.IFLA_VXLAN_LOCAL6, netip.IPv6Unspecified()
		}
		data.Bytes(group, cmp.Or(x.Remote, zero).AsSlice())
		data.Bytes(local, cmp.Or(x.Local, zero).AsSlice())
		data.Uint8(nl.IFLA_VXLAN_TTL, x.TTL)
		var learning uint8
		if x.Learning {
			learning = 1
		}
		data.Uint8(nl.IFLA_VXLAN_LEARNING, learning)
	default:
		return fmt.Errorf("change link %s: kind %s has no attribute that changes in place", l.Name, l.Kind)
	}
	if change.InfoData, err = data.Encode(); err != nil {
		return fmt.Errorf("change link %s: %w", l.Name, err)
	}
	body, err := rtnl.MarshalLink(&change)
	if err != nil {
		return fmt.Errorf("change link %s: %w", l.Name, err)
	}
	if bounce {
		if err := k.SetLinkUp(l.Name, false); err != nil {
			return fmt.Errorf("change link %s: %w", l.Name, err)
		}
	}
	k.wrote()
	err = k.request(unix.RTM_NEWLINK, 0, body)
	if bounce {
		if uerr := k.SetLinkUp(l.Name, true); err == nil && uerr != nil {
			err = uerr
		}
	}
	if err != nil {
		return fmt.Errorf("change link %s: %w", l.Name, err)
	}
	return nil
}

// tunnelParamsOurs are the tunnel parameters ChangeLink writes from the
// file; IFLA_IPTUN_PROTO only for ip6tnl, whose mode it is.
var tunnelParamsOurs = map[uint16]bool{
	nl.IFLA_IPTUN_LOCAL: true, nl.IFLA_IPTUN_REMOTE: true, nl.IFLA_IPTUN_TTL: true,
	nl.IFLA_IPTUN_ENCAP_TYPE: true, nl.IFLA_IPTUN_ENCAP_SPORT: true, nl.IFLA_IPTUN_ENCAP_DPORT: true,
}

// keepTunnelParams adds to data the tunnel's current parameters that the
// file does not model, read from the kernel. IFLA_IPTUN_COLLECT_METADATA
// is left out: the kernel refuses it in a change (a tunnel's external mode
// is fixed at its create).
func (k *Netlink) keepTunnelParams(index int, data *mdnl.AttributeEncoder, ip6 bool) error {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	req.Sockets = k.sockets
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return fmt.Errorf("read tunnel parameters: %w", err)
	}
	if len(msgs) != 1 {
		return fmt.Errorf("read tunnel parameters: %d answers", len(msgs))
	}
	cur, err := rtnl.LinkInfoData(msgs[0])
	if err != nil || cur == nil {
		return fmt.Errorf("read tunnel parameters: %w", cmp.Or(err, errors.New("no IFLA_INFO_DATA")))
	}
	ad, err := mdnl.NewAttributeDecoder(cur)
	if err != nil {
		return fmt.Errorf("read tunnel parameters: %w", err)
	}
	for ad.Next() {
		typ := ad.Type()
		if tunnelParamsOurs[typ] || typ == nl.IFLA_IPTUN_COLLECT_METADATA || ip6 && typ == nl.IFLA_IPTUN_PROTO {
			continue
		}
		data.Bytes(typ, ad.Bytes())
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("read tunnel parameters: %w", err)
	}
	return nil
}

// vethDefaultMTU is the MTU the kernel gives a veth end made without one
// (ether_setup).
const vethDefaultMTU = 1500

// macvlanModeBits are the kernel's MACVLAN_MODE_* values (a bit each); the
// library's MacvlanMode is an enumeration of its own.
var macvlanModeBits = map[netlink.MacvlanMode]uint32{
	netlink.MACVLAN_MODE_PRIVATE:  1,
	netlink.MACVLAN_MODE_VEPA:     2,
	netlink.MACVLAN_MODE_BRIDGE:   4,
	netlink.MACVLAN_MODE_PASSTHRU: 8,
	netlink.MACVLAN_MODE_SOURCE:   16,
}

// SetLinkMTU changes the MTU in place. The bridge the link is a port of
// keeps its MTU: the kernel moves a bridge to its ports' smallest MTU when
// one changes, as when one joins or leaves (keepBridgeMTU): a bridge of
// 1500 would otherwise follow a port raised to 9000.
func (k *Netlink) SetLinkMTU(name string, mtu int) error {
	return k.keepBridgeMTU(k.masterOf(name), mtu, func() error {
		return k.set("set mtu", name, func(l netlink.Link) error { return k.h.LinkSetMTU(l, mtu) })
	})
}

// SetLinkUp sets the administrative state.
func (k *Netlink) SetLinkUp(name string, up bool) error {
	if up {
		return k.set("set up", name, k.h.LinkSetUp)
	}
	return k.set("set down", name, k.h.LinkSetDown)
}

// SetLinkMaster enslaves a link, or releases it when master is "".
func (k *Netlink) SetLinkMaster(name, master string) error {
	old := k.masterOf(name)
	if master == "" {
		return k.downForPassthru(name, func() error {
			return k.keepBridgeMTU(old, 0, func() error { return k.set("release from master", name, k.h.LinkSetNoMaster) })
		})
	}
	mi, err := k.index(master)
	if err != nil {
		return fmt.Errorf("set master of %s: %w", name, err)
	}
	if err := k.downForBond(name, mi); err != nil {
		return err
	}
	port := 0
	if l, err := k.h.LinkByName(name); err == nil {
		port = l.Attrs().MTU
	}
	return k.downForPassthru(name, func() error {
		return k.keepBridgeMTU(old, 0, func() error {
			return k.keepBridgeMTU(mi, port, func() error {
				return k.set("set master "+master, name, func(l netlink.Link) error { return k.h.LinkSetMasterByIndex(l, mi) })
			})
		})
	})
}

// downForPassthru runs f, a change of master, with a passthru macvlan that
// is up set down, and up again after. The macvlan driver passes a change of
// its allmulti flag (which a bridge sets on its ports) to the parent only
// while the macvlan is up, but does not count it when a passthru macvlan
// opens or stops (macvlan_open, macvlan_stop): a port that joined a bridge
// down, came up and left it up took the parent's allmulti count below zero,
// and the next macvlan on that parent to come up in a bridge met EOVERFLOW
// ("allmulti touches roof"). Down,
// the change of master moves no count. diff.cycledByMaster knows the link
// goes down, and adds back what it loses.
func (k *Netlink) downForPassthru(name string, f func() error) error {
	l, err := k.h.LinkByName(name)
	if err != nil || l.Attrs().Flags&net.FlagUp == 0 {
		return f()
	}
	if m, ok := l.(*netlink.Macvlan); !ok || m.Mode != netlink.MACVLAN_MODE_PASSTHRU {
		return f()
	}
	k.wrote()
	if err := k.h.LinkSetDown(l); err != nil {
		return fmt.Errorf("set passthru macvlan %s down to change its master: %w", name, err)
	}
	if err := f(); err != nil {
		return err
	}
	return k.set("set up", name, k.h.LinkSetUp)
}

// downForBond sets a link that is up down before it joins the bond of
// index master: the bonding driver refuses to enslave a link that is up
// ("Device can not be enslaved while up", EPERM) on the kernels that check
// it, and opens the member itself once enslaved, so the member comes back up.
func (k *Netlink) downForBond(name string, master int) error {
	m, err := k.h.LinkByIndex(master)
	if err != nil || m.Type() != "bond" {
		return nil
	}
	l, err := k.h.LinkByName(name)
	if err != nil || l.Attrs().Flags&net.FlagUp == 0 {
		return nil
	}
	k.wrote()
	if err := k.h.LinkSetDown(l); err != nil {
		return fmt.Errorf("set %s down to join bond %s: %w", name, m.Attrs().Name, err)
	}
	return nil
}

// masterOf returns the index of name's master, 0 when it has none or is gone.
func (k *Netlink) masterOf(name string) int {
	l, err := k.h.LinkByName(name)
	if err != nil {
		return 0
	}
	return l.Attrs().MasterIndex
}

// peerMasterOf returns the index of the master of a veth's peer, 0 for a
// link of another kind, without a master, or gone.
func (k *Netlink) peerMasterOf(name string) int {
	l, err := k.h.LinkByName(name)
	if err != nil || l.Type() != "veth" || l.Attrs().ParentIndex == 0 {
		return 0
	}
	p, err := k.h.LinkByIndex(l.Attrs().ParentIndex)
	if err != nil {
		return 0
	}
	return p.Attrs().MasterIndex
}

// keepBridgeMTU runs f, which adds, removes or changes the MTU of a port of
// the bridge master (enslave, release, delete, set mtu), and puts the bridge's MTU back if the kernel
// moved it. A bridge whose MTU was only given at creation (as AddLink does)
// follows its ports: whenever one joins or leaves, the kernel sets the bridge
// to their smallest MTU (br_mtu_auto_adjust), so the MTU the file declares
// would be lost until the next pass, and a declared port of a larger MTU
// would never converge. Setting the MTU through RTM_SETLINK marks it as set
// by the user, and the kernel leaves it alone from then on. A bridge the
// file does not own keeps its MTU too: netreconcile changes nothing it was
// not asked to.
//
// The kernel sets the bridge's net.ipv6.conf.BRIDGE.mtu to the MTU at each
// move (addrconf_notify, NETDEV_CHANGEMTU), the move back included, and
// lowers the macvlans and vlans on the bridge with it but never raises
// them (macvlan_device_event, vlan_device_event): those are put back too,
// with their keys, else a port joining lost the file's values, or someone
// else's, until the next pass, and someone else's macvlan stayed low.
//
// A port below 1280, IPv6's minimum, would take the bridge there, where the
// kernel takes IPv6 off it (addrconf_ifdown: its addresses, routes and
// keys; they come back with default's keys, not the ones it had), and off
// its macvlans and vlans: port is the MTU the port has in the bridge (0:
// none joins nor changes), and for such a port the bridge's MTU is marked
// as set first (pinBridgeMTU), so that the kernel does not move it at all.
// That bridge then no longer follows its ports, someone else's too: less
// than losing its IPv6.
func (k *Netlink) keepBridgeMTU(master, port int, f func() error) error {
	if master == 0 {
		return f()
	}
	br, err := k.h.LinkByIndex(master)
	if err != nil || br.Type() != "bridge" {
		return f()
	}
	// Only a port below the bridge's MTU pulls it (and its uppers) down: a
	// port that leaves or is raised never lowers it, and the dump of
	// every link is spared.
	uppers := map[int]netlink.LinkAttrs{}
	if port != 0 && port < br.Attrs().MTU {
		if ls, err := k.h.LinkList(); err == nil {
			for _, l := range ls {
				if a := l.Attrs(); a.ParentIndex == master && a.NetNsID < 0 && (l.Type() == "macvlan" || l.Type() == "macvtap" || l.Type() == "vlan") {
					uppers[a.Index] = *a
				}
			}
		}
	}
	var keys []string
	for _, name := range append([]string{br.Attrs().Name}, upperNames(uppers)...) {
		if key, ok := model.PerLinkSysctl(name, "ipv6.mtu"); ok {
			keys = append(keys, key)
		}
	}
	v6, _ := k.Sysctls(keys) // none of a link without IPv6
	pinned := false
	if mtu := br.Attrs().MTU; port != 0 && port < ipv6MinMTU && mtu >= ipv6MinMTU {
		if err := k.pinBridgeMTU(br.Attrs().Name, mtu); err != nil {
			return err
		}
		pinned = true
	}
	if err := f(); err != nil {
		return err
	}
	now, err := k.h.LinkByIndex(master)
	moved := err == nil && now.Attrs().MTU != br.Attrs().MTU
	if !moved && !pinned {
		return nil
	}
	if moved {
		k.wrote()
		if err := k.h.LinkSetMTU(now, br.Attrs().MTU); err != nil {
			return fmt.Errorf("keep the mtu of bridge %s: %w", br.Attrs().Name, err)
		}
	}
	for _, idx := range slices.Sorted(maps.Keys(uppers)) {
		was := uppers[idx]
		l, err := k.h.LinkByIndex(idx)
		if err != nil || l.Attrs().MTU >= was.MTU {
			continue
		}
		k.wrote()
		if err := k.h.LinkSetMTU(l, was.MTU); err != nil {
			return fmt.Errorf("keep the mtu of %s on bridge %s: %w", was.Name, br.Attrs().Name, err)
		}
	}
	got, _ := k.Sysctls(keys)
	for _, key := range keys {
		if was, ok := v6[key]; ok && got[key] != was {
			if err := k.SetSysctl(key, was); err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("keep %s with the mtu of bridge %s: %w", key, br.Attrs().Name, err)
			}
		}
	}
	return nil
}

// ipv6MinMTU is IPv6's minimum MTU: below it the kernel takes IPv6 off a
// link.
const ipv6MinMTU = 1280

func upperNames(uppers map[int]netlink.LinkAttrs) []string {
	var names []string
	for _, a := range uppers {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	return names
}

// SetLinkAlias writes the alias, with the marker when owned.
func (k *Netlink) SetLinkAlias(name, alias string, owned bool) error {
	raw := alias
	if owned {
		raw = model.MarkedAlias(alias)
	}
	return k.set("set alias", name, func(l netlink.Link) error { return k.h.LinkSetAlias(l, raw) })
}

func (k *Netlink) set(what, name string, f func(netlink.Link) error) error {
	ref, err := k.linkRef(name)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	k.wrote()
	if err := f(ref); err != nil {
		return fmt.Errorf("%s on %s: %w", what, name, err)
	}
	return nil
}

// optAddr reads an address attribute the kernel reports as all zeroes when
// unset (a tunnel's local or remote, a vxlan's group) as "none". The
// library gives each as long as its attribute: 16 bytes are IPv6, also
// when IPv4-mapped (an ip6tnl's endpoint may be one).
func optAddr(ip net.IP) netip.Addr {
	a := toAddr(ip)
	if len(ip) == net.IPv6len {
		a = netip.AddrFrom16([16]byte(ip))
	}
	if a.IsUnspecified() {
		return netip.Addr{}
	}
	return a
}
