package kernel_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	f := filepath.Join(b.TempDir(), "routes.batch")
	if err := os.WriteFile(f, []byte(batch.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	nettest.IP(b, ns, "-batch", f)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Links(); err != nil {
		b.Fatal(err)
	}
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
