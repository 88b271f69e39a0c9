package kernel

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// ifaProto is IFA_PROTO (include/uapi/linux/if_addr.h, Linux 6.3): the
// protocol (owner) of an address, a u8, as RTA_PROTOCOL is a route's.
// x/sys/unix does not name it yet. A kernel before 6.3 ignores it in a
// request (RTM_NEWADDR is parsed leniently) and never puts it in a dump;
// one from 6.3 puts it in a dump only when it is not 0.
const ifaProto = 11

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
		a, ok := k.parseAddress(m)
		if ok {
			out = append(out, a)
		}
	}
	model.SortAddresses(out)
	return out, nil
}

// parseAddress reads one RTM_NEWADDR body as the library's parseAddr does:
// IPv4 sends IFA_LOCAL and IFA_ADDRESS, the latter being the peer when they
// differ; IPv6 sends IFA_ADDRESS alone, or IFA_LOCAL and the peer in
// IFA_ADDRESS.
func (k *Netlink) parseAddress(b []byte) (model.Address, bool) {
	if len(b) < unix.SizeofIfAddrmsg {
		return model.Address{}, false
	}
	fam, plen, flags, scope := b[0], int(b[1]), uint32(b[2]), int(b[3])
	ne := binary.NativeEndian
	index := int(ne.Uint32(b[4:8]))
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return model.Address{}, false
	}
	var local, addr netip.Addr
	proto := 0
	for a := b[unix.SizeofIfAddrmsg:]; len(a) >= unix.SizeofRtAttr; {
		l := int(ne.Uint16(a[0:2]))
		if l < unix.SizeofRtAttr || l > len(a) {
			break
		}
		typ, v := ne.Uint16(a[2:4])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER), a[unix.SizeofRtAttr:l]
		a = a[min(rtaAlign(l), len(a)):]
		switch typ {
		case unix.IFA_LOCAL:
			local, _ = addrOf(v)
		case unix.IFA_ADDRESS:
			addr, _ = addrOf(v)
		case unix.IFA_FLAGS:
			if len(v) >= 4 {
				flags = ne.Uint32(v)
			}
		case ifaProto:
			if len(v) >= 1 {
				proto = int(v[0])
			}
		}
	}
	if fam == unix.AF_INET6 && flags&unix.IFA_F_PERMANENT == 0 {
		return model.Address{}, false
	}
	m := model.Address{Link: k.name(index), Scope: scope, NoPrefixRoute: flags&unix.IFA_F_NOPREFIXROUTE != 0,
		Tentative: flags&unix.IFA_F_TENTATIVE != 0, DADFailed: flags&unix.IFA_F_DADFAILED != 0, Secondary: flags&unix.IFA_F_SECONDARY != 0,
		Protocol: proto}
	switch {
	case !local.IsValid() || local == addr && fam == unix.AF_INET:
		m.Prefix = netip.PrefixFrom(addr, plen)
	default:
		// A point-to-point address: the kernel keeps one prefix length,
		// the peer's (ifa_prefixlen). The identity is the local address
		// with it, as desired requires it.
		m.Prefix = netip.PrefixFrom(local, plen)
		if addr.IsValid() {
			m.Peer = netip.PrefixFrom(addr, plen)
		}
	}
	if !m.Prefix.IsValid() {
		return model.Address{}, false
	}
	return m, true
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
	v4 := a.Prefix.Addr().Is4()
	fam := unix.AF_INET6
	if v4 {
		fam = unix.AF_INET
	}
	req := nl.NewNetlinkRequest(typ, flags|unix.NLM_F_ACK)
	req.Sockets = k.sockets
	msg := nl.NewIfAddrmsg(fam)
	msg.Index = uint32(i)
	msg.Scope = uint8(a.Scope)
	msg.Prefixlen = uint8(a.Prefix.Bits())
	if a.Peer.IsValid() {
		msg.Prefixlen = uint8(a.Peer.Bits())
	}
	req.AddData(msg)
	local := a.Prefix.Addr().AsSlice()
	req.AddData(nl.NewRtAttr(unix.IFA_LOCAL, local))
	if a.Peer.IsValid() {
		req.AddData(nl.NewRtAttr(unix.IFA_ADDRESS, a.Peer.Addr().AsSlice()))
	} else {
		req.AddData(nl.NewRtAttr(unix.IFA_ADDRESS, local))
	}
	if a.NoPrefixRoute {
		req.AddData(nl.NewRtAttr(unix.IFA_FLAGS, nl.Uint32Attr(unix.IFA_F_NOPREFIXROUTE)))
	}
	if v4 && !a.Peer.IsValid() && a.Prefix.Bits() < 31 {
		// RFC 3021: no broadcast address on /31 and /32.
		bc := a.Prefix.Addr().As4()
		host := ^uint32(0) >> a.Prefix.Bits()
		ne := binary.BigEndian
		ne.PutUint32(bc[:], ne.Uint32(bc[:])|host)
		req.AddData(nl.NewRtAttr(unix.IFA_BROADCAST, bc[:]))
	}
	if protocol != 0 && typ == unix.RTM_NEWADDR {
		req.AddData(nl.NewRtAttr(ifaProto, []byte{uint8(protocol)}))
	}
	_, err = req.Execute(unix.NETLINK_ROUTE, 0)
	return err
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
func (k *Netlink) AddressProtocols() bool {
	addrProtoOnce.Do(func() { addrProtoRelease = releaseAtLeast(6, 3) })
	return addrProtoRelease
}

var (
	addrProtoOnce    sync.Once
	addrProtoRelease bool
)

// releaseAtLeast compares the running kernel's release (uname -r) with
// major.minor.
func releaseAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
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
