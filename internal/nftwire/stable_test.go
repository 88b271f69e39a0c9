package nftwire

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The test's own encoding of attributes, with mdlayher/netlink's encoder
// and nothing of this package: the inputs below do not change when the
// package's codec does.
type na = netlink.Attribute

func enlist(t testing.TB, as ...na) []byte {
	ae := netlink.NewAttributeEncoder()
	for _, a := range as {
		ae.Bytes(a.Type, a.Data)
	}
	b, err := ae.Encode()
	if err != nil {
		// Only an attribute past 64 KiB, which no test builds.
		panic(err)
	}
	return b
}

func nest(t testing.TB, typ uint16, as ...na) na {
	return na{Type: typ | netlink.Nested, Data: enlist(t, as...)}
}
func str(typ uint16, s string) na  { return na{Type: typ, Data: append([]byte(s), 0)} }
func b32(typ uint16, v uint32) na  { return na{Type: typ, Data: binary.BigEndian.AppendUint32(nil, v)} }
func b64(typ uint16, v uint64) na  { return na{Type: typ, Data: binary.BigEndian.AppendUint64(nil, v)} }
func raw(typ uint16, b ...byte) na { return na{Type: typ, Data: b} }
func xpr(t testing.TB, name string, data ...na) na {
	return nest(t, nftaListElem, str(nftaExprName, name), nest(t, nftaExprData, data...))
}

// stableRule is a rule's expressions and anonymous set in every shape the
// normal form touches: counters, a quota spent, last, limit with its pad,
// a lookup of an anonymous set, a dynset with a timeout of 0 and a
// counter inside, an exthdr that sets an option, osf.
func stableRule(t testing.TB, set string, pkts uint64) ([]byte, []model.NftAnonSet) {
	exprs := enlist(t,
		xpr(t, "payload", b32(1, 1), b32(2, 1), b32(3, 9), b32(4, 1)),
		xpr(t, "cmp", b32(1, 1), b32(2, 0), nest(t, 3, raw(1, 6))),
		xpr(t, "lookup", str(lookupSet, set), b32(2, 1), b32(lookupSetID, 3)),
		xpr(t, "counter", b64(counterBytes, pkts*60), b64(counterPackets, pkts), raw(counterPad)),
		xpr(t, "quota", b64(1, 1000), b32(quotaFlags, 1|quotaFDepleted), b64(quotaConsumed, pkts*99)),
		xpr(t, "last", b32(lastSet, 1), b64(lastMsecs, 1234), raw(lastPad)),
		xpr(t, "limit", b64(1, 10), b64(2, 1), b32(3, 0), b32(4, 5), b32(5, 0), raw(limitPad)),
		xpr(t, "dynset", str(dynsetSetName, "meter"), b32(3, 0), b32(4, 1), b64(dynsetTimeout, 0),
			nest(t, dynsetExpr, str(nftaExprName, "counter"), nest(t, nftaExprData, b64(counterBytes, pkts), b64(counterPackets, pkts))),
			raw(dynsetPad)),
		xpr(t, "exthdr", b32(exthdrSreg, 1), raw(exthdrType, 2), b32(3, 2), b32(4, 2), b32(exthdrFlags, 0), b32(exthdrOp, 1)),
		xpr(t, "osf", b32(1, 1), raw(2, 0), b32(osfFlags, 0)),
		xpr(t, "immediate", b32(1, 0), nest(t, 2, nest(t, 2, b32(1, 1)))),
	)
	elem := func(port byte) []byte {
		return enlist(t, nest(t, nftaSetElemKey, raw(nftaDataValue, 0, port)), b64(nftaSetElemExpiration, 77),
			nest(t, nftaSetElemExpressions, xpr(t, "counter", b64(counterBytes, pkts), b64(counterPackets, pkts))))
	}
	spec := enlist(t, b32(nftaSetFlags, SetAnonymous|SetConstant), b32(nftaSetKeyType, 13), b32(nftaSetKeyLen, 2),
		nest(t, nftaSetExpr, str(nftaExprName, "counter"), nest(t, nftaExprData, b64(counterBytes, pkts), b64(counterPackets, pkts))))
	return exprs, []model.NftAnonSet{{Name: set, Spec: spec, Elems: [][]byte{elem(80), elem(22)}}}
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:8]) }

// The normal form is kept in the kernel (the fingerprint in each rule's
// marker): the same rule must hash to the same values from one version of
// netreconcile to the next, or every rule is rewritten after an upgrade.
// The values are those of the first codec (before mdlayher/netlink's
// attribute decoder and encoder replaced our own).
func TestNormalFormStable(t *testing.T) {
	exprs, sets := stableRule(t, "__set0", 0)
	moved, setsMoved := stableRule(t, "__set7", 4242)
	fp, err := Fingerprint(exprs, []byte{0, 2, 'x', 0}, sets)
	if err != nil {
		t.Fatal(err)
	}
	fp2, _ := Fingerprint(moved, []byte{0, 2, 'x', 0}, setsMoved)
	shape, _ := ShapeFingerprint(exprs, nil, sets)
	write, err := WriteExprs(exprs)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := RewriteSetRefs(exprs, map[string]SetRef{"__set0": {"__set%d", 9}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := SpecFingerprint(sets[0].Spec)
	elem, _ := ElemFingerprint(sets[0].Elems[0])
	we, _ := WriteElem(sets[0].Elems[0])
	obj, _ := ObjFingerprint(2, enlist(t, b64(1, 1000), b32(quotaFlags, 1|quotaFDepleted), b64(quotaConsumed, 5)), []byte{0, 1, 'c'})
	wo, _ := WriteObjData(2, enlist(t, b64(1, 0), b32(quotaFlags, 1|quotaFDepleted), b64(quotaConsumed, 0)))
	got := map[string]string{
		"fingerprint": fp, "fingerprint, counted and renamed": fp2, "shape": shape,
		"write": sum(write), "rewrite": sum(rw), "spec": spec, "elem": elem, "write elem": sum(we),
		"object": obj, "write object": sum(wo),
	}
	want := map[string]string{
		"fingerprint": "caf7e631f41126045da47bb4c3860f4b", "fingerprint, counted and renamed": "caf7e631f41126045da47bb4c3860f4b",
		"shape": "23aff3e2fd499cef332754e65f921ee7", "write": "f4c714c7e2e9365d", "rewrite": "a35b664c967cd9b2",
		"spec": "3fb0debcb1ba9f4f9b6fc9ff723b3024", "elem": "e52d8c14b987368f20efd648c92677bb", "write elem": "4686668fcbf115c1",
		"object": "24dc091280bd58623278591071b2f8ce", "write object": "d8cbb53603fa8c15",
	}
	for k, v := range got {
		if want[k] != v {
			t.Errorf("%s: %s, want %s", k, v, want[k])
		}
	}
}
