package apply

import (
	"context"
	"errors"
	"fmt"
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
	return failed
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
