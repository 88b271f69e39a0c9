package daemon

import (
	"github.com/netreconcile/netreconcile/internal/actual"
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

// Dirty kinds (issue 16). A pass reads again only the kinds of kernel state
// that may have changed since the previous pass read them, and takes the
// others from that read (engine.SetReread):
//
//   - a kernel notification that wakes marks its kind (routes, rules,
//     nftables: judged in filter.go); a link or address notification marks
//     everything, since the kernel changes routes with them silently;
//   - everything is read on the first pass, after a configuration change
//     or a reload, on the periodic resync, after a source failed (ENOBUFS:
//     events were lost) and after a pass that could not read;
//   - a wake-up from any other source (the file watches, a source added by
//     someone else, Wake) reads everything: when in doubt, read;
//   - the kinds a pass wrote (or tried to) are read again by the next one,
//     whatever the notifications say (marked here, and by the engine's
//     Apply itself);
//   - WireGuard devices, far veth ends and FoU ports have no notifications
//     and are read on every pass.
//
// The kinds are taken when the pass starts, before it reads: a change seen
// during the pass marks its kind for the next one.

// sourceKinds maps the kernel sources to the kinds their events mark. A
// link or address change marks everything: the kernel deletes the IPv4
// routes through a link that goes down or loses the address they use
// without a notification (TestRepairsDrift saw it), and a netdev chain with
// its device; links change rarely.
var sourceKinds = map[string]actual.Kinds{
	srcLinks:     actual.AllKinds,
	srcAddresses: actual.AllKinds,
	srcRoutes:    actual.Routes,
	srcRules:     actual.Rules,
	srcNftables:  actual.NFT,
}

// markAll asks the next pass to read everything.
func (f *EventFilter) markAll() {
	if f != nil {
		f.dirty.Store(uint32(actual.AllKinds))
	}
}

// mark asks the next pass to read k again.
func (f *EventFilter) mark(k actual.Kinds) {
	if f != nil {
		f.dirty.Or(uint32(k))
	}
}

// takeDirty returns the kinds marked since the last call, and clears them.
func (f *EventFilter) takeDirty() actual.Kinds {
	if f == nil {
		return actual.AllKinds
	}
	return actual.Kinds(f.dirty.Swap(0))
}

// rereadKinds is what this pass reads again: what notifications marked,
// or everything after a configuration change.
func (d *Daemon) rereadKinds() actual.Kinds {
	k := d.f.takeDirty()
	if d.gen != d.readGen {
		k = actual.AllKinds
	}
	return k
}

// markWritten marks the kinds of every operation a pass tried.
func (d *Daemon) markWritten(plan *diff.Plan) {
	d.f.mark(engine.WrittenKinds(plan))
}

// kindMarker is a source whose wake-ups mark the kinds of kernel state they
// are about (through the EventFilter): the loop gives it a wake that does
// not ask for a full read.
type kindMarker interface{ marksKinds() }

// kernelSource is a source of KernelEvents.
type kernelSource struct{ SourceFunc }

func (kernelSource) marksKinds() {}
