package engine_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/netreconcile/netreconcile/test/bench/growth"
	"github.com/netreconcile/netreconcile/test/bench/wgbench"
)

// TestBenchWireGuard (make bench-wg) compares netreconcile with wg(8) on
// wireguard-go devices at 1,000, 5,000 and 10,000 peers and prints the
// growth tables (test/bench/wgbench says what is measured). It asserts only
// what is not a time: a one-peer change sends one message, a pass with no
// change none. BENCH_WG_SIZES and BENCH_WG_ROUNDS change the sizes and the
// rounds, BENCH_WG_CPUPROFILE writes a CPU profile of no-change passes at
// the largest size.
func TestBenchWireGuard(t *testing.T) {
	if os.Getenv("NETRECONCILE_BENCH") != "1" {
		t.Skip("a benchmark: run with make bench-wg")
	}
	rounds := 5
	if r := os.Getenv("BENCH_WG_ROUNDS"); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 {
			t.Fatalf("BENCH_WG_ROUNDS=%q: expected a positive whole number", r)
		}
		rounds = n
	}
	wgbench.Run(t, wgbench.Options{
		Sizes:      growth.Sizes("BENCH_WG_SIZES", 1000, 5000, 10000),
		Rounds:     rounds,
		Out:        os.Stdout,
		CPUProfile: os.Getenv("BENCH_WG_CPUPROFILE"),
	})
}
