package nftwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The normal form as the markers in the kernel were written with: each
// expression the normal form may change decoded into attributes and encoded
// again, the others kept (which gives the bytes of decoding them too, for
// what the kernel dumps: TestNormalFormStable). The normal form written
// attribute by attribute (appendNormalExprs and the functions beside it)
// must give the same bytes, and fail where this fails.

func refNormalExprs(list []byte, anon map[string]int) ([]byte, error) {
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
		name, err := exprNameBytes(a.Data)
		if err != nil {
			return nil, err
		}
		if !exprKindOf(name).normalizes() {
			continue
		}
		e, err := parseExpr(a.Data)
		if err != nil {
			return nil, err
		}
		data, err := refNormalExpr(e, anon)
		if err != nil {
			return nil, err
		}
		if out[i].Data, err = e.encode(data); err != nil {
			return nil, err
		}
	}
	return marshal(out)
}

func refNormalExpr(e expr, anon map[string]int) ([]attr, error) {
	out := make([]attr, 0, len(e.data))
	nameAttr, idAttr, refers := setRef(e.name)
	for _, d := range e.data {
		k := kind(d)
		switch {
		case refers && k == idAttr:
			continue
		case refers && k == nameAttr:
			if i, ok := anon[cstring(d.Data)]; ok {
				d.Data = []byte(fmt.Sprintf("\x00anonymous %d", i))
			}
		case e.name == "counter" && (k == counterBytes || k == counterPackets):
			d.Data = zero64
		case e.name == "counter" && k == counterPad, e.name == "quota" && k == quotaPad,
			e.name == "limit" && k == limitPad, e.name == "last" && k == lastPad, e.name == "dynset" && k == dynsetPad:
			continue
		case e.name == "quota" && k == quotaFlags:
			if v, ok := be32(d.Data); ok {
				d.Data = putBE32(v &^ quotaFDepleted)
			}
		case e.name == "quota" && k == quotaConsumed:
			d.Data = zero64
		case e.name == "last" && k == lastSet:
			d.Data = make([]byte, len(d.Data))
		case e.name == "last" && k == lastMsecs:
			continue
		case e.name == "dynset" && k == dynsetExpr:
			x, err := parseExpr(d.Data)
			if err != nil {
				return nil, err
			}
			xd, err := refNormalExpr(x, anon)
			if err != nil {
				return nil, err
			}
			if d.Data, err = x.encode(xd); err != nil {
				return nil, err
			}
		case e.name == "dynset" && k == dynsetExprs:
			b, err := refNormalExprs(d.Data, anon)
			if err != nil {
				return nil, err
			}
			d.Data = b
		}
		out = append(out, d)
	}
	return out, nil
}

func refNormalOneExpr(data []byte) ([]byte, error) {
	x, err := parseExpr(data)
	if err != nil {
		return nil, err
	}
	xd, err := refNormalExpr(x, nil)
	if err != nil {
		return nil, err
	}
	return x.encode(xd)
}

// refNormalNested is refNormalSpec's and refNormalElem's loop: the
// attributes of kind one hold an expression, those of kind list a list.
func refNormalNested(b []byte, one, list uint16, drop ...uint16) ([]byte, error) {
	as, err := parseAttrs(b)
	if err != nil {
		return nil, err
	}
	var out []attr
next:
	for _, a := range as {
		for _, k := range drop {
			if kind(a) == k {
				continue next
			}
		}
		switch kind(a) {
		case one:
			if a.Data, err = refNormalOneExpr(a.Data); err != nil {
				return nil, err
			}
		case list:
			if a.Data, err = refNormalExprs(a.Data, nil); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return marshal(out)
}

func refNormalSpec(spec []byte) ([]byte, error) {
	return refNormalNested(spec, nftaSetExpr, nftaSetExpressions)
}

func refNormalElem(elem []byte) ([]byte, error) {
	return refNormalNested(elem, nftaSetElemExpr, nftaSetElemExpressions, nftaSetElemExpiration, nftaSetElemPad)
}

func refShape(exprs, udata []byte, refs []string, sets []model.NftAnonSet) (string, error) {
	byName := make(map[string]*model.NftAnonSet, len(sets))
	for i := range sets {
		byName[sets[i].Name] = &sets[i]
	}
	anon := map[string]int{}
	var order []*model.NftAnonSet
	for _, r := range refs {
		if s := byName[r]; s != nil {
			anon[r] = len(order)
			order = append(order, s)
		}
	}
	ne, err := refNormalExprs(exprs, anon)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	put([]byte("nftables rule shape v1"))
	put(ne)
	put(udata)
	for _, s := range order {
		spec, err := refNormalSpec(s.Spec)
		if err != nil {
			return "", err
		}
		put(spec)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// normGen generates expression lists, set specs and elements laid out as
// the kernel lays them out, with every expression name and attribute the
// normal form touches, others, nested expressions, pads, attributes of
// length 0, and the rare shapes (two data attributes, values of odd
// lengths).
type normGen struct {
	t   *testing.T
	rng *rand.Rand
}

var normNames = []string{"payload", "cmp", "meta", "immediate", "bitwise", "ct", "lookup", "dynset", "objref", "counter", "quota", "limit", "last", "exthdr", "nat", "reject"}

func (g normGen) attr(depth int) na {
	typ := uint16(1 + g.rng.IntN(10))
	switch g.rng.IntN(7) {
	case 0:
		return b32(typ, g.rng.Uint32())
	case 1:
		return b64(typ, g.rng.Uint64())
	case 2:
		return str(typ, []string{"__set0", "__set1", "__set2", "s", "meter"}[g.rng.IntN(5)])
	case 3:
		if depth > 0 && g.rng.IntN(2) == 0 {
			// An expression inside (dynset's NFTA_DYNSET_EXPR) or a
			// list of them (NFTA_DYNSET_EXPRESSIONS).
			if g.rng.IntN(2) == 0 {
				return na{Type: typ | netlink.Nested, Data: g.expr(depth - 1).Data}
			}
			return na{Type: typ | netlink.Nested, Data: g.list(depth - 1)}
		}
		return raw(typ)
	case 4:
		b := make([]byte, g.rng.IntN(13))
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return raw(typ, b...)
	case 5:
		if depth > 0 {
			return nest(g.t, typ, b32(1, g.rng.Uint32()), raw(2, byte(g.rng.IntN(256))))
		}
		return raw(typ, byte(g.rng.IntN(256)), byte(g.rng.IntN(256)), byte(g.rng.IntN(256)))
	default:
		return raw(typ, 0, 0, 0, 0)
	}
}

func (g normGen) expr(depth int) na {
	var data []na
	for range g.rng.IntN(7) {
		data = append(data, g.attr(depth))
	}
	as := []na{str(nftaExprName, normNames[g.rng.IntN(len(normNames))]), nest(g.t, nftaExprData, data...)}
	switch g.rng.IntN(12) {
	case 0:
		// Two data attributes: the last is the expression's.
		as = append(as, nest(g.t, nftaExprData, g.attr(0)))
	case 1:
		as = append(as, b32(3, 7))
	case 2:
		as = as[:1]
	}
	return na{Type: nftaListElem | netlink.Nested, Data: enlistRaw(g.t, as...)}
}

func (g normGen) list(depth int) []byte {
	var list []na
	for range 1 + g.rng.IntN(6) {
		if g.rng.IntN(15) == 0 {
			list = append(list, b32(2, 1))
			continue
		}
		list = append(list, g.expr(depth))
	}
	return enlistRaw(g.t, list...)
}

// enlistRaw is enlist, with now and then an attribute of length 0 (a
// header alone, which the kernel never sends but a reader must take).
func enlistRaw(t *testing.T, as ...na) []byte {
	b := enlist(t, as...)
	if len(b) > 0 && len(as)%3 == 0 {
		b = append(b, 0, 0, 1, 0)
	}
	return b
}

// tryEnlist is enlist of what x makes, false for what does not fit an
// attribute.
func tryEnlist(t *testing.T, x func() na) (b []byte, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return enlist(t, x()), true
}

// mangle cuts or changes a byte of b now and then, for the errors.
func (g normGen) mangle(b []byte) []byte {
	b = bytes.Clone(b)
	switch g.rng.IntN(10) {
	case 0:
		if len(b) > 0 {
			b = b[:g.rng.IntN(len(b))]
		}
	case 1:
		if len(b) > 0 {
			b[g.rng.IntN(len(b))] = byte(g.rng.IntN(256))
		}
	}
	return b
}

func TestNormalFormMatchesDecodedWhole(t *testing.T) {
	g := normGen{t, rand.New(rand.NewPCG(31, 1000))}
	anonMap := map[string]int{"__set0": 0, "__set1": 1}
	anon := []string{"__set0", "__set1"}
	same := func(round int, what string, in []byte, got []byte, gerr error, want []byte, werr error) {
		t.Helper()
		if (gerr != nil) != (werr != nil) || gerr == nil && !bytes.Equal(got, want) {
			t.Fatalf("round %d, %s of %x:\n  written %x (%v)\n  decoded %x (%v)", round, what, in, got, gerr, want, werr)
		}
	}
	// Expressions near an attribute's 64 KiB, which the normal form's
	// longer name of an anonymous set or a counter's wider value take past
	// it, or not.
	for pad := 65496; pad < 65532; pad += 4 {
		for _, x := range []func() na{
			func() na { return xpr(t, "lookup", str(lookupSet, "__set0"), raw(9, make([]byte, pad-32)...)) },
			func() na { return xpr(t, "counter", raw(counterBytes, 1), raw(9, make([]byte, pad-28)...)) },
		} {
			b, ok := tryEnlist(t, x)
			if !ok {
				continue
			}
			got, gerr := normalExprs(b, anon)
			want, werr := refNormalExprs(b, anonMap)
			same(pad, "expressions", b, got, gerr, want, werr)
		}
	}
	for round := 0; round < 20000; round++ {
		b := g.mangle(g.list(2))
		got, gerr := normalExprs(b, anon)
		want, werr := refNormalExprs(b, anonMap)
		same(round, "expressions", b, got, gerr, want, werr)

		one := g.mangle(g.expr(2).Data)
		got, gerr = appendNormalExpr(nil, one, nil)
		want, werr = refNormalOneExpr(one)
		same(round, "expression", one, got, gerr, want, werr)

		spec := g.mangle(enlistRaw(t, b32(nftaSetFlags, SetAnonymous|SetConstant), b32(nftaSetKeyType, 13),
			na{Type: nftaSetExpr | netlink.Nested, Data: g.expr(1).Data},
			na{Type: nftaSetExpressions | netlink.Nested, Data: g.list(1)}))
		got, gerr = normalSpec(spec)
		want, werr = refNormalSpec(spec)
		same(round, "spec", spec, got, gerr, want, werr)

		elem := g.mangle(enlistRaw(t, nest(t, nftaSetElemKey, raw(nftaDataValue, 0, byte(round))), b64(nftaSetElemExpiration, 77), raw(nftaSetElemPad),
			na{Type: nftaSetElemExpr | netlink.Nested, Data: g.expr(1).Data},
			na{Type: nftaSetElemExpressions | netlink.Nested, Data: g.list(1)}))
		got, gerr = normalElem(elem)
		want, werr = refNormalElem(elem)
		same(round, "element", elem, got, gerr, want, werr)

		sets := []model.NftAnonSet{{Name: "__set0", Spec: spec}, {Name: "__set2", Spec: g.mangle(spec)}, {Name: "__set0", Spec: spec[:len(spec)/4*4]}}
		refs := []string{"__set2", "s", "__set0"}[g.rng.IntN(3):]
		ud := []byte{0, byte(round % 7), 'x'}
		gs, gerr := ShapeFingerprintOf(b, ud, refs, sets)
		ws, werr := refShape(b, ud, refs, sets)
		same(round, "shape", b, []byte(gs), gerr, []byte(ws), werr)
	}
}

// An object's data is normalised as the data of the expression of its type.
func TestObjFingerprintAsDecoded(t *testing.T) {
	g := normGen{t, rand.New(rand.NewPCG(31, 7))}
	for round := 0; round < 2000; round++ {
		for typ, name := range objExpr {
			var data []na
			for range g.rng.IntN(6) {
				data = append(data, g.attr(1))
			}
			b := g.mangle(enlistRaw(t, data...))
			got, gerr := ObjFingerprint(typ, b, []byte{0, 1, 'c'})
			var want string
			as, werr := parseAttrs(b)
			if werr == nil {
				var nd []attr
				if nd, werr = refNormalExpr(expr{name: name, data: as}, nil); werr == nil {
					var n []byte
					if n, werr = marshal(nd); werr == nil {
						want = hash16([]byte("nftables object v1"), putBE32(typ), n, []byte{0, 1, 'c'})
					}
				}
			}
			if (gerr != nil) != (werr != nil) || got != want {
				t.Fatalf("round %d, %s object %x: %s (%v), decoded %s (%v)", round, name, b, got, gerr, want, werr)
			}
		}
	}
}

// A table's read computes the shape of every rule it holds: the normal
// form is laid out in a buffer reused from one rule to the next, and the
// shape allocates its hex and the list of the rule's anonymous sets only.
func TestShapeAllocatesLittle(t *testing.T) {
	exprs, sets := stableRule(t, "__set0", 5)
	refs, err := ReferencedSets(exprs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ShapeFingerprintOf(exprs, nil, refs, sets); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ShapeFingerprintOf(exprs, []byte{0, 1, 'x'}, refs, sets) }); n > 2 {
		t.Errorf("a shape allocates %v times, want 2 at most", n)
	}
}
