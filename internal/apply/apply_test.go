package apply_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
)

const config = `version: 1
links:
  br0:
    kind: bridge
    addresses: [10.10.0.1/24]
  vx0:
    kind: vxlan
    master: br0
    vxlan: {id: 100, remote: 192.0.2.2}
  up0:
    kind: veth
    veth: {peer: up1}
    addresses: [192.0.2.1/24]
  up1:
    kind: veth
    veth: {peer: up0}
routes:
  - {to: 198.51.100.0/24, via: 10.10.0.254, dev: br0}
  - {to: 203.0.113.0/24, via: 192.0.2.2, dev: up0, table: 100}
  - {to: 10.99.0.0/16, type: blackhole, table: 100}
rules:
  - {priority: 1000, from: 10.10.0.0/24, table: 100}
`

func load(t *testing.T, y string) *model.State {
	t.Helper()
	cfg, err := desired.Parse([]desired.Source{{Name: "test.yaml", Data: []byte(y)}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.State
}

func newEngine(t *testing.T) (*engine.Engine, *kerneltest.Kernel) {
	t.Helper()
	k := kerneltest.New()
	l, err := ledger.OpenIn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Engine{Kernel: k, Ledger: l}, k
}

func reconcile(t *testing.T, e *engine.Engine, st *model.State) (*diff.Plan, *apply.Result) {
	t.Helper()
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	res, err := e.Apply(context.Background(), plan)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return plan, res
}

// assertConverged checks that a new plan is empty and that applying it writes nothing.
func assertConverged(t *testing.T, e *engine.Engine, st *model.State) {
	t.Helper()
	before := e.Kernel.Writes()
	plan, res := reconcile(t, e, st)
	if !plan.Empty() {
		t.Fatalf("not converged; plan:\n%s", plan)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if w := e.Kernel.Writes() - before; w != 0 {
		t.Fatalf("an empty plan made %d kernel writes", w)
	}
}

func TestApplyConverges(t *testing.T) {
	st := load(t, config)
	e, _ := newEngine(t)
	plan, res := reconcile(t, e, st)
	if err := res.Err(); err != nil {
		t.Fatalf("first apply: %v\nplan:\n%s", err, plan)
	}
	if len(res.Done) != len(plan.Ops) {
		t.Fatalf("done %d of %d", len(res.Done), len(plan.Ops))
	}
	assertConverged(t, e, st)
}

func TestFailedLinkSkipsDependentsOnly(t *testing.T) {
	st := load(t, config)
	e, k := newEngine(t)
	k.FailOn(kerneltest.CallAddLink, "br0", syscall.EPERM)
	plan, res := reconcile(t, e, st)

	var failed []string
	for _, f := range res.Failed {
		failed = append(failed, string(f.Op.Action)+" "+string(f.Op.Kind)+" "+f.Op.ID)
	}
	want := []string{
		"create link br0",
		"create link vx0",                         // its master failed
		"create address 10.10.0.1/24 dev br0",     // on the failed link
		"create route 198.51.100.0/24 table main", // through the failed link
	}
	if strings.Join(failed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failed ops:\n%s\nwant:\n%s", strings.Join(failed, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Done) != len(plan.Ops)-len(want) {
		t.Fatalf("done %d, want every independent op (%d)", len(res.Done), len(plan.Ops)-len(want))
	}
	err := res.Err()
	var ae *apply.Error
	if !errors.As(err, &ae) || ae.Count != 4 || ae.Total != len(plan.Ops) {
		t.Fatalf("error %v: want a count of 4 of %d", err, len(plan.Ops))
	}
	if !errors.Is(err, syscall.EPERM) {
		t.Fatalf("error %v does not wrap the kernel's EPERM", err)
	}
	msg := err.Error()
	for _, s := range []string{"4 of 10 operations failed", "add link br0", "create link vx0 skipped: link br0 failed"} {
		if !strings.Contains(strings.ReplaceAll(msg, ": skipped", " skipped"), s) {
			t.Errorf("error does not say %q:\n%s", s, msg)
		}
	}
	// Skipped operations made no kernel write: only br0's own attempt failed.
	for _, l := range k.Log {
		if strings.Contains(l, "br0") || strings.Contains(l, "vx0") {
			t.Errorf("a write touched a dependent of the failed link: %s", l)
		}
	}

	k.FailOn(kerneltest.CallAddLink, "br0", nil)
	plan, res = reconcile(t, e, st)
	if err := res.Err(); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if got, want := plan.Summary(), "4 to create, 0 to update, 0 to replace, 0 to delete"; got != want {
		t.Fatalf("second plan %q, want %q:\n%s", got, want, plan)
	}
	assertConverged(t, e, st)
}

func TestInjectedFailures(t *testing.T) {
	for _, tc := range []struct {
		method kerneltest.Call
		err    error
		// failed is how many ops fail; 0 means the read fails and nothing is written.
		failed int
	}{
		{kerneltest.CallAddRoute, syscall.EEXIST, 1},
		{kerneltest.CallAddRule, syscall.EEXIST, 1},
		{kerneltest.CallReplaceAddress, syscall.ENOBUFS, 1},
		{kerneltest.CallSetLinkUp, syscall.EBUSY, 4}, // br0 is first: its dependents are skipped
		{kerneltest.CallRoutes, syscall.EINTR, 0},
		{kerneltest.CallLinks, syscall.EINTR, 0},
		{kerneltest.CallRules, syscall.EINTR, 0},
		{kerneltest.CallAddresses, syscall.EINTR, 0},
	} {
		t.Run(tc.method.String(), func(t *testing.T) {
			st := load(t, config)
			e, k := newEngine(t)
			k.FailNext(tc.method, tc.err)
			if tc.failed == 0 {
				_, err := e.Plan(st)
				if !errors.Is(err, tc.err) {
					t.Fatalf("plan with a failed %s: %v, want %v", tc.method, err, tc.err)
				}
				if k.Writes() != 0 {
					t.Fatal("a failed read led to writes")
				}
			} else {
				_, res := reconcile(t, e, st)
				if len(res.Failed) != tc.failed || !errors.Is(res.Err(), tc.err) {
					t.Fatalf("failed %d ops (%v), want %d with %v", len(res.Failed), res.Err(), tc.failed, tc.err)
				}
			}
			_, res := reconcile(t, e, st)
			if err := res.Err(); err != nil {
				t.Fatalf("next apply: %v", err)
			}
			assertConverged(t, e, st)
		})
	}
}

func TestCancelledContext(t *testing.T) {
	st := load(t, config)
	e, k := newEngine(t)
	plan, err := e.Plan(st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := apply.Apply(ctx, k, plan, apply.Hooks{})
	if len(res.Done) != 0 || len(res.Failed) != len(plan.Ops) || !errors.Is(res.Err(), context.Canceled) {
		t.Fatalf("cancelled apply: done %d failed %d: %v", len(res.Done), len(res.Failed), res.Err())
	}
	if k.Writes() != 0 {
		t.Fatal("a cancelled apply wrote")
	}
}

func TestPruneKeepsForeign(t *testing.T) {
	st := load(t, config)
	e, k := newEngine(t)
	k.PutLink(&model.Link{Name: "eth0", Kind: model.KindDevice, MTU: 1500, Up: true})
	k.PutRoute(model.Route{Table: 100, Dst: pfx("172.16.0.0/16"), Type: model.RouteBlackhole, Protocol: 4})
	k.PutRule(model.Rule{Priority: 900, Action: model.RuleLookup, Table: 50, SuppressPrefixLen: -1, Protocol: 0})
	if _, res := reconcile(t, e, st); res.Err() != nil {
		t.Fatal(res.Err())
	}
	// An empty file prunes everything netreconcile made, and only that.
	empty := load(t, "version: 1\n")
	if _, res := reconcile(t, e, empty); res.Err() != nil {
		t.Fatal(res.Err())
	}
	assertConverged(t, e, empty)
	links, _ := k.Links()
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	if strings.Join(names, " ") != "eth0 lo" {
		t.Errorf("links left: %v, want eth0 lo", names)
	}
	routes, _ := k.Routes(0)
	rules, _ := k.Rules()
	if len(routes) != 1 || routes[0].Protocol != 4 || len(rules) != 1 || rules[0].Priority != 900 {
		t.Errorf("foreign objects not kept: routes %v rules %v", routes, rules)
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// Route ops go to the kernel as one batch, yet each op keeps its own result:
// the one route that fails is the one failure, in plan order among the done.
func TestRouteBatchKeepsPerOpResults(t *testing.T) {
	st := load(t, "version: 1\nlinks:\n  eth0: {kind: device}\nroutes:\n"+
		"  - {to: 10.1.0.0/24, dev: eth0}\n  - {to: 10.2.0.0/24, dev: eth0}\n  - {to: 10.3.0.0/24, dev: eth0}\n")
	e, k := newEngine(t)
	k.PutLink(&model.Link{Name: "eth0", Kind: model.KindDevice, Up: true})
	k.FailOn(kerneltest.CallAddRoute, "10.2.0.0/24 table main", syscall.EEXIST)
	plan, res := reconcile(t, e, st)
	if len(res.Failed) != 1 || res.Failed[0].Op.ID != "10.2.0.0/24 table main" || !errors.Is(res.Failed[0].Err, syscall.EEXIST) {
		t.Fatalf("failed %+v, want only 10.2.0.0/24 with EEXIST", res.Failed)
	}
	// The user fixes the file: the error says where the route is declared.
	if msg := res.Failed[0].Err.Error(); !strings.HasSuffix(msg, "(declared at test.yaml:6:5)") {
		t.Errorf("error %q does not name where the route is declared", msg)
	}
	var done []string
	for _, op := range res.Done {
		done = append(done, op.ID)
	}
	if got, want := strings.Join(done, ","), "10.1.0.0/24 table main,10.3.0.0/24 table main"; got != want {
		t.Fatalf("done %s, want %s (plan:\n%s)", got, want, plan)
	}
	k.FailOn(kerneltest.CallAddRoute, "10.2.0.0/24 table main", nil)
	_, res = reconcile(t, e, st)
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	assertConverged(t, e, st)
}

// A gateway route the kernel's gateway check refuses (a rule takes the
// lookup elsewhere) is retried once under a guard rule, which is deleted at
// once; a route without a gateway, or refused for another reason, is not
// retried, and a second refusal keeps the first error (walk finding 8).
func TestGatewayCheckRetriedUnderGuardRule(t *testing.T) {
	k := kerneltest.New()
	k.PutLink(&model.Link{Name: "b1", Kind: model.KindBridge, Owned: true})
	gw := &model.Route{Table: 254, Dst: netip.MustParsePrefix("172.16.3.0/24"), Type: model.RouteUnicast, Gateway: netip.MustParseAddr("10.88.1.200"), Dev: "b1"}
	dev := &model.Route{Table: 200, Dst: netip.MustParsePrefix("172.16.4.0/24"), Type: model.RouteUnicast, Dev: "b1"}
	plan := &diff.Plan{Protocol: 245, Ops: []diff.Op{
		{Action: diff.Create, Kind: diff.KindRoute, ID: gw.Key().String(), Route: gw},
		{Action: diff.Create, Kind: diff.KindRoute, ID: dev.Key().String(), Route: dev},
	}}
	k.FailOn(kerneltest.CallAddRoute, dev.Key().String(), syscall.EACCES)
	k.FailNext(kerneltest.CallAddRoute, syscall.EACCES)
	res := apply.Apply(context.Background(), k, plan, apply.Hooks{})
	if len(res.Done) != 1 || res.Done[0].Route != gw || len(res.Failed) != 1 || res.Failed[0].Op.Route != dev {
		t.Fatalf("done %v, failed %v: want the gateway route done (retried), the dev route failed (not retried)", res.Done, res.Failed)
	}
	guard := "0: from all to 10.88.1.200/32 oif b1 lookup main (ipv4)"
	want := []string{"AddRule " + guard, "AddRoute " + gw.Key().String(), "DeleteRule " + guard}
	if got := strings.Join(k.Log, "\n"); !strings.Contains(got, strings.Join(want, "\n")) {
		t.Errorf("writes:\n%s\nwant, in order:\n%s", got, strings.Join(want, "\n"))
	}
	if rs, _ := k.Rules(); len(rs) != 0 {
		t.Errorf("rules left: %v", rs)
	}

	// Refused again under the guard: the first error stands.
	k.FailOn(kerneltest.CallAddRoute, dev.Key().String(), nil)
	gw2 := *gw
	gw2.Dst = netip.MustParsePrefix("172.16.5.0/24")
	k.FailOn(kerneltest.CallAddRoute, gw2.Key().String(), syscall.EHOSTUNREACH)
	res = apply.Apply(context.Background(), k, &diff.Plan{Protocol: 245, Ops: []diff.Op{{Action: diff.Create, Kind: diff.KindRoute, ID: gw2.Key().String(), Route: &gw2}}}, apply.Hooks{})
	if len(res.Failed) != 1 || !errors.Is(res.Failed[0].Err, syscall.EHOSTUNREACH) {
		t.Fatalf("failed %v: want the route's EHOSTUNREACH", res.Failed)
	}
	if rs, _ := k.Rules(); len(rs) != 0 {
		t.Errorf("rules left: %v", rs)
	}
}

// An IPv6 gateway route still refused under the guard rule (its link has
// no carrier, and the kernel's lookup through the rules leaves out that
// link's routes) is retried beside a guard route in its own table, where
// the kernel's first lookup finds the gateway, deleted at once; only
// where main has the gateway directly on the route's link: a gateway off
// the link gets no guard and keeps its error (walk finding 108).
func TestGatewayCheckRetriedBesideGuardRoute(t *testing.T) {
	k := kerneltest.New()
	k.PutLink(&model.Link{Name: "v0", Kind: model.KindVeth, Owned: true})
	k.PutRoute(model.Route{Table: 254, Dst: netip.MustParsePrefix("fd00:61::/64"), Type: model.RouteUnicast, Dev: "v0", Metric: 256, Protocol: 2})
	k.PutRoute(model.Route{Table: 254, Dst: netip.MustParsePrefix("fd00:69::/64"), Type: model.RouteUnicast, Gateway: netip.MustParseAddr("fd00:61::1"), Dev: "v0", Metric: 1024, Protocol: 3})
	on := &model.Route{Table: 100, Dst: netip.MustParsePrefix("2001:db8:5::/64"), Type: model.RouteUnicast, Gateway: netip.MustParseAddr("fd00:61::c9"), Dev: "v0", Metric: 100}
	off := &model.Route{Table: 100, Dst: netip.MustParsePrefix("2001:db8:9::/64"), Type: model.RouteUnicast, Gateway: netip.MustParseAddr("fd00:69::c9"), Dev: "v0", Metric: 100}
	plan := &diff.Plan{Protocol: 245, Ops: []diff.Op{
		{Action: diff.Create, Kind: diff.KindRoute, ID: on.Key().String(), Route: on},
		{Action: diff.Create, Kind: diff.KindRoute, ID: off.Key().String(), Route: off},
	}}
	k.FailOn(kerneltest.CallAddRoute, off.Key().String(), syscall.EHOSTUNREACH)
	k.FailNext(kerneltest.CallAddRoute, syscall.EHOSTUNREACH)                    // the first write
	k.FailOnce(kerneltest.CallAddRoute, on.Key().String(), syscall.EHOSTUNREACH) // under the guard rule
	res := apply.Apply(context.Background(), k, plan, apply.Hooks{})
	if len(res.Done) != 1 || res.Done[0].Route != on || len(res.Failed) != 1 || res.Failed[0].Op.Route != off || !errors.Is(res.Failed[0].Err, syscall.EHOSTUNREACH) {
		t.Fatalf("done %v, failed %v: want the route via fd00:61::c9 done, the one via fd00:69::c9 failed with EHOSTUNREACH", res.Done, res.Failed)
	}
	guard := "fd00:61::c9/128 table 100 metric 4294967295"
	want := []string{"AddRoute " + guard, "AddRoute " + on.Key().String(), "DeleteRoute " + guard}
	if got := strings.Join(k.Log, "\n"); !strings.Contains(got, strings.Join(want, "\n")) || strings.Contains(got, "Route fd00:69::c9/128") {
		t.Errorf("writes:\n%s\nwant, in order:\n%s\nand no guard for fd00:69::c9", got, strings.Join(want, "\n"))
	}
	if rs, _ := k.TableRoutes(100, 0); len(rs) != 1 || rs[0].Key() != on.Key() {
		t.Errorf("table 100: %v, want only %s", rs, on.Key())
	}
}
