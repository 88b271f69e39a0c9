package daemon

import (
	"time"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/model"
)

// filterBeforeRead drops the event filter's snapshot when the configuration
// changed since it was built: until this pass has read the kernel and built
// one for the new file, every notification wakes (filter.go).
func (d *Daemon) filterBeforeRead() {
	if d.gen != d.filterGen {
		d.f.swap(nil)
	}
}

// filterAfterPass builds the filter's snapshot from the enforced
// configuration and what this pass read, and puts it in force.
func (d *Daemon) filterAfterPass(want *model.State) {
	// The pass may have opened sockets (the first nftables or FoU write):
	// the echoes of its writes arrive from now on.
	d.f.refreshOwn()
	have, owned := d.eng.lastRead()
	if have == nil {
		d.f.swap(nil)
		return
	}
	var routes *declaredRoutes
	if w := d.f.snapshot(); w != nil && d.filterGen == d.gen {
		routes = w.declared
	} else if d.lastRoutes != nil && d.lastRoutesGen == d.gen {
		routes = d.lastRoutes
	}
	w := buildWatchSetWith(want, have, owned, routes)
	d.lastRoutes, d.lastRoutesGen = w.declared, d.gen
	d.f.swap(w)
	d.filterGen = d.gen
}

// Dirty kinds. A pass reads again only the kinds of kernel state
// that may have changed since the previous pass read them, and takes the
// others from that read (engine.SetReread):
//
//   - a kernel notification that wakes marks its kind (routes, rules,
//     nftables: judged in filter.go), a route notification only its
//     route's table; a link or address notification marks everything,
//     since the kernel changes routes with them silently;
//   - everything is read on the first pass, after a configuration change
//     or a reload, after a source failed (ENOBUFS: events were lost) or
//     subscribed again, and after a pass that could not read;
//   - the periodic resync reads every kind again, but of the routes only
//     the tables marked, when the notifications vouch for the others
//     (routesVouched): beside a full Internet table a dump of a shared
//     table walks every foreign route in it, so a resync that read them
//     all would cost what is there, not what is ours. Every
//     --full-resync-interval one resync reads every table whatever the
//     notifications say: the backstop for a change the kernel makes
//     without telling anyone that this list missed;
//   - a wake-up from any other source (the file watches, a source added by
//     someone else, Wake) reads everything: when in doubt, read;
//   - the kinds a pass wrote (or tried to), of routes their tables, are
//     read again by the next one, whatever the notifications say (marked
//     here, and by the engine's Apply itself);
//   - WireGuard devices send no notifications and change only when written
//     (by this daemon, or by someone running wg): they are read again with
//     the links, after a pass wrote to them, whenever everything is read
//     (the resync among them), and every rotation interval when a declared
//     peer has endpoints to rotate (the rotation judges peers by their
//     handshakes). A pass woken by routes, rules or nftables takes them
//     from the previous read and leaves the rotation as it was: ten
//     thousand peers are not read again for a route. A peer changed with
//     wg is put back at the next of these reads (at the latest the
//     resync), as before when nothing else woke the daemon;
//   - far veth ends and FoU ports have no notifications and are read on
//     every pass.
//
// The kinds are taken when the pass starts, before it reads: a change seen
// during the pass marks its kind for the next one.

// sourceKinds maps the kernel sources to the kinds their events mark. A
// link or address change marks everything: the kernel deletes the IPv4
// routes through a link that goes down or loses the address they use
// without a notification (TestRepairsDrift saw it), and a netdev chain with
// its device; links change rarely. What else changes routes silently, and
// what marks it (TestResyncVouchedRepairsSilentChanges holds each):
//
//   - a link deleted, moved to another namespace or enslaved to a VRF (the
//     kernel cycles it down and up), its MTU or carrier changed: a link
//     notification of a watched link (the devices of our routes are);
//   - the last IPv4 address of a link removed (its routes go), an IPv6
//     address removed (disable_ipv6 removes them all): an address
//     notification of a watched link;
//   - an address that is the preferred source of a route of ours removed
//     from any link (IPv4 deletes the route; IPv6 clears the source of the
//     routes on the address's own link, a watched one): the filter wakes
//     on an address of a route's src (watchSet.addr);
//   - a nexthop object deleted or replaced, which takes or changes the
//     routes that use it (ours never do, unless someone rewrote them):
//     its notification breaks the vouching without waking (nexthops);
//   - disable_ipv6 set on a link without IPv6 addresses takes its IPv6
//     routes with a route notification, but none at all when
//     net.ipv6.route.skip_notify_on_dev_down is 1: while it is, nothing
//     is vouched for (engineAdapter.silentRouteDeletes);
//   - ignore_routes_with_linkdown changes no route, only lookups; the
//     linkdown flag a route gets comes with its link's carrier, a link
//     notification.
var sourceKinds = map[string]actual.Kinds{
	srcLinks:     actual.AllKinds,
	srcAddresses: actual.AllKinds,
	srcRoutes:    actual.Routes,
	srcRules:     actual.Rules,
	srcNftables:  actual.NFT,
}

// everyTable is the route table of a route notification that cannot be
// decoded: every table is read again.
const everyTable = -1

// maxDirtyTables is how many route tables are read one by one; past it, a
// pass reads every table (one dump costs less than many).
const maxDirtyTables = 16

// marksAll reports whether the next pass is to read everything so far: a
// wake-up from the configuration's watch, a link or address change, a lost
// notification (markAll).
func (f *EventFilter) marksAll() bool {
	if f == nil {
		return true
	}
	f.dirtyMu.Lock()
	defer f.dirtyMu.Unlock()
	return f.dirty.Kinds == actual.AllKinds && f.dirty.RouteTables == nil
}

// markAll asks the next pass to read everything.
func (f *EventFilter) markAll() {
	f.mark(actual.All)
}

// mark asks the next pass to read k again.
func (f *EventFilter) mark(k actual.Fresh) {
	if f == nil {
		return
	}
	f.dirtyMu.Lock()
	f.dirty = f.dirty.Add(k)
	if len(f.dirty.RouteTables) > maxDirtyTables {
		f.dirty.RouteTables, f.dirty.RouteChanges = nil, nil
	}
	f.dirtyMu.Unlock()
}

// markSource marks the kinds a notification of src may have changed: of a
// route, its table (everyTable: all of them). A notification costs a lock
// and, for a route, a map lookup: none allocates once its table is marked.
func (f *EventFilter) markSource(src string, table int) {
	k := sourceKinds[src]
	if k != actual.Routes || table == everyTable {
		f.mark(actual.Fresh{Kinds: k})
		return
	}
	f.dirtyMu.Lock()
	defer f.dirtyMu.Unlock()
	f.markTableLocked(table)
}

// markTableLocked marks a route table to be read again; its changes are
// in that read. f.dirtyMu is held.
func (f *EventFilter) markTableLocked(table int) {
	d := &f.dirty
	switch {
	case d.Kinds&actual.Routes != 0 && d.RouteTables == nil:
		// Every table already.
	case d.Kinds&actual.Routes == 0:
		d.Kinds |= actual.Routes
		d.RouteTables = map[int]bool{table: true}
	case !d.RouteTables[table]:
		d.RouteTables[table] = true
		if len(d.RouteTables) > maxDirtyTables {
			d.RouteTables = nil
		}
	}
	if d.RouteTables == nil {
		d.RouteChanges = nil
	} else {
		delete(d.RouteChanges, table)
	}
}

// maxRouteChanges is how many notifications of our routes a table keeps
// for the next pass to patch its last read with; past it, the table is
// read (a first converge of 100k routes echoes 100k, which one dump
// reads for less).
const maxRouteChanges = 1024

// markRouteChange records the notification of a route of ours in table: the
// next pass patches the table's last read with it, unless it reads the
// table anyway.
func (f *EventFilter) markRouteChange(table int, c actual.RouteChange) {
	f.dirtyMu.Lock()
	defer f.dirtyMu.Unlock()
	d := &f.dirty
	if d.Kinds&actual.Routes != 0 && (d.RouteTables == nil || d.RouteTables[table]) {
		return
	}
	if len(d.RouteChanges[table]) >= maxRouteChanges {
		f.markTableLocked(table)
		return
	}
	if d.RouteChanges == nil {
		d.RouteChanges = map[int][]actual.RouteChange{}
	}
	d.RouteChanges[table] = append(d.RouteChanges[table], c)
}

// takeDirty returns what was marked since the last call, and clears it.
func (f *EventFilter) takeDirty() actual.Fresh {
	if f == nil {
		return actual.All
	}
	f.dirtyMu.Lock()
	defer f.dirtyMu.Unlock()
	k := f.dirty
	f.dirty = actual.Fresh{}
	return k
}

// rereadKinds is what this pass, starting at now, reads again: what
// notifications marked, or everything after a configuration change; every
// kind on the periodic resync, of the routes every table unless they are
// vouched for; the WireGuard devices when the endpoint rotation is due.
func (d *Daemon) rereadKinds(now time.Time) actual.Fresh {
	k := d.f.takeDirty()
	d.periodic = false
	if d.gen != d.readGen {
		k = actual.All
	}
	if d.resyncDue.Swap(false) {
		d.periodic = k.Kinds == 0 && len(k.RouteChanges) == 0
		k = k.Add(actual.Fresh{Kinds: actual.AllKinds &^ actual.Routes})
		if !d.f.routesVouched() || !now.Before(d.routesReadAt.Add(d.opts.FullResync)) || d.eng.silentRouteDeletes() {
			k = actual.All
		}
	}
	if readsEveryTable(k) {
		// Whatever broke the vouching is caught by this read; a break
		// during it counts for the next.
		d.f.vouchRoutes()
	}
	if due, ok := d.wgRecheckDue(); ok && !d.clk.Now().Before(due) {
		k.Kinds |= actual.WireGuard
	}
	return k
}

// wgRecheckDue is when the endpoint rotation next needs the WireGuard
// devices read: one rotation interval after the last read; ok is false
// when no declared peer has endpoints to rotate.
func (d *Daemon) wgRecheckDue() (time.Time, bool) {
	if d.cfg == nil {
		return time.Time{}, false
	}
	every := engine.RecheckInterval(d.cfg.State)
	if every <= 0 {
		return time.Time{}, false
	}
	return d.wgReadAt.Add(every), true
}

// readsEveryTable reports whether a pass that reads f reads the routes of
// every table.
func readsEveryTable(f actual.Fresh) bool { return f.Kinds&actual.Routes != 0 && f.RouteTables == nil }

// resync is the periodic resync's wake-up: the next pass reads every kind
// again (rereadKinds), of the routes what is not vouched for.
func (d *Daemon) resync() {
	d.resyncDue.Store(true)
	d.wakeLoop()
}

// resyncSource is the periodic resync's source: its wake-ups ask for a
// resync, not for a read of everything (Wake).
type resyncSource struct{ SourceFunc }

// Route vouching. Between two reads of every route table, the route
// notification socket vouches for the tables no notification marked, as
// long as it, the link and the address sockets have been subscribed the
// whole time (a subscription that fails marks everything, and so does one
// made again: what happened while none listened is unknown), and nothing
// that changes routes without a route notification happened (a nexthop
// object's change, sourceKinds). Without kernel sources (a daemon given
// other sources only) nothing vouches: every resync reads every table.

// vouchSources are the subscriptions a vouched table depends on.
var vouchSources = []string{srcRoutes, srcLinks, srcAddresses}

// subscribed records that src's subscription listens from now on. What
// happened before it did is unknown: everything is marked, and if a pass
// read the kernel already (the filter has a snapshot: the subscription
// came late, or again) wake is called, so that the next pass reads it.
func (f *EventFilter) subscribed(src string, wake func()) {
	if f == nil {
		return
	}
	f.dirtyMu.Lock()
	f.live[src]++
	f.dirtyMu.Unlock()
	f.markAll()
	if f.snapshot() != nil {
		wake()
	}
}

// unsubscribed records that src's subscription stopped listening: until it
// is back, nothing it would report is vouched for.
func (f *EventFilter) unsubscribed(src string) {
	if f == nil {
		return
	}
	f.dirtyMu.Lock()
	f.live[src]--
	f.unvouched = true
	f.dirtyMu.Unlock()
	f.markAll()
}

// breakVouch records a change that may have touched routes in any table
// without a route notification: the next resync reads every table.
func (f *EventFilter) breakVouch() {
	if f == nil {
		return
	}
	f.dirtyMu.Lock()
	f.unvouched = true
	f.dirtyMu.Unlock()
}

// vouchRoutes records that a pass reads every table from now on.
func (f *EventFilter) vouchRoutes() {
	if f == nil {
		return
	}
	f.dirtyMu.Lock()
	f.unvouched = false
	f.dirtyMu.Unlock()
}

// routesVouched reports whether the route tables no notification marked
// are as the last read of them left them.
func (f *EventFilter) routesVouched() bool {
	if f == nil {
		return false
	}
	f.dirtyMu.Lock()
	defer f.dirtyMu.Unlock()
	if f.unvouched {
		return false
	}
	for _, s := range vouchSources {
		if f.live[s] <= 0 {
			return false
		}
	}
	return true
}

// readsWireGuard reports whether a pass that reads f reads the WireGuard
// devices.
func readsWireGuard(f actual.Fresh) bool { return f.Kinds&(actual.WireGuard|actual.Links) != 0 }

// markWritten marks what every operation a pass tried may change: kinds,
// and the tables of the routes unless echoed: then the notifications of
// the route writes patch those tables (markRouteChange), and the next pass
// waits for them (awaitRouteEchoes).
func (d *Daemon) markWritten(plan *diff.Plan, echoed bool) {
	if echoed {
		d.f.mark(engine.WrittenBesidesRoutes(plan))
		return
	}
	d.f.mark(engine.Written(plan))
}

// echoWait is how long a pass waits for the notifications of the previous
// pass's route writes before it reads their tables instead. The kernel
// queues them before it answers the write: the wait is for the source's
// goroutine to take them, unless a write made no change (a delete of a
// route gone meanwhile counts as done) and sends none.
const echoWait = 250 * time.Millisecond

// owedEchoes are the notifications a pass's route writes owe the next pass:
// the count of own route echoes to reach, and the tables to read if they
// do not come.
type owedEchoes struct {
	count  uint64
	tables map[int]bool
}

// oweRouteEchoes records, after an apply whose route writes are
// echoed, what the next pass waits for: one notification per route write
// done (counted from before, the echoes before the apply). The tables of
// the route writes that failed are read again: a failed write may have
// changed something, for all the next pass can tell.
func (d *Daemon) oweRouteEchoes(res *apply.Result, before uint64) {
	failed := map[int]bool{}
	for i := range res.Failed {
		if op := &res.Failed[i].Op; op.Kind == diff.KindRoute && op.Route != nil {
			failed[int(op.Route.Table)] = true
		}
	}
	if len(failed) > 0 {
		d.f.mark(actual.Fresh{Kinds: actual.Routes, RouteTables: failed})
	}
	owed := owedEchoes{count: before, tables: map[int]bool{}}
	for _, op := range res.Done {
		if op.Kind == diff.KindRoute && op.Route != nil {
			owed.count++
			owed.tables[int(op.Route.Table)] = true
		}
	}
	if len(owed.tables) > 0 {
		d.owed = owed
	}
}

// awaitRouteEchoes waits, up to echoWait, until the notifications of the
// last pass's route writes came (their changes are then marked), and marks
// the tables of those writes to be read again if they did not. It waits
// in real time, as the notifications come.
func (d *Daemon) awaitRouteEchoes() {
	owed := d.owed
	d.owed = owedEchoes{}
	if len(owed.tables) == 0 || d.f.echoes.Load() >= owed.count {
		return
	}
	t := time.NewTimer(echoWait)
	defer t.Stop()
	for d.f.echoes.Load() < owed.count {
		select {
		case <-d.f.echoed:
		case <-t.C:
			d.f.mark(actual.Fresh{Kinds: actual.Routes, RouteTables: owed.tables})
			return
		}
	}
}

// routesEchoed reports whether the route subscription listens, so that the
// notifications of a pass's route writes will come.
func (f *EventFilter) routesEchoed() bool {
	if f == nil {
		return false
	}
	f.dirtyMu.Lock()
	defer f.dirtyMu.Unlock()
	return f.live[srcRoutes] > 0
}

// kindMarker is a source whose wake-ups mark the kinds of kernel state they
// are about (through the EventFilter): the loop gives it a wake that does
// not ask for a full read.
type kindMarker interface{ marksKinds() }

// kernelSource is a source of KernelEvents.
type kernelSource struct{ SourceFunc }

func (kernelSource) marksKinds() {}
