// Package nftwire is the nf_tables netlink wire format as netreconcile
// reads and writes it: the messages of one batch (tables, chains, sets,
// elements, rules, objects and their deletes), the decoding of the kernel's
// dumps, and the normal form of a rule's bytecode that equality is judged
// on.
//
// Why a piece of our own: a rule's expressions come from nft, compiled in a
// throwaway namespace, and go into our batch as the bytes the kernel dumped
// there. google/nftables decodes expressions into Go types and encodes them
// again; its expr.Any has unexported methods, so no type of ours can stand
// for an expression it lacks, and it drops the ones it does not know,
// silently. A rule carried through it would lose what nft wrote. Here an
// expression list is never decoded into types: it is a list of attributes,
// copied as is, of which only the set references of anonymous sets are
// rewritten (a set the batch creates is named by the kernel and found by its
// transaction id) and, for equality only, the stateful values zeroed.
// Everything else the messages carry is built on mdlayher/netlink's
// attribute encoder, and a differential test holds the messages equal to
// google/nftables' for the objects both can express.
package nftwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Attr is one netlink attribute: its type as sent, flags included
// (NLA_F_NESTED, NLA_F_NET_BYTEORDER), and its payload.
type Attr struct {
	Type uint16
	Data []byte
}

const (
	nlaFNested   = 0x8000
	nlaFByteOrd  = 0x4000
	nlaTypeMask  = ^uint16(nlaFNested | nlaFByteOrd)
	nlaHdrLen    = 4
	nlaAlignment = 4
)

// Kind is the attribute's type without its flags.
func (a Attr) Kind() uint16 { return a.Type & nlaTypeMask }

func align(n int) int { return (n + nlaAlignment - 1) &^ (nlaAlignment - 1) }

// ErrMalformed is returned for attributes that run past their buffer.
var ErrMalformed = errors.New("malformed netlink attributes")

// ParseAttrs splits b into its attributes. The payloads alias b.
func ParseAttrs(b []byte) ([]Attr, error) {
	var out []Attr
	for len(b) > 0 {
		if len(b) < nlaHdrLen {
			return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b))
		}
		l := int(binary.NativeEndian.Uint16(b))
		if l < nlaHdrLen || l > len(b) {
			return nil, fmt.Errorf("%w: attribute of length %d in %d bytes", ErrMalformed, l, len(b))
		}
		out = append(out, Attr{Type: binary.NativeEndian.Uint16(b[2:]), Data: b[nlaHdrLen:l]})
		n := align(l)
		if n > len(b) {
			n = len(b)
		}
		b = b[n:]
	}
	return out, nil
}

// AppendAttr appends one attribute, padded to the netlink alignment.
func AppendAttr(dst []byte, typ uint16, data []byte) []byte {
	l := nlaHdrLen + len(data)
	dst = binary.NativeEndian.AppendUint16(dst, uint16(l))
	dst = binary.NativeEndian.AppendUint16(dst, typ)
	dst = append(dst, data...)
	for i := l; i < align(l); i++ {
		dst = append(dst, 0)
	}
	return dst
}

// AppendAttrs appends attributes in order.
func AppendAttrs(dst []byte, as []Attr) []byte {
	for _, a := range as {
		dst = AppendAttr(dst, a.Type, a.Data)
	}
	return dst
}

// find returns the first attribute of kind k.
func find(as []Attr, k uint16) (Attr, bool) {
	for _, a := range as {
		if a.Kind() == k {
			return a, true
		}
	}
	return Attr{}, false
}

func be32(b []byte) (uint32, bool) {
	if len(b) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

func be64(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// cstring is a netlink string without its terminating NUL.
func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func putBE32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func putBE64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
func zstr(s string) []byte    { return append([]byte(s), 0) }
