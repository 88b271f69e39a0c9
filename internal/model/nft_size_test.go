package model

import (
	"testing"
	"unsafe"
)

// A desired rule or element carries an NftSource, and a megabyte of
// one-character rules (aliased) is a million of them: the loader's peak
// memory on such a file depends on its staying this small.
func TestNftSourceStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(NftSource{}); n > 24 {
		t.Errorf("NftSource is %d bytes, was 24: what its texts share belongs in NftList", n)
	}
}
