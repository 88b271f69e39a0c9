package kernel

import (
	"encoding/binary"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// exprList lays out an expression list of one cmp expression comparing
// with v (NFTA_LIST_ELEM{NFTA_EXPR_NAME, NFTA_EXPR_DATA}).
func exprList(t *testing.T, v uint32) []byte {
	enc := func(as ...netlink.Attribute) []byte {
		ae := netlink.NewAttributeEncoder()
		for _, a := range as {
			ae.Bytes(a.Type, a.Data)
		}
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	data := enc(netlink.Attribute{Type: 1, Data: binary.BigEndian.AppendUint32(nil, 1)},
		netlink.Attribute{Type: 2, Data: binary.BigEndian.AppendUint32(nil, 0)},
		netlink.Attribute{Type: 3 | netlink.Nested, Data: enc(netlink.Attribute{Type: 1, Data: binary.BigEndian.AppendUint32(nil, v)})})
	elem := enc(netlink.Attribute{Type: 1, Data: []byte("cmp\x00")}, netlink.Attribute{Type: 2 | netlink.Nested, Data: data})
	return enc(netlink.Attribute{Type: 1 | netlink.Nested, Data: elem})
}

// The memo answers for exactly the bytes it read: other expressions, other
// user data or other anonymous set specs are read afresh, and only the
// entries met in the last read outlive it.
func TestRuleMemoIsExact(t *testing.T) {
	a, b := exprList(t, 22), exprList(t, 23)
	m1 := newRuleMemo(nil, 0)
	ra, err := m1.read(a)
	if err != nil {
		t.Fatal(err)
	}
	shape := func(r *ruleRead, exprs, ud []byte, specs []model.NftAnonSet) string {
		t.Helper()
		s, err := r.shapeOf(exprs, ud, specs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := nftwire.ShapeFingerprint(exprs, ud, specs)
		if err != nil || s != want {
			t.Fatalf("memo's shape %s, computed %s (%v)", s, want, err)
		}
		return s
	}
	s1 := shape(ra, a, []byte("u1"), nil)
	if s2 := shape(ra, a, []byte("u2"), nil); s2 == s1 {
		t.Fatal("other user data, same shape")
	}
	if s3 := shape(ra, a, []byte("u2"), []model.NftAnonSet{{Name: "__set0", Spec: []byte{1}}}); s3 == s1 {
		t.Fatal("other specs, same shape")
	}
	rb, err := m1.read(b)
	if err != nil {
		t.Fatal(err)
	}
	if rb == ra || shape(rb, b, []byte("u1"), nil) == s1 {
		t.Fatal("other expressions answered from the memo")
	}
	m2 := newRuleMemo(m1, 1)
	if r, _ := m2.read(a); r != ra {
		t.Fatal("an entry of the last read was not kept")
	}
	m3 := newRuleMemo(m2, 1)
	if r, _ := m3.read(b); r == rb {
		t.Fatal("an entry not met in the last read outlived it")
	}
}
