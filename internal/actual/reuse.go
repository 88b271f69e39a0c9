package actual

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Kinds names the parts of a kernel state that a read may take from the
// previous read when nothing reported a change (the daemon): those that
// notifications report, and WireGuard devices, which report nothing but
// change only when someone writes to them (the daemon reads them on a
// timer, and after its own writes). The far ends of veth pairs, FoU ports
// and sysctls send no notifications either: they are read every time.
type Kinds uint8

const (
	// Links are the links and their addresses. Reading them again reads
	// the WireGuard devices again too: a device made anew is a new link.
	Links Kinds = 1 << iota
	Routes
	Rules
	// NFT is the nftables tables (read by the engine, not Read).
	NFT
	// WireGuard is the WireGuard devices' settings and peers.
	WireGuard

	AllKinds = Links | Routes | Rules | NFT | WireGuard
)

// Fresh is what a read takes again from the kernel: its Kinds, and of the
// routes (when Kinds has Routes) only those of RouteTables, nil meaning
// every table. A notification names its route's table, so that a pass after
// one deleted route in a small table does not dump 100k routes of another
// (a repair under churn must not wait for it).
//
// RouteChanges are, by table, the notifications of our routes since the
// previous read (RouteChange): a table they name and RouteTables does not
// is that read's, patched with them, not read again. A table whose changes
// cannot be applied for certain is read.
type Fresh struct {
	Kinds        Kinds
	RouteTables  map[int]bool
	RouteChanges map[int][]RouteChange
}

// All is a Fresh that reads everything.
var All = Fresh{Kinds: AllKinds}

// Add returns what f or g reads: the union of their kinds and of their
// route tables (every table when either reads every one), and f's route
// changes followed by g's (g's came later), but for the tables read.
func (f Fresh) Add(g Fresh) Fresh {
	out := Fresh{Kinds: f.Kinds | g.Kinds}
	if out.Kinds&Routes != 0 {
		a, b := f.routeTables(), g.routeTables()
		if a == nil && f.Kinds&Routes != 0 || b == nil && g.Kinds&Routes != 0 {
			return out
		}
		out.RouteTables = make(map[int]bool, len(a)+len(b))
		for t := range a {
			out.RouteTables[t] = true
		}
		for t := range b {
			out.RouteTables[t] = true
		}
	}
	for _, from := range []map[int][]RouteChange{f.RouteChanges, g.RouteChanges} {
		for t, cs := range from {
			if out.RouteTables[t] || len(cs) == 0 {
				continue
			}
			if out.RouteChanges == nil {
				out.RouteChanges = map[int][]RouteChange{}
			}
			out.RouteChanges[t] = append(slices.Clip(out.RouteChanges[t]), cs...)
		}
	}
	return out
}

// ReadsEveryTable reports whether a read of f reads the routes of every
// table.
func (f Fresh) ReadsEveryTable() bool { return f.Kinds&Routes != 0 && f.RouteTables == nil }

// routeTables is the tables f reads routes of: nil for every table (or
// none, when f has no Routes).
func (f Fresh) routeTables() map[int]bool {
	if f.Kinds&Routes == 0 {
		return nil
	}
	return f.RouteTables
}

// ReadReusing is Read that reads only what fresh names (WireGuard devices
// whenever it names links) and takes the rest from prev, a state an earlier Read or ReadReusing returned with the same
// options: whole kinds, and of the routes, when fresh names their tables,
// the routes of the other tables. With no prev (or a prev of another
// protocol) it reads everything.
//
// The caller vouches that nothing of a kind left out of fresh, and no route
// of a table left out of its RouteTables, changed in the kernel since prev
// was read, in a way that matters to the plan (the daemon's event filter
// says so), and that nothing changes prev's parts:
// the new state shares them (its links map is its own, holding the same
// links). It reports which route tables it read.
func ReadReusing(k kernel.Reader, opt Options, prev *model.State, f Fresh) (*model.State, RoutesRead, error) {
	fresh := f.Kinds
	if prev == nil || prev.Protocol != opt.Protocol || opt.AllRoutes || fresh&AllKinds == AllKinds && f.RouteTables == nil {
		st, err := Read(k, opt)
		if opt.AllRoutes || opt.RouteTables == nil {
			return st, RoutesRead{All: true}, err
		}
		return st, RoutesRead{Tables: slices.Clone(opt.RouteTables)}, err
	}
	st := model.NewState()
	st.Protocol = opt.Protocol
	if fresh&Links != 0 {
		if err := readLinks(k, st); err != nil {
			return nil, RoutesRead{}, err
		}
	} else {
		st.Links = maps.Clone(prev.Links)
	}
	if err := readRemotePeers(k, st); err != nil {
		return nil, RoutesRead{}, err
	}
	// Not read again, the devices are those of prev's links, which the
	// clone holds.
	if fresh&(Links|WireGuard) != 0 {
		if err := readWireGuard(k, st); err != nil {
			return nil, RoutesRead{}, err
		}
	}
	if fresh&Links != 0 {
		if err := readAddresses(k, st); err != nil {
			return nil, RoutesRead{}, err
		}
	} else {
		st.Addresses = prev.Addresses
		st.AddressProtocols = prev.AddressProtocols
	}
	var read RoutesRead
	if f.ReadsEveryTable() {
		var err error
		if read, err = readRoutes(k, st, opt); err != nil {
			return nil, RoutesRead{}, err
		}
	} else {
		routes, tables := prev.Routes, f.routeTables()
		if len(f.RouteChanges) > 0 {
			changes := make(map[int][]RouteChange, len(f.RouteChanges))
			for t, cs := range f.RouteChanges {
				if !tables[t] {
					changes[t] = cs
				}
			}
			var unsure map[int]bool
			routes, unsure = patchRoutes(routes, changes)
			for t := range changes {
				if !unsure[t] {
					read.Patched = append(read.Patched, t)
				}
			}
			slices.Sort(read.Patched)
			if len(unsure) > 0 {
				tables = maps.Clone(tables)
				if tables == nil {
					tables = map[int]bool{}
				}
				maps.Copy(tables, unsure)
			}
		}
		if len(tables) > 0 {
			rs, err := readRouteTables(k, routes, tables, opt.Protocol)
			if err != nil {
				return nil, RoutesRead{}, err
			}
			routes = rs
			read.Tables = slices.Sorted(maps.Keys(tables))
		}
		st.Routes = routes
	}
	if fresh&Rules != 0 {
		if err := readRules(k, st); err != nil {
			return nil, RoutesRead{}, err
		}
	} else {
		st.Rules = prev.Rules
	}
	if err := readFou(k, st, opt); err != nil {
		return nil, RoutesRead{}, err
	}
	if err := readSysctls(k, st, opt.Sysctls, opt.OwnedSysctls); err != nil {
		return nil, RoutesRead{}, err
	}
	return st, read, nil
}

// readRouteTables returns prev's routes (ours, as readRoutes lists them)
// with those of tables read again from the kernel. Routes come in key
// order, table first, so each table read replaces one run of prev: a copy,
// no sort, unless prev is out of order (then it is filtered and sorted).
func readRouteTables(k kernel.Reader, prev []model.Route, tables map[int]bool, proto int) ([]model.Route, error) {
	ts := slices.Sorted(maps.Keys(tables))
	fresh := make([][]model.Route, len(ts))
	n := len(prev)
	for i, t := range ts {
		rs, err := k.TableRoutes(t, proto)
		if err != nil {
			return nil, fmt.Errorf("read routes of table %d: %w", t, err)
		}
		fresh[i] = rs
		n += len(rs)
	}
	if len(prev) == 0 && len(fresh) == 1 {
		// One table read with nothing to keep (a read of our tables,
		// the common case: ours in one table): the list as the kernel
		// gave it, sorted, without a copy.
		return fresh[0], nil
	}
	out := make([]model.Route, 0, n)
	if !model.RoutesSorted(prev) {
		for _, r := range prev {
			if !tables[int(r.Table)] {
				out = append(out, r)
			}
		}
		for _, rs := range fresh {
			out = append(out, rs...)
		}
		model.SortRoutes(out)
		return slices.Clip(out), nil
	}
	pos := 0
	for i, t := range ts {
		start := pos + sort.Search(len(prev)-pos, func(j int) bool { return int(prev[pos+j].Table) >= t })
		end := start + sort.Search(len(prev)-start, func(j int) bool { return int(prev[start+j].Table) > t })
		out = append(out, prev[pos:start]...)
		out = append(out, fresh[i]...)
		pos = end
	}
	return slices.Clip(append(out, prev[pos:]...)), nil
}
