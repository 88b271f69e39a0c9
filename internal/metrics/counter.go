package metrics

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
)

// Counter is a count that only goes up.
//
// It counts whole events in an integer: every counter of the daemon counts
// notifications, passes, changes or errors, so an increment is one atomic
// add, exact at any size, where a float64 would need a compare-and-swap
// loop. A fractional counter (CPU seconds) is read at scrape time by a
// Collector and emitted as a float instead.
type Counter struct {
	desc *Desc // nil for a series of a CounterVec
	v    atomic.Uint64
}

// NewCounter returns a counter without labels; register it to expose it.
func NewCounter(name, help string) *Counter {
	return &Counter{desc: NewDesc(CounterType, name, help)}
}

// Inc adds 1.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// Value returns the count.
func (c *Counter) Value() uint64 { return c.v.Load() }

// Describe implements Collector.
func (c *Counter) Describe() []*Desc { return []*Desc{c.desc} }

// Collect implements Collector.
func (c *Counter) Collect(e *Emitter) { e.Emit(c.desc, float64(c.Value())) }

// CounterVec is a family of counters with fixed label names. A series
// exists from its first WithLabelValues, at 0, and stays: call
// WithLabelValues at start for the series alerts and rate() need before
// the first event.
type CounterVec struct {
	desc *Desc
	mu   sync.RWMutex
	m    map[string]*vecCounter
}

type vecCounter struct {
	values []string
	c      Counter
}

// NewCounterVec returns a counter family with the given label names;
// register it to expose it.
func NewCounterVec(name, help string, labels ...string) *CounterVec {
	return &CounterVec{desc: NewDesc(CounterType, name, help, labels...), m: map[string]*vecCounter{}}
}

// WithLabelValues returns the counter of the series with these label
// values, in the order of the label names, creating it at 0. The counter
// stays valid: a hot path keeps it and pays one atomic add per event.
// It panics when the number of values is wrong, a programming error.
func (v *CounterVec) WithLabelValues(values ...string) *Counter {
	if len(values) != len(v.desc.labels) {
		panic(fmt.Sprintf("metrics: %s: %d label values for %d label names", v.desc.name, len(values), len(v.desc.labels)))
	}
	// The key is each value preceded by its length, so no two lists of
	// values share one; built on the stack, the lookup does not allocate.
	var buf [128]byte
	key := buf[:0]
	for _, s := range values {
		key = binary.AppendUvarint(key, uint64(len(s)))
		key = append(key, s...)
	}
	v.mu.RLock()
	e := v.m[string(key)]
	v.mu.RUnlock()
	if e != nil {
		return &e.c
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e := v.m[string(key)]; e != nil {
		return &e.c
	}
	e = &vecCounter{values: append([]string(nil), values...)}
	v.m[string(key)] = e
	return &e.c
}

// Describe implements Collector.
func (v *CounterVec) Describe() []*Desc { return []*Desc{v.desc} }

// Collect implements Collector.
func (v *CounterVec) Collect(e *Emitter) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, s := range v.m {
		e.Emit(v.desc, float64(s.c.Value()), s.values...)
	}
}
