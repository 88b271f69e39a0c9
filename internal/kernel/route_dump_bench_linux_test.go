package kernel_test

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// BenchmarkRoutesDump reads 100k routes of ours among 100k foreign ones
// with the seam's dump (decoded in place by the codec) and with
// vishvananda/netlink's RouteListFilteredIter: the measured reason the
// seam dumps routes itself (docs/design.md).
func BenchmarkRoutesDump(b *testing.B) {
	ns := nettest.NewNetNS(b)
	nettest.IP(b, ns, "link", "add", "nrbench0", "type", "bridge")
	nettest.IP(b, ns, "link", "set", "nrbench0", "up")
	const n = 100000
	var batch strings.Builder
	for i := range n {
		// Owned /24s from 1.0.0.0 up, foreign ones from 64.0.0.0 up.
		// Protocols by number: iproute2 6.1's batch mode reads a name
		// after a number as that number (its name cache keeps the
		// number last parsed).
		for _, r := range []struct {
			base  uint32
			proto string
		}{{1 << 16, fmt.Sprint(model.DefaultProtocol)}, {64 << 16, "4"}} {
			v := (r.base + uint32(i)) << 8
			fmt.Fprintf(&batch, "route add %d.%d.%d.0/24 dev nrbench0 table 100 proto %s\n", v>>24, v>>16&0xff, v>>8&0xff, r.proto)
		}
	}
	k := batchOpen(b, ns, batch.String())
	for _, bc := range []struct {
		name string
		read func() ([]model.Route, error)
	}{
		{"seam", func() ([]model.Route, error) { return k.Routes(model.DefaultProtocol) }},
		{"library", func() ([]model.Route, error) { return kernel.RoutesByLibrary(k, model.DefaultProtocol) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rs, err := bc.read()
				if err != nil || len(rs) != n {
					b.Fatalf("%d routes, %v", len(rs), err)
				}
			}
		})
	}
}

// BenchmarkSharedTable reads a table where 10k routes of ours sit among
// many foreign ones (NETRECONCILE_BENCH_FOREIGN, default 250k: the share of
// a full Internet table bench-core puts in ours): our routes alone (a
// pass's read, filtered in the kernel by table and protocol) and the
// routes of a few keys of every protocol (a plan's conflict check).
func BenchmarkSharedTable(b *testing.B) {
	ns := nettest.NewNetNS(b)
	nettest.IP(b, ns, "link", "add", "nrbench0", "type", "bridge")
	nettest.IP(b, ns, "link", "set", "nrbench0", "up")
	foreign := 250000
	if v, err := strconv.Atoi(os.Getenv("NETRECONCILE_BENCH_FOREIGN")); err == nil && v > 0 {
		foreign = v
	}
	const ours = 10000
	var batch strings.Builder
	for i := range max(ours, foreign) {
		if i < ours {
			v := (1<<16 + uint32(i)) << 8
			fmt.Fprintf(&batch, "route add %d.%d.%d.0/24 dev nrbench0 table 100 proto %d\n", v>>24, v>>16&0xff, v>>8&0xff, model.DefaultProtocol)
		}
		if i < foreign {
			v := (64<<16 + uint32(i)) << 8
			fmt.Fprintf(&batch, "route add %d.%d.%d.0/24 dev nrbench0 table 100 proto 4\n", v>>24, v>>16&0xff, v>>8&0xff)
		}
	}
	k := batchOpen(b, ns, batch.String())
	keys := map[model.RouteKey]bool{}
	for _, p := range []string{"1.0.0.0/24", "64.0.5.0/24", "9.9.9.0/24"} {
		keys[model.RouteKey{Table: 100, Dst: netip.MustParsePrefix(p)}] = true
	}
	b.Run("ours", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if rs, err := k.TableRoutes(100, model.DefaultProtocol); err != nil || len(rs) != ours {
				b.Fatalf("%d routes, %v", len(rs), err)
			}
		}
	})
	b.Run("keys", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if rs, err := k.RoutesWithKeys(100, keys); err != nil || len(rs) != 2 {
				b.Fatalf("%d routes, %v", len(rs), err)
			}
		}
	})
}

// reportCPU reports the process's CPU time (user and system: the kernel
// walks a dump in the reading thread) per op, which a shared machine moves
// far less than the wall clock.
func reportCPU(b *testing.B) func() {
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
		sys := after.Stime.Nano() - before.Stime.Nano()
		b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(sys)/1e6/float64(b.N), "sys-ms/op")
	}
}
