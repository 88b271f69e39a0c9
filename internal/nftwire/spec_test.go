package nftwire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Spec lays out the attributes a NEWSET takes itself, in one allocation:
// it must give what marshal gives for them, on sets of random attributes
// (types with and without the nested and byte-order flags, payloads of
// every alignment, attributes it drops among them).
func TestSpecAsMarshalOfKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []uint16{nftaSetFlags, nftaSetKeyType, nftaSetKeyLen, nftaSetDataType, nftaSetDataLen, nftaSetPolicy, nftaSetDesc,
		nftaSetTimeout, nftaSetGCInterval, nftaSetUserdata, nftaSetObjType, nftaSetExpr, nftaSetExpressions,
		nftaSetTable, nftaSetName, nftaSetHandle, nftaSetID, 0x7f}
	for i := 0; i < 2000; i++ {
		var as, kept []attr
		for j := rng.IntN(12); j > 0; j-- {
			typ := types[rng.IntN(len(types))]
			if rng.IntN(3) == 0 {
				typ |= 0x8000 // nested
			}
			data := make([]byte, rng.IntN(40))
			for k := range data {
				data[k] = byte(rng.Uint32())
			}
			a := attr{Type: typ, Data: data}
			as = append(as, a)
			if specAttr(a) {
				kept = append(kept, a)
			}
		}
		raw, err := marshal(as)
		if err != nil {
			t.Fatal(err)
		}
		s, err := decodeSet(raw)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		want, err := marshal(kept)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Spec(); !bytes.Equal(got, want) {
			t.Fatalf("set %d: Spec %x, marshal of the kept attributes %x", i, got, want)
		}
	}
}
