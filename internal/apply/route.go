package apply

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// runRoutes applies consecutive route ops in one kernel batch, recording a
// result per op in plan order, as if they had run one by one.
func runRoutes(ctx context.Context, k kernel.Interface, proto int, ops []diff.Op, failedLinks map[string]bool, res *Result) {
	errs := make([]error, len(ops))
	ws := make([]kernel.RouteWrite, 0, len(ops))
	at := make([]int, 0, len(ops)) // at[n] is the op of ws[n]
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			errs[i] = fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, err)
			continue
		}
		if dep := dependsOn(op, failedLinks); dep != "" {
			errs[i] = fmt.Errorf("%s %s %s: skipped: link %s failed", op.Action, op.Kind, op.ID, dep)
			continue
		}
		w := kernel.RouteWrite{Route: op.Route}
		switch op.Action {
		case diff.Create:
			w.Action = kernel.RouteAdd
		case diff.Update:
			w.Action = kernel.RouteReplace
		case diff.Delete:
			w.Action = kernel.RouteDelete
		default:
			errs[i] = fmt.Errorf("%s %s %s: no such operation", op.Action, op.Kind, op.ID)
			continue
		}
		ws = append(ws, w)
		at = append(at, i)
	}
	var guardErrs []Failure
	if len(ws) > 0 {
		for n, err := range k.WriteRoutes(ws, proto) {
			if ws[n].Action == kernel.RouteDelete {
				err = goneIsDone(err)
			}
			errs[at[n]] = err
		}
		guardErrs = retryGatewayChecks(k, proto, ws, at, errs)
	}
	explainExists(k, proto, ops, errs)
	for i, op := range ops {
		if errs[i] != nil {
			res.Failed = append(res.Failed, Failure{op, errs[i]})
			continue
		}
		res.Done = append(res.Done, &ops[i])
	}
	res.Failed = append(res.Failed, guardErrs...)
}

// guardPriority is the priority of the guard rules of retryGatewayChecks:
// the lowest there is, after the kernel's "lookup local" (a rule goes
// after those of its priority), so that no other rule comes first.
const guardPriority = 0

// retryGatewayChecks adds again, each under a guard rule, the route writes
// the kernel refused in its gateway check.
//
// The kernel checks a gateway with a lookup: in the route's own table
// first (unless it is main), then, if that finds nothing, through the
// FIB rules, as a packet from this host to the gateway out of the
// route's dev (fib_check_nh_v4_gw, ip6_route_check_nh), for each next
// hop of a multipath route. A rule before
// "lookup main" that takes that lookup elsewhere (from all prohibit, a
// not rule with a drop action, a lookup in a table with an unreachable
// route) fails the check (EACCES, EINVAL, EHOSTUNREACH), although the
// route is valid where the file puts it and the kernel keeps it when the
// rule comes after it. Such a rule may be someone else's, or the file's
// own, kept or about to be deleted by this plan. The order of the plan
// cannot help with the first two, so the write is retried with a rule
// of ours at guardPriority, "to GATEWAY oif DEV lookup main", that sends
// the check's lookup to main (where the gateway's connected route is), or
// "to GATEWAY lookup VRF-TABLE" for a DEV that is a vrf or one of its ports
// (guardTable), and the guard is deleted at once. It matches only lookups for the
// gateway out of that dev, for the moment of one write, and only after
// a refusal; an apply whose routes pass the check writes no rule.
//
// It returns the failures to delete a guard (left for the next pass,
// which deletes it as a stale rule of ours).
func retryGatewayChecks(k kernel.Interface, proto int, ws []kernel.RouteWrite, at []int, errs []error) []Failure {
	var retry []kernel.RouteWrite
	var retryAt []int
	var guards []*model.Rule
	seen := map[model.RuleKey]bool{}
	var links map[string]*model.Link
	for n, w := range ws {
		r := w.Route
		if err := errs[at[n]]; err == nil || w.Action == kernel.RouteDelete || r.OnLink || !gatewayCheckErr(err) {
			continue
		}
		// Each gateway is checked: the route's, or every next hop's of a
		// multipath route: a stale "not … unreachable" rule the same plan
		// deletes can refuse any of them.
		hops := []model.NextHop{{Gateway: r.Gateway, Dev: r.Dev}}
		if len(r.NextHops) > 0 {
			hops = r.NextHops
		}
		guarded := false
		for _, h := range hops {
			if !h.Gateway.IsValid() {
				continue
			}
			if links == nil {
				links = map[string]*model.Link{}
				// Without the links, every guard looks up main.
				ls, _ := k.Links()
				for _, l := range ls {
					links[l.Name] = l
				}
			}
			table, oif := guardTable(links, h.Dev)
			g := &model.Rule{Priority: guardPriority, IPv6: h.Gateway.Is6(), To: netip.PrefixFrom(h.Gateway, h.Gateway.BitLen()),
				OIF: oif, Action: model.RuleLookup, Table: table, SuppressPrefixLen: -1, Protocol: proto}
			if !seen[g.Key()] {
				seen[g.Key()] = true
				guards = append(guards, g)
			}
			guarded = true
		}
		if guarded {
			retry = append(retry, w)
			retryAt = append(retryAt, at[n])
		}
	}
	if len(retry) == 0 {
		return nil
	}
	var added []*model.Rule
	for _, g := range guards {
		// EEXIST: the rule is there already (the file's, or a guard a
		// crash left): used, and left to the plan.
		if err := k.AddRule(g, proto); err == nil {
			added = append(added, g)
		}
	}
	for n, err := range k.WriteRoutes(retry, proto) {
		// A second refusal keeps the first error: the rules were not
		// what stood in the way.
		if err == nil {
			errs[retryAt[n]] = nil
		}
	}
	var failed []Failure
	for _, g := range added {
		if err := k.DeleteRule(g); err != nil {
			failed = append(failed, Failure{diff.Op{Action: diff.Delete, Kind: diff.KindRule, ID: g.String(), Rule: g, Reason: "guard of a gateway check"}, err})
		}
	}
	return append(failed, retryLinkDownGateways(k, proto, links, retry, retryAt, errs)...)
}

// guardMetric is the metric of the guard routes of retryLinkDownGateways:
// the highest there is, so that any other route to the gateway in the
// table comes first.
const guardMetric = math.MaxUint32

// retryLinkDownGateways adds again, each beside guard routes, the IPv6
// route writes still refused in the kernel's gateway check although the
// gateway is on the route's link.
//
// IPv6's check (ip6_route_check_nh) looks the gateway up in the route's
// own table ignoring link state; only if that finds nothing does it look
// through the rules, and that lookup leaves out the routes of a link
// without carrier whose ignore_routes_with_linkdown is set, the gateway's
// connected route with them. A route through such a link, in a table
// without that connected route, is refused (EHOSTUNREACH) until carrier
// comes; once added it is kept while carrier goes and comes back, ignored
// by lookups without it, as the key asks. IPv4's check ignores link
// state. The write is retried beside a guard route of ours in the
// route's table, "GATEWAY/128 dev DEV metric guardMetric", which the first
// lookup finds, and the guard is deleted at once. A guard is added only
// where the table the second lookup searches (main, or the vrf's:
// guardTable) has the gateway directly on DEV, ignoring link state: where
// the kernel would take the route with carrier, so that no gateway off
// the link is made valid. A next hop without a dev gets the link the
// kernel would pick. On a link without carrier the guard is ignored by
// lookups like every route of the link; with carrier it sends what the
// table has for the gateway out of the link the gateway is on.
//
// The table the second lookup searches is read whole, once, and only for
// writes the kernel has refused twice.
//
// It returns the failures to delete a guard (left for the next pass,
// which deletes it as a stale route of ours).
func retryLinkDownGateways(k kernel.Interface, proto int, links map[string]*model.Link, ws []kernel.RouteWrite, at []int, errs []error) []Failure {
	var retry []kernel.RouteWrite
	var retryAt []int
	var guards []kernel.RouteWrite
	seen := map[model.RouteKey]bool{}
	tables := map[int][]model.Route{}
	for n, w := range ws {
		r := w.Route
		if err := errs[at[n]]; err == nil || !gatewayCheckErr(err) || !r.Dst.Addr().Is6() || r.Table == model.TableMain {
			continue
		}
		hops := []model.NextHop{{Gateway: r.Gateway, Dev: r.Dev}}
		if len(r.NextHops) > 0 {
			hops = r.NextHops
		}
		var gs []kernel.RouteWrite
		for _, h := range hops {
			// The kernel checks no link-local gateway.
			if !h.Gateway.Is6() || h.Gateway.IsLinkLocalUnicast() {
				continue
			}
			table, _ := guardTable(links, h.Dev)
			rs, ok := tables[table]
			if !ok {
				rs, _ = k.TableRoutes(table, 0) // unread, it guards nothing
				tables[table] = rs
			}
			dev := connectedDev(rs, h.Gateway, h.Dev)
			if dev == "" {
				gs = nil
				break
			}
			g := &model.Route{Table: r.Table, Dst: netip.PrefixFrom(h.Gateway, 128), Dev: dev, Metric: guardMetric, Type: model.RouteUnicast}
			gs = append(gs, kernel.RouteWrite{Action: kernel.RouteAdd, Route: g})
		}
		if len(gs) == 0 {
			continue
		}
		for _, g := range gs {
			if !seen[g.Route.Key()] {
				seen[g.Route.Key()] = true
				guards = append(guards, g)
			}
		}
		retry = append(retry, w)
		retryAt = append(retryAt, at[n])
	}
	if len(retry) == 0 {
		return nil
	}
	var added []kernel.RouteWrite
	for n, err := range k.WriteRoutes(guards, proto) {
		// EEXIST: someone's route with the guard's key; left alone.
		if err == nil {
			added = append(added, kernel.RouteWrite{Action: kernel.RouteDelete, Route: guards[n].Route})
		}
	}
	if len(added) == 0 {
		return nil
	}
	for n, err := range k.WriteRoutes(retry, proto) {
		if err == nil {
			errs[retryAt[n]] = nil
		}
	}
	var failed []Failure
	for n, err := range k.WriteRoutes(added, proto) {
		if err = goneIsDone(err); err != nil {
			g := added[n].Route
			failed = append(failed, Failure{diff.Op{Action: diff.Delete, Kind: diff.KindRoute, ID: g.Key().String(), Route: g, Reason: "guard of a gateway check"}, err})
		}
	}
	return failed
}

// connectedDev returns the link on which rs, the routes of one table,
// have gw directly, as the kernel's lookup of gw out of dev (out of any
// link when dev is "") finds it ignoring link state: the link of the most
// specific route covering gw out of that link (the lowest metric among
// equals), when that route is unicast without a gateway; "" otherwise.
func connectedDev(rs []model.Route, gw netip.Addr, dev string) string {
	var best *model.Route
	for i := range rs {
		r := &rs[i]
		if !r.Dst.Contains(gw) {
			continue
		}
		on := r.Dev != "" && (dev == "" || r.Dev == dev)
		for _, h := range r.NextHops {
			on = on || h.Dev != "" && (dev == "" || h.Dev == dev)
		}
		if !on {
			continue
		}
		if best == nil || r.Dst.Bits() > best.Dst.Bits() || r.Dst.Bits() == best.Dst.Bits() && r.Metric < best.Metric {
			best = r
		}
	}
	if best == nil || best.Type != model.RouteUnicast || best.Gateway.IsValid() || len(best.NextHops) > 0 {
		return ""
	}
	return best.Dev
}

// guardTable is where the kernel's own lookup of a gateway out of dev
// finds it when no rule is in the way, and the oif the guard selects: the
// table of the vrf dev is, or is a port of, and no oif (the kernel's l3mdev
// rule sends such lookups there, and a rule's oif does not match a lookup
// out of a vrf: a route through a vrf in another table, behind a catch-all
// blackhole rule, would be refused);
// main and dev otherwise.
func guardTable(links map[string]*model.Link, dev string) (table int, oif string) {
	l := links[dev]
	if l != nil && l.Kind != model.KindVRF && l.Master != "" {
		l = links[l.Master]
	}
	if l != nil && l.Kind == model.KindVRF && l.VRF != nil {
		return int(l.VRF.Table), ""
	}
	return model.TableMain, dev
}

// gatewayCheckErr reports whether err is one the kernel's gateway check of
// a route gives when the lookup of the gateway fails.
func gatewayCheckErr(err error) bool {
	for _, e := range []error{unix.EINVAL, unix.EACCES, unix.EHOSTUNREACH, unix.ENETUNREACH} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// explainExists says whose route a create met, for the creates the kernel
// refused with EEXIST: the plan saw no route with that key, so another
// program (or another netreconcile run, with our protocol) added one since.
// Each table is read once, after the batch, keeping the routes of those keys.
func explainExists(k kernel.Interface, proto int, ops []diff.Op, errs []error) {
	keys := map[uint32]map[model.RouteKey]bool{}
	for i, op := range ops {
		if op.Action != diff.Create || !errors.Is(errs[i], unix.EEXIST) {
			continue
		}
		key := op.Route.Key()
		if keys[key.Table] == nil {
			keys[key.Table] = map[model.RouteKey]bool{}
		}
		keys[key.Table][key] = true
	}
	tables := map[uint32][]model.Route{}
	for t, ks := range keys {
		if rs, err := k.RoutesWithKeys(int(t), ks); err == nil {
			tables[t] = rs
		} // else the kernel's answer stands alone
	}
	for i, op := range ops {
		if op.Action != diff.Create || !errors.Is(errs[i], unix.EEXIST) {
			continue
		}
		key := op.Route.Key()
		for _, h := range tables[key.Table] {
			if h.Key() != key {
				continue
			}
			whose := fmt.Sprintf("another program's (protocol %s, not ours, %d)", model.ProtocolName(int(h.Protocol)), proto)
			if int(h.Protocol) == proto {
				whose = fmt.Sprintf("ours (protocol %d), written since the plan was made: by another netreconcile run?", proto)
			}
			errs[i] = fmt.Errorf("%w: the route with this key is %s", errs[i], whose)
			break
		}
	}
}
