package apply

import (
	"errors"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// runSysctl writes a parameter and tells the ledger through
// hooks.SysctlChanged: the kernel keeps no owner for it. A create or an
// update takes the key over (the engine recorded its old value before the
// write); a delete writes that old value back and gives the key up. A
// delete whose key is gone (its link went) is done: there is nothing
// left to give back.
func runSysctl(k kernel.Interface, op diff.Op, hooks Hooks) error {
	s := op.Sysctl
	note := func(owned bool) {
		if hooks.SysctlChanged != nil && !op.SysctlUnowned {
			hooks.SysctlChanged(s.Key, op.SysctlWas, owned)
		}
	}
	if op.Action == diff.Delete && s.Value == op.SysctlWas {
		note(false)
		return nil
	}
	if link, short, _, ok := model.SysctlLink(s.Key); ok && short == "ipv6.mtu" {
		waitLinkSettled(k, link, op.Carrier)
	}
	err := k.SetSysctl(s.Key, s.Value)
	if op.Action == diff.Delete && errors.Is(err, kernel.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return err
	}
	note(op.Action != diff.Delete)
	return nil
}

// settleWait bounds the wait for a link's carrier to reach its operational
// state. The kernel does that in linkwatch's work, at once for most links
// and within a second for the others (linkwatch_schedule_work).
const settleWait = 1500 * time.Millisecond

// waitLinkSettled waits until the kernel has caught up with link's carrier
// (model.Link.Settling): when it does, it sets the link's
// net.ipv6.conf.LINK.mtu to the link's MTU (addrconf_notify, the link
// becoming ready), which would undo a write made before. A link without
// carrier gets it later, from someone else (a veth whose peer comes up):
// the next pass writes the key again. With carrier, the plan gives the
// link its carrier (a veth's peer, a bridge's port coming up): it waits
// for that carrier too, which a bridge takes from its port's linkwatch
// event, not at once.
func waitLinkSettled(k kernel.Interface, link string, carrier bool) {
	deadline := time.Now().Add(settleWait)
	for {
		ls, err := k.Links()
		if err != nil {
			return
		}
		settling := false
		for _, l := range ls {
			if l.Name == link {
				settling = l.Settling || carrier && l.NoCarrier
			}
		}
		if !settling || time.Now().After(deadline) {
			return
		}
		time.Sleep(dadPoll)
	}
}
