package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// ExportDev is the device of export routes: like Coil, a held block is routed to lo, so the
// route is valid whatever the host's links, and a routing daemon announces it as is.
const ExportDev = "lo"

// Pools is the IPAM part of a reconcile pass: what the pools of the configuration add to the
// desired state, and what the pass took from and gave back to the registry.
type Pools struct {
	// Desired is the desired state with the links' pool addresses and the export routes of the
	// held blocks added; the state given to PreparePools is not changed.
	Desired *model.State
	// Allocated are the addresses the links of the configuration hold.
	Allocated []ipam.Allocation
	// Released are the addresses given back because their link, or its pool entry, left the
	// file; in a dry run, those that would be.
	Released []ipam.Allocation
	// Pending are the links' pool addresses not allocated: in a dry run, those not allocated
	// yet; in an apply, those of links the plan leaves out for a conflict. The plan shows the
	// first (Plan.Pending) and lists the second among its conflicts, never applies them.
	Pending []model.PoolAddress
}

// poolOwner is the IPAM owner ID of a link's pool address: stable across restarts, so the link
// gets the same address back.
func poolOwner(link string) string { return ipam.ConfigOwner("link", link) }

// PreparePools resolves the pools of desired against the registry. It refuses, before anything
// is written to the kernel, a registry that cannot be read or a pool definition that conflicts
// with held blocks (Registry.Check), unless only links leaving the file hold them: those give
// their addresses back first, and the pool takes its new definition. It then allocates the address of each link that takes one
// from a pool (the same owner gets the same address on every pass and after a restart), releases
// the config-owned addresses nothing in the file takes any more, and adds the links' addresses
// and a route per held block in the pool's export table to the desired state.
//
// A dry run (diff) reads the registry and writes nothing: an address not yet allocated is
// reported in Pending, and the blocks an apply would give back are left out of the routes.
func PreparePools(ctx context.Context, reg *ipam.Registry, desired *model.State, dryRun bool) (*Pools, error) {
	return preparePools(ctx, reg, desired, dryRun, nil, nil, dryRun)
}

// preparePools is PreparePools that allocates nothing for the links in
// leftOut (those a plan leaves out for a conflict) and gives back nothing
// they still hold: their addresses not yet allocated are reported in
// Pending, as in a dry run, and an apply's plan then leaves them out as
// diff's does. A left-out link holds an allocation while the kernel shows
// one of its addresses on the link (onLinks, read by that plan; nil: holds
// every one): an allocation the link no longer carries (its pool left the
// file with the address, then came back) would keep a block and its export
// route for nobody. A dry run
// that predicts fails where the apply would fail to allocate (a pool
// exhausted); one that does not is a first look, before the plan says which
// links are left out.
func preparePools(ctx context.Context, reg *ipam.Registry, desired *model.State, dryRun bool, leftOut map[string]bool, onLinks map[string]map[netip.Addr]bool, predict bool) (*Pools, error) {
	// The lists are shared with desired, clipped so that an append (a pool's
	// address, an export route) copies them first: the daemon keeps desired
	// between passes, and a copy of 100k routes per pass was the plan's
	// largest transient after the ops (bench-memory).
	st := *desired
	st.Addresses = slices.Clip(desired.Addresses)
	st.Routes = slices.Clip(desired.Routes)
	out := &Pools{Desired: &st}
	if reg == nil {
		if len(desired.PoolAddresses) > 0 {
			return nil, errors.New("the configuration takes addresses from pools but no registry is open")
		}
		return out, nil
	}
	held, err := reg.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("ipam: %w", err)
	}
	type ownerKey struct{ pool, owner string }
	have := map[ownerKey]ipam.Allocation{}
	for _, a := range held {
		if a.Iface == "" {
			have[ownerKey{a.Pool, a.Owner}] = a
		}
	}
	wanted := map[ownerKey]bool{}
	for _, pa := range desired.PoolAddresses {
		wanted[ownerKey{pa.Pool, poolOwner(pa.Link)}] = true
	}
	// The file's static addresses: a pool reserves them, so an address a
	// link holds from a pool and the file now declares statically (on it or
	// on another link) goes back, and the link takes another.
	static := map[netip.Addr]string{}
	for _, ad := range desired.Addresses {
		static[ad.Prefix.Addr()] = ad.Origin
	}
	declared := func(a ipam.Allocation) bool {
		return slices.ContainsFunc(a.Addrs(), func(ip netip.Addr) bool { _, s := static[ip]; return s })
	}
	// Only the addresses of links are the configuration's to give back: other config: owners
	// may belong to kinds a newer netreconcile hands out.
	// A link the plan leaves as it is keeps its address, also when it left
	// the file; but not as the pool's once the file declares it: the link
	// keeps it in the kernel, as it keeps any address it has, and the pool
	// takes it back now, as from any other link (its block is no longer
	// held for it, and show prints it as the link's own; kept as the pool's,
	// the file show prints would move it off the link).
	keeps := func(link string, a ipam.Allocation) bool {
		if !leftOut[link] || declared(a) {
			return false
		}
		if onLinks == nil {
			return true
		}
		return slices.ContainsFunc(a.Addrs(), func(ip netip.Addr) bool { return onLinks[link][ip] })
	}
	var gone []ipam.Allocation
	for _, a := range held {
		link, isLink := strings.CutPrefix(a.Owner, ipam.ConfigOwner("link", ""))
		if isLink && a.Iface == "" && (!wanted[ownerKey{a.Pool, a.Owner}] && !keeps(link, a) || leftOut[link] && declared(a)) {
			gone = append(gone, a)
		}
	}
	// What links leaving the file hold is given back first: a link renamed,
	// or one that takes the place of another, then gets the address the
	// other gave back (a full pool whose reuse delay is 0), as diff, which
	// allocates nothing, plans; and a pool whose new definition conflicts
	// only with blocks that such links hold takes it in this pass.
	// Damaged registry files, and pool definitions that conflict with
	// blocks other than those, are refused before anything changes.
	if _, err := reg.Check(ctx, gone); err != nil {
		return nil, fmt.Errorf("ipam: %w", err)
	}
	// A left-out link's address redeclared is in gone already; it takes
	// no other while the plan leaves it as it is.
	redeclared := map[ownerKey]bool{}
	leaving := slices.Clone(gone) // all that goes back in this pass
	for _, pa := range desired.PoolAddresses {
		k := ownerKey{pa.Pool, poolOwner(pa.Link)}
		if a, ok := have[k]; ok && declared(a) {
			redeclared[k] = true
			if !leftOut[pa.Link] {
				leaving = append(leaving, a)
			}
		}
	}
	// Whether every link that takes a new address gets one is known before
	// anything changes: the registry's steps are run in memory first, so a
	// dry run fails where the apply would, and an apply that would run out
	// (a pool exhausted) fails having given back and taken nothing. A
	// first look, before the plan says which links are left out, does not
	// predict.
	if predict || !dryRun {
		var needs []ipam.Need
		var needing []model.PoolAddress
		for _, pa := range desired.PoolAddresses {
			k := ownerKey{pa.Pool, poolOwner(pa.Link)}
			if _, ok := have[k]; (!ok || redeclared[k]) && !leftOut[pa.Link] {
				needs = append(needs, ipam.Need{Pool: pa.Pool, Owner: k.owner})
				needing = append(needing, pa)
			}
		}
		if len(needs) > 0 {
			if i, err := reg.Predict(ctx, leaving, needs); err != nil {
				if i >= 0 {
					return nil, fmt.Errorf("address of link %s (%s): %w", needing[i].Link, needing[i].Origin, err)
				}
				return nil, fmt.Errorf("ipam: %w", err)
			}
		}
	}
	// What leaves goes back before any link allocates: a full pool then
	// has it to hand out, whatever the order of the links.
	if !dryRun {
		for _, a := range gone {
			if _, _, err := reg.Release(ctx, a.Pool, a.Owner, ""); err != nil {
				return nil, err
			}
		}
	}
	for _, pa := range desired.PoolAddresses {
		k := ownerKey{pa.Pool, poolOwner(pa.Link)}
		if !redeclared[k] || leftOut[pa.Link] {
			continue
		}
		a := have[k]
		if !dryRun {
			if _, _, err := reg.Release(ctx, a.Pool, a.Owner, ""); err != nil {
				return nil, fmt.Errorf("ipam: give back the address of link %s, which the file now declares: %w", pa.Link, err)
			}
		}
		out.Released = append(out.Released, a)
	}
	for _, pa := range desired.PoolAddresses {
		k := ownerKey{pa.Pool, poolOwner(pa.Link)}
		a, ok := have[k]
		if redeclared[k] {
			ok = false
		}
		if !ok && (dryRun || leftOut[pa.Link]) {
			out.Pending = append(out.Pending, pa)
			continue
		}
		if !ok {
			var err error
			if a, err = reg.Allocate(ctx, pa.Pool, k.owner, ""); err != nil {
				return nil, fmt.Errorf("address of link %s (%s): %w", pa.Link, pa.Origin, err)
			}
		}
		out.Allocated = append(out.Allocated, a)
		if err := addPoolAddresses(&st, pa, a); err != nil {
			return nil, err
		}
	}
	out.Released = append(out.Released, gone...)
	blocks, err := reg.HeldBlocks(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("ipam: %w", err)
	}
	if dryRun {
		blocks = withoutFreed(blocks, held, gone)
	}
	if err := addExportRoutes(&st, reg.Pools(), blocks); err != nil {
		return nil, err
	}
	// desired.build sorts its lists; a list still shared with desired is
	// copied before a sort could reorder it.
	if len(st.Addresses) == len(desired.Addresses) && !slices.IsSortedFunc(st.Addresses, model.CompareAddresses) {
		st.Addresses = slices.Clone(st.Addresses)
	}
	model.SortAddresses(st.Addresses)
	if len(st.Routes) == len(desired.Routes) && !model.RoutesSorted(st.Routes) {
		st.Routes = slices.Clone(st.Routes)
	}
	model.SortRoutes(st.Routes)
	return out, nil
}

func addPoolAddresses(st *model.State, pa model.PoolAddress, a ipam.Allocation) error {
	for _, ip := range a.Addrs() {
		bits := pa.IPv4Bits
		if ip.Is6() {
			bits = pa.IPv6Bits
		}
		ad := model.Address{Link: pa.Link, Prefix: netip.PrefixFrom(ip, bits), Scope: pa.Scope, NoPrefixRoute: pa.NoPrefixRoute,
			Origin: pa.Origin + " (pool " + pa.Pool + ")"}
		for _, o := range st.Addresses {
			if o.Link == ad.Link && o.Prefix.Addr() == ip {
				return fmt.Errorf("link %s: address %s from pool %s (%s) is also declared at %s", pa.Link, ip, pa.Pool, pa.Origin, o.Origin)
			}
		}
		st.Addresses = append(st.Addresses, ad)
	}
	return nil
}

// addressesOn lists the addresses the kernel (act) shows on each of links.
func addressesOn(act *model.State, links map[string]bool) map[string]map[netip.Addr]bool {
	if act == nil {
		return nil
	}
	out := map[string]map[netip.Addr]bool{}
	for _, a := range act.Addresses {
		if !links[a.Link] {
			continue
		}
		if out[a.Link] == nil {
			out[a.Link] = map[netip.Addr]bool{}
		}
		out[a.Link][a.Prefix.Addr()] = true
	}
	return out
}

// withoutFreed leaves out the blocks whose every allocation is one to release: an apply gives
// them back before it plans.
func withoutFreed(blocks []ipam.Block, held, gone []ipam.Allocation) []ipam.Block {
	type blockKey struct {
		pool  string
		index uint64
	}
	left := map[blockKey]int{}
	for _, a := range held {
		left[blockKey{a.Pool, a.Block}]++
	}
	for _, a := range gone {
		left[blockKey{a.Pool, a.Block}]--
	}
	return slices.DeleteFunc(blocks, func(b ipam.Block) bool { return left[blockKey{b.Pool, b.Index}] == 0 })
}

// ExportRoutes returns the route of each held block in its pool's export table: dev lo, the
// ownership protocol (set by apply), so BIRD or another routing daemon can announce it.
func ExportRoutes(pools []ipam.Pool, blocks []ipam.Block) []model.Route {
	table := map[string]uint32{}
	for _, p := range pools {
		table[p.Name] = p.ExportTable
	}
	var out []model.Route
	for _, b := range blocks {
		for _, dst := range b.Prefixes() {
			r := model.Route{Table: table[b.Pool], Dst: dst, Type: model.RouteUnicast, Dev: ExportDev,
				Origin: model.OriginText(fmt.Sprintf("pool %s block %d", b.Pool, b.Index))}
			if dst.Addr().Is6() {
				r.Metric = model.IPv6DefaultMetric
			}
			out = append(out, r)
		}
	}
	return out
}

func addExportRoutes(st *model.State, pools []ipam.Pool, blocks []ipam.Block) error {
	if len(blocks) == 0 {
		return nil
	}
	declared := make(map[model.RouteKey]model.Origin, len(st.Routes))
	for _, r := range st.Routes {
		declared[r.Key()] = r.Origin
	}
	for _, r := range ExportRoutes(pools, blocks) {
		if at, dup := declared[r.Key()]; dup {
			return fmt.Errorf("route %s exports %s, and the file declares it too at %s: remove it from routes", r.Key(), r.Origin, at)
		}
		st.Routes = append(st.Routes, r)
	}
	return nil
}

// PlanPools is Plan for a desired state that PreparePools resolved. The plan also deletes the
// addresses a link held from a pool and no longer takes (diff.Inputs.PoolAddrs), and shows the
// addresses not allocated (diff.Inputs.Unallocated): those apply allocates, or, on a link left
// out for a conflict, a conflict.
func (e *Engine) PlanPools(p *Pools) (*diff.Plan, error) {
	in := diff.Inputs{Unallocated: p.Pending}
	for _, a := range append(slices.Clone(p.Allocated), p.Released...) {
		link := strings.TrimPrefix(a.Owner, ipam.ConfigOwner("link", ""))
		if in.PoolAddrs == nil {
			in.PoolAddrs = map[string]map[netip.Addr]bool{}
		}
		if in.PoolAddrs[link] == nil {
			in.PoolAddrs[link] = map[netip.Addr]bool{}
		}
		for _, ip := range a.Addrs() {
			in.PoolAddrs[link][ip] = true
		}
	}
	return e.plan(p.Desired, in)
}

// PoolUsage returns the usage of every pool of the registry, in the order of the configuration:
// what the daemon exports as metrics (blocks held and allowed, addresses allocated and cooling).
func PoolUsage(ctx context.Context, reg *ipam.Registry) ([]ipam.Usage, error) {
	var out []ipam.Usage
	for _, p := range reg.Pools() {
		u, err := reg.Usage(ctx, p.Name)
		if err != nil {
			return out, err
		}
		out = append(out, u)
	}
	return out, nil
}

// OpenRegistry opens the registry of desired's pools in e.State (or
// e.IPAMDir); nil when desired declares none.
func (e *Engine) OpenRegistry(desired *model.State) (*ipam.Registry, error) {
	if len(desired.Pools) == 0 {
		return nil, nil
	}
	return e.openRegistry(desired.IPAMPools())
}

// openRegistry opens the registry of pools, as OpenRegistry.
func (e *Engine) openRegistry(pools []model.PoolSpec) (*ipam.Registry, error) {
	if e.State != nil || e.IPAMDir == "" {
		// No IPAMDir: a read-only run on a host without state (State nil).
		return ipam.OpenIn(e.State, pools, nil)
	}
	return ipam.Open(e.IPAMDir, pools, nil)
}

// keptPools returns pools with each also reserving the addresses inside its
// subnets that the kernel shows on links a plan leaves as they are (kept, by
// link): such a link keeps every address it has, a static address the file
// no longer declares included, which the pool reserved only while the file
// declared it. nil when kept holds no address of a pool's subnets.
func keptPools(pools []model.PoolSpec, kept map[string]map[netip.Addr]bool) []model.PoolSpec {
	var out []model.PoolSpec
	for i, p := range pools {
		var more []netip.Addr
		for _, link := range slices.Sorted(maps.Keys(kept)) {
			for _, ip := range slices.SortedFunc(maps.Keys(kept[link]), netip.Addr.Compare) {
				if slices.ContainsFunc(p.Subnets, func(sn model.PoolSubnet) bool { return sn.IPv4.Contains(ip) || sn.IPv6.Contains(ip) }) {
					more = append(more, ip)
				}
			}
		}
		if len(more) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(pools)
		}
		out[i].Reserved = append(slices.Clip(p.Reserved), more...)
	}
	return out
}

// ReserveShown returns pools with each also reserving every address inside
// its subnets that the kernel shows on a link (addrs, from
// kernel.Reader.Addresses), pools itself when none is. It is for a command
// that hands out addresses without planning (ipam allocate): it cannot tell
// which links a plan would leave as they are, and an address the kernel
// shows here is in use until a plan takes it off, whoever holds it: a
// left-out link keeping a static address the file no longer gives it, a
// link the next apply will delete, a foreign one.
func ReserveShown(pools []model.PoolSpec, addrs []model.Address) []model.PoolSpec {
	shown := map[string]map[netip.Addr]bool{}
	for _, a := range addrs {
		if shown[a.Link] == nil {
			shown[a.Link] = map[netip.Addr]bool{}
		}
		shown[a.Link][a.Prefix.Addr()] = true
	}
	if kept := keptPools(pools, shown); kept != nil {
		return kept
	}
	return pools
}

// dropStaticAddrs drops the ledger's record of the static addresses that a
// pool may hand out to their link in a pass of desired: those of a link that
// takes from a pool, which desired does not declare (a declared one is
// reserved in every pool), unless the plan leaves the link out (leftOut: it
// is given nothing). It is called before a pass hands out anything, and the
// drop is saved first: a record left behind would later forgive, as the
// file's own, an address a pool handed out under the same key, and a lost
// registry would then start empty while the address is still handed out
// (checkLostRegistries). It returns the records dropped.
func (e *Engine) dropStaticAddrs(desired *model.State, leftOut map[string]bool) ([]model.AddressKey, error) {
	if e.Ledger == nil || e.Ledger.ReadOnly || len(e.Ledger.StaticAddrs) == 0 {
		return nil, nil
	}
	takers := map[string]bool{}
	for _, pa := range desired.PoolAddresses {
		takers[pa.Link] = !leftOut[pa.Link]
	}
	declared := map[model.AddressKey]bool{}
	for i := range desired.Addresses {
		declared[desired.Addresses[i].Key()] = true
	}
	var dropped []model.AddressKey
	for k := range e.Ledger.StaticAddrs {
		if takers[k.Link] && !declared[k] {
			e.Ledger.SetStaticAddr(k, false)
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	if err := e.saveLedger(); err != nil {
		return nil, fmt.Errorf("record in the ledger that the file no longer declares addresses of links that take from pools, before the pools hand out any: %w; nothing was changed", err)
	}
	return dropped, nil
}

// restoreStaticAddrs records again what dropStaticAddrs dropped, for a pass
// that failed to resolve the pools: those of a link each of whose pools is
// still without a registry, which has handed out nothing, to it or anyone.
// Without that, a pass that failed (a pool exhausted) would make the next,
// the file mended, refuse the new pool as a lost registry. A crash in
// between leaves them dropped: a refusal that need not be, never one
// missed.
func (e *Engine) restoreStaticAddrs(reg *ipam.Registry, desired *model.State, dropped []model.AddressKey) {
	if len(dropped) == 0 || reg == nil {
		return
	}
	restored := false
	for _, k := range dropped {
		fresh := true
		for _, pa := range desired.PoolAddresses {
			if pa.Link != k.Link {
				continue
			}
			if ok, err := reg.Exists(pa.Pool); ok || err != nil {
				fresh = false
			}
		}
		if fresh {
			restored = e.Ledger.SetStaticAddr(k, true) || restored
		}
	}
	if restored {
		_ = e.saveLedger() // on failure: a refusal that need not be, as after a crash
	}
}

// ErrRegistryLost: a pool's registry is missing while the kernel holds what
// it handed out.
var ErrRegistryLost = errors.New("ipam registry lost")

// checkLostRegistries refuses to go on when a pool's registry file is
// missing but the kernel shows that the pool handed out addresses: an
// export route of ours in the pool's export table within its subnets, or
// an address within its subnets on a link we own or that takes an address
// from the pool. Starting the pool empty would withdraw the export routes of
// live blocks and hand out an address still in use a second time.
//
// Refused rather than rebuilt: the kernel shows the blocks and the links'
// addresses, but not the addresses handed to other owners (ipam allocate
// for a container, a CNI plugin) nor when each was handed out; a rebuilt
// registry would be wrong in ways nobody would notice. The operator restores
// the file from a backup, or removes what the kernel lists (the message says
// what) to start the pool empty. A pool without a registry and without such
// traces is new, and starts empty as before.
//
// An address the ledger records as one a pass of ours added as the file's
// static address (Ledger.StaticAddrs) is no trace: netreconcile put it
// there, not a registry, and every pass in which its link takes from a
// pool drops the record before the pool hands anything out
// (dropStaticAddrs), so a record never stands for an address a pool could
// have handed to that link. The ledger is the service user's input when
// root runs the command: a forged record can only make a pool start
// empty over an address of that link, which the same user can do without
// it by writing an empty registry file in the missing one's place (it
// writes the registries), or by deleting the address (it holds
// CAP_NET_ADMIN). An export route is always a trace, whatever the ledger
// says.
func (e *Engine) checkLostRegistries(reg *ipam.Registry, desired *model.State) error {
	if e.Kernel == nil {
		return nil
	}
	var ours map[model.AddressKey]bool
	if e.Ledger != nil {
		ours = e.Ledger.StaticAddrs
	}
	return lostRegistries(reg, desired, func() (*model.State, error) { return e.Actual(desired.Protocol, false) }, ours)
}

// CheckLostRegistries is the same check for the ipam commands (allocate,
// release, gc), which change a registry without an engine: run under the
// namespace's writer lock before the registry is opened for writing, it
// keeps them from making a fresh registry, and handing out an address
// still in use, where apply would refuse. It reads k itself; ours are the
// ledger's static addresses (Ledger.StaticAddrs; nil: none is forgiven).
func CheckLostRegistries(k kernel.Reader, reg *ipam.Registry, desired *model.State, ours map[model.AddressKey]bool) error {
	return lostRegistries(reg, desired, func() (*model.State, error) {
		return actual.Read(k, actual.Options{Protocol: desired.Protocol})
	}, ours)
}

// lostRegistries is checkLostRegistries over read, called once, and only
// when a registry is missing; ours are the addresses that are no trace.
func lostRegistries(reg *ipam.Registry, desired *model.State, read func() (*model.State, error), ours map[model.AddressKey]bool) error {
	if reg == nil {
		return nil
	}
	var act *model.State
	var errs []error
	for _, p := range desired.Pools {
		ok, err := reg.Exists(p.Name)
		if err != nil {
			return fmt.Errorf("ipam: %w", err)
		}
		if ok {
			continue
		}
		if act == nil {
			if act, err = read(); err != nil {
				return fmt.Errorf("read kernel state: %w", err)
			}
		}
		in := func(a netip.Addr) bool {
			for _, sn := range p.Subnets {
				if sn.IPv4.IsValid() && sn.IPv4.Contains(a) || sn.IPv6.IsValid() && sn.IPv6.Contains(a) {
					return true
				}
			}
			return false
		}
		static := map[model.AddressKey]bool{}
		for i := range desired.Addresses {
			static[desired.Addresses[i].Key()] = true
		}
		takers := map[string]bool{}
		for _, pa := range desired.PoolAddresses {
			if pa.Pool == p.Name {
				takers[pa.Link] = true
			}
		}
		var traces []string
		for _, r := range act.Routes {
			if r.Table == p.ExportTable && r.Dst.IsValid() && in(r.Dst.Addr()) {
				traces = append(traces, fmt.Sprintf("route %s table %d", r.Dst, r.Table))
			}
		}
		// Only links that take from the pool count: an owned link with a
		// static address in the pool's subnets (a pool declared after it)
		// holds nothing the registry handed out; nor does a link that
		// takes from it now, of an address the file declared before
		// (ours).
		for _, a := range act.Addresses {
			if k := a.Key(); takers[a.Link] && in(a.Prefix.Addr()) && !static[k] && !ours[k] {
				traces = append(traces, fmt.Sprintf("address %s on %s", a.Prefix, a.Link))
			}
		}
		if len(traces) == 0 {
			continue
		}
		if len(traces) > 6 {
			traces = append(traces[:6], fmt.Sprintf("and %d more", len(traces)-6))
		}
		errs = append(errs, fmt.Errorf("%w: pool %s: its registry %s is missing, but the kernel holds what it handed out (%s); nothing was changed: restore the file from a backup, or remove those routes and addresses (ip route del, ip address del) to start the pool empty",
			ErrRegistryLost, p.Name, reg.Path(p.Name), strings.Join(traces, "; ")))
	}
	return errors.Join(errs...)
}
