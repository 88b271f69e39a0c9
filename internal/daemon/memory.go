package daemon

import (
	"runtime/debug"
	"time"

	"github.com/netreconcile/netreconcile/internal/actual"
)

// releaseBigPass is the size (objects in the configuration, or operations
// applied) from which a pass that read the big kinds gives its garbage
// back to the system at once; releaseEvery spaces two such releases.
const (
	releaseBigPass = 10000
	releaseEvery   = 10 * time.Second
)

// releaseMemory returns the memory a big pass no longer uses to the system
// (a collection, then the heap's free pages: debug.FreeOSMemory). The Go
// runtime otherwise keeps a heap up to twice what is live and gives the
// rest back over minutes, so a host with 100k routes held the first
// converge's peak long after it (bench-memory: 372 MB steady, 88 MB once
// released). Only for a big configuration, after a pass that read routes
// or nftables again or applied many operations, and at most once per
// releaseEvery: the collection costs tens of milliseconds there, and under
// a storm of repairs costs one release per releaseEvery: one asked for
// sooner runs at the end of that interval, on a timer of its own.
func (d *Daemon) releaseMemory(read actual.Kinds, applied int) {
	if d.stats.objects < releaseBigPass && applied < releaseBigPass {
		return
	}
	if read&(actual.Routes|actual.NFT) == 0 && applied < releaseBigPass {
		return
	}
	now := d.clk.Now()
	if wait := releaseEvery - now.Sub(d.released); !d.released.IsZero() && wait > 0 {
		if !d.releasePending.Swap(true) {
			time.AfterFunc(wait, func() {
				debug.FreeOSMemory()
				d.releasePending.Store(false)
			})
		}
		return
	}
	debug.FreeOSMemory()
	d.released = d.clk.Now()
}
