package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/actual"
)

// kernelEvent is a notification of source src that the filter let through
// (or not), as KernelEvents delivers it: judged, then the loop woken.
func (e *loopEnv) kernelEvent(src string, wake bool) {
	e.t.Helper()
	if e.d.f.judged(src, wake) {
		e.d.wakeLoop()
	}
	e.step()
}

// lastReread is what the last pass asked to read again.
func (e *loopEnv) lastReread() actual.Kinds {
	e.t.Helper()
	if len(e.eng.rereads) == 0 {
		e.t.Fatal("no pass asked for a read")
	}
	return e.eng.rereads[len(e.eng.rereads)-1]
}

// A pass reads again what notifications marked and what the previous pass
// wrote; everything at start, after a configuration change, a reload, a
// failed read, the periodic resync or a wake-up from a source that marks
// nothing.
func TestPassRereadsWhatChanged(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	if got := e.lastReread(); got != actual.AllKinds {
		t.Fatalf("first pass reads %04b, want everything", got)
	}
	// It created br0 and br1: everything is read again by the next pass
	// (a link change may take routes with it), whatever woke it.
	step := func(what string, do func(), want actual.Kinds) {
		t.Helper()
		before := e.passes()
		do()
		e.run(time.Second)
		if e.passes() != before+1 {
			t.Fatalf("%s: %d passes, want 1", what, e.passes()-before)
		}
		if got := e.lastReread(); got != want {
			t.Errorf("%s: the pass reads %04b, want %04b", what, got, want)
		}
	}
	step("route event after a pass that created links", func() { e.kernelEvent(srcRoutes, true) }, actual.AllKinds)
	step("nftables event", func() { e.kernelEvent(srcNftables, true) }, actual.NFT)
	step("rule event, route event dropped", func() {
		e.kernelEvent(srcRoutes, false)
		e.kernelEvent(srcRules, true)
	}, actual.Rules)
	// The kernel deletes routes with a link or an address, silently.
	step("address event", func() { e.kernelEvent(srcAddresses, true) }, actual.AllKinds)
	step("link event", func() { e.kernelEvent(srcLinks, true) }, actual.AllKinds)
	step("a wake-up from another source", e.wake, actual.AllKinds)
	step("configuration changed", func() {
		e.write("version: 1\nlinks:\n  br0: {kind: bridge}\n")
		e.kernelEvent(srcRules, true)
	}, actual.AllKinds)
	// That pass deleted br1: everything again.
	step("after a delete", func() { e.kernelEvent(srcNftables, true) }, actual.AllKinds)
	step("reload", e.sendReload, actual.AllKinds)

	// A failed read: the retry reads everything, though only routes were
	// marked.
	e.eng.readErr = errors.New("dump interrupted")
	e.kernelEvent(srcRoutes, true)
	e.run(time.Second)
	e.eng.readErr = nil
	step("after a failed read", func() { e.kernelEvent(srcRoutes, true) }, actual.AllKinds)
	step("quiet kernel", func() { e.kernelEvent(srcRoutes, true) }, actual.Routes)

	// The periodic resync, like every source but the kernel's, gets
	// Wake (loop.go): the "another source" step above.
}

// A notification that wakes marks its kind; one that is dropped does not.
func TestEventsMarkTheirKind(t *testing.T) {
	f := NewEventFilter()
	for src, k := range sourceKinds {
		f.takeDirty()
		f.judged(src, false)
		if got := f.takeDirty(); got != 0 {
			t.Errorf("%s dropped: marked %04b", src, got)
		}
		f.judged(src, true)
		if got := f.takeDirty(); got != k {
			t.Errorf("%s woke: marked %04b, want %04b", src, got, k)
		}
	}
	f.markAll()
	if got := f.takeDirty(); got != actual.AllKinds {
		t.Errorf("markAll: %04b", got)
	}
	var none *EventFilter
	if got := none.takeDirty(); got != actual.AllKinds {
		t.Errorf("no filter: %04b, want everything", got)
	}
}
