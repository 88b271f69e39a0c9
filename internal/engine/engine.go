// Package engine runs one reconcile pass: read the kernel, diff against the
// desired state, apply. The command line and the daemon share it.
package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Engine reconciles one network namespace.
type Engine struct {
	Kernel kernel.Interface
	Ledger *ledger.Ledger
	// IPAMDir is where the registry of the configuration's pools lives
	// (ipam/ below it); a configuration without pools never opens it.
	IPAMDir string
	// rot keeps the WireGuard endpoint rotation between passes.
	rot rotation
}

// Actual reads the kernel state relevant to desired's protocol.
func (e *Engine) Actual(protocol int, all bool) (*model.State, error) {
	st, err := actual.Read(e.Kernel, actual.Options{Protocol: protocol, AllRoutes: all, OwnedFou: e.Ledger.Fou})
	if err != nil {
		return nil, err
	}
	if err := e.readNFT(st, nil); err != nil {
		return nil, err
	}
	return st, e.forgetVanished(st)
}

// forgetVanished drops from the ledger the FoU ports and nftables tables it
// lists that the kernel no longer holds (deleted by hand, gone with a
// namespace or a reboot). Kept, such an entry would make a later object of
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
	if _, ok := e.Kernel.(kernel.NFTables); ok {
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
	}
	if !changed {
		return nil
	}
	if err := e.Ledger.Save(); err != nil {
		return fmt.Errorf("save ownership ledger: %w", err)
	}
	return nil
}

// readNFT reads the nftables tables the ledger owns and those desired
// declares, and no other.
func (e *Engine) readNFT(st *model.State, desired *model.State) error {
	nk, ok := e.Kernel.(kernel.NFTables)
	if !ok {
		return nil
	}
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
	ts, err := actual.ReadNFT(nk, keys, e.Ledger.NFTables)
	if err != nil {
		return fmt.Errorf("read nftables: %w", err)
	}
	if err := e.checkNftHandles(ts); err != nil {
		return err
	}
	st.NFTables = append(st.NFTables, ts...)
	model.SortNftTables(st.NFTables)
	return nil
}

// checkNftHandles compares the handle of each table the ledger lists with
// the one it recorded. Another handle means the table was deleted and made
// again by someone else under the same name: it is not ours (a conflict if
// the file declares it, untouched if not), and the ledger forgets it. A
// table listed without a handle (a ledger older than handles) gets the
// one it has now.
func (e *Engine) checkNftHandles(ts []model.NftTable) error {
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
	if !changed {
		return nil
	}
	if err := e.Ledger.Save(); err != nil {
		return fmt.Errorf("save ownership ledger: %w", err)
	}
	return nil
}

// Plan reads the kernel and computes the plan to reach desired. A non-nil
// plan may come with a diff.Conflicts error: the conflicting objects are left
// out of it.
func (e *Engine) Plan(desired *model.State) (*diff.Plan, error) {
	plan, _, err := e.plan(desired)
	return plan, err
}

// plan is Plan that also returns the kernel state it read, for callers that
// look further at it (the pools) without a second dump.
func (e *Engine) plan(desired *model.State) (*diff.Plan, *model.State, error) {
	act, err := e.Actual(desired.Protocol, false)
	if err != nil {
		return nil, nil, fmt.Errorf("read kernel state: %w", err)
	}
	if err := e.readNFT(act, desired); err != nil {
		return nil, nil, fmt.Errorf("read kernel state: %w", err)
	}
	desired, decisions, states := e.decide(desired, act)
	e.rot.mu.Lock()
	e.rot.pending = decisions
	e.rot.mu.Unlock()
	desired = fillPeerSets(desired, states)
	plan, err := diff.Compute(desired, act)
	if plan == nil {
		return plan, act, err
	}
	// The kernel state holds our routes only. A route the plan creates may
	// meet a foreign one with its key: read the tables of the creates, and
	// if one is there, plan again so that it shows as a conflict. A pass
	// that creates no route pays nothing for this.
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
		if missing[k.Table] == nil {
			missing[k.Table] = map[model.RouteKey]bool{}
		}
		missing[k.Table][k] = true
	}
	if len(missing) == 0 {
		return plan, act, err
	}
	added, rerr := actual.AddForeignRoutesInTheWay(e.Kernel, act, missing, desired.Protocol)
	if rerr != nil {
		return nil, nil, fmt.Errorf("read kernel state: %w", rerr)
	}
	if added {
		plan, err = diff.Compute(desired, act)
	}
	return plan, act, err
}

// Apply executes a plan and records what the ledger must remember.
func (e *Engine) Apply(ctx context.Context, plan *diff.Plan) (*apply.Result, error) {
	dirty := false
	var madeTables []model.NftTableKey
	res := apply.Apply(ctx, e.Kernel, plan, apply.Hooks{FouChanged: func(k model.FouKey, owned bool) {
		e.Ledger.SetFou(k, owned)
		dirty = true
	}, NftTableChanged: func(k model.NftTableKey, owned bool) {
		e.Ledger.SetNftTable(k, owned)
		if owned {
			madeTables = append(madeTables, k)
		}
		dirty = true
	}})
	e.commitRotation(res)
	// The batch does not return the handles of the tables it created or
	// adopted: read them now, so the next pass can tell them from tables
	// someone else makes under the same names.
	var herr error
	if nk, ok := e.Kernel.(kernel.NFTables); ok {
		for _, k := range madeTables {
			h, err := nk.NFTTableHandle(k)
			if err != nil {
				herr = errors.Join(herr, fmt.Errorf("read the handle of nftables table %s: %w", k, err))
				continue
			}
			e.Ledger.SetNftTableHandle(k, h)
		}
	}
	if herr != nil {
		if dirty {
			if err := e.Ledger.Save(); err != nil {
				herr = errors.Join(herr, fmt.Errorf("save ownership ledger: %w", err))
			}
		}
		return res, herr
	}
	if dirty {
		if err := e.Ledger.Save(); err != nil {
			return res, fmt.Errorf("save ownership ledger: %w", err)
		}
	}
	return res, nil
}
