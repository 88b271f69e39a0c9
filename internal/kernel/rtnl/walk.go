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

// next moves to the next attribute; false at the end or on a malformed
// one. Kept small enough to inline: it runs for every attribute of every
// route of a dump.
func (w *walker) next() bool {
	if b := w.b; len(b) >= unix.SizeofRtAttr {
		if l := int(native.Uint16(b)); l >= unix.SizeofRtAttr && l <= len(b) {
			w.typ, w.v = native.Uint16(b[2:])&typeMask, b[unix.SizeofRtAttr:l]
			w.b = b[min(attrAlign(l), len(b)):]
			return true
		}
	}
	return w.odd()
}

// typeMask clears the nested and byte-order flags of an attribute type.
const typeMask = ^uint16(unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)

// odd is the end of the walk, or an attribute that is not plain: length 0
// is an attribute of no value that takes a header's room; a length below
// a header's or beyond the end, or a tail too short for a header, is an
// error.
func (w *walker) odd() bool {
	switch {
	case len(w.b) == 0:
		return false
	case len(w.b) >= unix.SizeofRtAttr && native.Uint16(w.b) == 0:
		w.typ, w.v = native.Uint16(w.b[2:])&typeMask, w.b[unix.SizeofRtAttr:unix.SizeofRtAttr]
		w.b = w.b[unix.SizeofRtAttr:]
		return true
	}
	if w.err == nil {
		w.err = errAttr
	}
	w.b = nil
	return false
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
