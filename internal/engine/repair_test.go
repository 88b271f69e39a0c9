package engine

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/actual"
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

// The daemon's repair of a route of ours reads no route table: the
// notification of the delete patches the previous read (SetReread's
// RouteChanges), and with RouteEchoes the notification of the repair's own
// create does the same for the plan after it, which writes nothing. A
// change the patch cannot follow has the table read.
func TestIssue34RepairFromItsNotification(t *testing.T) {
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led, RouteEchoes: true}
	st := parseState(t, tablesFile)
	applyState(t, e, st)
	held, err := k.TableRoutes(100, model.DefaultProtocol)
	if err != nil || len(held) != 1 {
		t.Fatalf("table 100: %v %v, want the route of ours", held, err)
	}
	ours := held[0]
	if plan, err := e.Plan(st); err != nil || len(plan.Ops) != 0 {
		t.Fatalf("steady plan: %v, %d operations", err, len(plan.Ops))
	}
	noReads := func() {
		for _, c := range []kerneltest.Call{kerneltest.CallRoutes, kerneltest.CallTableRoutes, kerneltest.CallRoutesWithKeys} {
			k.FailAlways(c, errors.New("a walk of the whole table"))
		}
	}
	noReads()
	for i := range 3 {
		if errs := k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &ours}}, model.DefaultProtocol); errs[0] != nil {
			t.Fatal(errs[0])
		}
		e.SetReread(actual.Fresh{RouteChanges: map[int][]actual.RouteChange{100: {{Delete: true, Route: ours}}}})
		plan, err := e.Plan(st)
		if err != nil {
			t.Fatalf("repair %d: %v", i+1, err)
		}
		if len(plan.Ops) != 1 || plan.Ops[0].Action != diff.Create {
			t.Fatalf("repair %d: plan %v", i+1, plan.Ops)
		}
		if got := e.RoutesRead(); len(got.Tables) != 0 || !slices.Equal(got.Patched, []int{100}) {
			t.Fatalf("repair %d: routes read %+v, want table 100 patched", i+1, got)
		}
		if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatalf("repair %d: %v %v", i+1, err, res.Err())
		}
		// The create's own notification.
		e.SetReread(actual.Fresh{RouteChanges: map[int][]actual.RouteChange{100: {{Route: ours}}}})
		if plan, err := e.Plan(st); err != nil || len(plan.Ops) != 0 {
			t.Fatalf("after repair %d: %v, %v", i+1, err, plan.Ops)
		}
	}

	// The delete of a route of the key other than the one read: the
	// table is read.
	other := ours
	other.Dev = "elsewhere"
	e.SetReread(actual.Fresh{RouteChanges: map[int][]actual.RouteChange{100: {{Delete: true, Route: other}}}})
	if _, err := e.Plan(st); err == nil || !strings.Contains(err.Error(), "a walk of the whole table") {
		t.Fatalf("a change the patch cannot follow: plan %v, want the table read", err)
	}
	k.ClearFailures()
	if _, err := e.Plan(st); err != nil { // after a failed read: everything
		t.Fatal(err)
	}
	e.SetReread(actual.Fresh{RouteChanges: map[int][]actual.RouteChange{100: {{Delete: true, Route: other}}}})
	if plan, err := e.Plan(st); err != nil || len(plan.Ops) != 0 {
		t.Fatalf("a change the patch cannot follow: %v, %v", err, plan.Ops)
	}
	if got := e.RoutesRead(); !slices.Equal(got.Tables, []int{100}) || len(got.Patched) != 0 {
		t.Errorf("routes read %+v, want table 100 read", got)
	}
}
