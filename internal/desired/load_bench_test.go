package desired

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
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
				cfg, err := Parse([]Source{{Name: "f.yaml", Data: data}})
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

// oneCharRules is about 1 MB of one-character nft rules ("[x,x,…]"), each
// an error, aliased once when alias is set: the most errors a megabyte holds.
func oneCharRules(alias bool) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nnftables:\n  inet bench:\n    chains:\n      c0:\n        rules: &e [")
	for i := 0; b.Len() < 1<<20-200; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("x")
	}
	b.WriteString("]\n")
	if alias {
		b.WriteString("      c1: {rules: *e}\n")
	}
	return []byte(b.String())
}

func BenchmarkParseOneCharRules(b *testing.B) {
	for _, alias := range []bool{false, true} {
		data := oneCharRules(alias)
		b.Run(fmt.Sprint("alias=", alias), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse([]Source{{Name: "f.yaml", Data: data}}); err == nil {
					b.Fatal("no error")
				}
			}
		})
	}
}

// BenchmarkParseFile loads the file named by $BENCH_FILE, to profile a case
// of make bench-parse.
func BenchmarkParseFile(b *testing.B) {
	name := os.Getenv("BENCH_FILE")
	if name == "" {
		b.Skip("BENCH_FILE not set")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Parse([]Source{{Name: name, Data: data}})
	}
}

// peersFile is a file of one WireGuard device of n peers, as make bench-wg
// writes it (test/bench/wgbench), with its key in dir.
func peersFile(b *testing.B, dir string, n int) []byte {
	b.Helper()
	key := filepath.Join(dir, "wg.key")
	if err := os.WriteFile(key, []byte(testKey+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    state: down\n    wireguard:\n      private-key-file: %s\n      listen-port: 51820\n      peers:\n", key)
	for i := 0; i < n; i++ {
		var k [32]byte
		binary.BigEndian.PutUint64(k[:], uint64(i)*0x9e3779b97f4a7c15+1)
		binary.BigEndian.PutUint64(k[8:], uint64(i))
		fmt.Fprintf(&s, "        - {public-key: %s, allowed-ips: [10.%d.%d.%d/32], persistent-keepalive: 25s, endpoints: [\"192.0.2.%d:%d\"]}\n",
			base64.StdEncoding.EncodeToString(k[:]), 100+i/62500, i/250%250, 1+i%250, 1+i%250, 51820+i/250)
	}
	return []byte(s.String())
}

func BenchmarkParseWireGuardPeers(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		dir := b.TempDir()
		name := filepath.Join(dir, "netreconcile.yaml")
		data := peersFile(b, dir, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg, err := Parse([]Source{{Name: name, Data: data}})
				if err != nil {
					b.Fatal(err)
				}
				if got := len(cfg.State.Links["wg0"].WireGuard.Peers); got != n {
					b.Fatalf("%d peers", got)
				}
			}
		})
	}
}
