package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestOneShotGCGivesPacingBack: a one-shot command collects first at
// oneShotHeap, and once a collection finds more than half of it live the
// runtime's own pacing is back (a million-element apply must not collect at
// every step of the limit).
func TestOneShotGCGivesPacingBack(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	defer func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) }()

	oneShotGC()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GC percent %d after oneShotGC, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l != oneShotHeap {
		t.Fatalf("memory limit %d after oneShotGC, want %d", l, oneShotHeap)
	}
	// A small live heap keeps the setting.
	runtime.GC()
	time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GC percent %d after a small collection, want -1", p)
	}
	// More than half the limit live gives the pacing back.
	held := make([]byte, oneShotHeap/2+(8<<20))
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetGCPercent(-1) == -1 {
		if time.Now().After(deadline) {
			t.Fatal("GC percent still off with more than half the limit live")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(held)
	debug.SetGCPercent(100)
}
