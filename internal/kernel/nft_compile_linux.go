package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/nftrule"
)

// compileRule turns a parsed rule into nftables expressions, the same ones
// nft 1.0 generates for the same line (checked by the golden tests), with
// the same implicit dependencies: `ip`/`ip6` matches in an inet table first
// check meta nfproto, transport matches first check meta l4proto, unless an
// earlier match of the rule already established them.
func compileRule(family string, r *nftrule.Rule) ([]expr.Any, error) {
	var out []expr.Any
	nfproto := -1 // established network protocol (2, 10) or -1
	l4 := -1
	needNf := func(p int) {
		if family == "inet" && nfproto != p {
			out = append(out, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(p)}})
			nfproto = p
		}
	}
	needL4 := func(p uint8) {
		if l4 != int(p) {
			out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}})
			l4 = int(p)
		}
	}
	cmpOp := func(neq bool) expr.CmpOp {
		if neq {
			return expr.CmpOpNeq
		}
		return expr.CmpOpEq
	}
	for _, s := range r.Stmts {
		switch s := s.(type) {
		case *nftrule.MarkMatch:
			out = append(out, &expr.Meta{Key: expr.MetaKeyMARK, Register: 1})
			if s.HasMask {
				out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
					Mask: binaryutil.NativeEndian.PutUint32(s.Mask), Xor: make([]byte, 4)})
			}
			out = append(out, &expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: binaryutil.NativeEndian.PutUint32(s.Value)})
		case *nftrule.IfnameMatch:
			key := expr.MetaKeyIIFNAME
			if s.Out {
				key = expr.MetaKeyOIFNAME
			}
			var data []byte
			if n := len(s.Name); n > 0 && s.Name[n-1] == '*' {
				data = []byte(s.Name[:n-1])
			} else {
				data = make([]byte, unix.IFNAMSIZ)
				copy(data, s.Name)
			}
			out = append(out, &expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: data})
		case *nftrule.L4ProtoMatch:
			out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: []byte{s.Proto}})
			if !s.Neq {
				l4 = int(s.Proto)
			}
		case *nftrule.NfprotoMatch:
			p := byte(unix.NFPROTO_IPV4)
			if s.V6 {
				p = unix.NFPROTO_IPV6
			}
			out = append(out, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}})
			nfproto = int(p)
		case *nftrule.AddrMatch:
			off, size := uint32(12), uint32(4)
			if s.V6 {
				needNf(unix.NFPROTO_IPV6)
				off, size = 8, 16
			} else {
				needNf(unix.NFPROTO_IPV4)
			}
			if s.Dst {
				off += size
			}
			load := &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: size}
			if s.Set != "" {
				out = append(out, load, &expr.Lookup{SourceRegister: 1, SetName: s.Set, Invert: s.Neq})
				continue
			}
			addr := s.Prefix.Addr().AsSlice()
			bits := s.Prefix.Bits()
			switch {
			case bits == int(size)*8:
				out = append(out, load, &expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: addr})
			case bits%8 == 0:
				load.Len = uint32(bits / 8)
				out = append(out, load, &expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: addr[:bits/8]})
			default:
				mask := make([]byte, size)
				for i := 0; i < bits; i++ {
					mask[i/8] |= 0x80 >> (i % 8)
				}
				out = append(out, load,
					&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: mask, Xor: make([]byte, size)},
					&expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: addr})
			}
		case *nftrule.PortMatch:
			needL4(s.Proto)
			off := uint32(0)
			if s.Dst {
				off = 2
			}
			out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: off, Len: 2})
			switch {
			case s.Set != "":
				out = append(out, &expr.Lookup{SourceRegister: 1, SetName: s.Set, Invert: s.Neq})
			case s.Lo == s.Hi:
				out = append(out, &expr.Cmp{Op: cmpOp(s.Neq), Register: 1, Data: be16(s.Lo)})
			case s.Neq:
				out = append(out, &expr.Range{Op: expr.CmpOpNeq, Register: 1, FromData: be16(s.Lo), ToData: be16(s.Hi)})
			default:
				out = append(out, &expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: be16(s.Lo)},
					&expr.Cmp{Op: expr.CmpOpLte, Register: 1, Data: be16(s.Hi)})
			}
		case *nftrule.TCPFlagsMatch:
			needL4(unix.IPPROTO_TCP)
			out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{s.Flags}, Xor: []byte{0}},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0}})
		case *nftrule.CtStateMatch:
			out = append(out, &expr.Ct{Register: 1, Key: expr.CtKeySTATE},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(s.Bits), Xor: make([]byte, 4)},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)})
		case *nftrule.Counter:
			out = append(out, &expr.Counter{})
		case *nftrule.Log:
			l := &expr.Log{}
			if s.Prefix != "" {
				l.Key |= 1 << unix.NFTA_LOG_PREFIX
				l.Data = []byte(s.Prefix)
			}
			if s.Level != "" {
				l.Key |= 1 << unix.NFTA_LOG_LEVEL
				l.Level = expr.LogLevel(nftrule.LogLevel(s.Level))
			}
			if s.HasGroup {
				l.Key |= 1 << unix.NFTA_LOG_GROUP
				l.Group = s.Group
			}
			out = append(out, l)
		case *nftrule.MarkSet:
			if s.FromMark {
				// (mark & AND) | OR is written as (mark & (AND &^ OR)) ^ OR,
				// the one bitwise operation the kernel has (nft does the same).
				out = append(out, &expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
					&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
						Mask: binaryutil.NativeEndian.PutUint32(s.And &^ s.Or), Xor: binaryutil.NativeEndian.PutUint32(s.Or)})
			} else {
				out = append(out, &expr.Immediate{Register: 1, Data: binaryutil.NativeEndian.PutUint32(s.Value)})
			}
			out = append(out, &expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1})
		case *nftrule.MSSSet:
			needL4(unix.IPPROTO_TCP)
			if s.RtMTU {
				out = append(out, &expr.Rt{Register: 1, Key: expr.RtTCPMSS},
					&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 2, Size: 2})
			} else {
				out = append(out, &expr.Immediate{Register: 1, Data: be16(s.Size)})
			}
			// TCP option 2 (maximum segment size): its 2-byte value at offset 2.
			out = append(out, &expr.Exthdr{SourceRegister: 1, Type: 2, Offset: 2, Len: 2, Op: expr.ExthdrOpTcpopt})
		case *nftrule.Masquerade:
			out = append(out, &expr.Masq{})
		case *nftrule.NAT:
			n := &expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1}
			if s.Dst {
				n.Type = expr.NATTypeDestNAT
			}
			if s.Addr.Is6() {
				n.Family = unix.NFPROTO_IPV6
			}
			out = append(out, &expr.Immediate{Register: 1, Data: s.Addr.AsSlice()})
			if s.Port != 0 {
				out = append(out, &expr.Immediate{Register: 2, Data: be16(s.Port)})
				n.RegProtoMin, n.Specified = 2, true
			}
			out = append(out, n)
		case *nftrule.Verdict:
			kinds := map[string]expr.VerdictKind{"accept": expr.VerdictAccept, "drop": expr.VerdictDrop, "return": expr.VerdictReturn,
				"continue": expr.VerdictContinue, "jump": expr.VerdictJump, "goto": expr.VerdictGoto}
			out = append(out, &expr.Verdict{Kind: kinds[s.Kind], Chain: s.Chain})
		default:
			return nil, fmt.Errorf("cannot compile %T", s)
		}
	}
	return out, nil
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
