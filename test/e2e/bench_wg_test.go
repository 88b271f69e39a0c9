package e2e

import (
	"flag"
	"os"
	"testing"

	"github.com/netreconcile/netreconcile/test/bench/growth"
	"github.com/netreconcile/netreconcile/test/bench/wgbench"
)

// make bench-wg-vm: the WireGuard benchmark (test/bench/wgbench) on the
// kernel module, which production uses and this host lacks. The guest is
// emulated (TCG): its times are slow and only the same-run ratios to wg(8)
// mean anything.
var (
	benchWG       = flag.String("bench.wg", "", "run the WireGuard benchmark at these numbers of peers (1k,5k,10k)")
	benchWGRounds = flag.Int("bench.rounds", 3, "rounds of each measure of the WireGuard benchmark")
)

func TestBenchWireGuardKernel(t *testing.T) {
	if *benchWG == "" {
		t.Skip("a benchmark: make bench-wg-vm (or VMFLAGS=-bench.wg=1k,5k,10k)")
	}
	requireModules(t, "wireguard")
	sizes, err := growth.ParseSizes(*benchWG)
	if err != nil {
		t.Fatal(err)
	}
	wgbench.Run(t, wgbench.Options{Kernel: true, Sizes: sizes, Rounds: *benchWGRounds, Out: os.Stdout})
}
