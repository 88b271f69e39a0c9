package nftwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Expression attributes this package reads or rewrites.
const (
	lookupSet      = 1 // NFTA_LOOKUP_SET
	lookupSetID    = 4
	dynsetSetName  = 1 // NFTA_DYNSET_SET_NAME
	dynsetSetID    = 2
	dynsetExpr     = 7
	dynsetPad      = 8
	dynsetExprs    = 10
	objrefSetName  = 4 // NFTA_OBJREF_SET_NAME
	objrefSetID    = 5
	counterBytes   = 1
	counterPackets = 2
	counterPad     = 3
	quotaFlags     = 2
	quotaPad       = 3
	quotaConsumed  = 4
	quotaFDepleted = 2 // NFT_QUOTA_F_DEPLETED
	limitPad       = 6
	lastSet        = 1
	lastMsecs      = 2
	lastPad        = 3
)

// setRef returns the attribute that names a set in an expression's data,
// and the one that gives its transaction id, for the expressions that
// refer to sets.
func setRef(name string) (nameAttr, idAttr uint16, ok bool) {
	switch name {
	case "lookup":
		return lookupSet, lookupSetID, true
	case "dynset":
		return dynsetSetName, dynsetSetID, true
	case "objref":
		return objrefSetName, objrefSetID, true
	}
	return 0, 0, false
}

// expr is one expression of a list: its name and its data's attributes.
type expr struct {
	name string
	data []attr
	// other are the expression's attributes besides its name and data,
	// kept in place (none today).
	attrs []attr
}

func parseExpr(b []byte) (expr, error) {
	as, err := parseAttrs(b)
	if err != nil {
		return expr{}, err
	}
	var e expr
	e.attrs = as
	for _, a := range as {
		switch kind(a) {
		case nftaExprName:
			e.name = cstring(a.Data)
		case nftaExprData:
			if e.data, err = parseAttrs(a.Data); err != nil {
				return expr{}, fmt.Errorf("expression %s: %w", e.name, err)
			}
		}
	}
	return e, nil
}

// encode writes the expression with its data replaced by data.
func (e expr) encode(data []attr) ([]byte, error) {
	d, err := marshal(data)
	if err != nil {
		return nil, fmt.Errorf("expression %s: %w", e.name, err)
	}
	out := make([]attr, len(e.attrs))
	for i, a := range e.attrs {
		out[i] = attr{Type: a.Type, Data: a.Data}
		if kind(a) == nftaExprData {
			out[i].Data = d
		}
	}
	return marshal(out)
}

// mapExprs rewrites each expression of a list with f, which returns the
// expression's new data attributes. Attributes other than NFTA_LIST_ELEM
// are kept as they are.
func mapExprs(list []byte, f func(e expr) ([]attr, error)) ([]byte, error) {
	as, err := parseAttrs(list)
	if err != nil {
		return nil, err
	}
	out := make([]attr, len(as))
	for i, a := range as {
		out[i] = attr{Type: a.Type, Data: a.Data}
		if kind(a) != nftaListElem {
			continue
		}
		e, err := parseExpr(a.Data)
		if err != nil {
			return nil, err
		}
		data, err := f(e)
		if err != nil {
			return nil, err
		}
		if out[i].Data, err = e.encode(data); err != nil {
			return nil, err
		}
	}
	return marshal(out)
}

// ReferencedSets returns the sets an expression list refers to, each once,
// in the order of their first reference.
func ReferencedSets(exprs []byte) ([]string, error) {
	var out []string
	err := eachSetRef(exprs, func(expr, set string) {
		if !slices.Contains(out, set) {
			out = append(out, set)
		}
	})
	return out, err
}

// DynsetSets returns the sets that an expression list changes from the
// packet path (add @s, update @s, delete @s): their contents change without
// a commit.
func DynsetSets(exprs []byte) ([]string, error) {
	var out []string
	err := eachSetRef(exprs, func(expr, set string) {
		if expr == "dynset" {
			out = append(out, set)
		}
	})
	return out, err
}

// SetRefs returns, in one walk of an expression list, what ReferencedSets
// and DynsetSets return.
func SetRefs(exprs []byte) (refs, dynsets []string, err error) {
	err = eachSetRef(exprs, func(expr, set string) {
		if !slices.Contains(refs, set) {
			refs = append(refs, set)
		}
		if expr == "dynset" {
			dynsets = append(dynsets, set)
		}
	})
	return refs, dynsets, err
}

// eachSetRef calls fn for each expression of a list that names a set,
// without decoding more than names: the reading of every rule of a table
// goes through it.
func eachSetRef(exprs []byte, fn func(expr, set string)) error {
	return each(exprs, func(typ uint16, e []byte) error {
		if typ != nftaListElem {
			return nil
		}
		var name string
		var data []byte
		if err := each(e, func(typ uint16, v []byte) error {
			switch typ {
			case nftaExprName:
				name = cstring(v)
			case nftaExprData:
				data = v
			}
			return nil
		}); err != nil {
			return err
		}
		nameAttr, _, ok := setRef(name)
		if !ok {
			return nil
		}
		return each(data, func(typ uint16, v []byte) error {
			if typ == nameAttr {
				fn(name, cstring(v))
			}
			return nil
		})
	})
}

// SetRef is how a batch refers to a set it creates under a name the kernel
// chooses: the name it was created with ("__set%d") and its transaction id.
type SetRef struct {
	Name string
	ID   uint32
}

// RewriteSetRefs makes the expressions refer to the sets of ids as the
// batch created them: an anonymous set gets its name from the kernel, so a
// rule in the same batch finds it by its transaction id. The kernel looks a
// set up by name first, and "__set%d" is no set's name.
func RewriteSetRefs(exprs []byte, ids map[string]SetRef) ([]byte, error) {
	if len(ids) == 0 {
		return exprs, nil
	}
	return mapExprs(exprs, func(e expr) ([]attr, error) {
		n, idAttr, ok := setRef(e.name)
		if !ok {
			return e.data, nil
		}
		a, ok := find(e.data, n)
		if !ok {
			return e.data, nil
		}
		ref, ok := ids[cstring(a.Data)]
		if !ok {
			return e.data, nil
		}
		out := make([]attr, 0, len(e.data)+1)
		for _, d := range e.data {
			switch kind(d) {
			case n:
				out = append(out, attr{Type: d.Type, Data: zstr(ref.Name)})
			case idAttr:
			default:
				out = append(out, d)
			}
		}
		return append(out, attr{Type: idAttr, Data: putBE32(ref.ID)}), nil
	})
}

// Attributes of the expressions whose dump the kernel does not take back.
const (
	exthdrDreg    = 1 // NFTA_EXTHDR_DREG
	exthdrType    = 2
	exthdrFlags   = 5
	exthdrOp      = 6
	exthdrSreg    = 7
	dynsetTimeout = 6
	osfFlags      = 3 // NFTA_OSF_FLAGS
)

// dropZero returns attributes without the one of kind k when it is n zero
// bytes.
func dropZero(as []attr, k uint16, n int) []attr {
	out := make([]attr, 0, len(as))
	for _, a := range as {
		if kind(a) == k && len(a.Data) == n && bytes.Count(a.Data, []byte{0}) == n {
			continue
		}
		out = append(out, a)
	}
	return out
}

// WriteObjData is an object's data as a batch sends it: as WriteExprs does
// for the expression of the object's type.
func WriteObjData(typ uint32, data []byte) ([]byte, error) {
	name, ok := objExpr[typ]
	if !ok {
		return data, nil
	}
	as, err := parseAttrs(data)
	if err != nil {
		return nil, err
	}
	w, err := writeExpr(expr{name: name, data: as})
	if err != nil {
		return nil, err
	}
	return marshal(w)
}

// WriteExprs is an expression list as a batch sends it: what the kernel
// dumped, but the attributes a dump gives and the same kernel refuses in a
// new rule. An exthdr that sets a TCP option dumps its flags (0), which
// its init refuses (EINVAL); one that strips an option dumps its offset,
// length and flags too. A dynset dumps its timeout (0 when none), which a
// set without the timeout flag refuses (EOPNOTSUPP). osf dumps flags 0,
// which it refuses; a quota of 0 bytes dumps itself depleted, a flag a new
// quota may not have. The kernel makes the
// same expression from what is left, and dumps it as before: the
// differential test (nft -f against our batch) holds that.
func WriteExprs(list []byte) ([]byte, error) {
	return mapExprs(list, writeExpr)
}

func writeExpr(e expr) ([]attr, error) {
	switch e.name {
	case "osf":
		// Its dump gives flags 0, which its init refuses (only
		// NFT_OSF_F_VERSION may be given).
		return dropZero(e.data, osfFlags, 4), nil
	case "quota":
		// A quota of 0 bytes is spent from the start: its dump says so
		// (NFT_QUOTA_F_DEPLETED), a flag a new quota may not carry.
		out := make([]attr, 0, len(e.data))
		for _, d := range e.data {
			if kind(d) == quotaFlags {
				if v, ok := be32(d.Data); ok {
					d.Data = putBE32(v &^ quotaFDepleted)
				}
			}
			out = append(out, d)
		}
		return out, nil
	case "exthdr":
		_, sreg := find(e.data, exthdrSreg)
		_, dreg := find(e.data, exthdrDreg)
		out := make([]attr, 0, len(e.data))
		for _, d := range e.data {
			switch k := kind(d); {
			case sreg && k == exthdrFlags:
				continue
			case !sreg && !dreg && k != exthdrType && k != exthdrOp:
				continue
			}
			out = append(out, d)
		}
		return out, nil
	case "dynset":
		out := make([]attr, 0, len(e.data))
		for _, d := range e.data {
			switch kind(d) {
			case dynsetTimeout:
				if v, ok := be64(d.Data); ok && v == 0 {
					continue
				}
			case dynsetPad:
				continue
			case dynsetExpr:
				x, err := parseExpr(d.Data)
				if err != nil {
					return nil, err
				}
				xd, err := writeExpr(x)
				if err != nil {
					return nil, err
				}
				if d.Data, err = x.encode(xd); err != nil {
					return nil, err
				}
			case dynsetExprs:
				b, err := WriteExprs(d.Data)
				if err != nil {
					return nil, err
				}
				d.Data = b
			}
			out = append(out, d)
		}
		return out, nil
	}
	return e.data, nil
}

// normalExprs is the normal form of an expression list: stateful values
// zeroed (counters, quota consumed, last use), padding dropped, anonymous
// sets named by their index in anon (appendNormalExprs).
func normalExprs(list []byte, anon []string) ([]byte, error) {
	return appendNormalExprs(nil, list, anon)
}

// The normal form is written attribute by attribute into the caller's
// buffer, in the layout marshal gives the expressions decoded and encoded
// again: the form the markers in the kernel were written with, which
// TestNormalFormMatchesDecodedWhole holds it to, errors included. A
// table's read computes the shape of each of its rules, and decoding
// allocated every list, expression and attribute again: most of what a
// one-shot apply of 1,000 rules allocated, each byte a page to fault in.
//
// An expression that the normal form leaves as it is keeps its bytes,
// undecoded: most of a rule's expressions (payload, cmp, meta,
// immediate...) are such.

// attrIter steps through a buffer's attributes as walkAttrs does (and so
// fails where parseAttrs fails), the payloads in place.
type attrIter struct {
	b   []byte
	err error
}

func (it *attrIter) next() (attr, bool) {
	if len(it.b) == 0 || it.err != nil {
		return attr{}, false
	}
	if len(it.b) < nlaHeaderLen {
		it.err = malformed(errAttr)
		return attr{}, false
	}
	a := attr{Length: binary.NativeEndian.Uint16(it.b), Type: binary.NativeEndian.Uint16(it.b[2:])}
	l := int(a.Length)
	switch {
	case l > len(it.b), l != 0 && l < nlaHeaderLen:
		it.err = malformed(errAttr)
		return attr{}, false
	case l == 0:
		a.Data = it.b[nlaHeaderLen:nlaHeaderLen:nlaHeaderLen]
	default:
		a.Data = it.b[nlaHeaderLen:l:l]
	}
	it.b = it.b[min(nlaAlign(max(l, nlaHeaderLen)), len(it.b)):]
	return a, true
}

// checkAttrs fails where parseAttrs fails.
func checkAttrs(b []byte) error {
	it := attrIter{b: b}
	for _, ok := it.next(); ok; _, ok = it.next() {
	}
	return it.err
}

// nextKept is next without the attributes of length 0, which parseAttrs
// leaves out.
func (it *attrIter) nextKept() (attr, bool) {
	for {
		a, ok := it.next()
		if !ok || a.Length != 0 {
			return a, ok
		}
	}
}

var errAttrTooLarge = errors.New("byte slice is too large to fit in a netlink attribute")

// appendAttr appends an attribute as marshal lays it out.
func appendAttr(dst []byte, typ uint16, data []byte) ([]byte, error) {
	if len(data) > math.MaxUint16-nlaHeaderLen {
		return nil, errAttrTooLarge
	}
	dst = binary.NativeEndian.AppendUint16(dst, uint16(nlaHeaderLen+len(data)))
	dst = binary.NativeEndian.AppendUint16(dst, typ)
	dst = append(dst, data...)
	return appendPad(dst, len(data)), nil
}

func appendPad(dst []byte, n int) []byte {
	for range nlaAlign(n) - n {
		dst = append(dst, 0)
	}
	return dst
}

// beginAttr appends the header of an attribute whose payload follows;
// endAttr, given the header's offset, sets its length.
func beginAttr(dst []byte, typ uint16) ([]byte, int) {
	at := len(dst)
	dst = binary.NativeEndian.AppendUint16(dst, 0)
	return binary.NativeEndian.AppendUint16(dst, typ), at
}

func endAttr(dst []byte, at int) ([]byte, error) {
	n := len(dst) - at - nlaHeaderLen
	if n > math.MaxUint16-nlaHeaderLen {
		return nil, errAttrTooLarge
	}
	binary.NativeEndian.PutUint16(dst[at:], uint16(nlaHeaderLen+n))
	return appendPad(dst, n), nil
}

// appendNormalExprs appends the normal form of an expression list.
// Attributes other than NFTA_LIST_ELEM are kept as they are, and so are,
// undecoded, the expressions whose name normalizes says the normal form
// leaves alone.
func appendNormalExprs(dst, list []byte, anon []string) ([]byte, error) {
	it := attrIter{b: list}
	for a, ok := it.nextKept(); ok; a, ok = it.nextKept() {
		var err error
		if kind(a) != nftaListElem {
			if dst, err = appendAttr(dst, a.Type, a.Data); err != nil {
				return nil, err
			}
			continue
		}
		name, err := exprNameBytes(a.Data)
		if err != nil {
			return nil, err
		}
		if !exprKindOf(name).normalizes() {
			if dst, err = appendAttr(dst, a.Type, a.Data); err != nil {
				return nil, err
			}
			continue
		}
		var at int
		dst, at = beginAttr(dst, a.Type)
		if dst, err = appendNormalExpr(dst, a.Data, anon); err != nil {
			return nil, err
		}
		if dst, err = endAttr(dst, at); err != nil {
			return nil, err
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	return dst, nil
}

// appendNormalExpr appends the normal form of one expression's attributes
// (its name and data): each NFTA_EXPR_DATA replaced by the normal form of
// the last one (parseExpr's data), the others kept.
func appendNormalExpr(dst, b []byte, anon []string) ([]byte, error) {
	var name, data []byte
	it := attrIter{b: b}
	for a, ok := it.nextKept(); ok; a, ok = it.nextKept() {
		switch kind(a) {
		case nftaExprName:
			name = bytes.TrimRight(a.Data, "\x00")
		case nftaExprData:
			data = a.Data
			if err := checkAttrs(a.Data); err != nil {
				return nil, fmt.Errorf("expression %s: %w", name, err)
			}
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	// The normal data, written at the first NFTA_EXPR_DATA and copied at
	// any other.
	first, firstEnd := -1, -1
	it = attrIter{b: b}
	for a, ok := it.nextKept(); ok; a, ok = it.nextKept() {
		var err error
		switch {
		case kind(a) != nftaExprData:
			dst, err = appendAttr(dst, a.Type, a.Data)
		case first >= 0:
			dst, err = appendAttr(dst, a.Type, dst[first:firstEnd])
		default:
			var at int
			dst, at = beginAttr(dst, a.Type)
			if dst, err = appendNormalData(dst, exprKindOf(name), data, anon); err != nil {
				return nil, fmt.Errorf("expression %s: %w", name, err)
			}
			first, firstEnd = at+nlaHeaderLen, len(dst)
			dst, err = endAttr(dst, at)
		}
		if err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// exprKind is an expression's name, for those the normal form reads.
type exprKind int

const (
	exprOther exprKind = iota
	exprLookup
	exprDynset
	exprObjref
	exprCounter
	exprQuota
	exprLimit
	exprLast
)

func exprKindOf(name []byte) exprKind {
	switch string(name) {
	case "lookup":
		return exprLookup
	case "dynset":
		return exprDynset
	case "objref":
		return exprObjref
	case "counter":
		return exprCounter
	case "quota":
		return exprQuota
	case "limit":
		return exprLimit
	case "last":
		return exprLast
	}
	return exprOther
}

// normalizes reports whether the normal form may change an expression of
// the kind: one that names a set, or holds state or padding.
func (x exprKind) normalizes() bool { return x != exprOther }

// setRef is setRef for the kind.
func (x exprKind) setRef() (nameAttr, idAttr uint16, ok bool) {
	switch x {
	case exprLookup:
		return setRef("lookup")
	case exprDynset:
		return setRef("dynset")
	case exprObjref:
		return setRef("objref")
	}
	return 0, 0, false
}

// appendNormalData appends the normal form of the data of an expression
// of a kind.
func appendNormalData(dst []byte, x exprKind, data []byte, anon []string) ([]byte, error) {
	nameAttr, idAttr, refers := x.setRef()
	it := attrIter{b: data}
	for d, ok := it.nextKept(); ok; d, ok = it.nextKept() {
		var err error
		var at int
		k := kind(d)
		switch {
		case refers && k == idAttr:
			continue
		case refers && k == nameAttr:
			i := anonIndex(anon, bytes.TrimRight(d.Data, "\x00"))
			if i < 0 {
				dst, err = appendAttr(dst, d.Type, d.Data)
				break
			}
			dst, at = beginAttr(dst, d.Type)
			dst = strconv.AppendInt(append(dst, "\x00anonymous "...), int64(i), 10)
			dst, err = endAttr(dst, at)
		case x == exprCounter && (k == counterBytes || k == counterPackets), x == exprQuota && k == quotaConsumed:
			dst, err = appendAttr(dst, d.Type, zero64)
		case x == exprCounter && k == counterPad, x == exprQuota && k == quotaPad,
			x == exprLimit && k == limitPad, x == exprLast && k == lastPad, x == exprDynset && k == dynsetPad:
			continue
		case x == exprQuota && k == quotaFlags && len(d.Data) == 4:
			dst, at = beginAttr(dst, d.Type)
			dst = binary.BigEndian.AppendUint32(dst, binary.BigEndian.Uint32(d.Data)&^quotaFDepleted)
			dst, err = endAttr(dst, at)
		case x == exprLast && k == lastSet:
			dst, err = appendAttr(dst, d.Type, zeros(len(d.Data)))
		case x == exprLast && k == lastMsecs:
			continue
		case x == exprDynset && (k == dynsetExpr || k == dynsetExprs):
			dst, at = beginAttr(dst, d.Type)
			if k == dynsetExpr {
				dst, err = appendNormalExpr(dst, d.Data, anon)
			} else {
				dst, err = appendNormalExprs(dst, d.Data, anon)
			}
			if err == nil {
				dst, err = endAttr(dst, at)
			}
		default:
			dst, err = appendAttr(dst, d.Type, d.Data)
		}
		if err != nil {
			return nil, err
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	return dst, nil
}

// anonIndex is the index of an anonymous set's name in anon, -1 for none
// (the last, as a map from names to indexes would hold it).
func anonIndex(anon []string, name []byte) int {
	for i := len(anon) - 1; i >= 0; i-- {
		if anon[i] == string(name) {
			return i
		}
	}
	return -1
}

// exprNameBytes returns an expression's name (without its NULs) without
// decoding its data.
func exprNameBytes(b []byte) ([]byte, error) {
	var name []byte
	err := each(b, func(typ uint16, v []byte) error {
		if typ == nftaExprName {
			name = bytes.TrimRight(v, "\x00")
		}
		return nil
	})
	return name, err
}

var zero64 = make([]byte, 8)

// zeros is n zero bytes, n up to an attribute's payload.
func zeros(n int) []byte {
	if n <= len(zeroPayload) {
		return zeroPayload[:n]
	}
	return make([]byte, n)
}

var zeroPayload = make([]byte, 64)

// WriteElem is an element as a batch sends it again: what the kernel dumped,
// but its expiration (the time left, which is state) and padding.
func WriteElem(elem []byte) ([]byte, error) {
	as, err := parseAttrs(elem)
	if err != nil {
		return nil, err
	}
	out := make([]attr, 0, len(as))
	for _, a := range as {
		switch kind(a) {
		case nftaSetElemExpiration, nftaSetElemPad:
			continue
		}
		out = append(out, attr{Type: a.Type, Data: a.Data})
	}
	return marshal(out)
}

// normalElem is an element's normal form: its write form with the state of
// its expressions (a counter per element) zeroed.
func normalElem(elem []byte) ([]byte, error) {
	return appendNormalElem(nil, elem)
}

func appendNormalElem(dst, elem []byte) ([]byte, error) {
	it := attrIter{b: elem}
	for a, ok := it.nextKept(); ok; a, ok = it.nextKept() {
		var err error
		switch kind(a) {
		case nftaSetElemExpiration, nftaSetElemPad:
			continue
		case nftaSetElemExpr, nftaSetElemExpressions:
			dst, err = appendNormalNested(dst, a, kind(a) == nftaSetElemExpr)
		default:
			dst, err = appendAttr(dst, a.Type, a.Data)
		}
		if err != nil {
			return nil, err
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	return dst, nil
}

// appendNormalNested appends an attribute that holds one expression (one)
// or a list of them, in normal form.
func appendNormalNested(dst []byte, a attr, one bool) ([]byte, error) {
	dst, at := beginAttr(dst, a.Type)
	var err error
	if one {
		dst, err = appendNormalExpr(dst, a.Data, nil)
	} else {
		dst, err = appendNormalExprs(dst, a.Data, nil)
	}
	if err != nil {
		return nil, err
	}
	return endAttr(dst, at)
}

// normalSpec is a set spec's normal form: the state of its expressions
// zeroed.
func normalSpec(spec []byte) ([]byte, error) {
	return appendNormalSpec(nil, spec)
}

func appendNormalSpec(dst, spec []byte) ([]byte, error) {
	it := attrIter{b: spec}
	for a, ok := it.nextKept(); ok; a, ok = it.nextKept() {
		var err error
		switch kind(a) {
		case nftaSetExpr, nftaSetExpressions:
			dst, err = appendNormalNested(dst, a, kind(a) == nftaSetExpr)
		default:
			dst, err = appendAttr(dst, a.Type, a.Data)
		}
		if err != nil {
			return nil, err
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	return dst, nil
}

// Fingerprint is the hash of a rule's normal form: its expressions with
// stateful values zeroed, nft's user data (the comment; our marker is not
// part of it), and each anonymous set it refers to by content (its spec and
// its elements, in byte order), in the order of reference. Two rules nft
// lists the same have the same fingerprint: the kernel holds nothing else
// of a rule. It is the hash of the shape (ShapeFingerprint) and of the
// anonymous sets' elements.
func Fingerprint(exprs, udata []byte, sets []model.NftAnonSet) (string, error) {
	shape, order, err := shapeFingerprint(exprs, udata, sets)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	put([]byte("nftables rule v2"))
	put([]byte(shape))
	for _, s := range order {
		if flags, _ := specFlags(s.Spec); flags&SetEval != 0 {
			// A meter's set: the packet path fills it, its elements
			// are state.
			h.Write([]byte{0})
			continue
		}
		es := make([][]byte, len(s.Elems))
		for i, e := range s.Elems {
			if es[i], err = normalElem(e); err != nil {
				return "", fmt.Errorf("anonymous set %s: %w", s.Name, err)
			}
		}
		slices.SortFunc(es, bytes.Compare)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(es))))
		for _, e := range es {
			put(e)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// ShapeFingerprint is the hash of a rule's normal form without the
// elements of its anonymous sets (their specs are in): what a reading can
// check without dumping each anonymous set. An anonymous set of nft's
// (constant) takes no element once its rule is in the kernel, so a rule
// whose shape is the one written still has the elements written; a rule
// replaced behind our back carries no marker.
func ShapeFingerprint(exprs, udata []byte, sets []model.NftAnonSet) (string, error) {
	shape, _, err := shapeFingerprint(exprs, udata, sets)
	return shape, err
}

// ShapeFingerprintOf is ShapeFingerprint for a caller that has the
// expressions' ReferencedSets already.
func ShapeFingerprintOf(exprs, udata []byte, refs []string, sets []model.NftAnonSet) (string, error) {
	shape, _, err := shapeOf(exprs, udata, refs, sets)
	return shape, err
}

func shapeFingerprint(exprs, udata []byte, sets []model.NftAnonSet) (string, []*model.NftAnonSet, error) {
	refs, err := ReferencedSets(exprs)
	if err != nil {
		return "", nil, err
	}
	return shapeOf(exprs, udata, refs, sets)
}

// shapeBufs are the buffers shapes are laid out in: a table's read
// computes one for each of its rules.
var shapeBufs = sync.Pool{New: func() any { return new([]byte) }}

// shapeOf is the shape fingerprint, and the anonymous sets of sets that
// the expressions refer to, in the order of refs. The hash is of each part
// after its length (the prefix, the normal form of the expressions, the
// user data, each set's normal spec), laid out in one buffer.
func shapeOf(exprs, udata []byte, refs []string, sets []model.NftAnonSet) (string, []*model.NftAnonSet, error) {
	var order []*model.NftAnonSet
	// The anonymous sets by their index in the order: the last of a
	// name in sets, as a map by name would hold them.
	var anon []string
	var anonArr [8]string
	anon = anonArr[:0]
	for _, r := range refs {
		for i := len(sets) - 1; i >= 0; i-- {
			if sets[i].Name == r {
				anon = append(anon, r)
				order = append(order, &sets[i])
				break
			}
		}
	}
	bp := shapeBufs.Get().(*[]byte)
	defer shapeBufs.Put(bp)
	b := (*bp)[:0]
	part := func(b []byte) ([]byte, int) {
		at := len(b)
		return append(b, 0, 0, 0, 0), at
	}
	end := func(b []byte, at int) []byte {
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		return b
	}
	b, at := part(b)
	b = end(append(b, "nftables rule shape v1"...), at)
	b, at = part(b)
	b, err := appendNormalExprs(b, exprs, anon)
	if err != nil {
		return "", nil, err
	}
	b = end(b, at)
	b, at = part(b)
	b = end(append(b, udata...), at)
	for _, s := range order {
		b, at = part(b)
		if b, err = appendNormalSpec(b, s.Spec); err != nil {
			return "", nil, fmt.Errorf("anonymous set %s: %w", s.Name, err)
		}
		b = end(b, at)
	}
	*bp = b
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), order, nil
}

// specFlags returns a set spec's NFTA_SET_FLAGS.
func specFlags(spec []byte) (uint32, bool) {
	as, err := parseAttrs(spec)
	if err != nil {
		return 0, false
	}
	if a, ok := find(as, nftaSetFlags); ok {
		return be32(a.Data)
	}
	return 0, false
}

// Compile makes the compiled form of a rule the kernel dumped: its
// expressions, nft's user data, and the anonymous sets it refers to, which
// anon returns (the set and its elements; nil for a named set). The marker
// is netreconcile's, if the rule carries one.
func Compile(r *Rule, anon func(name string) (*Set, [][]byte)) (*model.NftCompiled, Marker, error) {
	udata, m := SplitUData(r.UData)
	c := &model.NftCompiled{Exprs: r.Exprs, UData: udata}
	refs, err := ReferencedSets(r.Exprs)
	if err != nil {
		return nil, Marker{}, err
	}
	for _, name := range refs {
		s, elems := anon(name)
		if s == nil || !s.Anonymous() {
			continue
		}
		as := model.NftAnonSet{Name: name, Spec: s.Spec(), Elems: make([][]byte, 0, len(elems))}
		for _, e := range elems {
			w, err := WriteElem(e)
			if err != nil {
				return nil, Marker{}, fmt.Errorf("anonymous set %s: %w", name, err)
			}
			as.Elems = append(as.Elems, w)
		}
		c.Sets = append(c.Sets, as)
	}
	if c.Fingerprint, err = Fingerprint(c.Exprs, c.UData, c.Sets); err != nil {
		return nil, Marker{}, err
	}
	if c.ShapeFP, err = ShapeFingerprint(c.Exprs, c.UData, c.Sets); err != nil {
		return nil, Marker{}, err
	}
	if len(r.Compat) > 0 {
		// xt matches of iptables-nft: folded into the hash, so that
		// such a rule never equals one nft compiled.
		h := sha256.Sum256(append([]byte(c.Fingerprint+"compat"), r.Compat...))
		c.Fingerprint = hex.EncodeToString(h[:16])
	}
	return c, m, nil
}

// hash16 is the hex of the first 16 bytes of a SHA-256.
func hash16(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(p))))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// SpecFingerprint is the hash of a set spec's normal form.
func SpecFingerprint(spec []byte) (string, error) {
	n, err := normalSpec(spec)
	if err != nil {
		return "", err
	}
	return hash16([]byte("nftables set v1"), n), nil
}

// ElemFingerprint is the hash of an element's normal form (its write form
// with its expressions' state zeroed).
func ElemFingerprint(elem []byte) (string, error) {
	n, err := normalElem(elem)
	if err != nil {
		return "", err
	}
	return hash16(n), nil
}

// objExpr names the expression whose attributes an object's data are,
// for the stateful ones whose state normalExpr zeroes.
var objExpr = map[uint32]string{1: "counter", 2: "quota", 4: "limit", 5: "connlimit"}

// ObjFingerprint is the hash of an object's normal form: its type, its
// data with counters' values and quotas' use zeroed, its user data (nft's
// comment).
func ObjFingerprint(typ uint32, data, udata []byte) (string, error) {
	if name, ok := objExpr[typ]; ok {
		var err error
		if data, err = appendNormalData(nil, exprKindOf([]byte(name)), data, nil); err != nil {
			return "", err
		}
	}
	return hash16([]byte("nftables object v1"), putBE32(typ), data, udata), nil
}

// RawSet makes the raw form of a dumped set and its elements. The
// elements' identities (Keys) and expirations are kept for a set whose
// elements may expire or come from the packet path (its timeout or dynamic
// flag, or keys true: a rule of its table changes it): those are the sets
// whose elements the diff may leave to the kernel.
func RawSet(s *Set, elems [][]byte, keys bool) (*model.NftRawSet, error) {
	r := &model.NftRawSet{Spec: s.Spec(), Elems: make([][]byte, 0, len(elems)), ElemFPs: make([]string, 0, len(elems))}
	var err error
	if r.SpecFP, err = SpecFingerprint(r.Spec); err != nil {
		return nil, fmt.Errorf("set %s: %w", s.Name, err)
	}
	r.FedSpecFP = r.SpecFP
	if fed := *s; fed.DropDynsetSize() {
		if r.FedSpecFP, err = SpecFingerprint(fed.Spec()); err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
	}
	keys = keys || s.Flags&(SetTimeout|SetEval) != 0
	if keys {
		r.Keys = make([]string, 0, len(elems))
	}
	for i, e := range elems {
		w, err := WriteElem(e)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		fp, err := ElemFingerprint(w)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		r.Elems, r.ElemFPs = append(r.Elems, w), append(r.ElemFPs, fp)
		if !keys {
			continue
		}
		id, err := ElemIdentity(w)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		r.Keys = append(r.Keys, id)
		if s.Flags&SetTimeout == 0 {
			continue
		}
		exp, err := ElemExpires(e)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		if exp {
			if r.Expiring == nil {
				r.Expiring = make([]bool, len(elems))
			}
			r.Expiring[i] = true
		}
	}
	return r, nil
}

// RawObj makes the raw form of a dumped object.
func RawObj(o *Obj) (*model.NftRawObj, error) {
	fp, err := ObjFingerprint(o.Type, o.Data, o.UData)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", o.Name, err)
	}
	return &model.NftRawObj{Type: o.Type, Data: o.Data, UData: o.UData, Fingerprint: fp}, nil
}
