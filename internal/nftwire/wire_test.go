package nftwire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

func TestMarkerRoundTrip(t *testing.T) {
	comment := []byte{0, 4, 'w', 'e', 'b', 0}
	m := Marker{Key: strings.Repeat("1f", 16), Fingerprint: strings.Repeat("a0", 16), Text: "tcp dport 80 accept"}
	ud, err := AppendMarker(comment, m)
	if err != nil {
		t.Fatal(err)
	}
	nft, got := SplitUData(ud)
	if !bytes.Equal(nft, comment) || got != m {
		t.Errorf("split: %x, %+v; want %x, %+v", nft, got, comment, m)
	}
	// A text that does not fit the kernel's 256 bytes is left out; the
	// key and fingerprint are not.
	m.Text = strings.Repeat("x", 250)
	ud, _ = AppendMarker(comment, m)
	if len(ud) > udataMax {
		t.Errorf("user data of %d bytes", len(ud))
	}
	if _, got := SplitUData(ud); got.Text != "" || got.Key != m.Key {
		t.Errorf("long text: %+v", got)
	}
	// The marker of netreconcile before nft compiled its rules (an id and
	// the text): no key, so the rule is compared by its bytecode.
	old := []byte{udataOldID, 2, 'a', 'b', udataText, 1, 'x'}
	if nft, got := SplitUData(old); len(nft) != 0 || got.Key != "" {
		t.Errorf("old marker: %x, %+v", nft, got)
	}
	// Not a record list: all nft's.
	if nft, _ := SplitUData([]byte{0, 9, 1}); len(nft) != 3 {
		t.Errorf("damaged user data kept as %x", nft)
	}
}

// exprBytes encodes an expression of a list.
func exprBytes(name string, data ...na) []byte {
	return enlist(nil, xpr(nil, name, data...))
}

func u32(k uint16, v uint32) na { return b32(k, v) }
func u64(k uint16, v uint64) na { return b64(k, v) }

// The fingerprint holds what a rule does and nothing it counts: a
// counter's values and a quota's use are zeroed, anonymous sets compared
// by content whatever the kernel named them.
func TestFingerprintZeroesState(t *testing.T) {
	rule := func(pkts uint64, set string) []byte {
		return append(exprBytes("counter", u64(counterBytes, pkts*100), u64(counterPackets, pkts)),
			exprBytes("lookup", na{Type: lookupSet, Data: zstr(set)}, u32(2, 1))...)
	}
	elem := enlist(t, nest(t, nftaSetElemKey, raw(nftaDataValue, 0, 22)))
	set := func(name string) []model.NftAnonSet {
		return []model.NftAnonSet{{Name: name, Spec: enlist(t, b32(nftaSetFlags, SetAnonymous|SetConstant)), Elems: [][]byte{elem}}}
	}
	a, err := Fingerprint(rule(0, "__set0"), nil, set("__set0"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Fingerprint(rule(1234, "__set7"), nil, set("__set7"))
	if a != b {
		t.Error("a counter's value or an anonymous set's name changed the fingerprint")
	}
	other := []model.NftAnonSet{{Name: "__set0", Spec: set("")[0].Spec, Elems: [][]byte{enlist(t, nest(t, nftaSetElemKey, raw(nftaDataValue, 0, 23)))}}}
	if c, _ := Fingerprint(rule(0, "__set0"), nil, other); c == a {
		t.Error("another element left the fingerprint alone")
	}
	if c, _ := Fingerprint(rule(0, "__set0"), []byte{0, 2, 'x', 0}, set("__set0")); c == a {
		t.Error("a comment left the fingerprint alone")
	}
	q := func(consumed uint64, flags uint32) []byte {
		return exprBytes("quota", u64(1, 1000), u32(quotaFlags, flags), u64(quotaConsumed, consumed))
	}
	x, _ := Fingerprint(q(0, 1), nil, nil)
	y, _ := Fingerprint(q(5000, 1|quotaFDepleted), nil, nil)
	if x != y {
		t.Error("a quota's use changed the fingerprint")
	}
}

// The dump forms the kernel refuses back are made writable; the others
// are left as they are.
func TestWriteExprs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want []byte
	}{
		{"exthdr set: flags dropped",
			exprBytes("exthdr", u32(exthdrSreg, 1), na{Type: exthdrType, Data: []byte{2}}, u32(3, 2), u32(4, 2), u32(exthdrFlags, 0), u32(exthdrOp, 1)),
			exprBytes("exthdr", u32(exthdrSreg, 1), na{Type: exthdrType, Data: []byte{2}}, u32(3, 2), u32(4, 2), u32(exthdrOp, 1))},
		{"exthdr strip: type and op only",
			exprBytes("exthdr", na{Type: exthdrType, Data: []byte{2}}, u32(3, 0), u32(4, 0), u32(exthdrFlags, 0), u32(exthdrOp, 1)),
			exprBytes("exthdr", na{Type: exthdrType, Data: []byte{2}}, u32(exthdrOp, 1))},
		{"exthdr load: unchanged",
			exprBytes("exthdr", u32(exthdrDreg, 1), na{Type: exthdrType, Data: []byte{2}}, u32(exthdrFlags, 0)),
			exprBytes("exthdr", u32(exthdrDreg, 1), na{Type: exthdrType, Data: []byte{2}}, u32(exthdrFlags, 0))},
		{"dynset: a timeout of 0 dropped",
			exprBytes("dynset", na{Type: dynsetSetName, Data: zstr("s")}, u64(dynsetTimeout, 0)),
			exprBytes("dynset", na{Type: dynsetSetName, Data: zstr("s")})},
		{"dynset: a timeout kept",
			exprBytes("dynset", na{Type: dynsetSetName, Data: zstr("s")}, u64(dynsetTimeout, 10000)),
			exprBytes("dynset", na{Type: dynsetSetName, Data: zstr("s")}, u64(dynsetTimeout, 10000))},
		{"osf: flags 0 dropped",
			exprBytes("osf", u32(1, 1), na{Type: 2, Data: []byte{0}}, u32(osfFlags, 0)),
			exprBytes("osf", u32(1, 1), na{Type: 2, Data: []byte{0}})},
		{"quota: depleted cleared",
			exprBytes("quota", u64(1, 0), u32(quotaFlags, quotaFDepleted|1), u64(quotaConsumed, 0)),
			exprBytes("quota", u64(1, 0), u32(quotaFlags, 1), u64(quotaConsumed, 0))},
	} {
		got, err := WriteExprs(tc.in)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %x, %v\nwant %x", tc.name, got, err, tc.want)
		}
	}
}
