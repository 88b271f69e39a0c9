package rtnl

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The fuzz targets feed a decoder message bodies, seeded with the
// notifications a real kernel sent (testdata/kernel, written by
// TestKernelMessages -rtnl.update). Whatever the bytes, a decoder returns
// or fails, never panics; what it decodes, the encoder writes back to the
// same message (but the fields the encoder does not write).

// seedKernel adds the bodies of the kernel's messages of types to f.
func seedKernel(f *testing.F, types ...uint16) {
	files, err := filepath.Glob("testdata/kernel/*.bin")
	if err != nil || len(files) == 0 {
		f.Fatalf("no kernel messages in testdata/kernel: %v", err)
	}
	n := 0
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(raw) < unix.SizeofNlMsghdr {
			f.Fatalf("%s: %d bytes", p, len(raw))
		}
		typ := binary.NativeEndian.Uint16(raw[4:])
		for _, t := range types {
			if typ == t {
				f.Add(raw[unix.SizeofNlMsghdr:])
				n++
			}
		}
	}
	if n == 0 {
		f.Fatalf("no kernel message of types %v in testdata/kernel", types)
	}
}

func FuzzRoute(f *testing.F) {
	seedKernel(f, unix.RTM_NEWROUTE, unix.RTM_DELROUTE)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= unix.SizeofRtMsg {
			sameWalk(t, b[unix.SizeofRtMsg:])
		}
		var r Route
		if err := DecodeRoute(b, &r); err != nil {
			return
		}
		// What is not written: the encapsulation and the preference.
		r.Encap, r.Pref = nil, 0
		for i := range r.NextHops {
			r.NextHops[i].Encap = nil
		}
		out, err := MarshalRoute(&r)
		if err != nil {
			t.Fatalf("encode %+v: %v", r, err)
		}
		var back Route
		if err := DecodeRoute(out, &back); err != nil {
			t.Fatalf("decode of the encoding of %+v: %v", r, err)
		}
		if len(back.NextHops) == 0 && len(r.NextHops) == 0 {
			back.NextHops, r.NextHops = nil, nil
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, r)
		}
	})
}

// sameWalk holds the walker to mdlayher/netlink's AttributeDecoder: the
// same attributes, or both failing.
func sameWalk(t *testing.T, b []byte) {
	t.Helper()
	type attr struct {
		typ uint16
		v   []byte
	}
	var ours, theirs []attr
	w := walk(b)
	for w.next() {
		ours = append(ours, attr{w.typ, w.v})
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err == nil {
		for ad.Next() {
			theirs = append(theirs, attr{ad.Type(), ad.Bytes()})
		}
		err = ad.Err()
	}
	if (w.err != nil) != (err != nil) {
		t.Fatalf("walk error %v, AttributeDecoder error %v", w.err, err)
	}
	if err != nil {
		return
	}
	if len(ours) != len(theirs) {
		t.Fatalf("walk found %d attributes, AttributeDecoder %d", len(ours), len(theirs))
	}
	for i := range ours {
		if ours[i].typ != theirs[i].typ || !bytes.Equal(ours[i].v, theirs[i].v) {
			t.Fatalf("attribute %d: walk %d %x, AttributeDecoder %d %x", i, ours[i].typ, ours[i].v, theirs[i].typ, theirs[i].v)
		}
	}
}

func FuzzAddress(f *testing.F) {
	seedKernel(f, unix.RTM_NEWADDR, unix.RTM_DELADDR)
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Address
		if err := DecodeAddress(b, &a); err != nil {
			return
		}
		a.ValidLft, a.PreferredLft = 0, 0 // not written
		out, err := MarshalAddress(&a)
		if err != nil {
			t.Fatalf("encode %+v: %v", a, err)
		}
		var back Address
		if err := DecodeAddress(out, &back); err != nil {
			t.Fatalf("decode of the encoding of %+v: %v", a, err)
		}
		if back != a {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, a)
		}
	})
}

func FuzzRule(f *testing.F) {
	seedKernel(f, unix.RTM_NEWRULE, unix.RTM_DELRULE)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Rule
		if err := DecodeRule(b, &r); err != nil {
			return
		}
		out, err := MarshalRule(&r)
		if err != nil {
			t.Fatalf("encode %+v: %v", r, err)
		}
		var back Rule
		if err := DecodeRule(out, &back); err != nil {
			t.Fatalf("decode of the encoding of %+v: %v", r, err)
		}
		// Any negative suppressor is none: it reads back as -1.
		r.SuppressPrefixLen, r.SuppressIfgroup = max(r.SuppressPrefixLen, -1), max(r.SuppressIfgroup, -1)
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, r)
		}
	})
}

func FuzzLink(f *testing.F) {
	seedKernel(f, unix.RTM_NEWLINK, unix.RTM_DELLINK)
	f.Fuzz(func(t *testing.T, b []byte) {
		var l Link
		if err := DecodeLink(b, &l); err != nil {
			return
		}
		out, err := MarshalLink(&l)
		if err != nil {
			t.Fatalf("encode %+v: %v", l, err)
		}
		var back Link
		if err := DecodeLink(out, &back); err != nil {
			t.Fatalf("decode of the encoding of %+v: %v", l, err)
		}
		if !reflect.DeepEqual(back, l) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, l)
		}
		// The kind's attributes, read raw, are written back as read.
		data, err := LinkInfoData(b)
		if err != nil || data == nil {
			return
		}
		out, err = MarshalLink(&Link{Index: l.Index, Kind: l.Kind, InfoData: data})
		if err != nil {
			t.Fatalf("encode info data % x: %v", data, err)
		}
		if again, err := LinkInfoData(out); err != nil || !bytes.Equal(again, data) {
			t.Fatalf("info data round trip: got % x (%v), want % x", again, err, data)
		}
	})
}
