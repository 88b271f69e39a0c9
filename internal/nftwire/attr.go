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
// The attribute format itself (lengths, alignment, the 64 KiB bound, the
// flags in a type) is mdlayher/netlink's: its decoder splits the messages
// read here, its encoder lays out every batch written. The lists a table's
// read walks for every rule (the rule messages, expression lists, the
// normal form's layout) are split and laid out by a few lines of this
// package in the decoder's and encoder's steps, in place and in one
// allocation, since the library copies every attribute (parseAttrs,
// marshal); FuzzAttrWalk and TestMarshalAsTheEncoder hold them to the
// library. What is nf_tables' own is in this package: big-endian integers,
// the framing of batches and element lists, and the flags of a type kept
// as dumped, so that an expression is written back as the kernel gave it.
// A differential test holds the messages equal to google/nftables' for the
// objects both can express, and a fuzz target holds the codec to the
// kernel's reading.
package nftwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
)

// attr is one netlink attribute as mdlayher/netlink decodes it: its type as
// sent, flags included (Nested, NetByteOrder), and its payload. Length is
// the decoder's; the encoder computes its own.
type attr = netlink.Attribute

// kind is an attribute's type without its flags.
func kind(a attr) uint16 { return a.Type &^ (netlink.Nested | netlink.NetByteOrder) }

// ErrMalformed is returned for attributes that run past their buffer.
var ErrMalformed = errors.New("malformed netlink attributes")

func malformed(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// parseAttrs splits b into its attributes, as netlink.UnmarshalAttributes
// does (attributes of length 0 left out, nil for none), but in place: the
// payloads are b's bytes, not copies. Nothing in this package writes into
// a payload, and every buffer it reads is its own (a dump's datagram, a
// compiled rule): reading a table of a thousand rules copied every
// attribute of every expression, most of what the read cost in a
// short-lived process. FuzzAttrWalk holds it to the library's decoder.
func parseAttrs(b []byte) ([]attr, error) {
	n, err := countAttrs(b)
	if err != nil || n == 0 {
		return nil, malformed(err)
	}
	as := make([]attr, 0, n)
	err = walkAttrs(b, func(a attr) error {
		if a.Length != 0 {
			as = append(as, a)
		}
		return nil
	})
	if err != nil {
		return nil, malformed(err)
	}
	return as, nil
}

const nlaHeaderLen = 4

func nlaAlign(l int) int { return (l + 3) &^ 3 }

// errAttr is mdlayher/netlink's reading of a malformed attribute: one that
// claims more bytes than are left or fewer than its header, or a tail too
// short for a header.
var errAttr = errors.New("invalid attribute; length too short or too large")

// countAttrs checks b's layout as netlink.NewAttributeDecoder does before
// any attribute is read (every header whole), and counts the attributes of
// nonzero length.
func countAttrs(b []byte) (int, error) {
	n := 0
	for i := 0; i < len(b); {
		if len(b)-i < nlaHeaderLen {
			return 0, errAttr
		}
		l := int(binary.NativeEndian.Uint16(b[i:]))
		if l != 0 {
			n++
		}
		i += nlaAlign(max(l, nlaHeaderLen))
	}
	return n, nil
}

// walkAttrs calls fn for each attribute of b in the steps of
// netlink.AttributeDecoder's Next (a length of 0 is an attribute of no
// value that takes a header's room), the payload in place. It fails where
// the decoder's Next fails; the layout check is countAttrs'.
func walkAttrs(b []byte, fn func(a attr) error) error {
	for i := 0; i < len(b); {
		if len(b)-i < nlaHeaderLen {
			return errAttr
		}
		a := attr{Length: binary.NativeEndian.Uint16(b[i:]), Type: binary.NativeEndian.Uint16(b[i+2:])}
		l := int(a.Length)
		switch {
		case l > len(b)-i:
			return errAttr
		case l == 0:
			a.Data = b[i+nlaHeaderLen : i+nlaHeaderLen : i+nlaHeaderLen]
		case l < nlaHeaderLen:
			return errAttr
		default:
			a.Data = b[i+nlaHeaderLen : i+l : i+l]
		}
		if err := fn(a); err != nil {
			return err
		}
		i += nlaAlign(max(l, nlaHeaderLen))
	}
	return nil
}

// marshal lays attributes out in order, each type with its flags as given.
// It fails only on a payload past the attribute's 64 KiB.
//
// It lays them out as netlink.AttributeEncoder's Bytes then Encode would
// (each length computed, the payload padded with zeros to 4 bytes), in one
// allocation: a table's read normalises every rule through it.
// TestMarshalAsTheEncoder holds it to the encoder.
func marshal(as []attr) ([]byte, error) {
	n := 0
	for _, a := range as {
		if len(a.Data) > math.MaxUint16-nlaHeaderLen {
			return nil, errors.New("byte slice is too large to fit in a netlink attribute")
		}
		n += nlaHeaderLen + nlaAlign(len(a.Data))
	}
	b := make([]byte, n)
	i := 0
	for _, a := range as {
		binary.NativeEndian.PutUint16(b[i:], uint16(nlaHeaderLen+len(a.Data)))
		binary.NativeEndian.PutUint16(b[i+2:], a.Type)
		copy(b[i+nlaHeaderLen:], a.Data)
		i += nlaHeaderLen + nlaAlign(len(a.Data))
	}
	return b, nil
}

// each calls fn for every attribute of b, its type without flags, as
// netlink.AttributeDecoder would give them, the payload in place (see
// parseAttrs); an error of fn is returned as is.
func each(b []byte, fn func(typ uint16, v []byte) error) error {
	if _, err := countAttrs(b); err != nil {
		return malformed(err)
	}
	var ferr error
	err := walkAttrs(b, func(a attr) error {
		ferr = fn(kind(a), a.Data)
		return ferr
	})
	if ferr != nil {
		return ferr
	}
	return malformed(err)
}

// find returns the first attribute of kind k.
func find(as []attr, k uint16) (attr, bool) {
	for _, a := range as {
		if kind(a) == k {
			return a, true
		}
	}
	return attr{}, false
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
func cstring(b []byte) string { return nlenc.String(b) }

func putBE32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func zstr(s string) []byte    { return append([]byte(s), 0) }

// decoder returns a decoder of nf_tables attributes: integers big-endian.
func decoder(b []byte) (*netlink.AttributeDecoder, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, malformed(err)
	}
	ad.ByteOrder = binary.BigEndian
	return ad, nil
}
