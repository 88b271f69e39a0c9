package nftwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/mdlayher/netlink"
)

// refAttr and refParse are the kernel's reading of an attribute list
// (nla_parse: a length of at least the header and at most what is left,
// the next attribute at the length rounded up to 4), written out here
// only as the fuzz target's oracle for mdlayher/netlink's decoder.
type refAttr struct {
	typ  uint16
	data []byte
}

func refParse(b []byte) ([]refAttr, error) {
	var out []refAttr
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errors.New("trailing bytes")
		}
		l := int(binary.NativeEndian.Uint16(b))
		if l < 4 || l > len(b) {
			return nil, errors.New("bad length")
		}
		out = append(out, refAttr{binary.NativeEndian.Uint16(b[2:]), b[4:l]})
		b = b[min(len(b), (l+3)&^3):]
	}
	return out, nil
}

// hasZeroLength reports whether b holds an attribute of length 0 where
// the kernel's reading would meet one: mdlayher/netlink skips those, the
// kernel refuses them.
func hasZeroLength(b []byte) bool {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		if l == 0 {
			return true
		}
		b = b[min(len(b), (max(l, 4)+3)&^3):]
	}
	return false
}

// FuzzCodec holds the codec to the kernel's reading of attributes: what
// mdlayher/netlink's decoder reads of any bytes (each attribute's type,
// flags included, and payload) is what the kernel reads, or both refuse
// (but for attributes of length 0, which the decoder skips); a list laid
// out again reads the same; and no message, expression list or element,
// however broken, makes a decoder panic.
func FuzzCodec(f *testing.F) {
	exprs, sets := stableRule(f, "__set0", 3)
	f.Add(exprs)
	f.Add(sets[0].Spec)
	f.Add(sets[0].Elems[0])
	f.Add(enlist(f, str(nftaSetElemListTable, "t"), str(nftaSetElemListSet, "s"),
		nest(f, nftaSetElemListElems, nest(f, nftaListElem, nest(f, nftaSetElemKey, raw(nftaDataValue, 10, 0, 0, 1))))))
	f.Add([]byte{5, 0, 1, 0, 'x', 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 8, 0, 1, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		ref, rerr := refParse(b)
		got, err := parseAttrs(b)
		switch {
		case rerr == nil && err != nil:
			t.Fatalf("the kernel reads %x, the decoder refuses it: %v", b, err)
		case rerr != nil && err == nil && !hasZeroLength(b):
			t.Fatalf("the kernel refuses %x (%v), the decoder reads %d attributes", b, rerr, len(got))
		case rerr == nil:
			if len(ref) != len(got) {
				t.Fatalf("%x: %d attributes, the kernel reads %d", b, len(got), len(ref))
			}
			for i := range ref {
				if ref[i].typ != got[i].Type || !bytes.Equal(ref[i].data, got[i].Data) {
					t.Fatalf("%x: attribute %d is %d %x, the kernel reads %d %x", b, i, got[i].Type, got[i].Data, ref[i].typ, ref[i].data)
				}
			}
		}
		if err == nil {
			out, err := marshal(got)
			if err != nil {
				t.Fatalf("lay out what was read of %x: %v", b, err)
			}
			again, err := parseAttrs(out)
			if err != nil || len(again) != len(got) {
				t.Fatalf("%x laid out as %x reads %d attributes, %v", b, out, len(again), err)
			}
			for i := range got {
				if again[i].Type != got[i].Type || !bytes.Equal(again[i].Data, got[i].Data) {
					t.Fatalf("%x laid out as %x: attribute %d changed", b, out, i)
				}
			}
		}
		// No panic, whatever the bytes.
		msg := append([]byte{2, 0, 0, 0}, b...)
		_, _ = DecodeTable(msg)
		_, _ = DecodeChain(msg)
		_, _ = DecodeRule(msg)
		_, _ = DecodeSet(msg)
		_, _ = DecodeObj(msg)
		_, _ = DecodeGen(msg)
		_, _ = DecodeElems(msg, func(e []byte) error { _, _, err := ElemKey(e); return err })
		_, _ = WriteExprs(b)
		_, _ = RewriteSetRefs(b, map[string]SetRef{"__set0": {"__set%d", 1}})
		_, _ = Fingerprint(b, nil, nil)
		_, _ = WriteElem(b)
		_, _ = ElemFingerprint(b)
		_, _ = SpecFingerprint(b)
		_, _ = ObjFingerprint(2, b, nil)
		_ = extackMsg(append([]byte{0xff, 0xff, 0xff, 0xff}, b...), netlink.HeaderFlags(0x300))
		// An expression list the codec takes is written the same twice.
		if w, err := WriteExprs(b); err == nil {
			if w2, err := WriteExprs(w); err != nil || !bytes.Equal(w, w2) {
				t.Fatalf("write form of %x is not stable: %x then %x, %v", b, w, w2, err)
			}
		}
	})
}
