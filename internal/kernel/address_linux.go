package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Addresses lists every address but those the kernel or SLAAC made (IPv6
// addresses without IFA_F_PERMANENT: link-local and autoconfigured ones),
// each with its protocol (IFA_PROTO; 0 when absent). The dump is parsed
// here, not by the library, which does not read IFA_PROTO.
func (k *Netlink) Addresses() ([]model.Address, error) {
	var msgs [][]byte
	err := retry("addresses", func() (err error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETADDR, unix.NLM_F_DUMP)
		req.Sockets = k.sockets
		req.AddData(nl.NewIfAddrmsg(unix.AF_UNSPEC))
		msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWADDR)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]model.Address, 0, len(msgs))
	for _, m := range msgs {
		a, ok, err := k.parseAddress(m)
		if err != nil {
			return nil, fmt.Errorf("list addresses: %w", err)
		}
		if ok {
			out = append(out, a)
		}
	}
	model.SortAddresses(out)
	return out, nil
}

// parseAddress reads one RTM_NEWADDR body; ok is false for an address
// Addresses does not list.
func (k *Netlink) parseAddress(b []byte) (model.Address, bool, error) {
	var a rtnl.Address
	if err := rtnl.DecodeAddress(b, &a); errors.Is(err, rtnl.ErrFamily) {
		return model.Address{}, false, nil
	} else if err != nil {
		return model.Address{}, false, err
	}
	if a.Family == unix.AF_INET6 && a.Flags&unix.IFA_F_PERMANENT == 0 {
		return model.Address{}, false, nil
	}
	m := model.Address{Link: k.name(int(a.Index)), Scope: int(a.Scope), NoPrefixRoute: a.Flags&unix.IFA_F_NOPREFIXROUTE != 0,
		Tentative: a.Flags&unix.IFA_F_TENTATIVE != 0, DADFailed: a.Flags&unix.IFA_F_DADFAILED != 0, Secondary: a.Flags&unix.IFA_F_SECONDARY != 0,
		Protocol: int(a.Protocol)}
	if a.Family == unix.AF_INET6 {
		m.KeptFlags = a.Flags & (unix.IFA_F_NODAD | unix.IFA_F_HOMEADDRESS | unix.IFA_F_MANAGETEMPADDR)
	}
	switch {
	case !a.Local.IsValid() || a.Local == a.Address && a.Family == unix.AF_INET:
		m.Prefix = netip.PrefixFrom(a.Address, int(a.PrefixLen))
	default:
		// A point-to-point address: the kernel keeps one prefix length,
		// the peer's (ifa_prefixlen). The identity is the local address
		// with it, as desired requires it.
		m.Prefix = netip.PrefixFrom(a.Local, int(a.PrefixLen))
		if a.Address.IsValid() {
			m.Peer = netip.PrefixFrom(a.Address, int(a.PrefixLen))
		}
	}
	if !m.Prefix.IsValid() {
		return model.Address{}, false, nil
	}
	return m, true, nil
}

// addressRequest writes an address as the library's AddrReplace and
// AddrDel would (IFA_LOCAL, IFA_ADDRESS the peer or the address, flags
// beyond 8 bits in IFA_FLAGS, an IPv4 broadcast address below /31), and
// with IFA_PROTO when protocol is not 0.
func (k *Netlink) addressRequest(typ, flags int, a *model.Address, protocol int) error {
	i, err := k.index(a.Link)
	if err != nil {
		return err
	}
	local := a.Prefix.Addr()
	ra := rtnl.Address{Family: unix.AF_INET6, PrefixLen: uint8(a.Prefix.Bits()), Scope: uint8(a.Scope), Index: uint32(i),
		Local: local, Address: local}
	if local.Is4() {
		ra.Family = unix.AF_INET
	}
	if a.Peer.IsValid() {
		ra.PrefixLen, ra.Address = uint8(a.Peer.Bits()), a.Peer.Addr()
	}
	if a.NoPrefixRoute {
		ra.Flags = unix.IFA_F_NOPREFIXROUTE
	}
	if typ == unix.RTM_NEWADDR {
		ra.Flags |= a.KeptFlags
	}
	if local.Is4() && !a.Peer.IsValid() && a.Prefix.Bits() < 31 {
		// RFC 3021: no broadcast address on /31 and /32.
		bc := local.As4()
		host := ^uint32(0) >> a.Prefix.Bits()
		binary.BigEndian.PutUint32(bc[:], binary.BigEndian.Uint32(bc[:])|host)
		ra.Broadcast = netip.AddrFrom4(bc)
	}
	if typ == unix.RTM_NEWADDR {
		ra.Protocol = uint8(protocol)
	}
	body, err := rtnl.MarshalAddress(&ra)
	if err != nil {
		return err
	}
	return k.request(typ, flags, body)
}

// ReplaceAddress adds an address, stamped with protocol (IFA_PROTO), or
// refreshes one that exists (NLM_F_REPLACE; see the interface for what
// that changes).
func (k *Netlink) ReplaceAddress(a *model.Address, protocol int) error {
	k.wrote()
	if err := k.addressRequest(unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, a, protocol); err != nil {
		return fmt.Errorf("add address %s: %w", a.Key(), err)
	}
	return nil
}

// DeleteAddress removes an address.
func (k *Netlink) DeleteAddress(a *model.Address) error {
	k.wrote()
	if err := k.addressRequest(unix.RTM_DELADDR, 0, a, 0); err != nil {
		return fmt.Errorf("delete address %s: %w", a.Key(), err)
	}
	return nil
}

// AddressProtocols reports whether this kernel records an address's
// protocol (IFA_PROTO, Linux 6.3), by its release. A dump cannot tell: the
// kernel puts the attribute only when it is not 0 (actual also takes an
// address that carries one as a yes, which a backport would give).
func (k *Netlink) AddressProtocols() bool { return rtnl.AddressProtocols() }

// PromoteSecondaries sets the link's promote_secondaries with RTM_SETLINK
// (IFLA_AF_SPEC / AF_INET / IFLA_INET_CONF), which reaches the link in the
// handle's namespace without a thread switched into it for /proc/sys.
func (k *Netlink) PromoteSecondaries(name string) error {
	i, err := k.index(name)
	if err != nil {
		return fmt.Errorf("set promote_secondaries: %w", err)
	}
	body, err := rtnl.MarshalLink(&rtnl.Link{Index: int32(i), INETConf: []rtnl.DevConf{{Type: rtnl.IPV4_DEVCONF_PROMOTE_SECONDARIES, Value: 1}}})
	if err != nil {
		return fmt.Errorf("set promote_secondaries on %s: %w", name, err)
	}
	k.wrote()
	if err := k.request(unix.RTM_SETLINK, 0, body); err != nil {
		return fmt.Errorf("set promote_secondaries on %s: %w", name, err)
	}
	return nil
}
