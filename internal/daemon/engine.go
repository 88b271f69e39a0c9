package daemon

import (
	"context"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/model"
)

// passEngine is what a pass asks of the engine, and no more: an
// *engine.Engine over the kernel in production (engineAdapter), a fake in the
// loop's unit tests (loop_test.go), which script plans and failures without
// a kernel.
type passEngine interface {
	// lock takes the namespace's writer lock for the pass
	// (engine.LockPass).
	lock(ctx context.Context) (unlock func(), err error)
	// plan reads the kernel and plans towards desired, pools resolved,
	// holding back the changes above max (nil: none; Plan.Held). A non-nil
	// plan may come with a diff.Conflicts error.
	plan(ctx context.Context, desired *model.State, max *diff.Disruption) (*diff.Plan, error)
	// setReread says what the next plan reads again; it takes the rest
	// from the previous plan's read (engine.SetReread).
	setReread(k actual.Fresh)
	apply(ctx context.Context, plan *diff.Plan) (*apply.Result, error)
	// saveLedger writes what a failed save left in memory.
	saveLedger() error
	// writes counts the kernel writes started so far: the progress the
	// watchdog looks for during a pass (watchdog.go).
	writes() uint64
	// peerStates is every declared WireGuard peer as the last pass judged
	// it (engine.PeerStates): no kernel read of its own.
	peerStates() []engine.PeerState
	// lastRead is the kernel state the last plan read (nil when it
	// failed) and the nftables tables the ledger owns: what the event
	// filter is built from (filter.go). Neither may be changed.
	lastRead() (*model.State, map[model.NftTableKey]bool)
	// routesRead is what the last plan read of the routes
	// (engine.RoutesRead).
	routesRead() actual.RoutesRead
	// forgetRead drops the last plan's read (engine.ForgetRead): the next
	// plan reads everything.
	forgetRead()
	// silentRouteDeletes reports whether the kernel deletes routes without
	// a notification where it otherwise sends one: then the notifications
	// vouch for no route table (filter_pass.go). A failed read says yes.
	silentRouteDeletes() bool
	// poolUsage reads the usage of desired's pools from their registry
	// (nil, nil when it declares none).
	poolUsage(ctx context.Context, desired *model.State) ([]ipam.Usage, error)
}

// engineAdapter is the passEngine of production.
type engineAdapter struct{ e *engine.Engine }

func (a engineAdapter) lock(ctx context.Context) (func(), error) { return a.e.LockPass(ctx) }

func (a engineAdapter) plan(ctx context.Context, desired *model.State, max *diff.Disruption) (*diff.Plan, error) {
	a.e.MaxDisruption = max
	plan, _, err := a.e.PlanDesired(ctx, desired, false)
	return plan, err
}

func (a engineAdapter) apply(ctx context.Context, plan *diff.Plan) (*apply.Result, error) {
	return a.e.Apply(ctx, plan)
}

func (a engineAdapter) setReread(k actual.Fresh) { a.e.SetReread(k) }

func (a engineAdapter) saveLedger() error { return a.e.SaveLedger() }

func (a engineAdapter) writes() uint64 { return a.e.Kernel.Writes() }

func (a engineAdapter) peerStates() []engine.PeerState { return a.e.PeerStates() }

func (a engineAdapter) lastRead() (*model.State, map[model.NftTableKey]bool) {
	return a.e.LastRead(), a.e.Ledger.NFTables
}

func (a engineAdapter) forgetRead() { a.e.ForgetRead() }

func (a engineAdapter) routesRead() actual.RoutesRead { return a.e.RoutesRead() }

// skipNotifyOnDevDown, set to 1, has the kernel delete the IPv6 routes of a
// link that goes down without a notification. A link that goes down
// notifies itself, but disable_ipv6 on a link without IPv6 addresses takes
// its routes and says nothing at all.
const skipNotifyOnDevDown = "net.ipv6.route.skip_notify_on_dev_down"

func (a engineAdapter) silentRouteDeletes() bool {
	v, err := a.e.Kernel.Sysctls([]string{skipNotifyOnDevDown})
	if err != nil {
		return true
	}
	// Absent without IPv6: no IPv6 route to delete.
	s, ok := v[skipNotifyOnDevDown]
	return ok && s != "0"
}

func (a engineAdapter) poolUsage(ctx context.Context, desired *model.State) ([]ipam.Usage, error) {
	reg, err := a.e.OpenRegistry(desired)
	if reg == nil || err != nil {
		// A registry that cannot be opened failed the pass's plan too,
		// which reported it.
		return nil, nil
	}
	return engine.PoolUsage(ctx, reg)
}
