// Package apply executes a diff.Plan against the kernel.
//
// An operation that fails does not stop independent ones; operations that
// depend on a failed link are skipped. The run reports every failure, and
// because every pass re-reads the kernel, the next apply converges from
// wherever this one stopped.
package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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

// Result is what an apply did.
type Result struct {
	Done   []diff.Op
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
}

// Apply runs the plan's operations in order.
func Apply(ctx context.Context, k kernel.Interface, plan *diff.Plan, hooks Hooks) *Result {
	res := &Result{}
	failedLinks := map[string]bool{}
	promoted := map[string]bool{} // links whose promote_secondaries this run set
	nftDone := false
	for i := 0; i < len(plan.Ops); i++ {
		op := plan.Ops[i]
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
		res.Done = append(res.Done, op)
	}
	pinMTUs(k, plan, res)
	for i := range res.Failed {
		if at := origin(res.Failed[i].Op); at != "" {
			res.Failed[i].Err = fmt.Errorf("%w (declared at %s)", res.Failed[i].Err, at)
		}
	}
	return res
}

// pinMTUs sets again the declared MTU of the masters the kernel moved while
// their ports joined, left or changed (Plan.PinMTU): a change sets the
// bridge's "MTU set by user" mark, and the kernel stops moving it. One
// read of the links, and a write only where the MTU moved.
func pinMTUs(k kernel.Interface, plan *diff.Plan, res *Result) {
	if len(plan.PinMTU) == 0 {
		return
	}
	ls, err := k.Links()
	if err != nil {
		return // the next pass sees the MTU and sets it
	}
	mtu := map[string]int{}
	for _, l := range ls {
		mtu[l.Name] = l.MTU
	}
	for _, l := range plan.PinMTU {
		have, ok := mtu[l.Name]
		if !ok || have == l.MTU {
			continue
		}
		// The write is reported with the plan's, so that counts and
		// reports of what was applied include it; the plan is not changed.
		op := diff.Op{Action: diff.Update, Kind: diff.KindLink, ID: l.Name, Link: l, LinkFields: diff.LinkFields{MTU: true},
			Changes: []diff.Change{{Field: "mtu", From: strconv.Itoa(have), To: strconv.Itoa(l.MTU)}}}
		if err := k.SetLinkMTU(l.Name, l.MTU); err != nil {
			res.Failed = append(res.Failed, Failure{op, err})
			continue
		}
		res.Done = append(res.Done, op)
	}
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
		if l.IPVlan != nil {
			refs = append(refs, l.IPVlan.Parent)
		}
		if l.VXLAN != nil {
			refs = append(refs, l.VXLAN.Dev)
		}
		if op.PeerOfPair {
			refs = append(refs, l.Veth.Peer)
		}
	case op.Address != nil:
		refs = append(refs, op.Address.Link)
	case op.Route != nil:
		refs = append(refs, op.Route.Dev)
	case op.WireGuard != nil:
		refs = append(refs, op.WireGuard.Link)
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
		switch op.Action {
		case diff.Create:
			return k.ReplaceAddress(op.Address)
		case diff.Replace:
			if err := k.DeleteAddress(op.Old); err != nil {
				return err
			}
			return k.ReplaceAddress(op.Address)
		case diff.Delete:
			return goneIsDone(k.DeleteAddress(op.Address))
		}
	case diff.KindRule:
		switch op.Action {
		case diff.Create:
			return k.AddRule(op.Rule, proto)
		case diff.Delete:
			return goneIsDone(k.DeleteRule(op.Rule))
		}
	case diff.KindFou:
		return runFou(k, op, hooks)
	case diff.KindWireGuard:
		return runWGDevice(k, op)
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

func runFou(k kernel.Interface, op diff.Op, hooks Hooks) error {
	note := func(owned bool) {
		if hooks.FouChanged != nil {
			hooks.FouChanged(op.Fou.Key(), owned)
		}
	}
	switch op.Action {
	case diff.Replace:
		if err := k.DeleteFou(op.Fou); err != nil {
			return err
		}
		note(false)
		fallthrough
	case diff.Create:
		if err := k.AddFou(op.Fou); err != nil {
			return err
		}
		note(true)
	case diff.Delete:
		if err := k.DeleteFou(op.Fou); err != nil {
			return err
		}
		note(false)
	}
	return nil
}

func runLink(k kernel.Interface, op diff.Op) error {
	l := op.Link
	switch op.Action {
	case diff.Delete:
		err := k.DeleteLink(l.Name)
		if errors.Is(err, kernel.ErrNotFound) {
			return nil // gone already (with its parent or peer)
		}
		return err
	case diff.Replace:
		if err := k.DeleteLink(l.Name); err != nil && !errors.Is(err, kernel.ErrNotFound) {
			return err
		}
		fallthrough
	case diff.Create:
		if op.PeerOfPair {
			// The pair was created with the other end: mark and configure this one.
			if err := k.SetLinkAlias(l.Name, l.Alias, true); err != nil {
				return fmt.Errorf("%w: %w", kernel.ErrUnmarked, err)
			}
			if l.MTU != 0 {
				if err := k.SetLinkMTU(l.Name, l.MTU); err != nil {
					return madeError{err}
				}
			}
		} else if err := addLink(k, l); err != nil {
			return err
		}
		if l.Master != "" {
			if err := k.SetLinkMaster(l.Name, l.Master); err != nil {
				return madeError{err}
			}
		}
		if l.Up {
			if err := k.SetLinkUp(l.Name, true); err != nil {
				return madeError{err}
			}
		}
		return nil
	case diff.Update:
		return op.LinkFields.Write(linkWriter{k, l})
	}
	return fmt.Errorf("%s link %s: no such operation", op.Action, l.Name)
}

// madeError is the error of a link create that made and marked the link,
// then failed on a later write (MTU, master, state).
type madeError struct{ error }

func (e madeError) Unwrap() error { return e.error }

// LinkMade reports whether err, the error of a failed link create, comes
// after the link was made: by a later write, or by the marker's write
// (kernel.ErrUnmarked). The link exists then, and is ours.
func LinkMade(err error) bool {
	var m madeError
	return errors.As(err, &m) || errors.Is(err, kernel.ErrUnmarked)
}

// linkWriter writes a link update's attributes from the desired link.
type linkWriter struct {
	k kernel.Interface
	l *model.Link
}

var _ diff.LinkWriter = linkWriter{}

func (w linkWriter) MTU() error    { return w.k.SetLinkMTU(w.l.Name, w.l.MTU) }
func (w linkWriter) Master() error { return w.k.SetLinkMaster(w.l.Name, w.l.Master) }
func (w linkWriter) State() error  { return w.k.SetLinkUp(w.l.Name, w.l.Up) }

// Alias writes the alias with the ownership marker, except on a device
// link, which is never ours.
func (w linkWriter) Alias() error {
	return w.k.SetLinkAlias(w.l.Name, w.l.Alias, w.l.Kind != model.KindDevice)
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
		return op.Route.Origin
	case op.Rule != nil:
		return op.Rule.Origin
	case op.Fou != nil:
		return op.Fou.Origin
	}
	return ""
}
