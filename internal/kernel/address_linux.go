package kernel

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Addresses lists every address but those the kernel or SLAAC made (IPv6
// addresses without IFA_F_PERMANENT: link-local and autoconfigured ones).
func (k *Netlink) Addresses() ([]model.Address, error) {
	var as []netlink.Addr
	if err := retry("addresses", func() (err error) { as, err = k.h.AddrList(nil, netlink.FAMILY_ALL); return }); err != nil {
		return nil, err
	}
	out := make([]model.Address, 0, len(as))
	for _, a := range as {
		p := toPrefix(a.IPNet)
		if p.Addr().Is6() && a.Flags&unix.IFA_F_PERMANENT == 0 {
			continue
		}
		m := model.Address{Link: k.name(a.LinkIndex), Prefix: p, Scope: a.Scope, NoPrefixRoute: a.Flags&unix.IFA_F_NOPREFIXROUTE != 0,
			Tentative: a.Flags&unix.IFA_F_TENTATIVE != 0, DADFailed: a.Flags&unix.IFA_F_DADFAILED != 0, Secondary: a.Flags&unix.IFA_F_SECONDARY != 0}
		if a.Peer != nil {
			m.Peer = toPrefix(a.Peer)
			// The kernel keeps one prefix length for a point-to-point
			// address (ifa_prefixlen), the peer's; the library reads the
			// local address as a host prefix. The identity is the local
			// address with the kernel's length, as desired requires it.
			m.Prefix = netip.PrefixFrom(p.Addr(), m.Peer.Bits())
		}
		out = append(out, m)
	}
	model.SortAddresses(out)
	return out, nil
}

func (k *Netlink) addr(a *model.Address) (netlink.Link, *netlink.Addr, error) {
	ref, err := k.linkRef(a.Link)
	if err != nil {
		return nil, nil, err
	}
	na := &netlink.Addr{IPNet: fromPrefix(a.Prefix), Scope: a.Scope}
	if a.Peer.IsValid() {
		na.Peer = fromPrefix(a.Peer)
	}
	if a.NoPrefixRoute {
		na.Flags |= unix.IFA_F_NOPREFIXROUTE
	}
	return ref, na, nil
}

// ReplaceAddress adds an address or updates its attributes.
func (k *Netlink) ReplaceAddress(a *model.Address) error {
	ref, na, err := k.addr(a)
	if err != nil {
		return fmt.Errorf("add address %s: %w", a.Key(), err)
	}
	k.wrote()
	if err := k.h.AddrReplace(ref, na); err != nil {
		return fmt.Errorf("add address %s: %w", a.Key(), err)
	}
	return nil
}

// DeleteAddress removes an address.
func (k *Netlink) DeleteAddress(a *model.Address) error {
	ref, na, err := k.addr(a)
	if err != nil {
		return fmt.Errorf("delete address %s: %w", a.Key(), err)
	}
	k.wrote()
	if err := k.h.AddrDel(ref, na); err != nil {
		return fmt.Errorf("delete address %s: %w", a.Key(), err)
	}
	return nil
}

// ipv4DevconfPromoteSecondaries is IPV4_DEVCONF_PROMOTE_SECONDARIES
// (include/uapi/linux/ip.h), the attribute type of the setting inside
// IFLA_INET_CONF.
const ipv4DevconfPromoteSecondaries = 20

// PromoteSecondaries sets the link's promote_secondaries with RTM_SETLINK
// (IFLA_AF_SPEC / AF_INET / IFLA_INET_CONF), which reaches the link in the
// handle's namespace without a thread switched into it for /proc/sys.
func (k *Netlink) PromoteSecondaries(name string) error {
	i, err := k.index(name)
	if err != nil {
		return fmt.Errorf("set promote_secondaries: %w", err)
	}
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	req.Sockets = k.sockets
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(i)
	req.AddData(msg)
	conf := nl.NewRtAttr(unix.IFLA_INET_CONF, nil)
	conf.AddRtAttr(ipv4DevconfPromoteSecondaries, nl.Uint32Attr(1))
	inet := nl.NewRtAttr(unix.AF_INET, conf.Serialize())
	req.AddData(nl.NewRtAttr(unix.IFLA_AF_SPEC, inet.Serialize()))
	k.wrote()
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("set promote_secondaries on %s: %w", name, err)
	}
	return nil
}
