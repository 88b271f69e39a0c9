package rtnl

import (
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Rule is an RTM_NEWRULE or RTM_DELRULE message: the fib_rule_hdr and the
// selectors and actions of its attributes.
type Rule struct {
	Family uint8
	// Src and Dst are FRA_SRC and FRA_DST with the header's lengths;
	// invalid when absent.
	Src, Dst netip.Prefix
	TOS      uint8
	// Action is FR_ACT_* (the header's type byte).
	Action uint8
	// Flags are FIB_RULE_INVERT and the kernel's own.
	Flags uint32
	// Table is FRA_TABLE, or the header's table when absent.
	Table uint32
	// Priority is FRA_PRIORITY; the kernel leaves it out for 0.
	Priority         uint32
	IIFName, OIFName string
	// Mark and Mask are FRA_FWMARK and FRA_FWMASK, 0 when absent.
	Mark, Mask uint32
	// Goto is FRA_GOTO, the priority a goto rule jumps to.
	Goto uint32
	// SuppressPrefixLen and SuppressIfgroup are -1 when absent, as the
	// kernel reports an unset one.
	SuppressPrefixLen, SuppressIfgroup int32
	Protocol                           uint8
	L3mdev                             uint8
	IPProto                            uint8
	// UIDRange, SportRange and DportRange are nil when absent.
	UIDRange               *UIDRange
	SportRange, DportRange *PortRange
	TunID                  uint64
	// Flow is FRA_FLOW, the realms (to in the low 16 bits, from above).
	Flow uint32
}

// UIDRange is FRA_UID_RANGE (struct fib_rule_uid_range).
type UIDRange struct{ Start, End uint32 }

// PortRange is FRA_SPORT_RANGE or FRA_DPORT_RANGE (struct
// fib_rule_port_range).
type PortRange struct{ Start, End uint16 }

// DecodeRule decodes a rule message's body (the fib_rule_hdr and its
// attributes). A family other than IPv4 and IPv6 is ErrFamily.
func DecodeRule(b []byte, r *Rule) error {
	if len(b) < SizeofFibRuleHdr {
		return fmt.Errorf("rule message of %d bytes", len(b))
	}
	fam := b[0]
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return ErrFamily
	}
	dstLen, srcLen := b[1], b[2]
	*r = Rule{Family: fam, TOS: b[3], Table: uint32(b[4]), Action: b[7], Flags: native.Uint32(b[8:12]),
		SuppressPrefixLen: -1, SuppressIfgroup: -1}
	ad, err := netlink.NewAttributeDecoder(b[SizeofFibRuleHdr:])
	if err != nil {
		return fmt.Errorf("rule attributes: %w", err)
	}
	prefix := func(p *netip.Prefix, l uint8) func([]byte) error {
		return func(v []byte) (err error) {
			*p, err = prefixOf(v, fam, l)
			return err
		}
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.FRA_DST:
			ad.Do(prefix(&r.Dst, dstLen))
		case unix.FRA_SRC:
			ad.Do(prefix(&r.Src, srcLen))
		case unix.FRA_IIFNAME:
			r.IIFName = ad.String()
		case unix.FRA_OIFNAME:
			r.OIFName = ad.String()
		case unix.FRA_PRIORITY:
			r.Priority = ad.Uint32()
		case unix.FRA_FWMARK:
			r.Mark = ad.Uint32()
		case unix.FRA_FWMASK:
			r.Mask = ad.Uint32()
		case unix.FRA_TABLE:
			r.Table = ad.Uint32()
		case unix.FRA_GOTO:
			r.Goto = ad.Uint32()
		case unix.FRA_SUPPRESS_PREFIXLEN:
			r.SuppressPrefixLen = ad.Int32()
		case unix.FRA_SUPPRESS_IFGROUP:
			r.SuppressIfgroup = ad.Int32()
		case unix.FRA_PROTOCOL:
			r.Protocol = ad.Uint8()
		case unix.FRA_L3MDEV:
			r.L3mdev = ad.Uint8()
		case unix.FRA_IP_PROTO:
			r.IPProto = ad.Uint8()
		case unix.FRA_FLOW:
			r.Flow = ad.Uint32()
		case unix.FRA_TUN_ID:
			ad.Do(func(v []byte) error {
				if len(v) != 8 {
					return fmt.Errorf("tunnel id of %d bytes", len(v))
				}
				r.TunID = be.Uint64(v)
				return nil
			})
		case unix.FRA_UID_RANGE:
			ad.Do(func(v []byte) error {
				if len(v) != 8 {
					return fmt.Errorf("uid range of %d bytes", len(v))
				}
				r.UIDRange = &UIDRange{native.Uint32(v), native.Uint32(v[4:])}
				return nil
			})
		case unix.FRA_SPORT_RANGE, unix.FRA_DPORT_RANGE:
			p := &r.SportRange
			if ad.Type() == unix.FRA_DPORT_RANGE {
				p = &r.DportRange
			}
			ad.Do(func(v []byte) error {
				if len(v) != 4 {
					return fmt.Errorf("port range of %d bytes", len(v))
				}
				*p = &PortRange{native.Uint16(v), native.Uint16(v[2:])}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("rule attributes: %w", err)
	}
	if dstLen > 0 && !r.Dst.IsValid() || srcLen > 0 && !r.Src.IsValid() {
		return fmt.Errorf("rule prefix length without a prefix")
	}
	return nil
}

// MarshalRule encodes r as a rule message's body: the fib_rule_hdr (its
// table byte left 0), then FRA_PRIORITY always (a rule added without one
// gets a priority the kernel picks), the table in FRA_TABLE, and every
// other selector r sets: a mark and its mask together when either is not
// 0, the suppressors when not -1.
func MarshalRule(r *Rule) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	if r.Src.IsValid() {
		ae.Bytes(unix.FRA_SRC, r.Src.Addr().AsSlice())
	}
	if r.Dst.IsValid() {
		ae.Bytes(unix.FRA_DST, r.Dst.Addr().AsSlice())
	}
	ae.Uint32(unix.FRA_PRIORITY, r.Priority)
	if r.Mark != 0 || r.Mask != 0 {
		ae.Uint32(unix.FRA_FWMARK, r.Mark)
		ae.Uint32(unix.FRA_FWMASK, r.Mask)
	}
	if r.IIFName != "" {
		ae.String(unix.FRA_IIFNAME, r.IIFName)
	}
	if r.OIFName != "" {
		ae.String(unix.FRA_OIFNAME, r.OIFName)
	}
	if r.Table != 0 {
		ae.Uint32(unix.FRA_TABLE, r.Table)
	}
	if r.Goto != 0 {
		ae.Uint32(unix.FRA_GOTO, r.Goto)
	}
	if r.SuppressPrefixLen >= 0 {
		ae.Int32(unix.FRA_SUPPRESS_PREFIXLEN, r.SuppressPrefixLen)
	}
	if r.SuppressIfgroup >= 0 {
		ae.Int32(unix.FRA_SUPPRESS_IFGROUP, r.SuppressIfgroup)
	}
	if r.Protocol != 0 {
		ae.Uint8(unix.FRA_PROTOCOL, r.Protocol)
	}
	if r.L3mdev != 0 {
		ae.Uint8(unix.FRA_L3MDEV, r.L3mdev)
	}
	if r.IPProto != 0 {
		ae.Uint8(unix.FRA_IP_PROTO, r.IPProto)
	}
	if r.Flow != 0 {
		ae.Uint32(unix.FRA_FLOW, r.Flow)
	}
	if r.TunID != 0 {
		ae.Bytes(unix.FRA_TUN_ID, be.AppendUint64(nil, r.TunID))
	}
	if u := r.UIDRange; u != nil {
		ae.Bytes(unix.FRA_UID_RANGE, native.AppendUint32(native.AppendUint32(nil, u.Start), u.End))
	}
	for _, p := range []struct {
		typ uint16
		r   *PortRange
	}{{unix.FRA_SPORT_RANGE, r.SportRange}, {unix.FRA_DPORT_RANGE, r.DportRange}} {
		if p.r != nil {
			ae.Bytes(p.typ, native.AppendUint16(native.AppendUint16(nil, p.r.Start), p.r.End))
		}
	}
	var h [SizeofFibRuleHdr]byte
	h[0], h[1], h[2], h[3] = r.Family, bits(r.Dst), bits(r.Src), r.TOS
	h[7] = r.Action
	native.PutUint32(h[8:], r.Flags)
	return body(h[:], ae)
}
