package apply

import (
	"errors"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
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
		if hooks.SysctlChanged != nil {
			hooks.SysctlChanged(s.Key, op.SysctlWas, owned)
		}
	}
	if op.Action == diff.Delete && s.Value == op.SysctlWas {
		note(false)
		return nil
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
