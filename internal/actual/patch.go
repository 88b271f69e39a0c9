package actual

import (
	"reflect"
	"slices"
	"sort"

	"github.com/netreconcile/netreconcile/internal/model"
)

// RouteChange is one route notification of our protocol, as a dump would
// list the route: the route its key holds from then on (added, or replacing
// the one there), or one deleted. A route added beside another of its key
// (no NLM_F_EXCL, no NLM_F_REPLACE: ip route prepend, append) is no
// RouteChange: its table is read. The daemon keeps them,
// per table, in the order the kernel sent them, and a read patches the
// previous read's table with them instead of dumping the table again
// (Fresh.RouteChanges). Beside a full Internet table a dump of a shared
// table walks a quarter of a million foreign routes, under churn for
// hundreds of milliseconds: the repair of one deleted route of ours waited
// for it.
type RouteChange struct {
	// Delete: the route is gone (RTM_DELROUTE); else its key holds it
	// (RTM_NEWROUTE).
	Delete bool
	Route  model.Route
}

// patchRoutes returns prev's routes, in key order, with the changes of each
// table applied in order, and the tables whose changes it could not apply
// for certain: those must be read again. prev is not written to.
//
// Applied in order, each change says what its key holds after it (the
// route, or nothing). The changes are every notification since a moment
// before prev was read, so those that prev holds already are followed by
// the later ones of their key, if any: the kernel's last word on a key
// wins. A change is certain only for a key that holds at most one route of
// ours, without next hops: IPv4 keeps several routes of one key (ip route
// prepend), IPv6 one per device and merges next hops into a route and
// takes them away one by one, and one notification says too little to
// follow those. Their tables are read.
func patchRoutes(prev []model.Route, changes map[int][]RouteChange) ([]model.Route, map[int]bool) {
	var unsure map[int]bool
	fail := func(t int) {
		if unsure == nil {
			unsure = map[int]bool{}
		}
		unsure[t] = true
	}
	if !model.RoutesSorted(prev) {
		for t := range changes {
			fail(t)
		}
		return prev, unsure
	}
	out := prev
	copied := false
	for _, t := range slices.Sorted(func(yield func(int) bool) {
		for t := range changes {
			if !yield(t) {
				return
			}
		}
	}) {
		start := sort.Search(len(out), func(j int) bool { return int(out[j].Table) >= t })
		end := start + sort.Search(len(out)-start, func(j int) bool { return int(out[start+j].Table) > t })
		// The table is patched in place in the copy that replaces out,
		// which has room for its inserts (at most one per change): one
		// allocation and one copy of the routes for a repair, not three
		// (a clone of the table, its growth on the insert, the
		// assembly), which beside ten thousand routes of ours were most
		// of a repair's CPU and of the garbage it left.
		next := make([]model.Route, end, len(out)+len(changes[t]))
		copy(next, out[:end])
		run, ok := patchTable(next[start:end], changes[t])
		if !ok {
			fail(t)
			continue
		}
		next = append(next[:start], run...)
		next = append(next, out[end:]...)
		out, copied = next, true
	}
	if !copied {
		return prev, unsure
	}
	return slices.Clip(out), unsure
}

// patchTable applies changes to run, the routes of one table in key order;
// ok is false when one of them is not certain (patchRoutes).
func patchTable(run []model.Route, changes []RouteChange) ([]model.Route, bool) {
	for i := range changes {
		c := &changes[i]
		k := c.Route.Key()
		if len(c.Route.NextHops) > 0 {
			return nil, false
		}
		at, found := slices.BinarySearchFunc(run, k, func(r model.Route, k model.RouteKey) int { return r.Key().Compare(k) })
		if found && (at+1 < len(run) && run[at+1].Key() == k || len(run[at].NextHops) > 0) {
			return nil, false
		}
		switch {
		case c.Delete && !found:
			// Gone already when prev was read.
		case c.Delete:
			if !reflect.DeepEqual(run[at], c.Route) {
				// Another route of the key: IPv6 keeps one per
				// device, and this one was not the one read.
				return nil, false
			}
			run = slices.Delete(run, at, at+1)
		case !found:
			run = slices.Insert(run, at, c.Route)
		default:
			run[at] = c.Route
		}
	}
	return run, true
}
