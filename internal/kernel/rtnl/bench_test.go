package rtnl

import (
	"net/netip"
	"os"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// kernelBody is the body of a message a real kernel sent.
func kernelBody(b *testing.B, name string) []byte {
	b.Helper()
	raw, err := os.ReadFile("testdata/kernel/" + name)
	if err != nil {
		b.Fatal(err)
	}
	return raw[unix.SizeofNlMsghdr:]
}

var sinkRoute Route

// BenchmarkDecodeRoute decodes a route as a dump sends it: a route of a
// table above 255 with a source.
func BenchmarkDecodeRoute(b *testing.B) {
	body := kernelBody(b, "route-v4-table-1000-1.bin")
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeRoute(body, &sinkRoute); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouteWalk reads the attributes of that route the two ways: in
// place, as DecodeRoute does, and with mdlayher/netlink's AttributeDecoder,
// which copies each value and allocates itself. The difference, times the
// routes of a dump, is why route messages are walked in place.
func BenchmarkRouteWalk(b *testing.B) {
	body := kernelBody(b, "route-v4-table-1000-1.bin")[unix.SizeofRtMsg:]
	var table, oif uint32
	var dst netip.Addr
	b.Run("walker", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := walk(body)
			for w.next() {
				switch w.typ {
				case unix.RTA_TABLE:
					table = w.u32()
				case unix.RTA_OIF:
					oif = w.u32()
				case unix.RTA_DST, unix.RTA_PREFSRC:
					dst, _ = addrOf(w.v, unix.AF_INET)
				}
			}
			if w.err != nil {
				b.Fatal(w.err)
			}
		}
	})
	b.Run("AttributeDecoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ad, err := netlink.NewAttributeDecoder(body)
			if err != nil {
				b.Fatal(err)
			}
			for ad.Next() {
				switch ad.Type() {
				case unix.RTA_TABLE:
					table = ad.Uint32()
				case unix.RTA_OIF:
					oif = ad.Uint32()
				case unix.RTA_DST, unix.RTA_PREFSRC:
					ad.Do(func(v []byte) (err error) {
						dst, err = addrOf(v, unix.AF_INET)
						return err
					})
				}
			}
			if err := ad.Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	_, _, _ = table, oif, dst
}
