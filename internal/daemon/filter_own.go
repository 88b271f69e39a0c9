package daemon

import "sync"

// Own writes. The kernel stamps a notification with the netlink
// port of the socket whose request caused it (nlmsg_pid; 0 for the kernel's
// own changes). A pass that writes a route, a rule or an nftables object
// gets its own notification back; before, that woke one more pass, which
// read the kind again and found nothing to do. Under foreign churn on a big
// table such a pass costs as much as a repair, and the repair of the next
// deleted route waited behind it and its gap (bench-churn: p99 1.65 s).
//
// Such a notification now marks its kind dirty, so the next pass reads it
// again, and wakes nothing: the pass that wrote already planned with it
// (the kinds a pass writes are read again by the next one anyway). Only for
// routes, rules and nftables, whose changes carry no side effect the pass
// did not plan: a link or address change makes the kernel delete routes
// silently (sourceKinds), and those notifications wake as before.
var ownQuiet = map[string]bool{srcRoutes: true, srcRules: true, srcNftables: true}

// ownPorts is the set of this process's netlink ports, read by scan (all of
// the process's netlink sockets: the kernel seam's, the route batcher's,
// nftables' and WireGuard's, in whatever namespace). It is read again at
// the end of every pass and when a notification names a port it has not
// judged yet; a port stays known as ours for one more reading, so that the
// late notifications of a socket closed meanwhile are still ours. A port
// wrongly taken for ours would lose a wake-up until the periodic resync;
// one wrongly taken for foreign costs one pass.
type ownPorts struct {
	mu        sync.Mutex
	scan      func() map[uint32]bool
	cur, prev map[uint32]bool
	// foreign are the ports judged not ours since the last reading.
	foreign map[uint32]bool
}

func newOwnPorts(scan func() map[uint32]bool) *ownPorts {
	return &ownPorts{scan: scan, foreign: map[uint32]bool{}}
}

// has reports whether port is one of this process's.
func (o *ownPorts) has(port uint32) bool {
	if o == nil || port == 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur[port] || o.prev[port] {
		return true
	}
	if o.foreign[port] {
		return false
	}
	o.readLocked()
	if o.cur[port] {
		return true
	}
	o.foreign[port] = true
	return false
}

// refresh reads the ports again (after a pass: its sockets may have changed).
func (o *ownPorts) refresh() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.readLocked()
	o.mu.Unlock()
}

func (o *ownPorts) readLocked() {
	o.prev, o.cur = o.cur, o.scan()
	clear(o.foreign)
}

// refreshOwn reads this process's netlink ports again.
func (f *EventFilter) refreshOwn() {
	if f != nil {
		f.own.refresh()
	}
}
