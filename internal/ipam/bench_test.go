package ipam

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkAllocate measures Allocate into a registry that holds `live` allocations: each
// iteration allocates for a new owner and (untimed) releases the oldest one, with the fake
// clock moving 1s per iteration so that about 60 released addresses wait out the reuse delay.
func BenchmarkAllocate(b *testing.B) {
	for _, live := range []int{100, 1000, 4000} {
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
