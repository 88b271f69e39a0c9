package kernel

import (
	"net/netip"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// RoutesByLibrary lists routes through vishvananda/netlink, as Routes did
// before it parsed dumps itself: the reference its parser is tested against.
func RoutesByLibrary(k *Netlink, protocol int) ([]model.Route, error) {
	filter := &netlink.Route{Table: unix.RT_TABLE_UNSPEC, Protocol: netlink.RouteProtocol(protocol)}
	mask := netlink.RT_FILTER_TABLE
	if protocol != 0 {
		mask |= netlink.RT_FILTER_PROTOCOL
	}
	// A handle of its own with strict checking on, as the reference dump
	// had before dumpRoutes replaced it.
	h, err := netlink.NewHandleAt(k.ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	_ = h.SetStrictCheck(true)
	var out []model.Route
	err = h.RouteListFilteredIter(netlink.FAMILY_ALL, filter, mask, func(r netlink.Route) bool {
		if r.Family == unix.AF_INET || r.Family == unix.AF_INET6 {
			out = append(out, k.fromRoute(&r))
		}
		return true
	})
	model.SortRoutes(out)
	return out, err
}

// RouteMessages is how many route messages the last dump of Routes received.
func RouteMessages(k *Netlink) int {
	k.batchMu.Lock()
	defer k.batchMu.Unlock()
	return k.batch.dumped
}

func (k *Netlink) fromRoute(r *netlink.Route) model.Route {
	m := model.Route{Table: uint32(r.Table), TOS: uint8(r.Tos), Metric: uint32(r.Priority), Type: uint8(r.Type), Gateway: toAddr(r.Gw), Src: toAddr(r.Src), Scope: uint8(r.Scope), OnLink: r.Flags&unix.RTNH_F_ONLINK != 0, MTU: uint32(r.MTU), Protocol: uint8(r.Protocol)}
	if r.Dst != nil {
		m.Dst = toPrefix(r.Dst)
	} else if r.Family == unix.AF_INET6 {
		m.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	} else {
		m.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	if r.LinkIndex != 0 {
		m.Dev = k.name(r.LinkIndex)
	}
	return m
}

// AddressesByLibrary lists addresses as Addresses did through the library
// before it parsed dumps itself (the library does not read IFA_PROTO): the
// reference its parser is tested against.
func AddressesByLibrary(k *Netlink) ([]model.Address, error) {
	as, err := k.h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	var out []model.Address
	for _, a := range as {
		p := toPrefix(a.IPNet)
		if p.Addr().Is6() && a.Flags&unix.IFA_F_PERMANENT == 0 {
			continue
		}
		m := model.Address{Link: k.name(a.LinkIndex), Prefix: p, Scope: a.Scope, NoPrefixRoute: a.Flags&unix.IFA_F_NOPREFIXROUTE != 0,
			Tentative: a.Flags&unix.IFA_F_TENTATIVE != 0, DADFailed: a.Flags&unix.IFA_F_DADFAILED != 0, Secondary: a.Flags&unix.IFA_F_SECONDARY != 0}
		if p.Addr().Is6() {
			m.KeptFlags = uint32(a.Flags) & (unix.IFA_F_NODAD | unix.IFA_F_HOMEADDRESS | unix.IFA_F_MANAGETEMPADDR)
		}
		if a.Peer != nil {
			m.Peer = toPrefix(a.Peer)
			m.Prefix = netip.PrefixFrom(p.Addr(), m.Peer.Bits())
		}
		out = append(out, m)
	}
	model.SortAddresses(out)
	return out, nil
}

// BatchHeld is the bytes of buffers the route socket holds between calls.
func BatchHeld(k *Netlink) int {
	k.batchMu.Lock()
	defer k.batchMu.Unlock()
	if k.batch == nil {
		return 0
	}
	b := k.batch
	return cap(b.buf) + cap(b.acks) + cap(b.msgs)*int(unsafe.Sizeof(unix.Mmsghdr{})) + cap(b.iovs)*int(unsafe.Sizeof(unix.Iovec{}))
}

// SetNFTSockBuf sets the buffers an nftables socket opens with, until the
// returned function puts the default back.
func SetNFTSockBuf(n int) (restore func()) {
	old := nftwire.SockBuf
	nftwire.SockBuf = n
	return func() { nftwire.SockBuf = old }
}

// WriteSysctl is writeSysctl, with the write and the read back given.
var WriteSysctl = writeSysctl

// NFTCarried reports whether the next read of a table takes it as our last
// batch left it (nft_carry_linux.go) rather than dumping it.
func NFTCarried(k *Netlink, key model.NftTableKey) bool {
	r := k.nftReads[key]
	return r != nil && r.carried
}
