package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// oneShotHeap is the heap a one-shot command grows to before the garbage
// collector first runs. The runtime's own pacing collects at 4 MB and then
// at twice what is live: a one-rule apply among 1,000 rules (a few MB live,
// tens allocated) ran three collections, about 7 ms of its 40 of CPU
// (bench-nft, the binary beside nft -f), for memory the exit gives back a
// few milliseconds later. 64 MB is what the daemon's automatic limit never
// goes below (internal/daemon, memoryLimitFloor).
const oneShotHeap = 64 << 20

// oneShotGC lets a one-shot command's heap grow to oneShotHeap before the
// first collection (the memory limit, with the percentage off), and gives
// the runtime its own pacing back after the first collection that finds
// more than half of it live: a big command (a set of a million elements)
// then collects as before instead of at every step of the limit. GOGC or
// GOMEMLIMIT in the environment leave the runtime as they set it.
func oneShotGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(oneShotHeap)
	watchGC(func(live uint64) bool {
		if live <= oneShotHeap/2 {
			return true
		}
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
		return false
	})
}

// watchGC calls f after each collection with the heap then live, until f
// returns false.
func watchGC(f func(live uint64) bool) {
	// A sentinel nothing refers to: the next collection frees it and
	// runs its cleanup, which arms the next one.
	sentinel := &struct{ _ *int }{}
	runtime.AddCleanup(sentinel, func(struct{}) {
		if f(liveHeap()) {
			watchGC(f)
		}
	}, struct{}{})
}

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return math.MaxUint64
	}
	return s[0].Value.Uint64()
}
