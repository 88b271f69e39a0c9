package metrics

import (
	"math"
	"sync/atomic"
)

// Gauge is a value that is set.
type Gauge struct {
	desc *Desc
	bits atomic.Uint64 // math.Float64bits of the value
}

// NewGauge returns a gauge without labels, at 0; register it to expose it.
func NewGauge(name, help string) *Gauge {
	return &Gauge{desc: NewDesc(GaugeType, name, help)}
}

// Set sets the value.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Value returns the value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

// Describe implements Collector.
func (g *Gauge) Describe() []*Desc { return []*Desc{g.desc} }

// Collect implements Collector.
func (g *Gauge) Collect(e *Emitter) { e.Emit(g.desc, g.Value()) }
