package daemon

import (
	"runtime/debug"
	"time"

	"github.com/netreconcile/netreconcile/internal/actual"
)

// releaseBigPass is the size (objects in the configuration, or operations
// applied) from which a pass that read the big kinds gives its garbage
// back to the system; releaseEvery spaces two such releases.
const (
	releaseBigPass = 10000
	releaseEvery   = 10 * time.Second
)

// isBigPass says whether a pass leaves garbage worth giving back: a big
// configuration whose pass read routes or nftables again, or a pass that
// applied many operations.
func (d *Daemon) isBigPass(read actual.Kinds, applied int) bool {
	if d.stats.objects < releaseBigPass && applied < releaseBigPass {
		return false
	}
	return read&(actual.Routes|actual.NFT) != 0 || applied >= releaseBigPass
}

// releaseMemory returns the memory a big pass no longer uses to the system
// (a collection, then the heap's free pages: debug.FreeOSMemory), once the
// pass has returned and its plan and readings are garbage. The Go runtime
// otherwise keeps a heap up to twice what is live, and an idle daemon
// allocates nothing that would start a collection: a host with 100k routes
// held the first converge's peak (bench-memory: 372 MB resident for about
// 55 MB live). At most once per releaseEvery: the collection costs tens of
// milliseconds there, and a storm of repairs costs one release per
// interval, the one asked for sooner running at its end on a timer.
func (d *Daemon) releaseMemory() {
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
