package metrics

import (
	"runtime"
	rtmetrics "runtime/metrics"
)

// NewGoCollector returns the Go runtime's metrics, under the names and
// meanings of client_golang's Go collector for those it keeps (a
// dashboard made for that keeps working), read from runtime/metrics,
// which does not stop the world as runtime.ReadMemStats does:
//
//	go_goroutines                  goroutines that exist
//	go_threads                     OS threads created
//	go_info{version}               1, with the Go version
//	go_memstats_alloc_bytes        heap bytes in live and not yet swept objects
//	go_memstats_heap_alloc_bytes   the same, under its other name
//	go_memstats_alloc_bytes_total  heap bytes allocated since start (counter)
//	go_memstats_sys_bytes          bytes the runtime obtained from the OS
//	go_memstats_next_gc_bytes      the heap size of the next collection
//	go_gc_gomemlimit_bytes         the soft memory limit (the daemon sets it)
//	go_gc_cycles_total             completed collections (counter; new: the
//	                               summary go_gc_duration_seconds is gone)
func NewGoCollector() Collector {
	c := &goCollector{
		goroutines: NewDesc(GaugeType, "go_goroutines", "Number of goroutines that currently exist."),
		threads:    NewDesc(GaugeType, "go_threads", "Number of OS threads created."),
		info:       NewDesc(GaugeType, "go_info", "Information about the Go environment.", "version"),
	}
	for _, s := range []struct {
		typ              Type
		name, help, from string
	}{
		{GaugeType, "go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", "/memory/classes/heap/objects:bytes"},
		{GaugeType, "go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", "/memory/classes/heap/objects:bytes"},
		{CounterType, "go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", "/gc/heap/allocs:bytes"},
		{GaugeType, "go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", "/memory/classes/total:bytes"},
		{GaugeType, "go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", "/gc/heap/goal:bytes"},
		{GaugeType, "go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", "/gc/gomemlimit:bytes"},
		{CounterType, "go_gc_cycles_total", "Completed garbage collection cycles, forced or not. Sourced from /gc/cycles/total:gc-cycles.", "/gc/cycles/total:gc-cycles"},
	} {
		c.sampled = append(c.sampled, NewDesc(s.typ, s.name, s.help))
		c.from = append(c.from, s.from)
	}
	return c
}

type goCollector struct {
	goroutines, threads, info *Desc
	// sampled are read from the runtime/metrics of the same index in from.
	sampled []*Desc
	from    []string
}

func (c *goCollector) Describe() []*Desc {
	return append([]*Desc{c.goroutines, c.threads, c.info}, c.sampled...)
}

func (c *goCollector) Collect(e *Emitter) {
	e.Emit(c.goroutines, float64(runtime.NumGoroutine()))
	// Counting the runtime's list of threads, as client_golang does; no
	// stop of the world.
	n, _ := runtime.ThreadCreateProfile(nil)
	e.Emit(c.threads, float64(n))
	e.Emit(c.info, 1, runtime.Version())
	samples := make([]rtmetrics.Sample, len(c.from))
	for i, name := range c.from {
		samples[i].Name = name
	}
	rtmetrics.Read(samples)
	for i, s := range samples {
		switch s.Value.Kind() {
		case rtmetrics.KindUint64:
			e.Emit(c.sampled[i], float64(s.Value.Uint64()))
		case rtmetrics.KindFloat64:
			e.Emit(c.sampled[i], s.Value.Float64())
		}
		// KindBad: a runtime without this metric; the series is left out.
	}
}
