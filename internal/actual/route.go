package actual

import (
	"fmt"
	"slices"
	"sort"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// AddForeignRoutesInTheWay adds to act the routes of protocols other than
// proto whose keys are in missing (by table): the keys of routes the plan
// would create. The kernel keeps one route per key and would refuse such a
// create (EEXIST), so the plan should show the conflict instead of the
// apply finding it. Only the tables of missing routes are read, with every
// protocol, and only the routes with those keys are kept; a pass that
// creates no route (the steady state) reads nothing more. It reports
// whether it added any.
func AddForeignRoutesInTheWay(k kernel.Reader, act *model.State, missing map[int]map[model.RouteKey]bool, proto int) (bool, error) {
	tables := make([]int, 0, len(missing))
	for t := range missing {
		tables = append(tables, t)
	}
	sort.Ints(tables)
	added := false
	for _, t := range tables {
		rs, err := k.RoutesWithKeys(t, missing[t])
		if err != nil {
			return false, fmt.Errorf("read routes of table %d: %w", t, err)
		}
		for _, r := range rs {
			if int(r.Protocol) != proto {
				act.Routes = append(act.Routes, r)
				added = true
			}
		}
	}
	if added {
		model.SortRoutes(act.Routes)
	}
	return added, nil
}

// RoutesRead says which route tables a read walked: every one (All), those
// of Tables, or none; and which it took from the previous read patched with
// the notifications of our routes (Patched: as good as read).
type RoutesRead struct {
	All             bool
	Tables, Patched []int
}

// readRoutes lists our routes, of our protocol, which the kernel filters for
// us, in opt.RouteTables (every table when nil); with AllRoutes (show
// --all), every route of every table.
func readRoutes(k kernel.Reader, st *model.State, opt Options) (RoutesRead, error) {
	proto := opt.Protocol
	if opt.AllRoutes {
		proto = 0
	}
	var err error
	if opt.AllRoutes || opt.RouteTables == nil {
		st.Routes, err = k.Routes(proto)
		return RoutesRead{All: true}, err
	}
	st.Routes, err = readRouteTables(k, nil, tableSet(opt.RouteTables), proto)
	return RoutesRead{Tables: slices.Clone(opt.RouteTables)}, err
}

func tableSet(ts []int) map[int]bool {
	out := make(map[int]bool, len(ts))
	for _, t := range ts {
		out[t] = true
	}
	return out
}
