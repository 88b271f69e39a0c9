package rtnl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// native is the byte order of netlink headers and attributes.
var native = binary.NativeEndian

// be is the byte order of the few attributes in network order.
var be = binary.BigEndian

// errAttr is a malformed attribute: one that claims more bytes than are
// left, fewer than its own header, or a tail too short for a header.
var errAttr = errors.New("invalid attribute; length too short or too large")

// walker steps through the attributes in b without copying them: the one
// piece of the codec that does not stand on mdlayher/netlink, for route
// messages only (see the package doc). It takes what AttributeDecoder
// takes, in the same steps, and fails where it fails (FuzzRoute holds it
// to that): a zero-length attribute is one of no value, the next one
// starts at the aligned length, and a tail of 1 to 3 bytes is an error.
// The value is valid until the message's buffer is reused.
type walker struct {
	b   []byte
	typ uint16
	v   []byte
	err error
}

func walk(b []byte) walker { return walker{b: b} }

// next moves to the next attribute; false at the end or on an error.
func (w *walker) next() bool {
	if w.err != nil || len(w.b) == 0 {
		return false
	}
	if len(w.b) < unix.SizeofRtAttr {
		w.err = errAttr
		return false
	}
	l := int(native.Uint16(w.b))
	switch {
	case l > len(w.b) || l > 0 && l < unix.SizeofRtAttr:
		w.err = errAttr
		return false
	case l == 0:
		l = unix.SizeofRtAttr
		w.v = w.b[unix.SizeofRtAttr:unix.SizeofRtAttr]
	default:
		w.v = w.b[unix.SizeofRtAttr:l:l]
	}
	w.typ = native.Uint16(w.b[2:]) & ^uint16(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER)
	w.b = w.b[min(attrAlign(l), len(w.b)):]
	return true
}

// u32 reads the value as a u32, failing the walk if it is not 4 bytes.
func (w *walker) u32() uint32 {
	if len(w.v) != 4 {
		w.fail("u32")
		return 0
	}
	return native.Uint32(w.v)
}

// u16 reads the value as a u16.
func (w *walker) u16() uint16 {
	if len(w.v) != 2 {
		w.fail("u16")
		return 0
	}
	return native.Uint16(w.v)
}

// u8 reads the value as a u8.
func (w *walker) u8() uint8 {
	if len(w.v) != 1 {
		w.fail("u8")
		return 0
	}
	return w.v[0]
}

func (w *walker) fail(what string) {
	if w.err == nil {
		w.err = &attrError{typ: w.typ, what: what, size: len(w.v)}
	}
}

// check keeps the first error of a value's reading.
func (w *walker) check(err error) {
	if w.err == nil && err != nil {
		w.err = err
	}
}

type attrError struct {
	typ  uint16
	what string
	size int
}

func (e *attrError) Error() string {
	return fmt.Sprintf("attribute %d is not a %s; length: %d", e.typ, e.what, e.size)
}

// attrAlign rounds an attribute's length up to the next attribute.
func attrAlign(l int) int { return (l + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }

// AttrSpace is the room an attribute of a value of n bytes takes in a
// message, header and padding included.
func AttrSpace(n int) int { return attrAlign(unix.SizeofRtAttr + n) }
