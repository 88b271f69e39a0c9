package ipam

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkAllocate measures Allocate in one process into a registry that holds `live`
// allocations: each iteration allocates for a new owner and, untimed, releases the oldest one,
// with the fake clock moving 1s per iteration so that about 60 released addresses wait out the
// reuse delay.
func BenchmarkAllocate(b *testing.B) {
	for _, live := range []int{100, 1000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			ctx := context.Background()
			clock := newFakeClock()
			r := openTest(b, b.TempDir(), clock, processPool())
			for i := range live {
				if _, err := r.Allocate(ctx, "p", "o"+strconv.Itoa(i), ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := r.Allocate(ctx, "p", "o"+strconv.Itoa(live+i), ""); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, _, err := r.Release(ctx, "p", "o"+strconv.Itoa(i), ""); err != nil {
					b.Fatal(err)
				}
				clock.Advance(time.Second)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "allocs/s")
		})
	}
}

var (
	throughput    = flag.Bool("ipam.throughput", false, "measure allocations per second (make bench-ipam)")
	throughputDir = flag.String("ipam.dir", "", "where to put the registries measured; the file system matters (default: a temporary directory)")
	throughputN   = flag.Int("ipam.n", 2000, "allocations per measurement")
)

// TestThroughput prints how many allocations per second one process, 8 processes at once, and
// one new process per allocation (as a CNI plugin is run) make into a registry growing from
// empty to -ipam.n allocations.
func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("measures throughput only with -ipam.throughput (make bench-ipam)")
	}
	base := *throughputDir
	if base == "" {
		base = t.TempDir()
	}
	n := *throughputN
	newDir := func() string {
		dir, err := os.MkdirTemp(base, "registry-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("ipam throughput in %s, registry growing from 0 to %d allocations (load average %s)\n",
		base, n, strings.Join(strings.Fields(string(load))[:3], " "))
	report := func(what string, count int, d time.Duration) {
		fmt.Printf("  %-28s %5d allocations in %7v: %6.0f allocations/s\n", what, count, d.Round(time.Millisecond), float64(count)/d.Seconds())
	}

	ctx := context.Background()
	r := openTest(t, newDir(), nil, processPool())
	began := time.Now()
	for i := range n {
		if _, err := r.Allocate(ctx, "p", "o"+strconv.Itoa(i), "eth0"); err != nil {
			t.Fatal(err)
		}
	}
	report("1 process:", n, time.Since(began))

	const procs = 8
	dir := newDir()
	helpers := make([]*helper, procs)
	for i := range helpers {
		helpers[i] = startHelper(t, dir, "h"+strconv.Itoa(i), n/procs, false)
	}
	began = time.Now()
	for _, h := range helpers {
		h.start.Close()
	}
	var wg sync.WaitGroup
	for _, h := range helpers {
		wg.Go(func() {
			if _, err := h.finish(); err != nil {
				t.Errorf("helper: %v; stderr: %s", err, h.stderr.String())
			}
		})
	}
	wg.Wait()
	report(strconv.Itoa(procs)+" processes at once:", n/procs*procs, time.Since(began))

	// Each process allocates once, with nothing to reuse from an earlier change; the time
	// includes starting the process.
	dir = newDir()
	execs := max(n/20, 1)
	began = time.Now()
	for i := range execs {
		h := startHelper(t, dir, "e"+strconv.Itoa(i), 1, false)
		h.start.Close()
		if _, err := h.finish(); err != nil {
			t.Fatalf("helper: %v; stderr: %s", err, h.stderr.String())
		}
	}
	report("a new process each:", execs, time.Since(began))
}
