package model

import (
	"net/netip"
	"strings"
	"testing"
)

func TestMergeNftElems(t *testing.T) {
	var es []NftElem
	for _, p := range []string{"10.244.2.0/24", "10.0.0.0/8", "10.244.0.0/16", "192.0.2.0/25", "192.0.2.128/25", "192.0.2.5/32", "0.0.0.0/1", "255.0.0.0/8", "255.255.0.0/16"} {
		es = append(es, PrefixElem(netip.MustParsePrefix(p)))
	}
	var got []string
	for _, e := range MergeNftElems(es) {
		got = append(got, FormatNftElem(NftIPv4, true, e))
	}
	// 10/8 lies inside 0/1; adjacent halves of 192.0.2.0/24 stay apart.
	want := "0.0.0.0/1 192.0.2.0/25 192.0.2.128/25 255.0.0.0/8"
	if strings.Join(got, " ") != want {
		t.Errorf("merged: %s\nwant:   %s", strings.Join(got, " "), want)
	}
}
