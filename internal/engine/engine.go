// Package engine runs one reconcile pass: read the kernel, diff against the
// desired state, apply. The command line and the daemon share it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Engine reconciles one network namespace.
type Engine struct {
	Kernel kernel.Interface
	Ledger *ledger.Ledger
	// State is the namespace's state directory: the registry of the
	// configuration's pools lives in ipam/ below it. When nil, IPAMDir is
	// opened instead (tests); a configuration without pools opens neither.
	State *statedir.Dir
	// IPAMDir is the path form of State.
	IPAMDir string
	// Lock, when set, takes the namespace's writer lock (see LockPass).
	Lock func(ctx context.Context) (unlock func(), err error)
	// Compiler compiles the file's nftables rules (nil: DefaultCompiler,
	// nft).
	Compiler nftcompile.Compiler
	// compiled are the rules this engine compiled in its last pass, by
	// key: a daemon compiles a text once, not every pass.
	compiled map[string]*model.NftCompiled
	// compiledDecls are the tables' declarations compiled in the last
	// pass, by declKey.
	compiledDecls map[string]*compiledDecls
	// listedAs are the declared rules of the last pass that nft lists as
	// a kernel rule of other bytecode: the kernel rule's fingerprint, by
	// the declared rule's key (listedAlike).
	listedAs map[string]string
	// ruleKeys are the compile keys of the last pass's rules.
	ruleKeys nftcompile.Keys
	// MaxDisruption, when set, makes every plan hold back the changes
	// that disrupt more (diff.Inputs.MaxDisruption): the daemon's
	// max-disruption. The command line never sets it: apply refuses such
	// a plan instead.
	MaxDisruption *diff.Disruption
	// ledgerUnsaved says the last save of the ledger failed: the records
	// in memory are newer than the file, and every pass tries again.
	ledgerUnsaved bool
	// rot keeps the WireGuard endpoint rotation between passes.
	rot rotation
	// lastRead is the kernel state the last plan read (LastRead); prev is
	// that state as read, before the plan added foreign routes to it, which
	// the next plan may take kinds from (SetReread, reuse.go).
	lastRead, prev *model.State
	// reread is what the next plan reads again (zero: everything).
	reread    actual.Fresh
	rereadSet bool
	// written is what Apply changed since the last plan read.
	written actual.Fresh
	// RouteEchoes says the caller (the daemon) patches the route tables
	// Apply writes from the notifications of those writes
	// (actual.Fresh.RouteChanges), or marks them read again itself when
	// it cannot: Apply leaves them out of written. A repair beside a full
	// table would otherwise cost the next pass a dump of the shared table.
	RouteEchoes bool
	// routesRead is what the last plan's read took of the routes
	// (RoutesRead).
	routesRead actual.RoutesRead
	// created are the keys of the routes Apply created since the last
	// plan read: with prev's, those ours held at last sight (dropHeld).
	created map[model.RouteKey]bool
	// prevNft are the nftables tables prev's read covered: the ledger's
	// and the file's at the time.
	prevNft map[model.NftTableKey]bool
	// lastUp are the WireGuard peers that were up in the last plan (the
	// elements-from sets' members); while frozen, plans use them instead of
	// the peers' states now (FreezePeers).
	lastUp map[string]map[model.Key]bool
	frozen bool
	// planned is what the last plan was made from: Apply plans from it
	// again, once the plan's links are made, for the nftables tables it
	// left waiting for them (diff.Plan.Waiting).
	planned struct {
		desired *model.State
		in      diff.Inputs
	}
}

// FreezePeers makes the plans that follow fill elements-from sets with the
// peers that were up in the last plan, until thaw is called. A verify after
// an apply checks what the apply wrote: a peer whose handshake completed
// meanwhile is a new input for the next pass, not a kernel that failed to
// take the plan (the fleet mesh's first apply: peers come up within the
// verify's retries).
func (e *Engine) FreezePeers() (thaw func()) {
	e.frozen = true
	return func() { e.frozen = false }
}

// LastRead returns the kernel state the last Plan or PlanDesired read, as
// the diff saw it (nil before the first, or when that read failed). The
// caller must not change it.
func (e *Engine) LastRead() *model.State { return e.lastRead }

// ForgetRead drops the kernel state the last plan read: the next plan reads
// everything, as it does after a new configuration anyway. The daemon calls
// it before it parses a file again, so that the two are not held at once
// (a reload of a big host peaked on the old read, the old configuration
// and the new one's parse together: bench-memory).
func (e *Engine) ForgetRead() { e.lastRead, e.prev, e.prevNft, e.created = nil, nil, nil, nil }

// Actual reads the kernel state relevant to desired's protocol.
// Of the sysctls, it reads those the ledger owns and those of sysctls
// (show --all passes the file's).
func (e *Engine) Actual(protocol int, all bool, sysctls ...model.Sysctl) (*model.State, error) {
	st, err := e.actual(protocol, all, nil, actual.All, sysctls, nil, true)
	if err != nil {
		return nil, err
	}
	if all {
		if err := e.readForeignNFT(st); err != nil {
			return nil, err
		}
	}
	// The "default" keys read to check the per-link ones are not shown.
	keep := st.Sysctls[:0:0]
	for _, s := range st.Sysctls {
		if s.Owned || model.FindSysctl(sysctls, s.Key) != nil {
			keep = append(keep, s)
		}
	}
	st.Sysctls = keep
	return st, nil
}

// actual is Actual reading only the kinds in fresh, the others taken from
// prev (actual.ReadReusing), the sysctls the ledger owns and desired
// declares, and of the routes those of the tables the ledger records and
// of tables (the file's). The FoU ports are read when fou says so or the
// ledger owns some.
func (e *Engine) actual(protocol int, all bool, prev *model.State, fresh actual.Fresh, desired []model.Sysctl, tables map[int]bool, fou bool) (*model.State, error) {
	opt := actual.Options{Protocol: protocol, AllRoutes: all, OwnedFou: e.Ledger.Fou, SkipFou: !fou,
		Sysctls: actual.SysctlKeys(desired, e.Ledger.Sysctls), OwnedSysctls: e.Ledger.Sysctls,
		RouteTables: e.routeTables(protocol, tables)}
	st, read, err := actual.ReadReusing(e.Kernel, opt, prev, fresh)
	if err != nil {
		return nil, err
	}
	if actual.RAKeysNeeded(desired, st) {
		if err := actual.ReadLinkRAKeys(e.Kernel, st); err != nil {
			return nil, err
		}
	}
	if shorts := actual.SpreadKeysNeeded(desired, st); len(shorts) > 0 {
		if err := actual.ReadLinkKeys(e.Kernel, st, shorts); err != nil {
			return nil, err
		}
	}
	e.recordRouteTables(st, protocol, read)
	if prev != nil && fresh.Kinds&actual.NFT == 0 {
		// The tables of the previous read: the ledger's and the
		// file's, as checkNftHandles left them.
		st.NFTables = prev.NFTables
	} else if err := e.readNFT(st, nil); err != nil {
		return nil, err
	}
	if err := e.resolvePendingLinks(st); err != nil {
		return nil, err
	}
	return st, e.forgetVanished(st)
}

// routeTables is what a read of our routes walks (actual.Options.RouteTables):
// the tables the ledger records as holding ours and those of tables (the
// file's routes'), when the ledger's record is complete; nil, every table,
// when it is not (a first run, a ledger from before the record, or one
// lost), so that no route of ours goes unseen.
func (e *Engine) routeTables(protocol int, tables map[int]bool) []int {
	if !e.Ledger.RouteTablesKnown(protocol) {
		return nil
	}
	set := maps.Clone(tables)
	if set == nil {
		set = map[int]bool{}
	}
	for _, t := range e.Ledger.RouteTablesOf(protocol) {
		set[t] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// recordRouteTables brings the ledger's record of the tables holding our
// routes up to what a read found in the tables it walked: a table without
// routes of ours is dropped, one with some recorded (a route of ours
// someone else wrote there, which the next pass deletes, is found again),
// and a read of every table makes the record complete.
func (e *Engine) recordRouteTables(st *model.State, protocol int, read actual.RoutesRead) {
	e.routesRead = read
	// A table patched from notifications is known as well as one read.
	read.Tables = append(slices.Clip(read.Tables), read.Patched...)
	if !read.All && len(read.Tables) == 0 {
		return
	}
	found := map[int]bool{}
	for i := range st.Routes {
		if int(st.Routes[i].Protocol) == protocol {
			found[int(st.Routes[i].Table)] = true
		}
	}
	changed := false
	if read.All {
		changed = e.Ledger.SetRouteTablesSwept(protocol, found)
	} else {
		for _, t := range read.Tables {
			changed = e.Ledger.SetRouteTable(protocol, t, found[t]) || changed
		}
	}
	if changed {
		_ = e.saveLedger() // on failure: retried, see forgetVanished
	}
}

// resolvePendingLinks settles the links a pass was creating when it
// stopped (Ledger.PendingLinks): one that exists without the owner marker is
// ours, created just before the crash, and gets the marker (in a read-only
// run it is only shown as ours); one that is marked or absent needs nothing.
// The record is dropped either way.
func (e *Engine) resolvePendingLinks(st *model.State) error {
	if len(e.Ledger.PendingLinks) == 0 {
		return nil
	}
	for name := range e.Ledger.PendingLinks {
		if l := st.Links[name]; l != nil && !l.Owned {
			if !e.Ledger.ReadOnly {
				if err := e.Kernel.SetLinkAlias(name, l.Alias, true); err != nil {
					return fmt.Errorf("mark link %s, created by an interrupted pass: %w", name, err)
				}
			}
			l.Owned = true
		}
		if !e.Ledger.ReadOnly {
			e.Ledger.SetPendingLink(name, false)
		}
	}
	_ = e.saveLedger() // on failure: retried, see forgetVanished
	return nil
}

// forgetVanished drops from the ledger the FoU ports, nftables tables and
// sysctls it lists that the kernel no longer holds (deleted by hand, gone
// with a namespace, a link or a reboot). Kept, such an entry would make a later object of
// the same name, created by someone else, look like ours and be deleted.
func (e *Engine) forgetVanished(st *model.State) error {
	changed := false
	present := map[model.FouKey]bool{}
	for _, f := range st.FouPorts {
		present[f.Key()] = true
	}
	for k := range e.Ledger.Fou {
		if !present[k] {
			e.Ledger.SetFou(k, false)
			changed = true
		}
	}
	tables := map[model.NftTableKey]bool{}
	for _, t := range st.NFTables {
		tables[t.Key()] = true
	}
	for k := range e.Ledger.NFTables {
		if !tables[k] {
			e.Ledger.SetNftTable(k, false)
			changed = true
		}
	}
	// Every key the ledger lists was read (actual.SysctlKeys): one that
	// was not found went with its link. A link made again under the name
	// starts from the "default" value; the file's value is written again
	// and recorded afresh.
	for k := range e.Ledger.Sysctls {
		if model.FindSysctl(st.Sysctls, k) == nil {
			e.Ledger.ForgetSysctl(k)
			changed = true
		}
	}
	if !changed && !e.ledgerUnsaved {
		return nil
	}
	// A failed save does not stop the pass from reading the kernel: the
	// records stay in memory (ledgerUnsaved), Apply tries again and reports
	// the failure, and a pass that creates nothing can still repair drift.
	_ = e.saveLedger()
	return nil
}

// saveLedger writes the ledger, and remembers a failure so that the next
// pass tries again: a record kept only in memory is lost with the process.
func (e *Engine) saveLedger() error {
	if err := e.Ledger.Save(); err != nil {
		e.ledgerUnsaved = true
		return fmt.Errorf("save ownership ledger (retried on the next pass): %w", err)
	}
	e.ledgerUnsaved = false
	return nil
}

// SaveLedger writes records that a failed save left in memory; it does
// nothing when there are none.
func (e *Engine) SaveLedger() error {
	if !e.ledgerUnsaved {
		return nil
	}
	return e.saveLedger()
}

// LedgerUnsaved reports whether the ledger holds records its file lacks
// because the last save failed.
func (e *Engine) LedgerUnsaved() bool { return e.ledgerUnsaved }

// LockPass takes the namespace's writer lock, held from the plan to the
// last write of a pass: two writers (apply, the daemon, ipam) would
// otherwise interleave their changes and overwrite each other's records.
// Without a Lock function it does nothing.
//
// Once it holds the lock, it reads the ledger again: the last writer may
// have been another process. Records a failed save did not write are kept
// on top of what the file holds (Ledger.Reload); before, the ledger was
// not read again while such records were pending, and the next save wrote
// its stale records over another writer's.
func (e *Engine) LockPass(ctx context.Context) (func(), error) {
	if e.Lock == nil {
		return func() {}, nil
	}
	unlock, err := e.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock the namespace: %w", err)
	}
	if err := e.Ledger.Reload(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// readNFT reads the nftables tables the ledger owns and those desired
// declares, and no other.
func (e *Engine) readNFT(st *model.State, desired *model.State) error {
	var keys []model.NftTableKey
	if desired == nil {
		for k := range e.Ledger.NFTables {
			keys = append(keys, k)
		}
	} else {
		have := map[model.NftTableKey]bool{}
		for _, t := range st.NFTables {
			have[t.Key()] = true
		}
		for _, t := range desired.NFTables {
			if !have[t.Key()] {
				keys = append(keys, t.Key())
			}
		}
	}
	ts, err := actual.ReadNFT(e.Kernel, keys, e.Ledger.NFTables)
	if err != nil {
		return fmt.Errorf("read nftables: %w", err)
	}
	e.checkNftHandles(ts)
	st.NFTables = append(st.NFTables, ts...)
	model.SortNftTables(st.NFTables)
	return nil
}

// readForeignNFT adds to st the tables of the kernel that the ledger does
// not list, not owned: show --all prints them as the others' objects.
func (e *Engine) readForeignNFT(st *model.State) error {
	keys, err := e.Kernel.NFTTables()
	if errors.Is(err, kernel.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	have := map[model.NftTableKey]bool{}
	for _, t := range st.NFTables {
		have[t.Key()] = true
	}
	var others []model.NftTableKey
	for _, k := range keys {
		if !have[k] && !e.Ledger.NFTables[k] {
			others = append(others, k)
		}
	}
	for _, k := range others {
		// Another's table may hold what this reader does not know: it is
		// named with the reason rather than failing the whole read.
		ts, err := actual.ReadNFT(e.Kernel, []model.NftTableKey{k}, nil)
		if err != nil {
			ts = []model.NftTable{{Family: k.Family, Name: k.Name, Unread: err.Error()}}
		}
		st.NFTables = append(st.NFTables, ts...)
	}
	model.SortNftTables(st.NFTables)
	return nil
}

// checkNftHandles compares the handle of each table the ledger lists with
// the one it recorded. Another handle means the table was deleted and made
// again by someone else under the same name: it is not ours (a conflict if
// the file declares it, untouched if not), and the ledger forgets it. A
// table listed without a handle (a ledger older than handles) gets the
// one it has now.
func (e *Engine) checkNftHandles(ts []model.NftTable) {
	changed := false
	for i := range ts {
		t := &ts[i]
		k := t.Key()
		if !t.Owned {
			continue
		}
		switch h, known := e.Ledger.NFTHandles[k]; {
		case !e.Ledger.NftTableIsOurs(k, t.Handle):
			t.Owned = false
			e.Ledger.SetNftTable(k, false)
			changed = true
		case !known || h == 0:
			e.Ledger.SetNftTableHandle(k, t.Handle)
			changed = true
		}
	}
	if changed {
		_ = e.saveLedger() // on failure: retried, see forgetVanished
	}
}

// PlanDesired resolves desired's pools (allocating addresses and blocks
// unless dryRun) and plans. A dry run's plan also lists what the pools would
// add. The command line and the daemon both plan through here.
func (e *Engine) PlanDesired(ctx context.Context, desired *model.State, dryRun bool) (*diff.Plan, *Pools, error) {
	reg, err := e.OpenRegistry(desired)
	if err != nil {
		return nil, nil, err
	}
	if err := e.checkLostRegistries(reg, desired); err != nil {
		return nil, nil, err
	}
	// A link the plan leaves out for a conflict gets no address from a
	// pool: the address would be left out with it, and diff, which
	// allocates nothing, would list another plan. Which links are left out
	// only a plan says: an apply that has addresses to allocate plans once
	// without them first.
	//
	// Likewise a link of ours that leaves the file but that the plan
	// leaves as it is (its delete is in conflict) keeps the address it
	// took, while the kernel shows it there: given back, the pool would
	// hand it out again while the link still holds it.
	pools, err := preparePools(ctx, reg, desired, true, nil, nil, false)
	if err != nil {
		return nil, nil, err
	}
	var leftOut map[string]bool
	var onLinks map[string]map[netip.Addr]bool
	if len(pools.Pending) > 0 || len(pools.Released) > 0 {
		plan, err := e.PlanPools(pools)
		if plan == nil {
			return nil, nil, err
		}
		leftOut = plan.LeftOut
		onLinks = addressesOn(e.lastRead, leftOut)
		// What such a link keeps is reserved in the pools for this pass:
		// a static address the file no longer gives it stays on it, and
		// handed out again it would be on two links.
		if kept := keptPools(desired.IPAMPools(), onLinks); kept != nil {
			if reg, err = e.openRegistry(kept); err != nil {
				return nil, nil, err
			}
		}
	}
	// The dry run's second look knows what is left out: it then fails where
	// the apply would, a pool exhausted above all.
	if dryRun && len(pools.Pending) > 0 || dryRun && len(leftOut) > 0 && len(pools.Released) > 0 {
		if pools, err = preparePools(ctx, reg, desired, true, leftOut, onLinks, true); err != nil {
			return nil, nil, err
		}
	}
	if !dryRun {
		dropped, err := e.dropStaticAddrs(desired, leftOut)
		if err != nil {
			return nil, nil, err
		}
		if pools, err = preparePools(ctx, reg, desired, false, leftOut, onLinks, false); err != nil {
			e.restoreStaticAddrs(reg, desired, dropped)
			return nil, nil, err
		}
	}
	plan, err := e.PlanPools(pools)
	return plan, pools, err
}

// Plan reads the kernel and computes the plan to reach desired. A non-nil
// plan may come with a diff.Conflicts error: the conflicting objects are left
// out of it.
func (e *Engine) Plan(desired *model.State) (*diff.Plan, error) {
	return e.plan(desired, diff.Inputs{})
}

// plan is Plan with the inputs the pools prepared; it adds the WireGuard
// peers' states.
func (e *Engine) plan(desired *model.State, in diff.Inputs) (*diff.Plan, error) {
	e.planned.desired, e.planned.in = desired, in
	last, created := e.prev, e.created
	e.created = nil
	prev, fresh := e.reuse(desired)
	e.lastRead, e.prev = nil, nil
	// The FoU ports only for a file that declares some (or a ledger that
	// owns some): nothing else in a plan looks at them.
	act, err := e.actual(desired.Protocol, false, prev, fresh, desired.Sysctls, routeTablesOf(desired), len(desired.FouPorts) > 0)
	if err != nil {
		return nil, fmt.Errorf("read kernel state: %w", err)
	}
	if prev == nil || fresh.Kinds&actual.NFT != 0 {
		if err := e.readNFT(act, desired); err != nil {
			return nil, fmt.Errorf("read kernel state: %w", err)
		}
		e.prevNft = nftTableSet(e.Ledger.NFTables, desired)
	}
	e.lastRead = act
	// What the next plan may reuse: this read, before foreign routes are
	// added to it below. Clipped, so that adding them copies the slice
	// instead of writing (and sorting) into the one kept here.
	act.Routes = slices.Clip(act.Routes)
	snap := *act
	e.prev = &snap
	// The endpoint rotation judges peers by their handshakes: only on a
	// fresh read of the devices. On one that reuses the last read, the
	// last pass's decisions stand: its endpoints are on the devices (or
	// its failed writes made this read fresh), and desired's peers keep
	// theirs (an invalid endpoint leaves the device's as it is).
	if prev == nil || fresh.Kinds&(actual.WireGuard|actual.Links) != 0 {
		var decisions []pendingDecision
		var up peersUp
		desired, decisions, up = e.decide(desired, act)
		e.rot.mu.Lock()
		e.rot.pending = decisions
		e.rot.mu.Unlock()
		if !e.frozen {
			e.lastUp = up
		}
	} else {
		e.rot.mu.Lock()
		e.rot.pending = nil
		e.rot.mu.Unlock()
	}
	in.PeersUp = e.lastUp
	waiting, err := e.resolveRules(desired, act)
	if err != nil {
		return nil, err
	}
	in.Waiting = waiting
	in.MaxDisruption = e.MaxDisruption
	plan, err := diff.ComputeWith(desired, act, in)
	if plan == nil {
		return plan, err
	}
	if more := waitForNewIndexes(desired, act, plan, in.Waiting); more != nil {
		in.Waiting = more
		if plan, err = diff.ComputeWith(desired, act, in); plan == nil {
			return plan, err
		}
	}
	if err := e.compileWrites(plan, desired, act); err != nil {
		return nil, err
	}
	// The kernel state holds our routes only. A route the plan creates may
	// meet a foreign one with its key: read the tables of the creates, and
	// if one is there, plan again so that it shows as a conflict. A pass
	// that creates no route pays nothing for this.
	//
	// A route of ours the previous read found, gone now, is a repair: it
	// is created again without that read, which walks every route of the
	// table, of every protocol (beside a full Internet table, a quarter of
	// a million in a shared table: most of a repair's time). Nothing
	// foreign is at risk: a create is exclusive (NLM_F_EXCL), so a
	// foreign route that took the key since is refused, not replaced, and
	// apply says whose it is; the next plan, whose previous read lacks
	// ours there, reads the table and shows the conflict.
	var missing map[int]map[model.RouteKey]bool
	for i := range plan.Ops {
		op := &plan.Ops[i]
		if op.Kind != diff.KindRoute || op.Action != diff.Create {
			continue
		}
		k := op.Route.Key()
		if missing == nil {
			missing = map[int]map[model.RouteKey]bool{}
		}
		t := int(k.Table)
		if missing[t] == nil {
			missing[t] = map[model.RouteKey]bool{}
		}
		missing[t][k] = true
	}
	dropHeld(missing, last, created, desired.Protocol)
	if len(missing) == 0 {
		return plan, err
	}
	added, rerr := actual.AddForeignRoutesInTheWay(e.Kernel, act, missing, desired.Protocol)
	if rerr != nil {
		return nil, fmt.Errorf("read kernel state: %w", rerr)
	}
	if added {
		if plan, err = diff.ComputeWith(desired, act, in); plan != nil {
			if cerr := e.compileWrites(plan, desired, act); cerr != nil {
				return nil, cerr
			}
		}
	}
	return plan, err
}

// dropHeld drops from missing (keys by table) those a route of protocol
// held at last sight: in prev, a previous read, or created since (created),
// and the tables left without keys.
func dropHeld(missing map[int]map[model.RouteKey]bool, prev *model.State, created map[model.RouteKey]bool, protocol int) {
	drop := func(k model.RouteKey) {
		if keys := missing[int(k.Table)]; keys != nil {
			delete(keys, k)
			if len(keys) == 0 {
				delete(missing, int(k.Table))
			}
		}
	}
	for k := range created {
		drop(k)
	}
	if len(missing) == 0 || prev == nil || prev.Protocol != protocol {
		return
	}
	for i := range prev.Routes {
		if r := &prev.Routes[i]; int(r.Protocol) == protocol {
			drop(r.Key())
		}
	}
}

// routeTablesOf is the tables of desired's routes.
func routeTablesOf(desired *model.State) map[int]bool {
	out := map[int]bool{}
	for i := range desired.Routes {
		out[int(desired.Routes[i].Table)] = true
	}
	return out
}

// unmarkedLinks names the links an apply made and could not mark: those
// whose create failed with kernel.ErrUnmarked, and the other end of a veth
// pair whose create made it (done, or failed after the link was made:
// apply.LinkMade) when the op that marks that end did not finish (it
// failed, or was skipped with the first end). Only a pair this apply made:
// a create that failed outright may have met someone else's link of that
// name.
func unmarkedLinks(res *apply.Result) map[string]bool {
	out := map[string]bool{}
	made := map[string]bool{}
	isCreate := func(op *diff.Op) bool {
		return op.Kind == diff.KindLink && op.Link != nil && (op.Action == diff.Create || op.Action == diff.Replace)
	}
	for i := range res.Done {
		if op := res.Done[i]; isCreate(op) {
			made[op.Link.Name] = true
		}
	}
	for i := range res.Failed {
		f := &res.Failed[i]
		if !isCreate(&f.Op) || !apply.LinkMade(f.Err) {
			continue
		}
		made[f.Op.Link.Name] = true
		if errors.Is(f.Err, kernel.ErrUnmarked) {
			out[f.Op.Link.Name] = true
		}
	}
	for i := range res.Failed {
		f := &res.Failed[i]
		if op := &f.Op; isCreate(op) && op.PeerOfPair && made[op.Link.Veth.Peer] && !apply.LinkMade(f.Err) {
			out[op.Link.Name] = true
		}
	}
	return out
}

// Apply executes a plan and records what the ledger must remember.
//
// Ownership is recorded ahead of the kernel (write-ahead): the nftables
// tables and FoU ports the plan creates, and the old values of the sysctls
// it sets, are written to the ledger, durably,
// before the first kernel write, so a crash, SIGKILL or the watchdog's
// SIGABRT at any point leaves no object that netreconcile made and does not
// know about. On the next load an intended object that exists is ours (it is
// what we were creating: diff plans a create only for what does not exist),
// and one that does not is forgotten (forgetVanished). When the intent
// cannot be saved (a full disk, a read-only state directory), nothing is
// applied: creating what we could not record would make an orphan.
func (e *Engine) Apply(ctx context.Context, plan *diff.Plan) (*apply.Result, error) {
	intendedFou := map[model.FouKey]bool{}
	intendedNft := map[model.NftTableKey]bool{}
	intendedLinks := map[string]bool{}
	// intendedSysctls holds, for each key the plan takes over, the record
	// it replaces ("" with had false: none), to put back if the write
	// does not happen.
	type sysctlRecord struct {
		was string
		had bool
	}
	intendedSysctls := map[string]sysctlRecord{}
	// intendedTables are the routing tables the plan writes routes of ours
	// into that the ledger does not list: recorded first, or a crash
	// after the write, and a file that then drops the table, would leave
	// routes no read walks to (Ledger.RouteTables).
	intendedTables := map[int]bool{}
	for i := range plan.Ops {
		op := &plan.Ops[i]
		switch {
		case op.Kind == diff.KindRoute && op.Route != nil && op.Action != diff.Delete:
			if t := int(op.Route.Table); !e.Ledger.RouteTables[ledger.RouteTable{Protocol: plan.Protocol, Table: t}] && !intendedTables[t] {
				intendedTables[t] = true
				e.Ledger.SetRouteTable(plan.Protocol, t, true)
			}
		case op.Kind == diff.KindSysctl && op.Sysctl != nil && (op.Action == diff.Create || op.Action == diff.Update) && !op.SysctlUnowned:
			// The old value is recorded before the first write. A
			// key recorded already keeps its first value, except on
			// a link made again (Create): its old value is the new
			// link's first one; and after a master key's write that
			// set it (SysctlRebase): it is the master's value.
			k := op.Sysctl.Key
			was, had := e.Ledger.Sysctls[k]
			if had && (was == op.SysctlWas || op.Action == diff.Update && !op.SysctlRebase) {
				// The write relies on the record: saved touched, so
				// that a writer that dropped it with a failed save
				// keeps it on Reload (the value stays owed back).
				e.Ledger.TouchSysctl(k)
				continue
			}
			intendedSysctls[k] = sysctlRecord{was, had}
			e.Ledger.RecordSysctl(k, op.SysctlWas)
		case op.Kind == diff.KindNftTable && op.Action == diff.Create:
			if k := op.NftTable(); !e.Ledger.NFTables[k] {
				intendedNft[k] = true
				e.Ledger.SetNftTable(k, true)
			}
		case op.Kind == diff.KindLink && op.Link != nil && (op.Action == diff.Create || op.Action == diff.Replace):
			intendedLinks[op.Link.Name] = true
			if op.PeerOfPair && op.Link.Veth != nil && op.Link.Veth.Peer != "" {
				intendedLinks[op.Link.Veth.Peer] = true
			}
		case op.Kind == diff.KindFou && op.Fou != nil && (op.Action == diff.Create || op.Action == diff.Replace):
			if k := op.Fou.Key(); !e.Ledger.Fou[k] {
				intendedFou[k] = true
				e.Ledger.SetFou(k, true)
			}
		}
	}
	for n := range intendedLinks {
		e.Ledger.SetPendingLink(n, true)
	}
	undoSysctl := func(k string) {
		if r := intendedSysctls[k]; r.had {
			e.Ledger.RecordSysctl(k, r.was)
		} else {
			e.Ledger.ForgetSysctl(k)
		}
	}
	if len(intendedFou)+len(intendedNft)+len(intendedLinks)+len(intendedSysctls)+len(intendedTables) > 0 {
		if err := e.saveLedger(); err != nil {
			for t := range intendedTables {
				e.Ledger.SetRouteTable(plan.Protocol, t, false)
			}
			for k := range intendedSysctls {
				undoSysctl(k)
			}
			for n := range intendedLinks {
				e.Ledger.SetPendingLink(n, false)
			}
			for k := range intendedFou {
				e.Ledger.SetFou(k, false)
			}
			for k := range intendedNft {
				e.Ledger.SetNftTable(k, false)
			}
			return &apply.Result{}, fmt.Errorf("record ownership before changing the kernel: %w; nothing was changed", err)
		}
	}
	// Whatever the plan touches, the next plan reads again (SetReread).
	e.written = e.written.Add(written(plan, e.RouteEchoes))
	dirty := false
	var madeTables []model.NftTableKey
	res := apply.Apply(ctx, e.Kernel, plan, apply.Hooks{FouChanged: func(k model.FouKey, owned bool) {
		e.Ledger.SetFou(k, owned)
		delete(intendedFou, k)
		dirty = true
	}, NftTableChanged: func(k model.NftTableKey, owned bool) {
		e.Ledger.SetNftTable(k, owned)
		if owned {
			madeTables = append(madeTables, k)
		}
		delete(intendedNft, k)
		dirty = true
	}, SysctlChanged: func(k, _ string, owned bool) {
		if !owned {
			e.Ledger.ForgetSysctl(k)
		}
		delete(intendedSysctls, k)
		dirty = true
	}})
	// A link whose create finished carries its marker now; one whose create
	// failed was not made (a failed create may also mean that someone
	// else's link took the name, which must never be marked as ours). Two
	// cases leave a record for the next pass: a pass that dies in between,
	// and a create that made the link and could not write its marker
	// (kernel.ErrUnmarked: the error says the link was made). That link is
	// ours, and the next pass marks it (resolvePendingLinks) instead of
	// taking it for someone else's, a conflict forever.
	unmarked := unmarkedLinks(res)
	for n := range intendedLinks {
		if !unmarked[n] {
			e.Ledger.SetPendingLink(n, false)
		}
		dirty = true
	}
	// What was intended and not made (the op failed or was skipped) is no
	// longer ours to claim.
	for k := range intendedFou {
		e.Ledger.SetFou(k, false)
		dirty = true
	}
	for k := range intendedNft {
		e.Ledger.SetNftTable(k, false)
		dirty = true
	}
	for k := range intendedSysctls {
		undoSysctl(k)
		dirty = true
	}
	if e.recordStaticAddrs(plan.PoolAddrs, res.Done) {
		dirty = true
	}
	for _, op := range res.Done {
		if op.Kind == diff.KindRoute && op.Action == diff.Create && op.Route != nil {
			if e.created == nil {
				e.created = map[model.RouteKey]bool{}
			}
			e.created[op.Route.Key()] = true
		}
	}
	e.commitRotation(res)
	// The batch does not return the handles of the tables it created or
	// adopted: read them now, so the next pass can tell them from tables
	// someone else makes under the same names.
	var herr error
	for _, k := range madeTables {
		h, err := e.Kernel.NFTTableHandle(k)
		if err != nil {
			herr = errors.Join(herr, fmt.Errorf("read the handle of nftables table %s: %w", k, err))
			continue
		}
		e.Ledger.SetNftTableHandle(k, h)
	}
	if dirty || e.ledgerUnsaved || e.Ledger.Touched() {
		if err := e.saveLedger(); err != nil {
			herr = errors.Join(herr, err)
		}
	}
	if len(plan.Waiting) > 0 && ctx.Err() == nil {
		herr = errors.Join(herr, e.applyWaiting(ctx, plan, res))
	}
	if herr != nil {
		return res, herr
	}
	return res, nil
}

// recordStaticAddrs keeps the ledger's record of the static addresses a
// pass added (Ledger.StaticAddrs) from the ops done: an address created (or
// made again) that no pool handed out (pooled, diff.Plan.PoolAddrs) is recorded; one deleted, or on a link
// deleted or made again, is not any more. Recorded after the write, not
// before: a record missing for an address made is a lost registry's
// refusal that need not be, one standing for an address not made could
// forgive what a pool hands out later under its key. An address that was
// in the kernel before and that the file now declares (someone else's, or
// one a pool handed out) is not recorded: netreconcile did not put it there
// as the file's. It reports whether the record changed.
func (e *Engine) recordStaticAddrs(pooled map[string]map[netip.Addr]bool, done []*diff.Op) bool {
	if e.Ledger == nil {
		return false
	}
	changed := false
	// A link's records go first, in one pass over them: the addresses of
	// a link made again are created after it, and recorded below.
	gone := map[string]bool{}
	for _, op := range done {
		if op.Kind == diff.KindLink && op.Link != nil && (op.Action == diff.Delete || op.Action == diff.Replace) {
			gone[op.Link.Name] = true
		}
	}
	if len(gone) > 0 {
		for k := range e.Ledger.StaticAddrs {
			if gone[k.Link] {
				changed = e.Ledger.SetStaticAddr(k, false) || changed
			}
		}
	}
	for _, op := range done {
		switch {
		case op.Kind != diff.KindAddress || op.Address == nil:
		case op.Action == diff.Delete:
			changed = e.Ledger.SetStaticAddr(op.Address.Key(), false) || changed
		case op.Action == diff.Create || op.Action == diff.Replace:
			static := !pooled[op.Address.Link][op.Address.Prefix.Addr()]
			changed = e.Ledger.SetStaticAddr(op.Address.Key(), static) || changed
		}
	}
	return changed
}

// applyWaiting plans again, now that the plan's links are made, and applies
// the ops of the nftables tables the plan left waiting for them, adding
// what it did to res: one apply converges, the links first, then the rules
// that name them. A table whose link is still missing (its create failed)
// waits again, and the next plan shows it. Conflicts were the first plan's
// to report; only the waiting tables' ops are taken from this one.
func (e *Engine) applyWaiting(ctx context.Context, plan *diff.Plan, res *apply.Result) error {
	desired, in := e.planned.desired, e.planned.in
	if desired == nil {
		return nil
	}
	// The sets fed by peers hold what the first plan wrote: a handshake
	// meanwhile is the next pass's input.
	thaw := e.FreezePeers()
	again, err := e.plan(desired, in)
	thaw()
	var conflicts diff.Conflicts
	if again == nil || err != nil && !errors.As(err, &conflicts) {
		return fmt.Errorf("plan the nftables tables that waited for their links: %w", err)
	}
	waited := again.Select(func(op *diff.Op) bool { return op.Kind.IsNft() && plan.Waiting[op.Table] != "" })
	waited.Waiting = nil
	if len(waited.Ops) == 0 {
		return nil
	}
	more, err := e.Apply(ctx, waited)
	res.Done = append(res.Done, more.Done...)
	res.Failed = append(res.Failed, more.Failed...)
	return err
}
