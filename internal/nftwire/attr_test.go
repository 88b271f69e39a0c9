package nftwire

import (
	"bytes"
	"testing"

	"github.com/mdlayher/netlink"
)

// FuzzAttrWalk holds the in-place readings of attribute lists (parseAttrs,
// each) to mdlayher/netlink's, whose payloads are copies: the same
// attributes, types with their flags, payloads and lengths, and an error
// where the library gives one.
func FuzzAttrWalk(f *testing.F) {
	exprs, sets := stableRule(f, "__set0", 3)
	f.Add(exprs)
	f.Add(sets[0].Spec)
	f.Add([]byte{})
	f.Add([]byte{0, 0, 1, 0})
	f.Add([]byte{0, 0, 1, 0, 5, 0, 2, 0, 7})
	f.Add([]byte{5, 0, 2, 0, 7, 0, 0, 0, 3, 0})
	f.Add([]byte{8, 0, 1, 0, 1, 2, 3, 4, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := netlink.UnmarshalAttributes(b)
		got, gerr := parseAttrs(b)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("parseAttrs(%x): error %v, the library's %v", b, gerr, werr)
		}
		if len(got) != len(want) || (got == nil) != (want == nil) {
			t.Fatalf("parseAttrs(%x): %d attributes (nil %v), the library's %d (nil %v)", b, len(got), got == nil, len(want), want == nil)
		}
		for i := range want {
			if got[i].Type != want[i].Type || got[i].Length != want[i].Length || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("parseAttrs(%x)[%d] = %+v, the library's %+v", b, i, got[i], want[i])
			}
		}
		type seen struct {
			typ uint16
			v   []byte
		}
		var ws []seen
		var lerr error
		ad, err := netlink.NewAttributeDecoder(b)
		if err != nil {
			lerr = err
		} else {
			for ad.Next() {
				ws = append(ws, seen{ad.Type(), ad.Bytes()})
			}
			lerr = ad.Err()
		}
		var gs []seen
		eerr := each(b, func(typ uint16, v []byte) error {
			gs = append(gs, seen{typ, bytes.Clone(v)})
			return nil
		})
		if (lerr != nil) != (eerr != nil) {
			t.Fatalf("each(%x): error %v, the library's %v", b, eerr, lerr)
		}
		if len(gs) != len(ws) {
			t.Fatalf("each(%x): %d attributes, the library's %d", b, len(gs), len(ws))
		}
		for i := range ws {
			if gs[i].typ != ws[i].typ || !bytes.Equal(gs[i].v, ws[i].v) {
				t.Fatalf("each(%x)[%d] = %d %x, the library's %d %x", b, i, gs[i].typ, gs[i].v, ws[i].typ, ws[i].v)
			}
		}
	})
}
