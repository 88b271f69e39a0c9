package nftwire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestNormalExprsSkipsWhatItKeeps holds normalExprs, which keeps the bytes
// of the expressions it does not change, to the form that decodes and
// encodes every expression again (the form markers were written with), on
// generated expression lists laid out as the kernel lays them out: every
// expression name the normal form touches, others, nested data, pads.
func TestNormalExprsSkipsWhatItKeeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1000))
	names := []string{"payload", "cmp", "meta", "immediate", "bitwise", "ct", "lookup", "dynset", "objref", "counter", "quota", "limit", "last", "exthdr", "nat", "reject"}
	attrOf := func(depth int) na {
		switch typ := uint16(1 + rng.IntN(10)); rng.IntN(4) {
		case 0:
			return b32(typ, rng.Uint32())
		case 1:
			return b64(typ, rng.Uint64())
		case 2:
			return str(typ, []string{"__set0", "__set1", "s", "meter"}[rng.IntN(4)])
		default:
			if depth > 0 {
				return nest(t, typ, b32(1, rng.Uint32()), raw(2, byte(rng.IntN(256))))
			}
			return raw(typ, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)))
		}
	}
	anon := map[string]int{"__set0": 0, "__set1": 1}
	for round := 0; round < 5000; round++ {
		var list []na
		for range 1 + rng.IntN(8) {
			var data []na
			for range rng.IntN(7) {
				data = append(data, attrOf(1))
			}
			list = append(list, xpr(t, names[rng.IntN(len(names))], data...))
		}
		b := enlist(t, list...)
		got, gerr := normalExprs(b, anon)
		want, werr := mapExprs(b, nil, func(e expr) ([]attr, error) { return normalExpr(e, anon) })
		if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("round %d: %x: normal form %x (%v), decoded whole %x (%v)", round, b, got, gerr, want, werr)
		}
	}
}
