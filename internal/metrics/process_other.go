//go:build !linux

package metrics

// NewProcessCollector returns nothing off Linux: the process metrics are
// read from /proc (process_linux.go).
func NewProcessCollector() Collector { return noCollector{} }

type noCollector struct{}

func (noCollector) Describe() []*Desc { return nil }
func (noCollector) Collect(*Emitter)  {}
