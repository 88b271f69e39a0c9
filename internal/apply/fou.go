package apply

import (
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
)

// runFou opens or closes a FoU port and tells the ledger through
// hooks.FouChanged: the kernel cannot mark a port as ours.
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
