package engine

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
)

// A route of ours that the previous read found and that is gone is created
// again without reading its table for foreign routes of its key (a walk of
// the whole table, of every protocol: beside a full Internet table most of
// a repair's time, issue 34). A foreign route that took the key meanwhile
// is still never touched: the exclusive create fails, apply says whose the
// route is, and the next plan shows the conflict.
func TestIssue34RepairSkipsTheConflictRead(t *testing.T) {
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led}
	st := parseState(t, tablesFile)
	applyState(t, e, st)
	ours := model.Route{Table: 100, Dst: netip.MustParsePrefix("10.1.0.0/24"), Dev: "br0", Type: model.RouteUnicast, Scope: model.ScopeLink, Protocol: model.DefaultProtocol}
	// The next plan finds it as the kernel holds it: no write.
	if plan, err := e.Plan(st); err != nil || len(plan.Ops) != 0 {
		t.Fatalf("steady plan: %v, %d operations", err, len(plan.Ops))
	}

	// Deleted by someone: repaired, the table not read for conflicts;
	// and deleted again before any other plan (the read before the
	// repair lacks it; the repair's create says it was ours).
	k.FailAlways(kerneltest.CallRoutesWithKeys, errors.New("a walk of the whole table"))
	for i := range 2 {
		for _, err := range k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &ours}}, model.DefaultProtocol) {
			if err != nil {
				t.Fatal(err)
			}
		}
		plan, err := e.Plan(st)
		if err != nil {
			t.Fatalf("repair %d: the plan read the table for conflicts: %v", i+1, err)
		}
		if len(plan.Ops) != 1 || plan.Ops[0].Action != diff.Create {
			t.Fatalf("repair %d: plan %v", i+1, plan.Ops)
		}
		if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatalf("repair %d: %v %v", i+1, err, res.Err())
		}
	}
	k.ClearFailures()

	// Replaced by someone else's route of the same key: the create is
	// refused, the foreign route stays, and the next plan shows the
	// conflict.
	foreign := ours
	foreign.Protocol = 12
	if _, err := e.Plan(st); err != nil {
		t.Fatal(err)
	}
	k.PutRoute(foreign)
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Apply(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if rerr := res.Err(); rerr == nil || !strings.Contains(rerr.Error(), "another program's") {
		t.Errorf("apply over the foreign route of our key: %v, want it refused as another program's", rerr)
	}
	plan, err = e.Plan(st)
	var c diff.Conflicts
	if !errors.As(err, &c) || !strings.Contains(c.Error(), "10.1.0.0/24 table 100") {
		t.Errorf("the plan after: %v, want the conflict of 10.1.0.0/24 table 100", err)
	}
	for _, op := range plan.Ops {
		if op.Kind == diff.KindRoute {
			t.Errorf("the plan after the conflict writes %s %s", op.Action, op.ID)
		}
	}
	got, _ := k.TableRoutes(100, 0)
	if len(got) != 1 || got[0].Protocol != 12 {
		t.Errorf("table 100 holds %v, want the foreign route alone", got)
	}
}
