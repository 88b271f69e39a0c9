package nftcompile

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The version file's parser: no panic on any input, and a record it takes
// is written back byte for byte and read again to the same version.
func FuzzDecodeVersion(f *testing.F) {
	id := binaryID{Path: "/usr/sbin/nft", Dev: 2049, Ino: 1234, Size: 22664, Mtime: 1, Ctime: 2}
	good, _ := encodeVersion(id, "nftables v1.0.6 (Lester Gooch #5)")
	f.Add(good)
	f.Add([]byte(`{"Program":{"Path":"/usr/sbin/nft"},"Version":"x\u001b[2J"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r versionRecord
		if json.Unmarshal(b, &r) != nil {
			r.Program = id
		}
		v, ok := decodeVersion(b, r.Program)
		if !ok {
			return
		}
		again, err := encodeVersion(r.Program, v)
		if err != nil {
			t.Fatal(err)
		}
		v2, ok := decodeVersion(again, r.Program)
		if !ok || v2 != v {
			t.Fatalf("%q read back as %q, %v", v, v2, ok)
		}
		again2, _ := encodeVersion(r.Program, v2)
		if !bytes.Equal(again, again2) {
			t.Fatalf("written back differently:\n%s\n%s", again, again2)
		}
	})
}

func TestDecodeVersion(t *testing.T) {
	id := binaryID{Path: "/usr/sbin/nft", Dev: 1, Ino: 2, Size: 3, Mtime: 4, Ctime: 5}
	for _, c := range []struct {
		name string
		id   binaryID
		v    string
		ok   bool
	}{
		{"the program", id, "nftables v1.0.6 (Lester Gooch #5)", true},
		{"another inode", binaryID{Path: "/usr/sbin/nft", Dev: 1, Ino: 9, Size: 3, Mtime: 4, Ctime: 5}, "nftables v1.0.6", false},
		{"another change time", binaryID{Path: "/usr/sbin/nft", Dev: 1, Ino: 2, Size: 3, Mtime: 4, Ctime: 6}, "nftables v1.0.6", false},
		{"a terminal escape", id, "nftables \x1b[2J", false},
		{"two lines", id, "nftables\nv1", false},
		{"empty", id, "", false},
		{"too long", id, string(bytes.Repeat([]byte("v"), maxVersion+1)), false},
	} {
		b, _ := encodeVersion(c.id, c.v)
		if v, ok := decodeVersion(b, id); ok != c.ok || ok && v != c.v {
			t.Errorf("%s: %q, %v", c.name, v, ok)
		}
	}
}
