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

// TestMarshalAsTheEncoder holds marshal to mdlayher/netlink's encoder on
// attribute lists of every payload length to a few past alignment, flags in
// the types, stale lengths (marshal computes its own) and the size limit.
func TestMarshalAsTheEncoder(t *testing.T) {
	var as []attr
	for n := 0; n < 40; n++ {
		as = append(as, attr{Type: uint16(n) | netlink.Nested*uint16(n%2), Length: 3, Data: bytes.Repeat([]byte{byte(n + 1)}, n)})
		ae := netlink.NewAttributeEncoder()
		for _, a := range as {
			ae.Bytes(a.Type, a.Data)
		}
		want, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshal(as)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("marshal of %d attributes = %x, %v; the encoder's %x", len(as), got, err, want)
		}
	}
	for _, n := range []int{65531, 65532} {
		ae := netlink.NewAttributeEncoder()
		ae.Bytes(1, make([]byte, n))
		_, werr := ae.Encode()
		if _, err := marshal([]attr{{Type: 1, Data: make([]byte, n)}}); (err != nil) != (werr != nil) {
			t.Errorf("a payload of %d bytes: error %v, the encoder's %v", n, err, werr)
		}
	}
}
