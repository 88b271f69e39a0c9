package model

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestParseNftElemNumbersAsNftReadsThem: the element parsers of
// netreconcile's own types read a number as nft does or refuse it, never
// as something else. A port or a protocol with a leading zero was read in
// decimal (010 as 10) where nft reads octal (8), silently; Go's 0b, 0o and
// _ forms, which nft refuses, were taken for marks.
func TestParseNftElemNumbersAsNftReadsThem(t *testing.T) {
	for _, c := range []struct {
		typ, text string
		want      uint32 // when ok
		problem   string // in the error, "" when ok
	}{
		{NftService, "22", 22, ""},
		{NftService, "0", 0, ""},
		{NftService, "010", 0, "octal"},
		{NftService, "00022", 0, "octal"},
		{NftService, "0x16", 0, "write it in decimal"},
		{NftService, "1_000", 0, "expected a port"},
		{NftProto, "6", 6, ""},
		{NftProto, "010", 0, "octal"},
		{NftMark, "0x10", 16, ""},
		{NftMark, "010", 8, ""},
		{NftMark, "16", 16, ""},
		{NftMark, "0b101", 0, "not a number in nft's syntax"},
		{NftMark, "1_000", 0, "not a number in nft's syntax"},
		{NftMark, "0o7", 0, "not a number in nft's syntax"},
	} {
		e, err := ParseNftElem(c.typ, false, c.text)
		if c.problem != "" {
			if err == nil || !strings.Contains(err.Error(), c.problem) {
				t.Errorf("%s %q: error %v, want one saying %q", c.typ, c.text, err, c.problem)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.text, err)
			continue
		}
		var got uint32
		switch k := []byte(e.Key); len(k) {
		case 1:
			got = uint32(k[0])
		case 2:
			got = uint32(binary.BigEndian.Uint16(k))
		case 4:
			got = binary.NativeEndian.Uint32(k)
		}
		if got != c.want {
			t.Errorf("%s %q: read as %d, nft reads %d", c.typ, c.text, got, c.want)
		}
	}
}
