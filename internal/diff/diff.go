package diff

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Conflicts lists objects the file names that the kernel holds in a way
// netreconcile may not change: a foreign link without adopt, a device link
// that does not exist, a link of another kind that is not ours.
type Conflicts []string

func (c Conflicts) Error() string {
	return fmt.Sprintf("%d conflict(s) with the kernel's state:\n  %s", len(c), strings.Join(c, "\n  "))
}

// Inputs are what the engine prepares for a plan beyond the two states:
// what the registry of the pools and the WireGuard rotation know, and the
// kernel does not show.
type Inputs struct {
	// PoolAddrs are, per link, the addresses the pools handed it: those it
	// holds, and those given back in this pass. One of them that the link
	// holds and the desired state no longer has is deleted ("given back to
	// its pool"), also from a link netreconcile does not own: the registry
	// says it was ours.
	PoolAddrs map[string]map[netip.Addr]bool
	// PeersUp are, per WireGuard link, the peers that are Up in this pass:
	// the sets fed by peers (elements-from) hold their allowed IPs.
	PeersUp map[string]map[model.Key]bool
	// Unallocated are the pool addresses a dry run cannot name, because
	// apply allocates them: shown in Plan.Pending, never in Ops.
	Unallocated []model.PoolAddress
	// MaxDisruption, when set, holds back the changes above it (the
	// daemon's max-disruption): a link whose op is above it is left as it
	// is, with every op that needs it, as a link in conflict is, and a
	// table that would be replaced gets no op. What is held is listed in
	// Plan.Held; nil holds nothing.
	MaxDisruption *Disruption
	// Waiting are the nftables tables whose rules or declarations name a
	// declared link the kernel does not have yet, with the reason: nft
	// resolves such a name to the link's index when it compiles (iif,
	// oif, an iface_index set's element...), so they can only be compiled
	// once the link exists. A waiting table is left as it is, neither
	// written nor deleted, and listed in Plan.Pending; Plan.Waiting names
	// it, so that whoever applies the plan plans it again once the links
	// are made.
	Waiting map[model.NftTableKey]string
}

// held is what a plan leaves as it is for Inputs.MaxDisruption: links and
// nftables tables, each with the op that was above the level.
type held struct {
	links   map[string]*Op
	tables  map[model.NftTableKey]*Op
	objects map[readdKey]*Op // addresses and FoU ports, by kind and key
}

// ComputeWith returns the plan that turns actual into desired. Only objects
// that actual marks as ours (Owned links, routes and rules of
// desired.Protocol, owned FoU ports), and the addresses in.PoolAddrs names,
// are ever deleted or replaced. It makes every operation of the plan. It
// returns no plan when desired declares a sysctl the kernel does not have
// (checkSysctls), or IPv6 on a link the plan leaves below IPv6's minimum
// MTU (ipv6Kept).
//
// The order of operations, and why:
//  1. links are created, replaced and updated, parents and masters first,
//     because addresses, routes and slaves need their link; then WireGuard
//     devices and peers, which need their link; then sysctls, the
//     per-link ones on their link before its addresses are added (a key
//     such as disable_ipv6 or accept_dad decides what an address does);
//  2. FoU ports, then addresses, then routes, then rules are added or
//     changed: a route's device must be up and its source address present,
//     and a rule should only send traffic to a table that is filled; then
//     nftables, one batch per table (see nftPlan);
//  3. stale rules, routes, addresses (those given back to a pool with them)
//     and FoU ports are deleted after their replacements exist, so traffic
//     never falls into a gap, in that order (the reverse of creates: a route
//     before its source address); then sysctls that left the file get
//     their old values back;
//  4. stale links are deleted last, children before parents.
func ComputeWith(desired, actual *model.State, in Inputs) (*Plan, error) {
	desired = peerSets(desired, in.PeersUp)
	plan, err := compute(desired, actual, in, nil)
	if plan == nil || in.MaxDisruption == nil {
		return plan, err
	}
	// Held: the plan again without what is above the level. Leaving a
	// link as it is may make another op of the plan change class (a vlan
	// no longer follows a parent that is not cycled), so the plan is made
	// until none is above, adding to what is held; each round holds one
	// more object at least, and there are finitely many.
	h := &held{links: map[string]*Op{}, tables: map[model.NftTableKey]*Op{}, objects: map[readdKey]*Op{}}
	for {
		above := plan.Above(*in.MaxDisruption)
		if len(above) == 0 {
			break
		}
		grew := false
		for _, op := range above {
			cp := *op
			switch {
			case op.Kind == KindLink && h.links[op.ID] == nil:
				h.links[op.ID], grew = &cp, true
			case op.Kind.IsNft() && h.tables[op.Table] == nil:
				h.tables[op.Table], grew = &cp, true
			case readdable[op.Kind] && h.objects[readdKey{op.Kind, op.ID}] == nil:
				h.objects[readdKey{op.Kind, op.ID}], grew = &cp, true
			}
		}
		if !grew {
			break
		}
		if plan, err = compute(desired, actual, in, h); plan == nil {
			return nil, err
		}
	}
	return plan, err
}

// compute makes the plan; hold, when not nil, names what is held.
func compute(desired, actual *model.State, in Inputs, hold *held) (*Plan, error) {
	c := &computer{d: desired, a: actual, plan: &Plan{Protocol: desired.Protocol, PoolAddrs: in.PoolAddrs}, waiting: in.Waiting, recreated: map[string]bool{}, flushed4: map[string]bool{}, downed: map[string]bool{}, v6Flushed: map[string]bool{}, l3Moved: map[string]bool{},
		linkGoes: map[string]bool{}, withLink: map[string][]Op{}, hold: hold}
	c.plan.Ops = make([]Op, 0, sizeHint(desired, actual))
	c.links()
	c.spreadBlocked()
	// No plan at all where the file names a key this kernel does not
	// have, or IPv6 on a link the plan keeps below IPv6's minimum MTU:
	// nothing is written until it is fixed. Judged once the link stage
	// knows which links the plan makes, recreates and leaves out.
	if err := c.refusals(in.Unallocated); err != nil {
		return nil, err
	}
	c.wireguard()
	c.sysctls()
	c.fou()
	c.addresses()
	c.routes()
	c.rules()
	c.nft()
	c.leaveOutDependents()
	// After the conflicts are left out: the registry has the address back
	// (or will, in a dry run's apply), so it leaves the link whatever else
	// is in conflict.
	c.poolGiveBacks(in.PoolAddrs)
	c.promoteBack()
	// Deletes run in the reverse order of creates: a route goes before the
	// address it takes as source (the kernel deletes such routes with the
	// address), a rule before the routes of its table.
	sort.SliceStable(c.deletes, func(i, j int) bool { return deleteRank[c.deletes[i].Kind] < deleteRank[c.deletes[j].Kind] })
	c.plan.Ops = append(c.plan.Ops, c.deletes...)
	c.plan.Ops = append(c.plan.Ops, c.linkDeletes...)
	c.disruptions()
	c.warnings()
	c.listHeld()
	c.pending(in.Unallocated)
	c.waitingTables()
	if len(c.conflicts) > 0 {
		return c.plan, c.conflicts
	}
	return c.plan, nil
}

// sizeHint is the capacity a plan starts with: for a cold start (routes
// and set elements the kernel holds none of), the ops it will have, so
// that the array of a 100k-route plan is made once rather than grown, each
// growth holding the old and the new at once (the first converge of a big
// host peaked on it: bench-memory). In the steady state the hint
// is small and the plan grows as it needs: a pass that changes nothing
// allocates nothing for it.
func sizeHint(d, a *model.State) int {
	cold := coldElems(d, a)
	ours := 0
	for i := range a.Routes {
		if int(a.Routes[i].Protocol) == d.Protocol {
			ours++
		}
	}
	cold += max(0, len(d.Routes)-ours)
	cold += coldPeers(d, a)
	if cold < sizeHintMin {
		return 0
	}
	// The other objects: some make two ops (a WireGuard link: the link
	// and its configuration), and a hint one short costs a growth of the
	// whole array, so it errs high (by a few hundred bytes an object).
	return cold + 2*(d.Objects()-len(d.Routes)) + 64
}

// sizeHintMin is the cold count below which a plan grows as it goes.
const sizeHintMin = 1024

// deleteRank orders the deletes that run before the links' (see Compute).
var deleteRank = map[Kind]int{KindRule: 0, KindRoute: 1, KindAddress: 2, KindFou: 3, KindSysctl: 4}

type computer struct {
	d, a        *model.State
	plan        *Plan
	deletes     []Op // rules, routes, addresses, fou: appended after every create
	linkDeletes []Op
	conflicts   Conflicts
	// waiting are the tables left as they are until the links their rules
	// name exist (Inputs.Waiting).
	waiting map[model.NftTableKey]string
	// recreated names links that are created or replaced by this plan: the
	// kernel holds none of their addresses or routes afterwards.
	recreated map[string]bool
	// blocked names the declared links in conflict, and those that need
	// them (see depend.go); srcLink maps a declared address to its link.
	blocked map[string]bool
	srcLink map[netip.Addr]string
	subnets []subnet
	// flushed4 names links that lose their last IPv4 address in this plan:
	// the kernel then deletes every IPv4 route through them (fib_disable_ip),
	// ours included, so they are treated as absent and added again after.
	flushed4 map[string]bool
	// downed names links this plan sets down: the kernel then deletes their
	// routes and, unless keep_addr_on_down is set, their IPv6 addresses
	// (addrconf_ifdown), which are added again after.
	downed map[string]bool
	// v6Flushed names links whose IPv6 addresses and routes the kernel
	// deletes when this plan turns their disable_ipv6 on (ipv6Flushes).
	v6Flushed map[string]bool
	// l3Moved names links that join or leave a vrf in this plan: the
	// kernel deletes every IPv4 route through them, local ones included,
	// which are added again after (noteCycle).
	l3Moved map[string]bool
	// vlanFollows names the vlans whose update goes after their parent's
	// (vlansFollowParents), a release from a master included.
	vlanFollows map[string]bool
	// cycledUp names the links this plan takes down and up while they
	// are up, and the vlans that go with them (vlansFollowParents).
	cycledUp map[string]bool
	// hold is what Inputs.MaxDisruption holds back (nil: nothing), and
	// heldLinks the declared links left as they are for it, those that
	// need a held link included (blocked has them too).
	hold      *held
	heldLinks map[string]bool
	// addrWaits maps the file's addresses that wait with a held address
	// of their subnet (addresses) to that held address, as the kernel has
	// it: the kernel may not have them.
	addrWaits map[model.AddressKey]*model.Address
	// mtuWaited names the links whose MTU write waits for a link the
	// kernel would move with it (mtuWritesWait): apply's own MTU writes
	// (Plan.PinMTU, Plan.FollowMTU) leave them alone too.
	mtuWaited map[string]bool
	// written are the sysctls the plan writes, with their values, and
	// touched the links it creates or whose MTU or master it writes
	// (warnings).
	written map[string]string
	touched map[string]bool
	// goesWithPeer maps a stale veth end to its declared peer, whose
	// recreate deletes it (staleLinks plans no delete of its own).
	goesWithPeer map[string]string
	// linkGoes names the stale links this plan deletes (or that go with a
	// veth peer it deletes or recreates): their addresses and routes go
	// with them. A stale link that stays (its delete is a conflict, or it
	// lives on as the undeclared peer of a declared veth) is not in it,
	// and what of ours it holds is deleted one by one.
	linkGoes map[string]bool
	// withLink holds the deletes of addresses and routes left to the
	// delete of their stale link, by link: planned after all when that
	// delete is left out (leaveOutDependents).
	withLink map[string][]Op
}

// goesWithLink reports whether the delete op of an address or route on
// link is left to the link's delete, and records it in case that delete
// is left out.
func (c *computer) goesWithLink(link string, op Op) bool {
	if link == "" || !c.linkGoes[link] {
		return false
	}
	c.withLink[link] = append(c.withLink[link], op)
	return true
}

// routeGone reports whether the kernel removes route r during this plan
// whatever the plan says: its link is recreated, set down or loses its last
// IPv4 address. An IPv4 local route survives its link going down: the
// kernel gives its next hop scope nowhere (fib_create_info), and a link
// going down flushes only next hops of another scope (fib_sync_down_dev
// without force); losing the last address flushes them all.
//
// A multipath route is gone for sure only when every next hop's link is
// (routeShaken covers the rest).
func (c *computer) routeGone(r *model.Route) bool {
	if len(r.NextHops) > 0 {
		for _, h := range r.NextHops {
			if h.Dev == "" || !c.devGone(r, h.Dev) {
				return false
			}
		}
		return true
	}
	if r.Dev == "" {
		return false
	}
	return c.devGone(r, r.Dev)
}

// routeShaken reports whether some next hops of the multipath route r go
// through a link that this plan recreates, sets down or leaves without an
// IPv4 address, but not all. What the kernel then does depends on the
// family and the event: it keeps the route with those paths dead (a link
// down), drops those paths (IPv6, a link deleted) or the whole route (IPv4,
// a link deleted or left without an IPv4 address). The route is written
// again after the links with a replace, which creates it if it is gone
// and restores its paths if not.
func (c *computer) routeShaken(r *model.Route) bool {
	if len(r.NextHops) == 0 || c.routeGone(r) {
		return false
	}
	for _, h := range r.NextHops {
		if h.Dev != "" && c.devGone(r, h.Dev) {
			return true
		}
	}
	return false
}

func (c *computer) devGone(r *model.Route, dev string) bool {
	if c.blocked[dev] && c.a.Links[dev] != nil {
		// Left out for a conflict: none of its ops run, whatever the
		// link stage planned for it.
		return false
	}
	down := c.downed[dev] && !(r.Dst.Addr().Is4() && r.Type == model.RouteLocal) || c.v6Flushed[dev] && r.Dst.Addr().Is6()
	return c.recreated[dev] || down || (r.Dst.Addr().Is4() && (c.flushed4[dev] || c.l3Moved[dev]))
}

// mtuMoved reports the MTU an IPv6 route of ours will have once this plan
// changes the MTU of its device, when the kernel moves it there
// (rt6_mtu_change_route in net/ipv6/route.c: a route MTU at or above the
// device's new MTU drops to it, and one equal to the old rises with it), so
// that the route is written again after the link. IPv4 route MTUs stay,
// and so does the MTU of a link whose write waits (mtuWritesWait): written
// again, the route would be written again on every pass.
func (c *computer) mtuMoved(r *model.Route) (int, bool) {
	if r.MTU == 0 || r.Dev == "" || r.Dst.Addr().Is4() || c.recreated[r.Dev] || c.mtuWaited[r.Dev] {
		return 0, false
	}
	w, h := c.d.Links[r.Dev], c.a.Links[r.Dev]
	if w == nil || h == nil || w.MTU == 0 || w.MTU == h.MTU {
		return 0, false
	}
	if mtu := int(r.MTU); mtu != w.MTU && (mtu > w.MTU || mtu == h.MTU) {
		return w.MTU, true
	}
	return 0, false
}

// routeUpdate is the op for a declared route w that the kernel holds as h,
// if any: its changes, or a write again where the plan's link MTU change
// moves its MTU (mtuMoved).
func (c *computer) routeUpdate(w, h *model.Route) (Op, bool) {
	ch := routeChanges(w, h)
	if len(ch) == 0 {
		if to, ok := c.mtuMoved(h); ok {
			ch = []Change{{"mtu", fmt.Sprintf("%d (moved to %d with %s's)", h.MTU, to, h.Dev), strconv.FormatUint(uint64(w.MTU), 10)}}
		}
	}
	if len(ch) == 0 && c.routeShaken(h) {
		ch = []Change{{"nexthops", "some through a link this plan changes", "written again"}}
	}
	if len(ch) == 0 {
		return Op{}, false
	}
	return Op{Action: Update, Kind: KindRoute, ID: w.Key().String(), Changes: ch, Route: w}, true
}

func (c *computer) add(op Op) { c.plan.Ops = append(c.plan.Ops, op) }
func (c *computer) del(op Op) { c.deletes = append(c.deletes, op) }
func (c *computer) conflict(format string, args ...any) {
	c.conflicts = append(c.conflicts, fmt.Sprintf(format, args...))
}
