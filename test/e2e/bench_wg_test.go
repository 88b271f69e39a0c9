package e2e

import (
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
	benchWGProf   = flag.Bool("bench.cpuprofile", false, "print CPU profiles of no-change passes and configures at the largest size, base64 between markers (the guest's files do not come back)")
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
	o := wgbench.Options{Kernel: true, Sizes: sizes, Rounds: *benchWGRounds, Out: os.Stdout}
	if *benchWGProf {
		o.CPUProfile = filepath.Join(t.TempDir(), "wg.prof")
	}
	wgbench.Run(t, o)
	if *benchWGProf {
		// On the host: sed -n '/^PROFILE-BEGIN NAME/,/^PROFILE-END/p' | sed '1d;$d' | base64 -d > NAME
		for _, f := range []string{o.CPUProfile, o.CPUProfile + ".configure"} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("PROFILE-BEGIN %s\n", filepath.Base(f))
			enc := base64.StdEncoding.EncodeToString(b)
			for len(enc) > 76 {
				fmt.Println(enc[:76])
				enc = enc[76:]
			}
			fmt.Printf("%s\nPROFILE-END\n", enc)
		}
	}
}
