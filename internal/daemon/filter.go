package daemon

import (
	"bytes"
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/bpf"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Event filtering. A kernel notification wakes a pass only if it
// can change the plan; every other one is counted and dropped, so a routing
// daemon churning its own routes beside ours costs a decode per event, not a
// pass per burst.
//
// The contract, which every test of the filter holds it to:
//
//   - A notification wakes a pass when it is about an object of ours (our
//     route and rule protocol, a link with the ownership marker), an object
//     whose identity the file declares (a route's table and destination, a
//     rule's priority, a link's name, an nftables table), a link an object
//     of ours depends on (the device of a route of ours, a link whose lower
//     or master is one we watch), or an address on a watched link or on a
//     link the last read did not find.
//   - When in doubt, it wakes: a message it cannot decode, a source without
//     a filter, no snapshot yet (start), a configuration change (the
//     snapshot is dropped before the pass reads the kernel) or a pass that
//     could not read it. A wrong drop costs at most one resync interval
//     (--resync-interval, 5 min), of a route notification one full resync
//     interval (--full-resync-interval, 1 h: the resync reads again only
//     the route tables notifications marked, filter_pass.go): the periodic
//     resync stays, whatever the filter says.
//   - The snapshot is rebuilt after every pass that read the kernel, from
//     the enforced configuration and what the pass read, and swapped whole:
//     the sources' goroutines read it without a lock.
//
// A notification that arrives between the pass's read and the swap is judged
// by the previous snapshot. That snapshot knows everything the new one does
// except links new since the previous read, and an address on a link it
// never saw wakes; everything the file declares is in both, since a changed
// file drops the snapshot before the read.

// watchSet is the immutable snapshot the sources consult.
type watchSet struct {
	protocol int
	// declared are the declared routes' (table, destination), shared by
	// the snapshots of one configuration (and the prefilter compiled from
	// it).
	declared *declaredRoutes
	// rulePrio are the declared rules' priorities: a foreign rule of such
	// a priority may be in the way of one of ours.
	rulePrio map[uint32]struct{}
	// linkNames are the links declared, owned, referred to by a declared
	// link or a rule, or used by a route of ours or of the file.
	linkNames map[string]struct{}
	// watched are the indexes of those links as the last read found them;
	// known every index the last read found, ours or not.
	watched, known map[int32]struct{}
	// tables are the nftables tables declared or owned.
	tables map[model.NftTableKey]struct{}
	// names are the names of the links the last read found, by index: a
	// notification of a route of ours becomes the route a dump would list
	// (routeChangeOf).
	names map[uint32]string
	// srcs are the preferred sources of the routes declared and of ours:
	// the kernel deletes (IPv4) or changes (IPv6) a route whose source
	// address is removed from any link, without a route notification.
	srcs map[netip.Addr]struct{}
}

// routeDst is a route's table and masked destination, packed: 24 bytes
// and no pointer (a netip.Prefix carries its zone's), so the list of 100k
// declared routes is smaller and the collector never scans it.
type routeDst struct {
	addr  [16]byte
	table uint32
	bits  int8
	is4   bool
}

func newRouteDst(table uint32, dst netip.Prefix) routeDst {
	dst = dst.Masked()
	return routeDst{addr: dst.Addr().As16(), table: table, bits: int8(dst.Bits()), is4: dst.Addr().Is4()}
}

// buildWatchSet makes the snapshot from the enforced configuration, the
// kernel state the last pass read (nil: none) and the tables the ledger owns.
func buildWatchSet(want, have *model.State, owned map[model.NftTableKey]bool) *watchSet {
	return buildWatchSetWith(want, have, owned, nil)
}

func compareRouteDst(a, b routeDst) int {
	if c := cmp.Compare(a.table, b.table); c != 0 {
		return c
	}
	if a.is4 != b.is4 {
		if a.is4 {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a.addr[:], b.addr[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.bits, b.bits)
}

// declaredRoutes is the route part of a snapshot, which depends on the
// configuration only: a pass over 100k routes builds it once per file, not
// once per pass, and the prefilter compiled from it with it.
type declaredRoutes struct {
	protocol int
	// keys are the declared routes' (table, destination), sorted, each
	// once: the metric and TOS are left out, so the set errs towards
	// waking. A sorted list, not a map: the daemon holds it as long as
	// the file, and a map of 10k keys took twice the room (500 KB).
	keys []routeDst
}

func newDeclaredRoutes(want *model.State) *declaredRoutes {
	keys := make([]routeDst, len(want.Routes))
	for i := range want.Routes {
		r := &want.Routes[i]
		keys[i] = newRouteDst(r.Table, r.Dst)
	}
	// The routes' key order is this one, unless a destination has bits
	// past its length (masked here).
	if !slices.IsSortedFunc(keys, compareRouteDst) {
		slices.SortFunc(keys, compareRouteDst)
	}
	keys = slices.Compact(keys)
	return &declaredRoutes{protocol: want.Protocol, keys: keys}
}

// has reports whether a declared route has k's table and destination.
func (d *declaredRoutes) has(k routeDst) bool {
	_, ok := slices.BinarySearchFunc(d.keys, k, compareRouteDst)
	return ok
}

// buildWatchSetWith is buildWatchSet with the route part built already
// (nil: build it).
func buildWatchSetWith(want, have *model.State, owned map[model.NftTableKey]bool, routes *declaredRoutes) *watchSet {
	if routes == nil || routes.protocol != want.Protocol {
		routes = newDeclaredRoutes(want)
	}
	w := &watchSet{
		protocol:  want.Protocol,
		declared:  routes,
		rulePrio:  map[uint32]struct{}{},
		linkNames: map[string]struct{}{},
		watched:   map[int32]struct{}{},
		known:     map[int32]struct{}{},
		names:     map[uint32]string{},
		tables:    map[model.NftTableKey]struct{}{},
		srcs:      map[netip.Addr]struct{}{},
	}
	src := func(a netip.Addr) {
		if a.IsValid() {
			w.srcs[a.Unmap()] = struct{}{}
		}
	}
	name := func(n string) {
		if n != "" {
			w.linkNames[n] = struct{}{}
		}
	}
	dev := ""
	for i := range want.Routes {
		// Most runs of routes share their device: the map is touched
		// once per run.
		if r := &want.Routes[i]; r.Dev != dev {
			dev = r.Dev
			name(dev)
		}
		src(want.Routes[i].Src)
		for _, h := range want.Routes[i].NextHops {
			name(h.Dev)
		}
	}
	for i := range want.Rules {
		r := &want.Rules[i]
		w.rulePrio[uint32(r.Priority)] = struct{}{}
		name(r.IIF)
		name(r.OIF)
	}
	for _, l := range want.Links {
		linkRefs(l, name)
	}
	for _, t := range want.NFTables {
		w.tables[t.Key()] = struct{}{}
	}
	for k, ok := range owned {
		if ok {
			w.tables[k] = struct{}{}
		}
	}
	if have != nil {
		for _, l := range have.Links {
			if l.Owned {
				linkRefs(l, name)
			}
		}
		dev = ""
		for i := range have.Routes {
			// Routes come sorted by table and destination: most runs
			// share their device, so the map is touched once per run.
			if r := &have.Routes[i]; int(r.Protocol) == want.Protocol && r.Dev != dev {
				dev = r.Dev
				name(dev)
			}
			if r := &have.Routes[i]; int(r.Protocol) == want.Protocol {
				for _, h := range r.NextHops {
					name(h.Dev)
				}
				src(r.Src)
			}
		}
		for _, l := range have.Links {
			w.known[int32(l.Index)] = struct{}{}
			w.names[uint32(l.Index)] = l.Name
			if _, ok := w.linkNames[l.Name]; ok {
				w.watched[int32(l.Index)] = struct{}{}
			}
		}
	}
	return w
}

// linkRefs names a link and the links it refers to.
func linkRefs(l *model.Link, name func(string)) {
	name(l.Name)
	name(l.Master)
	name(l.Lower)
	if l.Veth != nil {
		name(l.Veth.Peer)
	}
	if l.VXLAN != nil {
		name(l.VXLAN.Dev)
	}
	name(l.Parent())
}

// The decoded parts of a notification the filter judges.
type (
	routeEvent struct {
		protocol, table int
		dst             netip.Prefix // invalid: could not be decoded
	}
	ruleEvent struct {
		protocol int
		priority uint32
	}
	linkEvent struct {
		index, master, lower int32
		name, alias          string
	}
	// addrEvent is an address notification: its link, its protocol
	// (IFA_PROTO, Linux 6.3; 0 when absent) and its address (IFA_LOCAL, or
	// IFA_ADDRESS without it).
	addrEvent struct {
		index int32
		proto uint8
		addr  netip.Addr
	}
	nftEvent struct {
		table model.NftTableKey
		// gen is a NEWGEN message: the end of a transaction, whose
		// changes came as messages of their own.
		gen bool
	}
)

func (w *watchSet) route(e routeEvent) bool {
	if e.protocol == w.protocol || !e.dst.IsValid() {
		return true
	}
	return w.declared.has(newRouteDst(uint32(e.table), e.dst))
}

func (w *watchSet) rule(e ruleEvent) bool {
	if e.protocol == w.protocol {
		return true
	}
	_, ok := w.rulePrio[e.priority]
	return ok
}

func (w *watchSet) link(e linkEvent) bool {
	if e.name == "" || strings.HasPrefix(e.alias, model.LinkMarker) {
		return true
	}
	if _, ok := w.linkNames[e.name]; ok {
		return true
	}
	for _, i := range []int32{e.index, e.master, e.lower} {
		if _, ok := w.watched[i]; ok && i != 0 {
			return true
		}
	}
	// A new foreign link wakes nothing (containers come and go): its
	// addresses wake until a snapshot knows it (addr). The marker written
	// on a link that is down comes with no notification at all (the
	// kernel notifies attribute changes of up links only): only the
	// resync sees that, filter or not.
	return false
}

func (w *watchSet) addr(e addrEvent) bool {
	if _, ok := w.watched[e.index]; ok {
		return true
	}
	if _, ok := w.srcs[e.addr.Unmap()]; ok && e.addr.IsValid() {
		return true
	}
	// An address of our protocol is ours on any link (IFA_PROTO): one added
	// or removed behind our back on a link the file does not name is to be
	// pruned or checked, as a route of ours.
	if e.proto != 0 && int(e.proto) == w.protocol {
		return true
	}
	_, known := w.known[e.index]
	return !known
}

func (w *watchSet) nft(e nftEvent) bool {
	if e.gen {
		return false
	}
	_, ok := w.tables[e.table]
	return ok || e.table.Name == ""
}

// Event sources, the label of netreconcile_events_total.
const (
	srcLinks     = "links"
	srcAddresses = "addresses"
	srcRoutes    = "routes"
	srcRules     = "rules"
	srcNftables  = "nftables"
	srcNexthops  = "nexthops"
)

// EventFilter is shared by the kernel sources (KernelEvents) and the daemon
// (Options.Filter): the daemon swaps in a new snapshot after each pass, the
// sources judge each notification against the one in force, without a lock.
type EventFilter struct {
	set atomic.Pointer[watchSet]
	// mu orders swaps with the route sockets' registration, so that each
	// socket carries the prefilter of the snapshot in force
	// (filter_bpf.go); routeSocks are those sockets, by descriptor.
	mu         sync.Mutex
	routeSocks map[int]bool
	// prog is the prefilter compiled for progFor.
	prog    []bpf.Instruction
	progFor *declaredRoutes
	// attachErr is the last failure to put a prefilter on a socket: that
	// socket then passes everything, costing CPU, not correctness.
	attachErr error

	// dirty is what of the kernel state may have changed since the last
	// pass took it (filter_pass.go): kinds, and the route tables that
	// route notifications named. dirtyMu guards it.
	dirtyMu sync.Mutex
	dirty   actual.Fresh
	// live counts the subscriptions of each source that listen now, and
	// unvouched says something may have changed routes unseen since the
	// last read of every table (route vouching, filter_pass.go). dirtyMu
	// guards both.
	live      map[string]int
	unvouched bool

	// own are this process's netlink ports: the notifications of its own
	// writes (filter_own.go).
	own *ownPorts
	// echoes counts the notifications of this process's own route writes,
	// and echoed is told of each: a pass waits for those of the previous
	// pass's writes before it takes the dirty kinds (awaitRouteEchoes).
	echoes atomic.Uint64
	echoed chan struct{}

	count *prometheus.CounterVec
	// Cached counters, one per source and result: a notification costs an
	// atomic add, not a label lookup.
	woke, dropped, owned map[string]prometheus.Counter
}

// NewEventFilter returns a filter that wakes on everything until the
// daemon's first pass gives it a snapshot.
func NewEventFilter() *EventFilter {
	f := &EventFilter{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netreconcile_events_total",
			Help: "Kernel notifications by source and result: woke (may change the plan: a pass follows), dropped (about objects the configuration neither owns, declares nor depends on) or own (the echo of the daemon's own write of a route, rule or nftables object: its kind is read again by the next pass, which it does not start).",
		}, []string{"source", "result"}),
		woke:       map[string]prometheus.Counter{},
		dropped:    map[string]prometheus.Counter{},
		owned:      map[string]prometheus.Counter{},
		routeSocks: map[int]bool{},
		live:       map[string]int{},
		own:        newOwnPorts(processNetlinkPorts),
		echoed:     make(chan struct{}, 1),
	}
	for _, s := range []string{srcLinks, srcAddresses, srcRoutes, srcRules, srcNftables, srcNexthops} {
		f.woke[s] = f.count.WithLabelValues(s, "woke")
		f.dropped[s] = f.count.WithLabelValues(s, "dropped")
		if ownQuiet[s] {
			f.owned[s] = f.count.WithLabelValues(s, "own")
		}
	}
	return f
}

// snapshot is the set in force; nil wakes on everything.
func (f *EventFilter) snapshot() *watchSet {
	if f == nil {
		return nil
	}
	return f.set.Load()
}

// swap puts a new snapshot in force (nil: wake on everything), with its
// prefilter on every route socket.
func (f *EventFilter) swap(w *watchSet) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set.Store(w)
	if len(f.routeSocks) == 0 {
		return
	}
	prog := f.prefilter(w)
	for fd := range f.routeSocks {
		if err := attachPrefilter(fd, prog); err != nil {
			f.attachErr = err
		}
	}
}

// addRouteSocket gives a new route socket the prefilter in force, and every
// later one; the socket must be removed (removeRouteSocket) before it is
// closed.
func (f *EventFilter) addRouteSocket(fd int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routeSocks[fd] = true
	if err := attachPrefilter(fd, f.prefilter(f.set.Load())); err != nil {
		f.attachErr = err
	}
}

// prefilter returns the route prefilter of w, compiled once per declared
// route set. f.mu is held.
func (f *EventFilter) prefilter(w *watchSet) []bpf.Instruction {
	if w == nil {
		return nil
	}
	if f.progFor != w.declared || w.declared == nil {
		f.prog, f.progFor = routePrefilter(w), w.declared
	}
	return f.prog
}

func (f *EventFilter) removeRouteSocket(fd int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	delete(f.routeSocks, fd)
	f.mu.Unlock()
}

// ownWrite reports whether m, from source src, is the echo of this
// process's own write of a route, rule or nftables object; such a
// notification marks its kind dirty and wakes nothing (filter_own.go).
func (f *EventFilter) ownWrite(src string, m syscall.NetlinkMessage) bool {
	if f == nil || !ownQuiet[src] || !f.own.has(m.Header.Pid) {
		return false
	}
	table := everyTable
	if src == srcRoutes {
		defer f.echo()
		if e, ok := decodeRoute(m); ok {
			table = e.table
			if c, ok := f.routeChangeOf(m, e); ok {
				f.markRouteChange(table, c)
				f.owned[src].Inc()
				return true
			}
		}
	}
	f.markSource(src, table)
	f.owned[src].Inc()
	return true
}

// echo counts a notification of an own route write.
func (f *EventFilter) echo() {
	f.echoes.Add(1)
	select {
	case f.echoed <- struct{}{}:
	default:
	}
}

// routeChangeOf is the change a route notification m (decoded as e) makes
// to the routes of ours a read lists, when the snapshot in force can tell:
// a route of our protocol, on links the last read named.
func (f *EventFilter) routeChangeOf(m syscall.NetlinkMessage, e routeEvent) (actual.RouteChange, bool) {
	w := f.snapshot()
	if w == nil || e.protocol != w.protocol {
		return actual.RouteChange{}, false
	}
	return routeChange(m, w.names)
}

// judged counts a decision and returns it; a wake-up marks the source's
// kind dirty (of a route, its table: everyTable when not known).
func (f *EventFilter) judged(src string, wake bool, table int) bool {
	if f == nil {
		return true
	}
	if wake {
		f.markSource(src, table)
		f.woke[src].Inc()
	} else {
		f.dropped[src].Inc()
	}
	return wake
}
