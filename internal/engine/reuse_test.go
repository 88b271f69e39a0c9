package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

const reuseFile = `version: 1
links:
  br0: {kind: bridge}
routes:
  - {to: 10.1.0.0/24, dev: br0, table: 100}
  - {to: 10.2.0.0/24, dev: br0, table: 100}
  - {to: 10.3.0.0/24, dev: br0, table: 100}
  - {to: 10.4.0.0/24, dev: br0, table: 100}
rules:
  - {priority: 1000, from: 10.1.0.0/24, table: 100}
`

func planOps(t *testing.T, e *Engine, st *model.State) string {
	t.Helper()
	plan, err := e.Plan(st)
	if plan == nil {
		t.Fatalf("plan: %v", err)
	}
	var ops []string
	for _, op := range plan.Ops {
		ops = append(ops, string(op.Action)+" "+string(op.Kind)+" "+op.ID)
	}
	if err != nil {
		ops = append(ops, err.Error())
	}
	return strings.Join(ops, "\n")
}

// convergedEngine is an engine over an in-memory kernel that st has been
// applied to, converged.
func convergedEngine(t *testing.T, st *model.State) (*Engine, *kerneltest.Kernel) {
	t.Helper()
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led}
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
		t.Fatalf("apply: %v %v", err, res.Err())
	}
	if ops := planOps(t, e, st); ops != "" {
		t.Fatalf("not converged:\n%s", ops)
	}
	return e, k
}

// routeGoneBehindItsBack is an engine converged on reuseFile whose first
// route was then deleted behind its back.
func routeGoneBehindItsBack(t *testing.T) (*Engine, *kerneltest.Kernel, *model.State) {
	t.Helper()
	cfg, err := desired.Parse([]desired.Source{{Name: "reuse.yaml", Data: []byte(reuseFile)}})
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.State
	e, k := convergedEngine(t, st)
	r := st.Routes[0]
	if errs := k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &r}}, st.Protocol); errs[0] != nil {
		t.Fatal(errs[0])
	}
	return e, k, st
}

// A plan after SetReread reads only those kinds and takes the others from
// the previous read; without it, everything.
func TestPlanRereadsOnlyWhatIsAsked(t *testing.T) {
	e, k, st := routeGoneBehindItsBack(t)
	dumpFails := errors.New("routes dumped")
	// A dump of every table, or of the tables the ledger records.
	k.FailAlways(kerneltest.CallRoutes, dumpFails)
	k.FailAlways(kerneltest.CallTableRoutes, dumpFails)

	// Rules changed, routes did not (says the caller): the routes of the
	// previous read, no dump.
	e.SetReread(actual.Fresh{Kinds: actual.Rules})
	if ops := planOps(t, e, st); ops != "" {
		t.Errorf("routes reused: plan\n%s\nwant none", ops)
	}
	// The request holds for one plan: the next reads everything.
	if _, err := e.Plan(st); !errors.Is(err, dumpFails) {
		t.Errorf("plan without SetReread: %v, want the routes dumped", err)
	}
	k.FailAlways(kerneltest.CallRoutes, nil)
	k.FailAlways(kerneltest.CallTableRoutes, nil)
	e.SetReread(actual.Fresh{Kinds: actual.Routes})
	if ops := planOps(t, e, st); ops != "create route 10.1.0.0/24 table 100" {
		t.Errorf("routes read again: plan\n%s\nwant the route created", ops)
	}
}

// After ForgetRead (the daemon, before it parses a file again) the next
// plan reads everything, whatever SetReread says: nothing is left to reuse.
func TestForgetReadRereadsEverything(t *testing.T) {
	e, _, st := routeGoneBehindItsBack(t)
	e.ForgetRead()
	if e.LastRead() != nil {
		t.Error("LastRead after ForgetRead is not nil")
	}
	e.SetReread(actual.Fresh{Kinds: actual.Rules})
	if ops := planOps(t, e, st); ops != "create route 10.1.0.0/24 table 100" {
		t.Errorf("plan after ForgetRead, asked to read rules only: %q, want the deleted route found and created", ops)
	}
}

// A foreign route in the way of one of the file's is added to the state the
// plan sees, never to the read the next plan reuses.
func TestReusedRoutesKeepNoForeignRoute(t *testing.T) {
	cfg, err := desired.Parse([]desired.Source{{Name: "reuse.yaml", Data: []byte(reuseFile)}})
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.State
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led}
	plan, _ := e.Plan(st)
	if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
		t.Fatalf("apply: %v %v", err, res.Err())
	}
	// Ours goes, someone else's takes its key.
	r := st.Routes[1]
	k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &r}}, st.Protocol)
	foreign := r
	foreign.Protocol = 12
	k.PutRoute(foreign)
	// The first plan takes the key for ours still (the last read and the
	// apply said so): it creates, exclusively, without reading the table
	// for foreign routes. The next, which has read the key empty of ours,
	// shows the conflict.
	e.SetReread(actual.Fresh{Kinds: actual.Routes})
	if ops := planOps(t, e, st); ops != "create route 10.2.0.0/24 table 100" {
		t.Fatalf("the plan after ours went: %q, want it created again", ops)
	}
	e.SetReread(actual.Fresh{Kinds: actual.Routes})
	first := planOps(t, e, st)
	if !strings.Contains(first, "10.2.0.0/24") {
		t.Fatalf("no conflict for the foreign route:\n%s", first)
	}
	for range 3 {
		e.SetReread(actual.Fresh{Kinds: actual.Rules})
		if again := planOps(t, e, st); again != first {
			t.Fatalf("plan on reused routes:\n%s\nwant\n%s", again, first)
		}
		// Three of ours: a slice with room for a fourth, which the
		// foreign route must not take.
		if n := len(e.prev.Routes); n != 3 {
			t.Fatalf("the reusable read holds %d routes, want our 3: %v", n, e.prev.Routes)
		}
		for _, r := range e.prev.Routes {
			if int(r.Protocol) != st.Protocol {
				t.Fatalf("the reusable read holds a foreign route: %v", e.prev.Routes)
			}
		}
	}
}

// A plan asked to read the routes of some tables again dumps those tables
// alone (never every route) and takes the others from the previous read:
// drift in a table it reads is found, in one it was told is unchanged is
// not (the caller vouches); the tables Apply wrote are read again whatever
// the caller says.
func TestPlanRereadsOnlyTheTablesAsked(t *testing.T) {
	const file = `version: 1
links:
  br0: {kind: bridge}
routes:
  - {to: 10.1.0.0/24, dev: br0, table: 100}
  - {to: 10.5.0.0/24, dev: br0, table: 7}
`
	cfg, err := desired.Parse([]desired.Source{{Name: "tables.yaml", Data: []byte(file)}})
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.State
	e, k := convergedEngine(t, st)
	del := func(i int) {
		r := st.Routes[i]
		if errs := k.WriteRoutes([]kernel.RouteWrite{{Action: kernel.RouteDelete, Route: &r}}, st.Protocol); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	// st.Routes is in key order: table 7's route first.
	if st.Routes[0].Table != 7 || st.Routes[1].Table != 100 {
		t.Fatalf("routes %v", st.Routes)
	}
	k.FailAlways(kerneltest.CallRoutes, errors.New("every route dumped"))
	del(0)
	del(1)
	e.SetReread(actual.Fresh{Kinds: actual.Routes, RouteTables: map[int]bool{100: true}})
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatalf("plan reading table 100: %v", err)
	}
	if len(plan.Ops) != 1 || plan.Ops[0].Route.Table != 100 {
		t.Fatalf("plan reading table 100 again: %v, want table 100's route created alone", plan.Ops)
	}
	if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
		t.Fatalf("apply: %v %v", err, res.Err())
	}
	// Table 100 was written: read again with table 7, which is asked
	// (its route, gone again, is found).
	del(1)
	e.SetReread(actual.Fresh{Kinds: actual.Routes, RouteTables: map[int]bool{7: true}})
	if ops := planOps(t, e, st); ops != "create route 10.5.0.0/24 table 7\ncreate route 10.1.0.0/24 table 100" {
		t.Errorf("plan reading table 7 again after a write in table 100: %q, want both routes created", ops)
	}
}

// WireGuard devices are read again only when asked (the daemon asks on the
// rotation's timer, after a write to them, with the links): a plan told
// they did not change takes them from the previous read and makes no
// rotation decision, which would judge the peers by stale handshakes.
func TestPlanReusesWireGuardDevices(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "wg.key")
	if err := os.WriteFile(key, []byte("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf(`version: 1
links:
  wg0:
    kind: wireguard
    wireguard:
      private-key-file: %s
      peers:
        - public-key: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
          allowed-ips: [10.98.0.2/32]
          endpoints: ["192.0.2.1:51820", "192.0.2.2:51820"]
`, key)
	cfg, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "wg.yaml"), Data: []byte(file)}})
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.State
	now := time.Unix(1700000000, 0)
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led}
	e.SetTracker(wgpeer.New(func() time.Time { return now }, nil))
	for range 2 { // the link, then the device and its peer
		plan, err := e.Plan(st)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := e.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatalf("apply: %v %v", err, res.Err())
		}
	}
	if ops := planOps(t, e, st); ops != "" {
		t.Fatalf("not converged:\n%s", ops)
	}
	// No handshake past the connect timeout: the peer is down, and a read
	// of the device rotates it to the second endpoint.
	now = now.Add(20 * time.Second)
	readFails := errors.New("wireguard device read")
	k.FailAlways(kerneltest.CallWireGuardDevice, readFails)
	e.SetReread(actual.Fresh{Kinds: actual.Routes | actual.Rules | actual.NFT})
	if ops := planOps(t, e, st); ops != "" {
		t.Errorf("devices reused: plan\n%s\nwant none (no rotation on a stale read)", ops)
	}
	for _, f := range []actual.Kinds{actual.WireGuard, actual.Links} {
		e.SetReread(actual.Fresh{Kinds: f})
		if _, err := e.Plan(st); !errors.Is(err, readFails) {
			t.Errorf("plan reading %05b: %v, want the devices read", f, err)
		}
	}
	k.FailAlways(kerneltest.CallWireGuardDevice, nil)
	e.SetReread(actual.Fresh{Kinds: actual.WireGuard})
	if ops := planOps(t, e, st); !strings.Contains(ops, "update wireguard peer") {
		t.Errorf("devices read again: plan\n%s\nwant the peer's endpoint rotated", ops)
	}
}
