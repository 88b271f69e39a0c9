package kernel

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Routes lists the routes of every table (the local table included), of one
// protocol when protocol is not 0.
func (k *Netlink) Routes(protocol int) ([]model.Route, error) {
	var out []model.Route
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(0, protocol, 0, make([]model.Route, 0, k.routeHint.Load()), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	model.SortRoutes(out)
	out = fitted(dropCopies(out))
	k.routeHint.Store(int64(len(out)))
	return out, nil
}

// fitted is rs in an array of its length when the dump's array grew well
// past it: a daemon keeps the list a pass read until a pass reads those
// routes again (actual.ReadReusing), and append's growth by a quarter
// left up to that much unused (380 KB of the live heap with 10k routes,
// read the first time without a hint). A list read with a hint that
// held (the table's: a sixteenth more) is kept as it is.
func fitted(rs []model.Route) []model.Route {
	if cap(rs)-len(rs) <= len(rs)/8 {
		return rs
	}
	return append(make([]model.Route, 0, len(rs)), rs...)
}

// TableRoutes lists the routes of one table, of one protocol (0: every
// protocol). The kernel walks that table only.
func (k *Netlink) TableRoutes(table, protocol int) ([]model.Route, error) {
	var out []model.Route
	hint := 0
	if h, ok := k.tableHint.Load(table); ok && protocol != 0 {
		hint = h.(int)
	}
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(0, protocol, table, make([]model.Route, 0, hint), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A kernel without strict checking sends every table and protocol:
	// keep what was asked.
	n := 0
	for _, r := range out {
		if int(r.Table) == table && (protocol == 0 || int(r.Protocol) == protocol) {
			out[n] = r
			n++
		}
	}
	out = out[:n]
	model.SortRoutes(out)
	out = fitted(dropCopies(out))
	if protocol != 0 {
		// A margin for the routes the next pass adds.
		k.tableHint.Store(table, len(out)+len(out)/16)
	}
	return out, nil
}

// RoutesWithKeys lists the routes of table, of every protocol, whose keys
// are in keys. The table is walked whole, in the families of the keys
// only, but only the routes asked for become model routes: the conflict
// check of a plan that creates ten routes in a table a routing daemon
// fills with a million keeps ten. The kernel has no lookup of a prefix in
// a table (a route get looks an address up through the rules), so a walk
// it is.
func (k *Netlink) RoutesWithKeys(table int, keys map[model.RouteKey]bool) ([]model.Route, error) {
	keep := func(rm *rtnl.Route) bool {
		return int(rm.Table) == table && keys[model.RouteKey{Dst: rm.Dst, Table: rm.Table, Metric: rm.Priority, TOS: rm.TOS}]
	}
	var family uint8
	for key := range keys {
		f := uint8(unix.AF_INET6)
		if key.Dst.Addr().Is4() {
			f = unix.AF_INET
		}
		if family != 0 && family != f {
			family = unix.AF_UNSPEC
			break
		}
		family = f
	}
	var out []model.Route
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(family, 0, table, nil, keep)
		return err
	})
	if family != unix.AF_UNSPEC && errors.Is(err, unix.ENOENT) {
		// Asked of one family, the kernel refuses a table that family
		// does not have (of every family, it skips it): no route there.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	model.SortRoutes(out)
	return dropCopies(out), nil
}

// dropCopies drops a route listed twice, whole. An IPv6 dump that the FIB
// changes under (the kernel's own routes settling after an address change,
// a routing daemon's churn) starts again from the root and skips as many
// routes as it has sent (fib6_dump_table): it may send one twice, or leave
// one out, and says nothing (no NLM_F_DUMP_INTR). Read again, a dump under
// steady churn would restart as often: the copy is dropped instead, which
// a delete of the route would have met twice (ESRCH). A route left out
// cannot be told: the plan writes it again (a replace), one needless
// write. Two routes of one key are no sign (fe80::/64 on every link): only
// an exact copy is. rs is sorted.
func dropCopies(rs []model.Route) []model.Route {
	out := rs[:0]
	var seen map[routeRest]bool
	for i := 0; i < len(rs); {
		j := i + 1
		for j < len(rs) && rs[j].Key() == rs[i].Key() {
			j++
		}
		if j-i == 1 {
			out = append(out, rs[i])
			i = j
			continue
		}
		// A run of one key (fe80::/64 on each of thousands of links):
		// a set of the rest of each route, not pairs of them.
		clear(seen)
		if seen == nil {
			seen = map[routeRest]bool{}
		}
		for a := i; a < j; a++ {
			if r := restOf(&rs[a]); !seen[r] {
				seen[r] = true
				out = append(out, rs[a])
			}
		}
		i = j
	}
	return out
}

// routeRest is a route but its key, comparable: with the key, the whole
// route.
type routeRest struct {
	gateway, src         netip.Addr
	dev, origin, hops    string
	mtu                  uint32
	typ, scope, protocol uint8
	onLink               bool
}

func restOf(r *model.Route) routeRest {
	rest := routeRest{typ: r.Type, scope: r.Scope, mtu: r.MTU, protocol: r.Protocol, gateway: r.Gateway, src: r.Src, dev: r.Dev, origin: r.Origin.String(), onLink: r.OnLink}
	if len(r.NextHops) > 0 {
		rest.hops = fmt.Sprint(r.NextHops)
	}
	return rest
}
