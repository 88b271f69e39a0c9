package diff

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// routes: only routes of our protocol are ever updated or deleted. The
// actual state holds ours, plus the foreign routes that have the key of a
// declared route of which we have none (the engine reads those tables for
// them): such a route is a conflict, and the create is left out of the plan,
// as the kernel would refuse it (EEXIST; creates use NLM_F_EXCL).
func (c *computer) routes() {
	ops, dels := len(c.plan.Ops), len(c.deletes)
	if !c.routesSorted() {
		c.plan.Ops, c.deletes = c.plan.Ops[:ops], c.deletes[:dels]
		c.routesByMap()
	}
	c.heldWait(ops)
}

// heldWait drops the route writes from the plan's ops at start that need
// what a held address keeps from the kernel (heldReach), and lists them as
// held dependents. A held address keeps its old prefix route, peer and
// prefix length, and the kernel refuses a route whose gateway no route of
// the link reaches ("Nexthop has invalid gateway", IPv6's "No route to
// host"; a route with onlink needs none); an address that waits with it
// is not there, and the kernel refuses a route from a source it does not
// have ("Invalid prefsrc address").
func (c *computer) heldWait(start int) {
	reach := c.heldReach()
	if reach == nil {
		return
	}
	out := c.plan.Ops[:start]
	for _, op := range c.plan.Ops[start:] {
		if op.Kind == KindRoute && op.Action != Delete {
			if why := reach.route(op.Route); why != "" {
				c.plan.HeldDependents = append(c.plan.HeldDependents, "route "+op.ID+" is held: "+why)
				continue
			}
		}
		out = append(out, op)
	}
	c.plan.Ops = out
}

// route says why the route r waits for a held address, "" if it does not.
func (reach *heldReach) route(r *model.Route) string {
	if a := reach.srcs[r.Src]; a != nil && r.Src.IsValid() {
		return fmt.Sprintf("its source %s waits with held address %s", r.Src, a.Key())
	}
	if r.OnLink {
		return ""
	}
	gws := []netip.Addr{r.Gateway}
	for _, h := range r.NextHops {
		gws = append(gws, h.Gateway)
	}
	for _, gw := range gws {
		if a := reach.waits(gw); a != nil {
			return fmt.Sprintf("its gateway %s is reached through held address %s", gw, a.Key())
		}
	}
	return ""
}

func (c *computer) routesByMap() {
	have := make(map[model.RouteKey]*model.Route, len(c.a.Routes))
	foreign := map[model.RouteKey]*model.Route{}
	for i := range c.a.Routes {
		r := &c.a.Routes[i]
		if int(r.Protocol) != c.d.Protocol {
			foreign[r.Key()] = r
			continue
		}
		if c.routeGone(r) {
			continue
		}
		have[r.Key()] = r
	}
	want := make(map[model.RouteKey]bool, len(c.d.Routes))
	for i := range c.d.Routes {
		w := &c.d.Routes[i]
		k := w.Key()
		want[k] = true
		h, ok := have[k]
		if !ok {
			c.createRoute(w, foreign[k])
			continue
		}
		if op, ok := c.routeUpdate(w, h); ok {
			c.add(op)
		}
	}
	for i := range c.a.Routes {
		h := &c.a.Routes[i]
		if int(h.Protocol) != c.d.Protocol || want[h.Key()] || c.routeGone(h) {
			continue
		}
		c.deleteRoute(h)
	}
}

// routesSorted is routes for lists in key order (as the desired and actual
// stages give them): one merge walk over both, no maps, the same plan. It
// checks the order as it walks and returns false, its ops to be dropped, on
// lists that are not sorted.
func (c *computer) routesSorted() bool {
	ds, as := c.d.Routes, c.a.Routes
	i, j := 0, 0
	for i < len(ds) || j < len(as) {
		var order int
		var k model.RouteKey
		switch {
		case i == len(ds):
			order, k = 1, as[j].Key()
		case j == len(as):
			order, k = -1, ds[i].Key()
		default:
			k = ds[i].Key()
			if ak := as[j].Key(); ak != k {
				order = k.Compare(ak)
				if order > 0 {
					k = ak
				}
			}
		}
		// The run of desired routes with key k (one, unless declared twice).
		ie := i
		if order <= 0 {
			for ie < len(ds) && ds[ie].Key() == k {
				ie++
			}
			if ie < len(ds) && ds[ie].Key().Compare(k) < 0 {
				return false
			}
		}
		// The run of actual routes with key k; the last of ours is compared,
		// as a map from key to route would keep.
		je := j
		var h, foreign *model.Route
		if order >= 0 {
			for je < len(as) && as[je].Key() == k {
				if a := &as[je]; int(a.Protocol) == c.d.Protocol && !c.routeGone(a) {
					h = a
				} else if int(a.Protocol) != c.d.Protocol {
					foreign = a
				}
				je++
			}
			if je < len(as) && as[je].Key().Compare(k) < 0 {
				return false
			}
		}
		for n := i; n < ie; n++ {
			w := &ds[n]
			if h == nil {
				c.createRoute(w, foreign)
			} else if op, ok := c.routeUpdate(w, h); ok {
				c.add(op)
			}
		}
		if ie == i {
			// Not wanted: ours are deleted.
			for n := j; n < je; n++ {
				if h := &as[n]; int(h.Protocol) == c.d.Protocol && !c.routeGone(h) {
					c.deleteRoute(h)
				}
			}
		}
		i, j = ie, je
	}
	return true
}

// createRoute plans the creation of w, or reports the foreign route with
// its key that the kernel would refuse it for.
func (c *computer) createRoute(w, foreign *model.Route) {
	k := w.Key()
	if foreign != nil {
		if a, held := c.prefixRouteGoes(foreign); a != nil {
			if held {
				c.plan.HeldDependents = append(c.plan.HeldDependents, fmt.Sprintf("route %s is held: the kernel's prefix route of held address %s has its key", k, a.Key()))
				return
			}
			// The address's op, before the routes', takes it away.
			c.add(Op{Action: Create, Kind: KindRoute, ID: k.String(), Summary: w.Attrs(), Route: w})
			return
		}
		c.conflict("route %s exists with protocol %s, not ours (%d); the kernel keeps one route per key: remove it, or change the file's route (its metric, for one)", k, model.ProtocolName(int(foreign.Protocol)), c.d.Protocol)
		return
	}
	c.add(Op{Action: Create, Kind: KindRoute, ID: k.String(), Summary: w.Attrs(), Route: w})
}

// rtprotKernel is the protocol of the routes the kernel makes itself
// (RTPROT_KERNEL): an address's prefix route among them.
const rtprotKernel = 2

// prefixRouteGoes reports whether the foreign route f is the prefix route
// the kernel made for an address whose change in this plan takes it away
// (noprefixroute given, a new prefix length or peer), with that address
// as the file has it, and whether that change is held (Inputs.MaxDisruption):
// then the route stays. The change runs with the addresses, before the
// routes. Only where that address alone has the prefix: another makes the
// route too, or, in an IPv4 subnet, is promoted and makes it again.
func (c *computer) prefixRouteGoes(f *model.Route) (*model.Address, bool) {
	if f.Protocol != rtprotKernel || f.Dev == "" {
		return nil, false
	}
	var owner *model.Address
	for i := range c.a.Addresses {
		h := &c.a.Addresses[i]
		if h.Link != f.Dev || !(h.Prefix.Addr().Is4() && h.Subnet() == f.Dst || slices.Contains(addressReach(h), f.Dst)) {
			continue
		}
		if owner != nil {
			return nil, false
		}
		owner = h
	}
	if owner == nil || !slices.Contains(addressReach(owner), f.Dst) {
		return nil, false
	}
	for i := range c.d.Addresses {
		w := &c.d.Addresses[i]
		if w.Link != owner.Link || w.Prefix.Addr() != owner.Prefix.Addr() || slices.Contains(addressReach(w), f.Dst) {
			continue
		}
		if c.holds(KindAddress, w.Key().String()) {
			return w, true
		}
		id := w.Key().String()
		if slices.ContainsFunc(c.plan.Ops, func(op Op) bool {
			return op.Kind == KindAddress && op.ID == id && (op.Action == Replace || op.Action == Update)
		}) {
			return w, false
		}
	}
	return nil, false
}

func (c *computer) deleteRoute(h *model.Route) {
	op := Op{Action: Delete, Kind: KindRoute, ID: h.Key().String(), Summary: h.Attrs(), Route: h}
	if c.goesWithLink(h.Dev, op) {
		return // deleted with its link
	}
	c.del(op)
}

func routeChanges(w, h *model.Route) []Change {
	var ch []Change
	if w.Type != h.Type {
		ch = append(ch, Change{"type", model.RouteTypeName(int(h.Type)), model.RouteTypeName(int(w.Type))})
	}
	if w.Gateway != h.Gateway {
		ch = append(ch, Change{"via", addrStr(h.Gateway), addrStr(w.Gateway)})
	}
	// Without a dev the kernel picks the gateway's link: only a dev the file
	// names is compared.
	if w.Dev != "" && w.Dev != h.Dev {
		ch = append(ch, Change{"dev", orNone(h.Dev), orNone(w.Dev)})
	}
	if !nextHopsMatch(w.NextHops, h.NextHops) {
		ch = append(ch, Change{"nexthops", nextHopsStr(h), nextHopsStr(w)})
	}
	if w.Src != h.Src {
		ch = append(ch, Change{"src", addrStr(h.Src), addrStr(w.Src)})
	}
	if w.Scope != h.Scope {
		ch = append(ch, Change{"scope", model.ScopeName(int(h.Scope)), model.ScopeName(int(w.Scope))})
	}
	if w.OnLink != h.OnLink {
		ch = append(ch, Change{"onlink", boolStr(h.OnLink), boolStr(w.OnLink)})
	}
	if w.MTU != h.MTU {
		ch = append(ch, Change{"mtu", strconv.FormatUint(uint64(h.MTU), 10), strconv.FormatUint(uint64(w.MTU), 10)})
	}
	return ch
}

// nextHopsMatch compares a multipath route's next hops as sets: both lists
// are in model.CompareNextHops order (desired and actual sort them). As for
// a single path, a next hop's dev is compared only where the file names one.
func nextHopsMatch(w, h []model.NextHop) bool {
	if len(w) != len(h) {
		return false
	}
	used := make([]bool, len(h))
	for _, wh := range w {
		found := false
		for j, hh := range h {
			if !used[j] && wh.Gateway == hh.Gateway && wh.Weight == hh.Weight && (wh.Dev == "" || wh.Dev == hh.Dev) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func nextHopsStr(r *model.Route) string {
	if len(r.NextHops) == 0 {
		return "none"
	}
	var b []string
	for _, h := range r.NextHops {
		b = append(b, "["+h.String(r.Dst)+"]")
	}
	return strings.Join(b, " ")
}
