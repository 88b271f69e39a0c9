package daemon

import (
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/netreconcile/netreconcile/internal/actual"
)

// The soft memory limit follows Options.MemoryLimit: a size as given, off
// leaves the runtime's, auto at least the floor.
func TestSetMemoryLimit(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	d := &Daemon{log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	d.opts.MemoryLimit = 200 << 20
	d.setMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Errorf("size: limit %d, want %d", got, 200<<20)
	}
	d.opts.MemoryLimit = MemoryLimitOff
	d.setMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Errorf("off: limit %d, want it left at %d", got, 200<<20)
	}
	d.opts.MemoryLimit = MemoryLimitAuto
	// A live heap of about 100 MB makes the limit about 350 MB.
	hold := make([]byte, 100<<20)
	d.setMemoryLimit()
	got := debug.SetMemoryLimit(-1)
	if want := int64(350 << 20); got < want || got > want+memoryLimitFloor {
		t.Errorf("auto with 100 MB live: limit %d MB, want about %d", got>>20, want>>20)
	}
	runtime.KeepAlive(hold) // and no longer live below
	d.setMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != memoryLimitFloor {
		t.Errorf("auto with little live: limit %d, want the floor %d", got, memoryLimitFloor)
	}
}

// A pass that patched a route table from notifications made a new list of
// the routes: it leaves garbage as one that read them.
func TestPatchedPassLeavesGarbage(t *testing.T) {
	d := &Daemon{}
	d.stats.objects = releaseBigPass
	patched := actual.Fresh{RouteChanges: map[int][]actual.RouteChange{100: {{Delete: true}}}}
	if !d.isBigPass(garbageKinds(patched), 1) {
		t.Error("a big configuration's pass that patched a table: no release")
	}
	if d.isBigPass(garbageKinds(actual.Fresh{}), 1) {
		t.Error("a big configuration's pass that read nothing: a release")
	}
}
