package daemon

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// kernelEvent is a notification of source src that the filter let through
// (or not), as KernelEvents delivers it: judged, then the loop woken.
func (e *loopEnv) kernelEvent(src string, wake bool) {
	e.t.Helper()
	if e.d.f.judged(src, wake, everyTable) {
		e.d.wakeLoop()
	}
	e.step()
}

// lastReread is the kinds the last pass asked to read again, of the
// routes every table (lastFresh has the tables).
func (e *loopEnv) lastReread() actual.Kinds {
	e.t.Helper()
	f := e.lastFresh()
	if f.RouteTables != nil {
		e.t.Fatalf("the pass reads the routes of tables %v only", f.RouteTables)
	}
	return f.Kinds
}

// lastFresh is what the last pass asked to read again.
func (e *loopEnv) lastFresh() actual.Fresh {
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
	// A route notification that names its table: that table alone.
	before := e.passes()
	if e.d.f.judged(srcRoutes, true, 100) {
		e.d.wakeLoop()
	}
	e.step()
	e.run(time.Second)
	if got := e.lastFresh(); e.passes() != before+1 || got.Kinds != actual.Routes || len(got.RouteTables) != 1 || !got.RouteTables[100] {
		t.Errorf("route event in table 100: %d passes, reading %+v; want one, of table 100's routes", e.passes()-before, got)
	}

	// The periodic resync, like every source but the kernel's, gets
	// Wake (loop.go): the "another source" step above.
}

// A notification that wakes marks its kind; one that is dropped does not.
func TestEventsMarkTheirKind(t *testing.T) {
	f := NewEventFilter()
	for src, k := range sourceKinds {
		f.takeDirty()
		f.judged(src, false, 100)
		if got := f.takeDirty(); got.Kinds != 0 || got.RouteTables != nil {
			t.Errorf("%s dropped: marked %+v", src, got)
		}
		f.judged(src, true, everyTable)
		if got := f.takeDirty(); got.Kinds != k || got.RouteTables != nil {
			t.Errorf("%s woke: marked %+v, want %04b", src, got, k)
		}
	}
	f.markAll()
	if got := f.takeDirty(); got.Kinds != actual.AllKinds || got.RouteTables != nil {
		t.Errorf("markAll: %+v", got)
	}
	var none *EventFilter
	if got := none.takeDirty(); got.Kinds != actual.AllKinds || got.RouteTables != nil {
		t.Errorf("no filter: %+v, want everything", got)
	}
}

// A route notification marks its table alone; a pass reads every table
// after one it cannot place, past maxDirtyTables tables, and after any
// kind that marks everything. The echo of our own route write marks its
// table too, and a plan's route writes mark theirs.
func TestRouteEventsMarkTheirTable(t *testing.T) {
	f := NewEventFilter()
	take := func(what string, wantTables ...int) {
		t.Helper()
		got := f.takeDirty()
		if got.Kinds != actual.Routes {
			t.Errorf("%s: kinds %04b, want the routes", what, got.Kinds)
		}
		if wantTables == nil {
			if got.RouteTables != nil {
				t.Errorf("%s: tables %v, want every one", what, got.RouteTables)
			}
			return
		}
		if len(got.RouteTables) != len(wantTables) {
			t.Errorf("%s: tables %v, want %v", what, got.RouteTables, wantTables)
		}
		for _, tb := range wantTables {
			if !got.RouteTables[tb] {
				t.Errorf("%s: tables %v, want %v", what, got.RouteTables, wantTables)
			}
		}
	}
	f.judged(srcRoutes, true, 100)
	take("one event", 100)
	f.judged(srcRoutes, true, 100)
	f.judged(srcRoutes, false, 7)
	f.judged(srcRoutes, true, 254)
	take("two tables, one event dropped", 100, 254)
	f.judged(srcRoutes, true, 100)
	f.judged(srcRoutes, true, everyTable)
	f.judged(srcRoutes, true, 101)
	take("an event that names no table")
	for tb := range maxDirtyTables + 1 {
		f.judged(srcRoutes, true, 1000+tb)
	}
	take("more tables than maxDirtyTables")
	f.judged(srcRoutes, true, 100)
	f.judged(srcLinks, true, everyTable)
	if got := f.takeDirty(); got.Kinds != actual.AllKinds || got.RouteTables != nil {
		t.Errorf("route and link events: %+v, want everything", got)
	}

	// The echo of our own write: its table.
	f.own = newOwnPorts(func() map[uint32]bool { return map[uint32]bool{4242: true} })
	f.refreshOwn()
	m := routeMsg(unix.RTM_NEWROUTE, 245, 102, "10.9.0.0/16")
	m.Header.Pid = 4242
	if !f.ownWrite(srcRoutes, m) {
		t.Fatal("our own route write not recognised")
	}
	take("our own write", 102)

	// A plan's route writes: their tables; a link write: everything.
	r := model.Route{Table: 7}
	d := &Daemon{f: f}
	d.markWritten(&diff.Plan{Ops: []diff.Op{{Kind: diff.KindRoute, Route: &r}}}, false)
	take("a route written", 7)
	d.markWritten(&diff.Plan{Ops: []diff.Op{{Kind: diff.KindRoute, Route: &r}, {Kind: diff.KindLink}}}, false)
	if got := f.takeDirty(); got.Kinds != actual.AllKinds || got.RouteTables != nil {
		t.Errorf("a route and a link written: %+v, want everything", got)
	}
	// Echoed, a route write marks nothing: its notification patches its
	// table. A link write still marks everything.
	d.markWritten(&diff.Plan{Ops: []diff.Op{{Kind: diff.KindRoute, Route: &r}}}, true)
	if got := f.takeDirty(); got.Kinds != 0 || got.RouteTables != nil || got.RouteChanges != nil {
		t.Errorf("a route written, echoed: %+v, want nothing", got)
	}
	d.markWritten(&diff.Plan{Ops: []diff.Op{{Kind: diff.KindRoute, Route: &r}, {Kind: diff.KindLink}}}, true)
	if got := f.takeDirty(); got.Kinds != actual.AllKinds || got.RouteTables != nil {
		t.Errorf("a route and a link written, echoed: %+v, want everything", got)
	}
}

// WireGuard devices send no notifications: a pass woken by a route does
// not read them again (ten thousand peers for one route), the endpoint
// rotation reads them every rotation interval (30 s here) counted from the
// last pass that read them, whatever passes ran between, and anything
// that reads the links reads them too.
func TestWireGuardReadOnItsTimer(t *testing.T) {
	e := newLoopEnv(t, "version: 1\n")
	e.write(wgConfig(t, e.dir))
	e.eng.kernel["wg0"] = true
	e.start()
	// The first pass created br0: the next reads everything.
	e.run(time.Second)
	e.kernelEvent(srcRoutes, true)
	e.run(time.Second)
	if got := e.lastReread(); got != actual.AllKinds {
		t.Fatalf("the pass after creating br0 reads %05b, want everything", got)
	}
	read := e.lastStart()
	for i := 0; i < 2; i++ {
		e.run(10 * time.Second)
		before := e.passes()
		e.kernelEvent(srcRoutes, true)
		e.run(time.Second)
		if e.passes() != before+1 {
			t.Fatalf("route event: %d passes, want 1", e.passes()-before)
		}
		if got := e.lastReread(); got != actual.Routes {
			t.Errorf("a route event %v after the last read: the pass reads %05b, want routes (%05b) only", e.lastStart().Sub(read), got, actual.Routes)
		}
	}
	before := e.passes()
	e.run(read.Add(30 * time.Second).Sub(e.clk.Now()))
	if e.passes() != before+1 || !e.lastStart().Equal(read.Add(30*time.Second)) {
		t.Fatalf("the rotation tick: %d passes, the last at %v after the read; want one at 30 s", e.passes()-before, e.lastStart().Sub(read))
	}
	if got := e.lastReread(); got != actual.WireGuard {
		t.Errorf("the rotation tick reads %05b, want the WireGuard devices (%05b)", got, actual.WireGuard)
	}
	// A link event reads the links, and so the devices: the next tick is
	// 30 s after it.
	e.run(5 * time.Second)
	e.kernelEvent(srcLinks, true)
	e.run(time.Second)
	linkRead := e.lastStart()
	before = e.passes()
	e.run(linkRead.Add(30 * time.Second).Sub(e.clk.Now()))
	if e.passes() != before+1 || !e.lastStart().Equal(linkRead.Add(30*time.Second)) {
		t.Errorf("after a link event: %d passes, the last %v after it; want one at 30 s", e.passes()-before, e.lastStart().Sub(linkRead))
	}
}

// The periodic resync reads every kind again, but of the routes only what
// the notifications do not vouch for: every table while a subscription it
// depends on is not listening, after one stopped, after a nexthop object
// changed, and every FullResync; otherwise the tables marked, none when
// none was. Without subscriptions (no kernel sources) every resync reads
// every table.
func TestResyncReadsRoutesNotVouchedFor(t *testing.T) {
	e := newLoopEnv(t, "version: 1\n")
	resync := func(what string, want actual.Fresh) {
		t.Helper()
		before := e.passes()
		e.d.resync()
		e.step()
		e.run(time.Second)
		if e.passes() != before+1 {
			t.Fatalf("%s: %d passes, want 1", what, e.passes()-before)
		}
		got := e.lastFresh()
		if got.Kinds != want.Kinds || (got.RouteTables == nil) != (want.RouteTables == nil) || len(got.RouteTables) != len(want.RouteTables) {
			t.Errorf("%s: the resync reads %05b of tables %v, want %05b of tables %v (nil: every one)", what, got.Kinds, got.RouteTables, want.Kinds, want.RouteTables)
		}
	}
	notRoutes := actual.Fresh{Kinds: actual.AllKinds &^ actual.Routes}
	e.start()
	resync("no kernel sources", actual.All)

	noop := func() {}
	for _, s := range vouchSources {
		e.d.f.subscribed(s, noop)
	}
	resync("subscriptions made after the last read", actual.All)
	resync("quiet kernel", notRoutes)
	e.d.f.judged(srcRoutes, true, 100)
	resync("a route of table 100 changed", actual.Fresh{Kinds: actual.AllKinds, RouteTables: map[int]bool{100: true}})
	resync("quiet again", notRoutes)
	e.d.f.judged(srcAddresses, true, everyTable)
	resync("an address changed", actual.All)

	e.d.f.decide(srcNexthops, syscall.NetlinkMessage{})
	resync("a nexthop object changed", actual.All)
	resync("quiet after the nexthop", notRoutes)

	e.d.f.unsubscribed(srcLinks)
	resync("the link subscription stopped", actual.All)
	resync("the link subscription is still down", actual.All)
	e.d.f.subscribed(srcLinks, noop)
	resync("the link subscription back", actual.All)
	resync("quiet after it", notRoutes)

	e.eng.silentDeletes = true
	resync("the kernel deletes IPv6 routes silently", actual.All)
	resync("and still does", actual.All)
	e.eng.silentDeletes = false
	resync("it does not any more", notRoutes)

	e.run(DefaultFullResync)
	resync("an hour after the last read of every table", actual.All)
	resync("quiet after the full read", notRoutes)
}
