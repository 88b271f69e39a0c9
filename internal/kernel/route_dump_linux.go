package kernel

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// dumpBufSize is the receive buffer of a route dump read: the kernel fills
// at most 32 KiB per message batch (netlink_dump caps max_recvmsg_len).
const dumpBufSize = 64 << 10

// dumpRoutes lists routes of protocol (all when 0), parsing the kernel's
// messages straight into model.Route. The request carries rtm_protocol and
// the socket has strict checking on, so the kernel itself skips the
// routes of other protocols (kernel ≥ 4.20); the check here covers older
// ones. n is how many route messages the kernel sent.
//
// table, when not 0, asks for the routes of that table only (RTA_TABLE in
// the request; also filtered in the kernel under strict checking).
func (k *Netlink) dumpRoutes(protocol, table int, out []model.Route) (_ []model.Route, n int, err error) {
	k.batchMu.Lock()
	defer k.batchMu.Unlock()
	if err := k.openBatch(); err != nil {
		return nil, 0, fmt.Errorf("open netlink: %w", err)
	}
	b := k.batch
	req := nl.NewNetlinkRequest(unix.RTM_GETROUTE, unix.NLM_F_DUMP)
	b.seq++
	req.Seq = b.seq
	msg := &nl.RtMsg{}
	msg.Protocol = uint8(protocol)
	req.AddData(msg)
	if table != 0 {
		req.AddData(nl.NewRtAttr(unix.RTA_TABLE, nl.Uint32Attr(uint32(table))))
	}
	if err := unix.Sendto(b.fd, req.Serialize(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, 0, fmt.Errorf("send: %w", err)
	}
	// Made per dump, not kept: a daemon dumps routes only in passes that
	// read them.
	buf := make([]byte, dumpBufSize)
	ne := binary.NativeEndian
	intr := false
	var dev lastName
	for {
		r, err := b.read(buf)
		if err != nil {
			return nil, n, err
		}
		data := buf[:r]
		for len(data) >= unix.SizeofNlMsghdr {
			l := int(ne.Uint32(data[0:4]))
			if l < unix.SizeofNlMsghdr || l > len(data) {
				return nil, n, fmt.Errorf("malformed netlink message")
			}
			m := data[:l]
			data = data[min(nlmAlign(l), len(data)):]
			typ, flags, seq := ne.Uint16(m[4:6]), ne.Uint16(m[6:8]), ne.Uint32(m[8:12])
			if seq != req.Seq {
				continue // an answer to an earlier, abandoned request
			}
			if flags&unix.NLM_F_DUMP_INTR != 0 {
				intr = true
			}
			switch typ {
			case unix.NLMSG_DONE:
				if intr {
					return nil, n, netlink.ErrDumpInterrupted
				}
				if len(m) >= unix.SizeofNlMsghdr+4 {
					if code := int32(ne.Uint32(m[unix.SizeofNlMsghdr:])); code < 0 {
						return nil, n, unix.Errno(-code)
					}
				}
				b.dumped = n
				return out, n, nil
			case unix.NLMSG_ERROR:
				if code := int32(ne.Uint32(m[unix.SizeofNlMsghdr:])); code < 0 {
					return nil, n, unix.Errno(-code)
				}
			case unix.RTM_NEWROUTE:
				n++
				if r, ok := k.parseRoute(m[unix.SizeofNlMsghdr:], protocol, &dev); ok {
					out = append(out, r)
				}
			}
		}
	}
}

// lastName remembers the last link looked up: the routes of a dump mostly
// share a few links, and each lookup takes the cache's lock.
type lastName struct {
	index int
	name  string
}

func nlmAlign(l int) int { return (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// parseRoute reads one RTM_NEWROUTE body as fromRoute reads the library's
// netlink.Route; ok is false for routes Routes does not list.
func (k *Netlink) parseRoute(b []byte, protocol int, dev *lastName) (model.Route, bool) {
	if len(b) < unix.SizeofRtMsg {
		return model.Route{}, false
	}
	rtm := (*unix.RtMsg)(unsafe.Pointer(&b[0]))
	if rtm.Family != unix.AF_INET && rtm.Family != unix.AF_INET6 || rtm.Flags&unix.RTM_F_CLONED != 0 {
		return model.Route{}, false
	}
	if protocol != 0 && int(rtm.Protocol) != protocol {
		return model.Route{}, false
	}
	v6 := rtm.Family == unix.AF_INET6
	r := model.Route{Table: int(rtm.Table), TOS: int(rtm.Tos), Type: int(rtm.Type), Scope: int(rtm.Scope), OnLink: rtm.Flags&unix.RTNH_F_ONLINK != 0, Protocol: int(rtm.Protocol)}
	if v6 {
		r.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	} else {
		r.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	ne := binary.NativeEndian
	for a := b[unix.SizeofRtMsg:]; len(a) >= unix.SizeofRtAttr; {
		l := int(ne.Uint16(a[0:2]))
		if l < unix.SizeofRtAttr || l > len(a) {
			break
		}
		typ, v := ne.Uint16(a[2:4])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER), a[unix.SizeofRtAttr:l]
		a = a[min(rtaAlign(l), len(a)):]
		switch typ {
		case unix.RTA_DST:
			if ip, ok := addrOf(v); ok {
				r.Dst = netip.PrefixFrom(ip, int(rtm.Dst_len))
			}
		case unix.RTA_GATEWAY:
			r.Gateway, _ = addrOf(v)
		case unix.RTA_VIA:
			r.Gateway, _ = viaOf(v)
		case unix.RTA_MULTIPATH:
			r.NextHops = k.parseMultipath(v, dev)
		case unix.RTA_PREFSRC:
			r.Src, _ = addrOf(v)
		case unix.RTA_OIF:
			if len(v) >= 4 {
				if i := int(ne.Uint32(v)); i != dev.index {
					dev.index, dev.name = i, k.name(i)
				}
				r.Dev = dev.name
			}
		case unix.RTA_PRIORITY:
			if len(v) >= 4 {
				r.Metric = int(ne.Uint32(v))
			}
		case unix.RTA_TABLE:
			if len(v) >= 4 {
				r.Table = int(ne.Uint32(v))
			}
		case unix.RTA_METRICS:
			for m := v; len(m) >= unix.SizeofRtAttr; {
				ml := int(ne.Uint16(m[0:2]))
				if ml < unix.SizeofRtAttr || ml > len(m) {
					break
				}
				if ne.Uint16(m[2:4])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER) == unix.RTAX_MTU && ml >= unix.SizeofRtAttr+4 {
					r.MTU = int(ne.Uint32(m[unix.SizeofRtAttr:]))
				}
				m = m[min(rtaAlign(ml), len(m)):]
			}
		}
	}
	return r, true
}

// parseMultipath reads RTA_MULTIPATH: rtnexthop structs, each followed by
// its attributes (RTA_GATEWAY or RTA_VIA). Both families dump a multipath
// route as one message with this attribute (IPv6 since Linux 4.11; before
// that every sibling was a route message of its own, which is not read
// as one route here).
func (k *Netlink) parseMultipath(b []byte, dev *lastName) []model.NextHop {
	const rtnhLen = 8
	ne := binary.NativeEndian
	var hs []model.NextHop
	for len(b) >= rtnhLen {
		l := int(ne.Uint16(b[0:2]))
		if l < rtnhLen || l > len(b) {
			break
		}
		h := model.NextHop{Weight: int(b[3]) + 1}
		if i := int(ne.Uint32(b[4:8])); i != 0 {
			if i != dev.index {
				dev.index, dev.name = i, k.name(i)
			}
			h.Dev = dev.name
		}
		for a := b[rtnhLen:l]; len(a) >= unix.SizeofRtAttr; {
			al := int(ne.Uint16(a[0:2]))
			if al < unix.SizeofRtAttr || al > len(a) {
				break
			}
			typ, v := ne.Uint16(a[2:4])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER), a[unix.SizeofRtAttr:al]
			a = a[min(rtaAlign(al), len(a)):]
			switch typ {
			case unix.RTA_GATEWAY:
				h.Gateway, _ = addrOf(v)
			case unix.RTA_VIA:
				h.Gateway, _ = viaOf(v)
			}
		}
		hs = append(hs, h)
		b = b[min(rtaAlign(l), len(b)):]
	}
	model.SortNextHops(hs)
	return hs
}

// viaOf reads RTA_VIA: an address family (u16) and the address.
func viaOf(v []byte) (netip.Addr, bool) {
	if len(v) < 2 {
		return netip.Addr{}, false
	}
	return addrOf(v[2:])
}

func rtaAlign(l int) int { return (l + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1) }

// addrOf reads a 4- or 16-byte address. A 16-byte one is IPv6, also when
// IPv4-mapped (::ffff:10.60.0.0/112 is an IPv6 route, address or rule the
// file may declare, and the kernel holds it as such): unmapped, it was
// read back as an IPv4 prefix of length 112, invalid, and such a route
// was created again and deleted in vain on every pass.
func addrOf(v []byte) (netip.Addr, bool) {
	switch len(v) {
	case 4:
		return netip.AddrFrom4([4]byte(v)), true
	case 16:
		return netip.AddrFrom16([16]byte(v)), true
	}
	return netip.Addr{}, false
}
