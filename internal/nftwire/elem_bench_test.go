package nftwire

import (
	"github.com/netreconcile/netreconcile/internal/model"
	"testing"
)

// BenchmarkElemPath is the daemon's element path on a dump: one NEWSETELEM
// message of 1,000 interval elements (a key, every other one an interval
// end), each element's key and flags read.
func BenchmarkElemPath(b *testing.B) {
	var items []na
	for i := range 1000 {
		as := []na{nest(b, nftaSetElemKey, raw(nftaDataValue, 10, byte(i>>8), byte(i), 0))}
		if i%2 == 1 {
			as = append(as, b32(nftaSetElemFlags, ElemIntervalEnd))
		}
		items = append(items, nest(b, nftaListElem, as...))
	}
	msg := append([]byte{2, 0, 0, 0}, enlist(b, str(nftaSetElemListTable, "t"), str(nftaSetElemListSet, "s"), nest(b, nftaSetElemListElems, items...))...)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := DecodeElems(msg, func(e []byte) error {
			k, _, err := ElemKey(e)
			n += len(k)
			return err
		}); err != nil || n != 4000 {
			b.Fatal(err, n)
		}
	}
}

// BenchmarkElemWrite is the element path of a batch: 1,000 interval
// elements (a start and an end each) put in element messages.
func BenchmarkElemWrite(b *testing.B) {
	es := make([]model.NftElem, 1000)
	for i := range es {
		es[i] = model.NftElem{Key: string([]byte{10, byte(i >> 8), byte(i), 0}), End: string([]byte{10, byte(i >> 8), byte(i), 128})}
	}
	b.ReportAllocs()
	for b.Loop() {
		var bt Batch
		bt.Elems(true, 2, "t", "s", true, es)
		if bt.Len() != 1 {
			b.Fatal(bt.Len())
		}
	}
}
