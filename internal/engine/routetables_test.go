package engine

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

func parseState(t *testing.T, yaml string) *model.State {
	t.Helper()
	cfg, err := desired.Parse([]desired.Source{{Name: "tables.yaml", Data: []byte(yaml)}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.State
}

func applyState(t *testing.T, e *Engine, st *model.State) {
	t.Helper()
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
		t.Fatalf("apply: %v %v", err, res.Err())
	}
}

const tablesFile = `version: 1
links:
  br0: {kind: bridge}
routes:
  - {to: 10.1.0.0/24, dev: br0, table: 100}
  - {to: 10.2.0.0/24, dev: br0, table: 200}
`

// A read walks the tables that hold routes of ours and the file's, never
// every table, once the ledger's record of them is complete: the first
// plan sweeps every table and records what it finds; then a dump of every
// table fails, and plans still find what is theirs to find. A route of
// ours in a table the file drops is found and deleted, and the table
// leaves the record once a read finds it empty.
func TestReadsWalkTheTablesOfOurs(t *testing.T) {
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led}
	if led.RouteTablesKnown(model.DefaultProtocol) {
		t.Fatal("a new ledger knows the tables of our routes")
	}
	// Someone else's route in a table of its own.
	k.PutRoute(model.Route{Table: 300, Dst: netip.MustParsePrefix("10.3.0.0/24"), Type: model.RouteUnicast, Protocol: 12})
	applyState(t, e, parseState(t, tablesFile))
	if !led.RouteTablesKnown(model.DefaultProtocol) || !slices.Equal(led.RouteTablesOf(model.DefaultProtocol), []int{100, 200}) {
		t.Fatalf("after the first apply: known %v, tables %v; want [100 200]", led.RouteTablesKnown(model.DefaultProtocol), led.RouteTablesOf(model.DefaultProtocol))
	}
	sweep := errors.New("every table dumped")
	k.FailAlways(kerneltest.CallRoutes, sweep)

	// The file drops table 200: its route is found through the record.
	one := parseState(t, `version: 1
links:
  br0: {kind: bridge}
routes:
  - {to: 10.1.0.0/24, dev: br0, table: 100}
`)
	if ops := planOps(t, e, one); ops != "delete route 10.2.0.0/24 table 200" {
		t.Fatalf("file without table 200: plan\n%s\nwant the route of table 200 deleted", ops)
	}
	applyState(t, e, one)
	if ops := planOps(t, e, one); ops != "" {
		t.Fatalf("converged: plan\n%s", ops)
	}
	if got := led.RouteTablesOf(model.DefaultProtocol); !slices.Equal(got, []int{100}) {
		t.Errorf("tables recorded after table 200 was emptied: %v, want [100]", got)
	}
	// A route of ours written behind our back in a table nothing
	// records is not seen: reads walk the tables of ours only...
	stray := model.Route{Table: 400, Dst: netip.MustParsePrefix("10.4.0.0/24"), Type: model.RouteUnicast, Protocol: model.DefaultProtocol}
	k.PutRoute(stray)
	if ops := planOps(t, e, one); ops != "" {
		t.Errorf("a table nothing records was read: plan\n%s", ops)
	}
	// ...until a ledger without the record (lost, or older) sweeps again.
	k.FailAlways(kerneltest.CallRoutes, nil)
	fresh, _ := ledger.OpenIn(nil, 0)
	e2 := &Engine{Kernel: k, Ledger: fresh}
	if ops := planOps(t, e2, one); ops != "delete route 10.4.0.0/24 table 400" {
		t.Errorf("a sweep: plan\n%s\nwant the stray route deleted", ops)
	}
	if got := fresh.RouteTablesOf(model.DefaultProtocol); !slices.Equal(got, []int{100, 400}) {
		t.Errorf("tables recorded by the sweep: %v, want [100 400]", got)
	}
}

// ledgerOnDisk checks, at each route write, that the ledger on disk already
// lists the table written to.
type ledgerOnDisk struct {
	*kerneltest.Kernel
	t   *testing.T
	dir *statedir.Dir
}

func (k *ledgerOnDisk) WriteRoutes(ws []kernel.RouteWrite, protocol int) []error {
	l, err := ledger.OpenIn(k.dir, 0)
	if err != nil {
		k.t.Fatal(err)
	}
	for _, w := range ws {
		if w.Action != kernel.RouteDelete && !l.RouteTables[ledger.RouteTable{Protocol: protocol, Table: int(w.Route.Table)}] {
			k.t.Errorf("route %s written into table %d before the ledger on disk lists it (%v)", w.Route.Dst, w.Route.Table, l.RouteTablesOf(protocol))
		}
	}
	return k.Kernel.WriteRoutes(ws, protocol)
}

// A table is recorded, durably, before the first route of ours is written
// into it: a crash right after the write, and a file that then drops the
// table, must not leave a route that no read walks to. A write that fails
// leaves the record, which the next read drops with nothing found.
func TestRouteTableRecordedBeforeTheWrite(t *testing.T) {
	sd, err := statedir.Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	k := &ledgerOnDisk{Kernel: kerneltest.New(), t: t, dir: sd}
	led, err := ledger.OpenIn(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Kernel: k, Ledger: led, State: sd}
	applyState(t, e, parseState(t, tablesFile))
	k.FailNext(kerneltest.CallAddRoute, errors.New("refused"))
	st := parseState(t, tablesFile+"  - {to: 10.5.0.0/24, dev: br0, table: 500}\n")
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := e.Apply(context.Background(), plan); res.Err() == nil {
		t.Fatal("the refused write did not fail")
	}
	l, _ := ledger.OpenIn(sd, 0)
	if got := l.RouteTablesOf(model.DefaultProtocol); !slices.Equal(got, []int{100, 200, 500}) {
		t.Errorf("on disk after the refused write: %v, want [100 200 500]", got)
	}
	if _, err := e.Plan(parseState(t, tablesFile)); err != nil {
		t.Fatal(err)
	}
	if got := led.RouteTablesOf(model.DefaultProtocol); !slices.Equal(got, []int{100, 200}) {
		t.Errorf("after a read found table 500 empty: %v, want [100 200]", got)
	}
}
