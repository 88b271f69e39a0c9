package metrics

import (
	"fmt"
	"math"
	"sort"
	"sync"
)

// Histogram counts observations in fixed buckets, with their sum.
//
// It takes a mutex, not atomics: the daemon observes once per pass, and
// the lock gives each scrape a count, buckets and sum of the same
// observations (Prometheus requires _count to equal the +Inf bucket),
// which independent atomics would not without client_golang's
// double-buffering.
type Histogram struct {
	desc  *Desc
	upper []float64 // bucket upper bounds, increasing, without +Inf
	les   []string  // upper as the exposition writes them

	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is (upper[len-1], +Inf]
	sum    float64
}

// histSnapshot is a histogram at a scrape.
type histSnapshot struct {
	les        []string
	cumulative []uint64 // per bound of upper, then +Inf: the count
	sum        float64
}

// NewHistogram returns a histogram with these bucket upper bounds, which
// must increase; a last +Inf is implied (and dropped if given). Register
// it to expose it.
func NewHistogram(name, help string, buckets []float64) *Histogram {
	d := NewDesc(HistogramType, name, help)
	if n := len(buckets); n > 0 && math.IsInf(buckets[n-1], +1) {
		buckets = buckets[:n-1]
	}
	for i, b := range buckets {
		if math.IsNaN(b) || (i > 0 && b <= buckets[i-1]) {
			panic(fmt.Sprintf("metrics: %s: bucket bounds must increase: %v", name, buckets))
		}
	}
	h := &Histogram{desc: d, upper: append([]float64(nil), buckets...), counts: make([]uint64, len(buckets)+1)}
	for _, b := range buckets {
		h.les = append(h.les, string(appendFloat(nil, b)))
	}
	return h
}

// ExponentialBuckets returns count bounds: start, start*factor,
// start*factor², …. It panics unless start > 0, factor > 1 and count ≥ 1.
func ExponentialBuckets(start, factor float64, count int) []float64 {
	if !(start > 0) || !(factor > 1) || count < 1 {
		panic(fmt.Sprintf("metrics: ExponentialBuckets(%v, %v, %d): need start > 0, factor > 1, count >= 1", start, factor, count))
	}
	b := make([]float64, count)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// Observe adds v: to the first bucket whose bound is at least v (a NaN to
// +Inf only), and to the sum.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.upper, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.mu.Unlock()
}

func (h *Histogram) snapshot() *histSnapshot {
	s := &histSnapshot{les: h.les, cumulative: make([]uint64, len(h.counts))}
	h.mu.Lock()
	var n uint64
	for i, c := range h.counts {
		n += c
		s.cumulative[i] = n
	}
	s.sum = h.sum
	h.mu.Unlock()
	return s
}

// Describe implements Collector.
func (h *Histogram) Describe() []*Desc { return []*Desc{h.desc} }

// Collect implements Collector.
func (h *Histogram) Collect(e *Emitter) { e.add(h.desc, series{hist: h.snapshot()}, nil) }
