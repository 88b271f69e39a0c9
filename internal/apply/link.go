package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// pinMTUs sets again the declared MTU of the masters the kernel moved while
// their ports joined, left or changed (Plan.PinMTU): a change sets the
// bridge's "MTU set by user" mark, and the kernel stops moving it. One
// read of the links, and a write only where the MTU moved.
//
// Then the links of Plan.FollowMTU, lower devices first, each to its lower
// device's MTU (less the encapsulation) where the kernel moved it.
//
// It returns the links whose MTU it set, each to its MTU now.
func pinMTUs(k kernel.Interface, plan *diff.Plan, res *Result) map[string]int {
	if len(plan.PinMTU) == 0 && len(plan.FollowMTU) == 0 {
		return nil
	}
	ls, err := k.Links()
	if err != nil {
		return nil // the next pass sees the MTU and sets it
	}
	set := map[string]int{}
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
		mtu[l.Name] = l.MTU
		set[l.Name] = l.MTU
		res.Done = append(res.Done, &op)
	}
	for _, f := range plan.FollowMTU {
		have, ok := mtu[f.Link]
		lower, lok := mtu[f.Lower]
		if !ok || !lok {
			continue
		}
		to := lower
		if f.Headroom > 0 {
			to = max(lower-f.Headroom, 68)
		}
		if have == to {
			continue
		}
		l := &model.Link{Name: f.Link, MTU: to}
		op := diff.Op{Action: diff.Update, Kind: diff.KindLink, ID: f.Link, Link: l, LinkFields: diff.LinkFields{MTU: true},
			Changes: []diff.Change{{Field: "mtu", From: strconv.Itoa(have), To: strconv.Itoa(to) + " (" + f.Lower + "'s)"}}}
		if err := k.SetLinkMTU(f.Link, to); err != nil {
			res.Failed = append(res.Failed, Failure{op, err})
			continue
		}
		mtu[f.Link] = to
		set[f.Link] = to
		res.Done = append(res.Done, &op)
	}
	return set
}

// afterPins reports whether the write of s waits for the pins: the
// net.ipv6.conf.LINK.mtu of a link of Plan.IPv6MTU.
func afterPins(plan *diff.Plan, s *model.Sysctl) bool {
	if s == nil || s.Link == "" {
		return false
	}
	if _, ok := plan.IPv6MTU[s.Link]; !ok {
		return false
	}
	_, short, _, ok := model.SysctlLink(s.Key)
	return ok && short == "ipv6.mtu"
}

// ipv6MTUsAfterPins writes the declared net.ipv6.conf.LINK.mtu of the
// links of Plan.IPv6MTU after the pins: the planned writes (the ops at
// indexes ops of the plan, held back until now), and the key again on a
// link whose MTU a pin set (moved): the kernel set the key to the MTU
// (addrconf_notify), with the port that pulled the link away first. The
// key had the file's value when the plan was made (IPv6MTUAfterPins.Kept):
// written back, it is not taken over, as nothing moved it for good.
func ipv6MTUsAfterPins(ctx context.Context, k kernel.Interface, plan *diff.Plan, ops []int, moved map[string]int, failedLinks map[string]bool, hooks Hooks, res *Result) {
	planned := map[string]bool{}
	for _, i := range ops {
		op := plan.Ops[i]
		planned[op.Sysctl.Link] = true
		var err error
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, cerr)
		} else if dep := dependsOn(op, failedLinks); dep != "" {
			err = fmt.Errorf("%s %s %s: skipped: link %s failed", op.Action, op.Kind, op.ID, dep)
		} else {
			err = run(k, plan.Protocol, op, hooks)
		}
		if err != nil {
			res.Failed = append(res.Failed, Failure{op, err})
			continue
		}
		res.Done = append(res.Done, &plan.Ops[i])
	}
	for _, link := range slices.Sorted(maps.Keys(moved)) {
		after := plan.IPv6MTU[link]
		w := after.Sysctl
		if w == nil || !after.Kept || planned[link] || failedLinks[link] || ctx.Err() != nil {
			continue
		}
		mtu := strconv.Itoa(moved[link])
		if mtu == w.Value {
			continue
		}
		op := diff.Op{Action: diff.Update, Kind: diff.KindSysctl, ID: w.Key, Sysctl: w, SysctlWas: mtu, SysctlUnowned: true,
			Changes: []diff.Change{{Field: "value", From: mtu + " (" + link + "'s MTU)", To: w.Value}}, Reason: "written again: the MTU set again sets it"}
		if err := runSysctl(k, op, hooks); err != nil {
			res.Failed = append(res.Failed, Failure{op, err})
			continue
		}
		res.Done = append(res.Done, &op)
	}
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

func (w linkWriter) Kind() error   { return w.k.ChangeLink(w.l) }
func (w linkWriter) MTU() error    { return w.k.SetLinkMTU(w.l.Name, w.l.MTU) }
func (w linkWriter) Master() error { return w.k.SetLinkMaster(w.l.Name, w.l.Master) }
func (w linkWriter) State() error  { return w.k.SetLinkUp(w.l.Name, w.l.Up) }

// Alias writes the alias with the ownership marker, except on a device
// link, which is never ours.
func (w linkWriter) Alias() error {
	return w.k.SetLinkAlias(w.l.Name, w.l.Alias, w.l.Kind != model.KindDevice)
}

// addLink creates a link. A wireguard link that allows userspace falls back
// to wireguard-go when the kernel has no WireGuard module, as wg-quick does;
// the tun device it makes is then marked as ours like any created link.
func addLink(k kernel.Interface, l *model.Link) error {
	err := k.AddLink(l)
	if err == nil || l.Kind != model.KindWireGuard || l.WireGuard == nil || !l.WireGuard.Userspace || !errors.Is(err, kernel.ErrUnsupported) {
		return err
	}
	if err := k.StartUserspaceWireGuard(l.Name); err != nil {
		return err
	}
	if err := k.SetLinkAlias(l.Name, l.Alias, true); err != nil {
		return fmt.Errorf("%w: %w", kernel.ErrUnmarked, err)
	}
	if l.MTU != 0 {
		return k.SetLinkMTU(l.Name, l.MTU)
	}
	return nil
}
