package rtnl

import (
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Route is an RTM_NEWROUTE or RTM_DELROUTE message: the rtmsg header and
// the attributes netreconcile reads or writes.
type Route struct {
	Family   uint8
	TOS      uint8
	Protocol uint8
	Scope    uint8
	Type     uint8
	// Flags are rtm_flags (RTNH_F_ONLINK, RTM_F_CLONED...).
	Flags uint32
	// Table is RTA_TABLE, or rtm_table when the message has none.
	Table uint32
	// Dst is RTA_DST with rtm_dst_len; the family's /0 when absent.
	Dst netip.Prefix
	// Src is RTA_SRC with rtm_src_len (an IPv6 source-specific route);
	// invalid when absent.
	Src netip.Prefix
	// Gateway is RTA_GATEWAY, or RTA_VIA (an IPv6 gateway of an IPv4
	// route, RFC 5549: written as RTA_VIA when the families differ).
	Gateway netip.Addr
	PrefSrc netip.Addr
	OIF     uint32
	// Priority is RTA_PRIORITY, the metric.
	Priority uint32
	// MTU is RTAX_MTU in RTA_METRICS; 0 when absent.
	MTU uint32
	// Pref is RTA_PREF, an IPv6 route's router preference.
	Pref     uint8
	NextHops []NextHop
	// Encap is RTA_ENCAP_TYPE and RTA_ENCAP, nil for none; read only,
	// netreconcile writes no encapsulation.
	Encap *Encap
}

// NextHop is one rtnexthop of RTA_MULTIPATH with its attributes.
type NextHop struct {
	Ifindex uint32
	// Weight is rtnh_hops + 1: 1 to 256.
	Weight  int
	Flags   uint8
	Gateway netip.Addr
	Encap   *Encap
}

// Encap is a lightweight tunnel encapsulation of a route or next hop.
// Type is LWTUNNEL_ENCAP_*; the fields of ip, ip6 and seg6
// encapsulations are decoded, of the others only the type.
type Encap struct {
	Type uint16
	// ID, Dst, Src, TTL (hoplimit), TOS (traffic class) and Flags are an
	// ip or ip6 encapsulation's.
	ID       uint64
	Dst, Src netip.Addr
	TTL, TOS uint8
	Flags    uint16
	// Seg6Mode (SEG6_IPTUN_MODE_*) and Segments, first segment first,
	// are a seg6 encapsulation's.
	Seg6Mode int32
	Segments []netip.Addr
}

// Where a route notification's fields lie in the datagram the kernel
// sends: the netlink header, the rtmsg, then the attributes, RTA_TABLE
// first and RTA_DST next for a route with a destination (fib_dump_info
// and rt6_fill_node write them in that order). The daemon's socket
// prefilter, which cannot decode, reads these offsets; TestRouteLayout
// holds them to messages a real kernel sent.
const (
	OffsetType          = int(unsafe.Offsetof(unix.NlMsghdr{}.Type))
	OffsetRouteFamily   = unix.SizeofNlMsghdr + int(unsafe.Offsetof(unix.RtMsg{}.Family))
	OffsetRouteDstLen   = unix.SizeofNlMsghdr + int(unsafe.Offsetof(unix.RtMsg{}.Dst_len))
	OffsetRouteProtocol = unix.SizeofNlMsghdr + int(unsafe.Offsetof(unix.RtMsg{}.Protocol))
	// OffsetRouteTable is RTA_TABLE, the first attribute: its header,
	// then its u32 value.
	OffsetRouteTable int = unix.SizeofNlMsghdr + unix.SizeofRtMsg
	// OffsetRouteDst is RTA_DST, the second attribute, for a route
	// with a destination: its header, then the address.
	OffsetRouteDst = OffsetRouteTable + unix.SizeofRtAttr + 4
)

// DecodeRoute decodes a route message's body (the rtmsg and its
// attributes) into r, overwriting it. A family other than IPv4 and IPv6
// is ErrFamily.
func DecodeRoute(b []byte, r *Route) error {
	if len(b) < unix.SizeofRtMsg {
		return fmt.Errorf("route message of %d bytes", len(b))
	}
	fam := b[0]
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return ErrFamily
	}
	dstLen, srcLen := b[1], b[2]
	// Field by field: a composite literal of the whole struct was built
	// aside and copied, a fifth of a dump's decoding.
	*r = Route{}
	r.Family, r.TOS, r.Table, r.Protocol, r.Scope, r.Type = fam, b[3], uint32(b[4]), b[5], b[6], b[7]
	r.Flags = native.Uint32(b[8:12])
	var hop hopAttrs
	hasDst := false
	w := walk(b[unix.SizeofRtMsg:])
	for w.next() {
		var err error
		switch w.typ {
		case unix.RTA_DST:
			r.Dst, err = prefixOf(w.v, fam, dstLen)
			hasDst = true
		case unix.RTA_SRC:
			r.Src, err = prefixOf(w.v, fam, srcLen)
		case unix.RTA_PREFSRC:
			r.PrefSrc, err = addrOf(w.v, fam)
		case unix.RTA_OIF:
			r.OIF = w.u32()
		case unix.RTA_PRIORITY:
			r.Priority = w.u32()
		case unix.RTA_TABLE:
			r.Table = w.u32()
		case unix.RTA_PREF:
			r.Pref = w.u8()
		case unix.RTA_METRICS:
			m := walk(w.v)
			for m.next() {
				if m.typ == unix.RTAX_MTU {
					r.MTU = m.u32()
				}
			}
			err = m.err
		case unix.RTA_MULTIPATH:
			r.NextHops, err = decodeNextHops(w.v, fam)
		default:
			hop.read(&w, fam)
		}
		w.check(err)
	}
	if w.err != nil {
		return fmt.Errorf("route attributes: %w", w.err)
	}
	if !hasDst {
		if dstLen > 0 {
			return fmt.Errorf("route destination length %d without a destination", dstLen)
		}
		r.Dst = netip.PrefixFrom(unspecified(fam), 0)
	}
	r.Gateway = hop.gw
	var err error
	if r.Encap, err = hop.encapsulation(); err != nil {
		return fmt.Errorf("route encapsulation: %w", err)
	}
	return nil
}

// hopAttrs are the attributes a route and each of its next hops share: the
// gateway (RTA_GATEWAY, or RTA_VIA when its family is not the route's) and
// the encapsulation.
type hopAttrs struct {
	gw        netip.Addr
	encapType uint16
	encap     []byte
}

// read takes w's attribute if it is one of them.
func (h *hopAttrs) read(w *walker, fam uint8) {
	var err error
	switch w.typ {
	case unix.RTA_GATEWAY:
		h.gw, err = addrOf(w.v, fam)
	case unix.RTA_VIA:
		h.gw, err = viaOf(w.v)
	case unix.RTA_ENCAP_TYPE:
		h.encapType = w.u16()
	case unix.RTA_ENCAP:
		h.encap = w.v
	}
	w.check(err)
}

// encapsulation decodes the encapsulation read; nil for none.
func (h *hopAttrs) encapsulation() (*Encap, error) {
	if h.encapType == 0 && h.encap == nil {
		return nil, nil
	}
	return decodeEncap(h.encapType, h.encap)
}

// decodeNextHops reads RTA_MULTIPATH: rtnexthop structs, each followed by
// its attributes. Both families dump a multipath route as one message with
// it (IPv6 since Linux 4.11).
func decodeNextHops(b []byte, fam uint8) ([]NextHop, error) {
	var hs []NextHop
	for len(b) > 0 {
		if len(b) < unix.SizeofRtNexthop {
			return nil, fmt.Errorf("next hop of %d bytes", len(b))
		}
		l := int(native.Uint16(b))
		if l < unix.SizeofRtNexthop || l > len(b) {
			return nil, fmt.Errorf("next hop length %d of %d bytes", l, len(b))
		}
		h := NextHop{Flags: b[2], Weight: int(b[3]) + 1, Ifindex: native.Uint32(b[4:8])}
		var hop hopAttrs
		w := walk(b[unix.SizeofRtNexthop:l])
		for w.next() {
			hop.read(&w, fam)
		}
		if w.err != nil {
			return nil, fmt.Errorf("next hop attributes: %w", w.err)
		}
		h.Gateway = hop.gw
		var err error
		if h.Encap, err = hop.encapsulation(); err != nil {
			return nil, fmt.Errorf("next hop encapsulation: %w", err)
		}
		hs = append(hs, h)
		b = b[min(attrAlign(l), len(b)):]
	}
	return hs, nil
}

// decodeEncap reads RTA_ENCAP_TYPE and RTA_ENCAP: the kernel writes the
// type after the encapsulation, so it is read once both are known.
func decodeEncap(typ uint16, b []byte) (*Encap, error) {
	e := &Encap{Type: typ}
	w := walk(b)
	switch e.Type {
	case unix.LWTUNNEL_ENCAP_IP, unix.LWTUNNEL_ENCAP_IP6:
		fam := uint8(unix.AF_INET)
		if e.Type == unix.LWTUNNEL_ENCAP_IP6 {
			fam = unix.AF_INET6
		}
		// The ip and ip6 attributes share their numbers.
		for w.next() {
			var err error
			switch w.typ {
			case LWTUNNEL_IP_ID:
				if len(w.v) != 8 {
					w.fail("be64")
					break
				}
				e.ID = be.Uint64(w.v)
			case LWTUNNEL_IP_DST:
				e.Dst, err = addrOf(w.v, fam)
			case LWTUNNEL_IP_SRC:
				e.Src, err = addrOf(w.v, fam)
			case LWTUNNEL_IP_TTL:
				e.TTL = w.u8()
			case LWTUNNEL_IP_TOS:
				e.TOS = w.u8()
			case LWTUNNEL_IP_FLAGS:
				if len(w.v) != 2 {
					w.fail("be16")
					break
				}
				e.Flags = be.Uint16(w.v)
			}
			w.check(err)
		}
	case unix.LWTUNNEL_ENCAP_SEG6:
		for w.next() {
			if w.typ == SEG6_IPTUNNEL_SRH {
				w.check(e.decodeSRH(w.v))
			}
		}
	}
	return e, w.err
}

// decodeSRH reads a seg6 encapsulation: the mode (an int), then struct
// ipv6_sr_hdr (8 bytes) whose first_segment is the index of the last
// segment of the array, which lists them last first.
func (e *Encap) decodeSRH(b []byte) error {
	const hdr = 4 + 8
	if len(b) < hdr {
		return fmt.Errorf("seg6 encapsulation of %d bytes", len(b))
	}
	e.Seg6Mode = int32(native.Uint32(b))
	n := int(b[4+4]) + 1
	if len(b) < hdr+16*n {
		return fmt.Errorf("seg6 header of %d segments in %d bytes", n, len(b))
	}
	e.Segments = make([]netip.Addr, n)
	for i := range n {
		e.Segments[n-1-i] = netip.AddrFrom16([16]byte(b[hdr+16*i:]))
	}
	return nil
}

// MarshalRoute encodes r as a route message's body: the rtmsg, then the
// attributes r sets, in the order `ip route` writes them. A table above
// 255 goes in RTA_TABLE; an IPv6 gateway of an IPv4 route in RTA_VIA.
// Encap and Pref are not written.
func MarshalRoute(r *Route) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	if r.Dst.IsValid() {
		ae.Bytes(unix.RTA_DST, r.Dst.Addr().AsSlice())
	}
	if r.Src.IsValid() {
		ae.Bytes(unix.RTA_SRC, r.Src.Addr().AsSlice())
	}
	if r.PrefSrc.IsValid() {
		ae.Bytes(unix.RTA_PREFSRC, r.PrefSrc.AsSlice())
	}
	if r.Gateway.IsValid() {
		gatewayAttr(ae, r.Family, r.Gateway)
	}
	if len(r.NextHops) > 0 {
		// rtnexthop structs, not attributes: no NLA_F_NESTED, which the
		// kernel refuses on an attribute its policy does not nest.
		ae.Do(unix.RTA_MULTIPATH, func() ([]byte, error) { return marshalNextHops(r.Family, r.NextHops) })
	}
	if r.MTU > 0 {
		ae.Nested(unix.RTA_METRICS, func(m *netlink.AttributeEncoder) error {
			m.Uint32(unix.RTAX_MTU, r.MTU)
			return nil
		})
	}
	table := uint8(r.Table)
	if r.Table > 255 {
		table = unix.RT_TABLE_UNSPEC
		ae.Uint32(unix.RTA_TABLE, r.Table)
	}
	if r.Priority > 0 {
		ae.Uint32(unix.RTA_PRIORITY, r.Priority)
	}
	if r.OIF > 0 {
		ae.Uint32(unix.RTA_OIF, r.OIF)
	}
	var h [unix.SizeofRtMsg]byte
	h[0], h[1], h[2], h[3] = r.Family, bits(r.Dst), bits(r.Src), r.TOS
	h[4], h[5], h[6], h[7] = table, r.Protocol, r.Scope, r.Type
	native.PutUint32(h[8:], r.Flags)
	return body(h[:], ae)
}

// gatewayAttr writes a gateway of a route of family: RTA_GATEWAY, or
// RTA_VIA (family and address) when the families differ, as `ip route add
// … via inet6 ADDR` sends it.
func gatewayAttr(ae *netlink.AttributeEncoder, family uint8, gw netip.Addr) {
	if familyOf(gw) == family {
		ae.Bytes(unix.RTA_GATEWAY, gw.AsSlice())
		return
	}
	via := native.AppendUint16(make([]byte, 0, 2+16), uint16(familyOf(gw)))
	ae.Bytes(unix.RTA_VIA, append(via, gw.AsSlice()...))
}

// marshalNextHops writes RTA_MULTIPATH's value: per next hop an
// rtnexthop (length, flags, weight less one, ifindex) and its gateway.
func marshalNextHops(family uint8, hs []NextHop) ([]byte, error) {
	var b []byte
	for _, h := range hs {
		if h.Weight < 1 || h.Weight > 256 {
			return nil, fmt.Errorf("next hop weight %d, want 1 to 256", h.Weight)
		}
		var attrs []byte
		if h.Gateway.IsValid() {
			ae := netlink.NewAttributeEncoder()
			gatewayAttr(ae, family, h.Gateway)
			var err error
			if attrs, err = ae.Encode(); err != nil {
				return nil, err
			}
		}
		nh := make([]byte, unix.SizeofRtNexthop, unix.SizeofRtNexthop+len(attrs))
		native.PutUint16(nh, uint16(len(nh)+len(attrs)))
		nh[2], nh[3] = h.Flags, uint8(h.Weight-1)
		native.PutUint32(nh[4:], h.Ifindex)
		b = append(append(b, nh...), attrs...)
	}
	return b, nil
}
