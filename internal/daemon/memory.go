package daemon

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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

// garbageKinds are the kinds a pass that read f made anew, the previous
// ones garbage: those it read, and the routes when it patched a table
// (a new list of every route of ours; beside a full table, repairs under
// churn left the daemon's resident memory a third higher without it).
func garbageKinds(f actual.Fresh) actual.Kinds {
	if len(f.RouteChanges) > 0 {
		return f.Kinds | actual.Routes
	}
	return f.Kinds
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

// Memory limit modes of Options.MemoryLimit.
const (
	MemoryLimitAuto int64 = 0
	MemoryLimitOff  int64 = -1
)

// memoryLimitFloor and memoryLimitTenths make the automatic limit: the
// heap a configuration holds once loaded, times the factor (in tenths),
// and never less than the floor. A pass's transient (the kernel's objects
// read, the plan, the report of what was applied) is a few times the
// configuration: with 100k routes, a 100k-element set and 1,000 peers
// (about 35 MB loaded) the first converge peaks near 2.8 times that live
// (97 MB) and a reload's parse near 3.2 (113 MB), once the plan's array is
// made once and a big set's cold load is an op per 1,024 elements. The
// resident memory is the heap the runtime lets grow, up to the limit, plus
// about 20 MB (the binary's pages, the runtime's own): at 3.5 the limit
// sits just over both peaks, and the collector rarely has to work
// harder than its own pacing asks (bench-memory measures the resident peak
// with the limit and without it: it was 4 and 196 MB against 317 before
// the plan got compact). Those figures hold for a parse as lean as that of
// side files (routes-files, elements-file: a peak of 123 MB for that host
// in bench-memory). Written in YAML, the routes and elements cost
// yaml.v3's tree of the whole document during the parse, about a kilobyte
// a route, alone more than the limit, which the runtime then pays in
// collections (257 MB peak; 344 MB without the limit). Below the floor (small hosts) the runtime's own pacing is small
// enough.
const (
	memoryLimitFloor  = 64 << 20
	memoryLimitTenths = 35
)

// setMemoryLimit sets the runtime's soft memory limit for the configuration
// just loaded. The Go runtime lets the heap grow to twice what is live
// before it collects (GOGC=100): a first converge of a big host peaked at
// 2.1 times its live heap in resident memory. Under the limit the runtime
// collects sooner as the heap nears it, paying CPU during big passes only
// (an idle daemon allocates nothing); a pass that needs more than the limit
// still runs, the runtime capping the collector's share of the CPU.
func (d *Daemon) setMemoryLimit() {
	limit := d.opts.MemoryLimit
	switch {
	case limit == MemoryLimitOff:
		return
	case limit == MemoryLimitAuto:
		limit = max(memoryLimitFloor, memoryLimitTenths*liveHeap()/10)
	}
	debug.SetMemoryLimit(limit)
	d.log.Debug("memory limit set", "bytes", limit)
}

// liveHeap collects and returns the bytes of heap then live: what the
// daemon holds between passes (the configuration, the last readings).
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// scrapeSlack is how much a daemon's memory may grow with the garbage of
// scrapes before it is given back: a scrape of the metrics allocates
// about 200 KB (client_golang gathers every family into new structures,
// the process collector parses files of /proc, the answer is encoded and
// compressed), all garbage once answered.
const scrapeSlack = 256 << 10

// scrapeRelease gives the garbage of scrapes back to the system, as
// releaseMemory does a big pass's. Without it an idle daemon scraped every
// 15 s grows by that garbage until the runtime's next collection, at twice
// the live heap: with 10k routes, from 9 to 15 MB of anonymous memory in a
// minute (bench-memory). At most once per releaseEvery, and only once the
// memory the runtime holds has grown by scrapeSlack since the last release
// or the lowest seen, so a scraper pays a collection every few scrapes,
// and a client that scrapes in a loop one per releaseEvery.
type scrapeRelease struct {
	mu   sync.Mutex
	last time.Time
	base uint64
}

// release runs after an answer of the metrics.
func (r *scrapeRelease) release() {
	if !r.mu.TryLock() {
		return // another scrape's release runs
	}
	defer r.mu.Unlock()
	held := runtimeHeld()
	if r.base == 0 || held < r.base {
		r.base = held
	}
	if held < r.base+scrapeSlack || time.Since(r.last) < releaseEvery {
		return
	}
	debug.FreeOSMemory()
	r.last = time.Now()
	r.base = runtimeHeld()
}

// runtimeHeld is the memory the Go runtime holds from the system and has
// not given back: its share of the resident anonymous memory.
func runtimeHeld() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
