package desired

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// routesFile is a file of n routes like the ones make bench-core loads.
func routesFile(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n  bench0: {kind: device}\nroutes:\n")
	for i := 0; i < n; i++ {
		v := uint32(1<<16+i) << 8
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24)
		fmt.Fprintf(&b, "  - {to: %s, dev: bench0, table: 100}\n", p)
	}
	return []byte(b.String())
}

func BenchmarkParseRoutes(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		data := routesFile(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg, err := Parse([]Source{{"f.yaml", data}})
				if err != nil {
					b.Fatal(err)
				}
				if len(cfg.State.Routes) != n {
					b.Fatalf("%d routes", len(cfg.State.Routes))
				}
			}
		})
	}
}
