package nftcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

func sample() (Identity, kernel.NFTElemSnapshot) {
	id := Identity{Boot: "0b5c4e9a-6c2e-4b7e-9d1e-2f3a4b5c6d7e", Netns: 4097}
	s := kernel.NFTElemSnapshot{Gen: 1<<32 - 1, Sets: []kernel.NFTCachedSet{
		{Table: model.NftTableKey{Family: "inet", Name: "fw"}, Set: "allow", Elems: []model.NftElem{{Key: "\x0a\x00\x00\x00", End: "\x0b\x00\x00\x00"}, {Key: "\xc0\xa8\x00\x01"}}},
		{Table: model.NftTableKey{Family: "ip", Name: "nat"}, Set: "empty", Elems: []model.NftElem{}},
	}}
	return id, s
}

func TestRoundTrip(t *testing.T) {
	id, s := sample()
	gotID, got, err := Decode(Encode(id, s))
	if err != nil {
		t.Fatal(err)
	}
	if gotID != id || !reflect.DeepEqual(got, s) {
		t.Fatalf("decoded %+v %+v, want %+v %+v", gotID, got, id, s)
	}
}

// Any change to the file (a torn write, a flipped bit, bytes added) is
// refused whole: a snapshot is never taken in part.
func TestDecodeRefusesDamage(t *testing.T) {
	id, s := sample()
	b := Encode(id, s)
	for n := range len(b) {
		if _, _, err := Decode(b[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded", n, len(b))
		}
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, _, err := Decode(c); err == nil {
			t.Fatalf("byte %d flipped: decoded", i)
		}
	}
	if _, _, err := Decode(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("a byte appended: decoded")
	}
}

// Decode never panics and never allocates for counts the input cannot
// hold; what it accepts encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	id, s := sample()
	f.Add(Encode(id, s))
	f.Add(Encode(Identity{}, kernel.NFTElemSnapshot{}))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		gotID, got, err := Decode(b)
		if err != nil {
			return
		}
		if again := Encode(gotID, got); !bytes.Equal(again, b) {
			t.Fatalf("decoded %q, which encodes to %q", b, again)
		}
	})
}

// The checksum makes random bodies fail; the fuzzer reaches the body's
// parser through inputs whose checksum is right.
func FuzzDecodeBody(f *testing.F) {
	id, s := sample()
	f.Add(Encode(id, s)[len(magic)+32:])
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256Sum(body)
		b := append(append([]byte(magic), sum[:]...), body...)
		gotID, got, err := Decode(b)
		if err != nil {
			return
		}
		if again := Encode(gotID, got); !bytes.Equal(again, b) {
			t.Fatalf("decoded body %q, which encodes to %q", body, again[len(magic)+32:])
		}
	})
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

// A file whose checksum is right but whose elements are out of order or
// repeated (forged, or written by a bug) is refused: a duplicate made apply
// delete a declared element (review of the one-shot cache).
func TestDecodeRefusesUnsortedElements(t *testing.T) {
	id, s := sample()
	for _, elems := range [][]model.NftElem{
		{{Key: "\x01"}, {Key: "\x01"}},
		{{Key: "\x02"}, {Key: "\x01"}},
	} {
		s.Sets[0].Elems = elems
		if _, _, err := Decode(Encode(id, s)); err == nil {
			t.Errorf("elements %q: decoded", elems)
		}
	}
}

// A file with more elements than maxElements, all sets together, is
// refused (each set alone is under the bound), and Save does not write one.
func TestDecodeRefusesTooManyElements(t *testing.T) {
	id, s := sample()
	elems := func(n int) []model.NftElem {
		out := make([]model.NftElem, n)
		for i := range out {
			out[i].Key = string(binary.BigEndian.AppendUint32(nil, uint32(i)))
		}
		return out
	}
	s.Sets = []kernel.NFTCachedSet{
		{Table: s.Sets[0].Table, Set: "a", Elems: elems(maxElements / 2)},
		{Table: s.Sets[0].Table, Set: "b", Elems: elems(maxElements/2 + 1)},
	}
	if _, _, err := Decode(Encode(id, s)); err == nil {
		t.Errorf("%d elements: decoded", maxElements+1)
	}
	s.Sets[1].Elems = s.Sets[1].Elems[:maxElements/2]
	if _, got, err := Decode(Encode(id, s)); err != nil || len(got.Sets) != 2 {
		t.Errorf("%d elements: %v", maxElements, err)
	}
}

// Load checks the identity and the generation from the header, before
// decoding any element.
func TestHeader(t *testing.T) {
	id, s := sample()
	b := Encode(id, s)
	if got, gen, ok := header(b); !ok || got != id || gen != uint64(s.Gen) {
		t.Fatalf("header: %+v %d %v, want %+v %d", got, gen, ok, id, s.Gen)
	}
	for _, bad := range [][]byte{nil, b[:len(magic)], b[:len(magic)+32]} {
		if _, _, ok := header(bad); ok {
			t.Errorf("header of %d bytes: ok", len(bad))
		}
	}
}

// The cache is in the state directory, which may be another user's: a
// file whose checksum is right but whose names are not ones netreconcile
// writes (a boot id, a family, nftables names) is refused whole.
func TestDecodeRefusesForgedNames(t *testing.T) {
	for _, forge := range []func(id *Identity, s *kernel.NFTElemSnapshot){
		func(id *Identity, s *kernel.NFTElemSnapshot) { id.Boot = "\x1b]2;owned\x07" },
		func(id *Identity, s *kernel.NFTElemSnapshot) { id.Boot = "" },
		func(id *Identity, s *kernel.NFTElemSnapshot) { s.Sets[0].Table.Family = "inet6" },
		func(id *Identity, s *kernel.NFTElemSnapshot) { s.Sets[0].Table.Name = "fw; flush ruleset" },
		func(id *Identity, s *kernel.NFTElemSnapshot) { s.Sets[1].Set = "\x1b[2J" },
	} {
		id, s := sample()
		forge(&id, &s)
		if _, _, err := Decode(Encode(id, s)); err == nil {
			t.Errorf("forged %+v %+v: decoded", id, s.Sets)
		}
	}
}
