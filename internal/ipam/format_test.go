package ipam

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRegistryFile(t *testing.T) {
	dir, clock := t.TempDir(), newFakeClock()
	p := testPool("pool1", 5, time.Minute, dual("10.2.0.0/16", "fd01:203:405:607::/112"))
	r := openTest(t, dir, clock, p)
	play(t, r, clock, "pool1", []step{
		{op: "alloc", owner: "pod-a", iface: "eth0", want: "10.2.0.0 fd01:203:405:607::"},
		{op: "advance", d: 1500 * time.Millisecond},
		{op: "alloc", owner: "config:link/wg0", want: "10.2.0.1 fd01:203:405:607::1"},
		{op: "alloc", owner: "pid:42", want: "10.2.0.2 fd01:203:405:607::2"},
		{op: "release", owner: "config:link/wg0", want: "10.2.0.1 fd01:203:405:607::1"},
	})
	got, err := os.ReadFile(r.Path("pool1"))
	if err != nil {
		t.Fatal(err)
	}
	want := withChecksum(`# netreconcile IPAM registry of pool pool1. Change it with ` + "`netreconcile ipam`" + `, not by hand:
# the checksum on the last line makes a damaged or edited file an error, never a silent reset.
netreconcile-ipam version=1 pool=pool1 block_size_bits=5
subnet ipv4=10.2.0.0/16 ipv6=fd01:203:405:607::/112
block index=0 ipv4=10.2.0.0/27 ipv6=fd01:203:405:607::/123 next=3
alloc ipv4=10.2.0.0 ipv6=fd01:203:405:607:: at=2026-11-22T06:00:00Z owner=pod-a iface=eth0
alloc ipv4=10.2.0.2 ipv6=fd01:203:405:607::2 at=2026-11-22T06:00:01.5Z owner=pid:42
released ipv4=10.2.0.1 ipv6=fd01:203:405:607::1 at=2026-11-22T06:00:01.5Z
`)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("registry file (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(r.Path("pool1") + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

func withChecksum(body string) []byte {
	return fmt.Appendf([]byte(body), "checksum crc32c=%08x\n", crc32.Checksum([]byte(body), castagnoli()))
}

func TestCorruptRegistry(t *testing.T) {
	ctx := context.Background()
	p := testPool("p", 2, time.Minute, dual("10.0.0.0/29", "fd00::/125"))
	const header = "netreconcile-ipam version=1 pool=p block_size_bits=2\nsubnet ipv4=10.0.0.0/29 ipv6=fd00::/125\n"
	const block0 = "block index=0 ipv4=10.0.0.0/30 ipv6=fd00::/126 next=1\n"
	const allocA = "alloc ipv4=10.0.0.0 ipv6=fd00:: at=2026-11-22T06:00:00Z owner=a\n"
	tests := []struct {
		name    string
		corrupt func(good []byte) []byte
		want    string
	}{
		{"empty", func([]byte) []byte { return nil }, "empty file"},
		{"cut short", func(g []byte) []byte { return g[:len(g)/2] }, "truncated"},
		{"checksum line lost", func(g []byte) []byte { return g[:bytes.LastIndexByte(g[:len(g)-1], '\n')+1] }, "the last line is not the checksum"},
		{"address changed", func(g []byte) []byte { return bytes.Replace(g, []byte("10.0.0.1 "), []byte("10.0.0.5 "), 1) }, "checksum mismatch"},
		{"bit flipped", func(g []byte) []byte { g = bytes.Clone(g); g[len(g)/2] ^= 0x04; return g }, "checksum mismatch"},
		{"not a registry", func([]byte) []byte { return []byte("{\"version\": 1}\n") }, "not an ipam registry"},
		{"other pool", func([]byte) []byte {
			return withChecksum(strings.Replace(header, "pool=p", "pool=q", 1))
		}, `registry of pool "q"`},
		{"duplicate address", func([]byte) []byte {
			return withChecksum(header + block0 + allocA + strings.Replace(allocA, "owner=a", "owner=b", 1))
		}, "address 10.0.0.0 also on line 4"},
		{"duplicate owner", func([]byte) []byte {
			return withChecksum(header + block0 + allocA + "alloc ipv4=10.0.0.1 ipv6=fd00::1 at=2026-11-22T06:00:00Z owner=a\n")
		}, "owner also on line 4"},
		{"pair broken", func([]byte) []byte {
			return withChecksum(header + block0 + "alloc ipv4=10.0.0.1 ipv6=fd00::2 at=2026-11-22T06:00:00Z owner=a\n")
		}, "not a pair"},
		{"block not held", func([]byte) []byte {
			return withChecksum(header + block0 + "alloc ipv4=10.0.0.4 ipv6=fd00::4 at=2026-11-22T06:00:00Z owner=a\n")
		}, "block 1 is not held"},
		{"block prefix from another layout", func([]byte) []byte {
			return withChecksum(header + strings.Replace(block0, "10.0.0.0/30", "10.0.0.4/30", 1) + allocA)
		}, "do not match the recorded subnets"},
		{"unknown record", func([]byte) []byte { return withChecksum(header + block0 + allocA + "lease x=y\n") }, `unknown record "lease"`},
		{"bad time", func([]byte) []byte {
			return withChecksum(header + block0 + strings.Replace(allocA, "2026-11-22T06:00:00Z", "yesterday", 1))
		}, "at: parsing time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, clock := t.TempDir(), newFakeClock()
			r := openTest(t, dir, clock, p)
			for _, o := range []string{"a", "b", "c"} {
				if _, err := r.Allocate(ctx, "p", o, ""); err != nil {
					t.Fatal(err)
				}
			}
			good, err := os.ReadFile(r.Path("p"))
			if err != nil {
				t.Fatal(err)
			}
			bad := tt.corrupt(good)
			if err := os.WriteFile(r.Path("p"), bad, 0o644); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Hour)
			ops := map[string]func() error{
				"Allocate":   func() error { _, err := r.Allocate(ctx, "p", "d", ""); return err },
				"Allocate a": func() error { _, err := r.Allocate(ctx, "p", "a", ""); return err },
				"Release":    func() error { _, _, err := r.Release(ctx, "p", "a", ""); return err },
				"List":       func() error { _, err := r.List(ctx, ""); return err },
				"HeldBlocks": func() error { _, err := r.HeldBlocks(ctx, "p"); return err },
				"Usage":      func() error { _, err := r.Usage(ctx, "p"); return err },
				"GC": func() error {
					_, err := r.GC(ctx, 0, func(string) bool { return false })
					return err
				},
				"Check": func() error { _, err := r.Check(ctx, nil); return err },
			}
			for name, op := range ops {
				err := op()
				if !errors.Is(err, ErrCorrupt) || !contains(err, r.Path("p")) || !contains(err, tt.want) {
					t.Errorf("%s: got %v, want ErrCorrupt naming the file and saying %q", name, err, tt.want)
				}
			}
			if after, _ := os.ReadFile(r.Path("p")); !bytes.Equal(after, bad) {
				t.Errorf("the corrupt file was changed")
			}
		})
	}
}

func TestNewerRegistryFormat(t *testing.T) {
	p := testPool("p", 2, 0, v4("10.0.0.0/29"))
	r := openTest(t, t.TempDir(), newFakeClock(), p)
	data := withChecksum("netreconcile-ipam version=2 pool=p block_size_bits=2 shards=4\n")
	if err := os.WriteFile(r.Path("p"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Allocate(context.Background(), "p", "a", "")
	if !contains(err, "format version 2, written by a newer netreconcile (which reads version 1)") || !contains(err, r.Path("p")) {
		t.Errorf("got %v", err)
	}
	if after, _ := os.ReadFile(r.Path("p")); !bytes.Equal(after, data) {
		t.Errorf("the file was changed")
	}
}

// A registry written before 1.0 (block-size-bits=) is read, and the next
// change writes it in the new form (block_size_bits=), with every record
// kept.
func TestRegistryOldFormReadWrittenNew(t *testing.T) {
	ctx := context.Background()
	p := testPool("p", 2, time.Minute, dual("10.0.0.0/29", "fd00::/125"))
	r := openTest(t, t.TempDir(), newFakeClock(), p)
	old := withChecksum("# netreconcile IPAM registry of pool p. Change it with `netreconcile ipam`, not by hand:\n" +
		"# the checksum on the last line makes a damaged or edited file an error, never a silent reset.\n" +
		"netreconcile-ipam version=1 pool=p block-size-bits=2\nsubnet ipv4=10.0.0.0/29 ipv6=fd00::/125\n" +
		"block index=0 ipv4=10.0.0.0/30 ipv6=fd00::/126 next=1\n" +
		"alloc ipv4=10.0.0.0 ipv6=fd00:: at=2026-11-22T06:00:00Z owner=a iface=eth0\n")
	if err := os.WriteFile(r.Path("p"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(ctx, "p")
	if err != nil || len(list) != 1 || list[0].Owner != "a" || list[0].Iface != "eth0" {
		t.Fatalf("the old form read as %+v, %v", list, err)
	}
	if _, err := r.Allocate(ctx, "p", "b", ""); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(r.Path("p"))
	if err != nil {
		t.Fatal(err)
	}
	want := withChecksum("# netreconcile IPAM registry of pool p. Change it with `netreconcile ipam`, not by hand:\n" +
		"# the checksum on the last line makes a damaged or edited file an error, never a silent reset.\n" +
		"netreconcile-ipam version=1 pool=p block_size_bits=2\nsubnet ipv4=10.0.0.0/29 ipv6=fd00::/125\n" +
		"block index=0 ipv4=10.0.0.0/30 ipv6=fd00::/126 next=2\n" +
		"alloc ipv4=10.0.0.0 ipv6=fd00:: at=2026-11-22T06:00:00Z owner=a iface=eth0\n" +
		"alloc ipv4=10.0.0.1 ipv6=fd00::1 at=2026-11-22T06:00:00Z owner=b\n")
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("written back (-want +got):\n%s", diff)
	}
}

// FuzzDecode: the registry's parser never panics, refuses what it cannot
// take whole, and what it accepts encodes to a file that decodes to the
// same state and encodes again byte for byte (a file as encode writes it
// is written back unchanged). The checksum would make random input fail
// first: the fuzzer's input is the body, and the target appends its
// checksum. The file is bounded (maxRegistry) before it is parsed, and
// the parser allocates in proportion to its lines.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("netreconcile-ipam version=1 pool=p block_size_bits=2\nsubnet ipv4=10.0.0.0/29 ipv6=fd00::/125\n" +
		"block index=0 ipv4=10.0.0.0/30 ipv6=fd00::/126 next=2\n" +
		"alloc ipv4=10.0.0.0 ipv6=fd00:: at=2026-11-22T06:00:00Z owner=a iface=eth0\n" +
		"released ipv4=10.0.0.1 ipv6=fd00::1 at=2026-11-22T06:00:01.5Z\n"))
	f.Add([]byte("# c\nnetreconcile-ipam version=1 pool=p block-size-bits=0\nsubnet ipv6=fd00::/120\nblock index=7 ipv6=fd00::7/128 next=0\nalloc ipv6=fd00::7 at=2026-11-22T06:00:00+01:00 owner=pid:1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		b := withChecksum(string(body))
		s, err := decode("p", b)
		if err != nil {
			return
		}
		out := s.encode()
		s2, err := decode("p", out)
		if err != nil {
			t.Fatalf("%q was accepted; written back as %q, which is refused: %v", b, out, err)
		}
		if again := s2.encode(); !bytes.Equal(out, again) {
			t.Fatalf("%q: written back as %q, then as %q", b, out, again)
		}
		if !cmp.Equal(s, s2, cmp.AllowUnexported(state{}, layout{}, record{}, heldBlock{}, released{}), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })) {
			t.Fatalf("%q: written back as %q, which decodes to another state", b, out)
		}
	})
}
