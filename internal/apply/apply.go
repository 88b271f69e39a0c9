// Package apply executes a diff.Plan against the kernel.
//
// An operation that fails does not stop independent ones; operations that
// depend on a failed link are skipped. The run reports every failure, and
// because every pass re-reads the kernel, the next apply converges from
// wherever this one stopped.
//
// apply.go walks the plan and dispatches; each kind has its file: link.go,
// address.go, route.go (a run of route ops is one kernel batch; dad.go waits
// for IPv6 sources), rule.go, fou.go, nft.go (every nftables op in one
// batch), wireguard.go and sysctl.go.
package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Failure is an operation that did not happen.
type Failure struct {
	Op  diff.Op
	Err error
}

// Result is what an apply did. Done points into the plan's ops (or at
// writes apply added, such as an MTU pinned back): a 100k-op plan is not
// copied once more for its report.
type Result struct {
	Done   []*diff.Op
	Failed []Failure
}

// Err summarises the failures: the count and each error; nil if none.
func (r *Result) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	msgs := make([]string, len(r.Failed))
	errs := make([]error, len(r.Failed))
	for i, f := range r.Failed {
		msgs[i] = f.Err.Error()
		errs[i] = f.Err
	}
	return &Error{Count: len(r.Failed), Total: len(r.Failed) + len(r.Done), Msgs: msgs, errs: errs}
}

// Error reports the failures of one apply.
type Error struct {
	Count, Total int
	Msgs         []string
	errs         []error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d of %d operations failed:\n  %s", e.Count, e.Total, strings.Join(e.Msgs, "\n  "))
}

// Unwrap exposes the individual errors to errors.Is.
func (e *Error) Unwrap() []error { return e.errs }

// Hooks let the caller record ownership the kernel cannot hold.
type Hooks struct {
	// FouChanged is called after a FoU port was opened (owned=true) or closed.
	FouChanged func(key model.FouKey, owned bool)
	// NftTableChanged is called after a table was created or adopted
	// (owned=true) or deleted.
	NftTableChanged func(key model.NftTableKey, owned bool)
	// SysctlChanged is called after a sysctl was written for the file
	// (owned=true; was is the value it had) or given its old value back.
	SysctlChanged func(key, was string, owned bool)
}

// Apply runs the plan's operations in order.
func Apply(ctx context.Context, k kernel.Interface, plan *diff.Plan, hooks Hooks) *Result {
	// Done gets at most every op: one allocation, not a doubling per
	// growth of a 100k-op plan's copy.
	res := &Result{Done: make([]*diff.Op, 0, len(plan.Ops))}
	failedLinks := map[string]bool{}
	promoted := map[string]bool{} // links whose promote_secondaries this run set
	nftDone := false
	var deferred []int // writes of net.ipv6.conf.LINK.mtu that go after the pins
	for i := 0; i < len(plan.Ops); i++ {
		op := plan.Ops[i]
		opp := &plan.Ops[i]
		if op.Kind == diff.KindSysctl && afterPins(plan, op.Sysctl) {
			deferred = append(deferred, i)
			continue
		}
		if op.Kind == diff.KindRoute {
			// A run of route ops goes to the kernel as one batch.
			j := i + 1
			for j < len(plan.Ops) && plan.Ops[j].Kind == diff.KindRoute {
				j++
			}
			unusable := waitForSources(ctx, k, plan.Ops[i:j], res.Done)
			n := len(res.Failed)
			runRoutes(ctx, k, plan.Protocol, plan.Ops[i:j], failedLinks, res)
			for f := n; f < len(res.Failed); f++ {
				if r := res.Failed[f].Op.Route; r != nil && unusable[r.Src] != "" {
					res.Failed[f].Err = fmt.Errorf("%w: its source %s %s", res.Failed[f].Err, r.Src, unusable[r.Src])
				}
			}
			i = j - 1
			continue
		}
		if isNft(&op) {
			// All nftables ops go in one batch, at the first one's place.
			if !nftDone {
				runNFT(k, plan, hooks, res)
				nftDone = true
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, err)})
			continue
		}
		if dep := dependsOn(op, failedLinks); dep != "" {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: skipped: link %s failed", op.Action, op.Kind, op.ID, dep)})
			if op.Kind == diff.KindLink {
				failedLinks[op.Link.Name] = true
			}
			continue
		}
		if op.Kind == diff.KindWGPeer {
			j := peerBatchEnd(plan.Ops, i)
			runWGPeers(k, plan.Ops[i:j], res)
			i = j - 1
			continue
		}
		if op.Promote && !promoted[op.Address.Link] {
			if err := k.PromoteSecondaries(op.Address.Link); err != nil {
				res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, err)})
				continue
			}
			promoted[op.Address.Link] = true
		}
		if err := run(k, plan.Protocol, op, hooks); err != nil {
			res.Failed = append(res.Failed, Failure{op, err})
			if op.Kind == diff.KindLink && op.Action != diff.Delete {
				failedLinks[op.Link.Name] = true
			}
			continue
		}
		res.Done = append(res.Done, opp)
	}
	moved := pinMTUs(k, plan, res)
	ipv6MTUsAfterPins(ctx, k, plan, deferred, moved, failedLinks, hooks, res)
	for i := range res.Failed {
		if at := origin(res.Failed[i].Op); at != "" {
			res.Failed[i].Err = fmt.Errorf("%w (declared at %s)", res.Failed[i].Err, at)
		}
	}
	return res
}

// dependsOn names the failed link an operation needs, if any.
func dependsOn(op diff.Op, failed map[string]bool) string {
	if len(failed) == 0 || op.Action == diff.Delete {
		return ""
	}
	var refs []string
	switch {
	case op.Link != nil:
		l := op.Link
		refs = append(refs, l.Master)
		refs = append(refs, l.Parent())
		if l.VXLAN != nil {
			refs = append(refs, l.VXLAN.Dev)
		}
		if op.PeerOfPair {
			refs = append(refs, l.Veth.Peer)
		}
	case op.Address != nil:
		refs = append(refs, op.Address.Link)
	case op.Route != nil:
		refs = append(refs, op.Route.Devs()...)
	case op.WireGuard != nil:
		refs = append(refs, op.WireGuard.Link)
	case op.Sysctl != nil:
		refs = append(refs, op.Sysctl.Link)
	}
	for _, r := range refs {
		if r != "" && failed[r] {
			return r
		}
	}
	return ""
}

func run(k kernel.Interface, proto int, op diff.Op, hooks Hooks) error {
	switch op.Kind {
	case diff.KindLink:
		return runLink(k, op)
	case diff.KindAddress:
		return runAddress(k, proto, op)
	case diff.KindRule:
		return runRule(k, proto, op)
	case diff.KindFou:
		return runFou(k, op, hooks)
	case diff.KindWireGuard:
		return runWGDevice(k, op)
	case diff.KindSysctl:
		return runSysctl(k, op, hooks)
	}
	return fmt.Errorf("%s %s %s: no such operation", op.Action, op.Kind, op.ID)
}

// goneIsDone takes a delete that found its object gone as done: the kernel
// removes addresses, routes and rules with what they hang on (an address
// with its link or its primary, a route with its source address), and
// another program may have removed it since the plan. Gone is what a delete
// wants.
func goneIsDone(err error) error {
	if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, kernel.ErrNotFound) {
		return nil
	}
	return err
}

// origin is where the file declared an operation's object, for errors the
// kernel returns: the user fixes the file, not the kernel.
func origin(op diff.Op) string {
	switch {
	case op.Action == diff.Delete:
		return ""
	case op.Link != nil:
		return op.Link.Origin
	case op.Address != nil:
		return op.Address.Origin
	case op.Route != nil:
		return op.Route.Origin.String()
	case op.Rule != nil:
		return op.Rule.Origin
	case op.Fou != nil:
		return op.Fou.Origin
	case op.Sysctl != nil:
		return op.Sysctl.Origin
	}
	return ""
}
