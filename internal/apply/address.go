package apply

import (
	"fmt"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
)

// runAddress adds, replaces or deletes an address. A replace deletes the
// old address first: the kernel keeps scope and peer at creation, and
// NLM_F_REPLACE on an address only refreshes its lifetimes.
func runAddress(k kernel.Interface, proto int, op diff.Op) error {
	switch op.Action {
	case diff.Create, diff.Update:
		// An update stamps our protocol on an address that exists: the
		// kernel's NLM_F_REPLACE sets it (and only refreshes the rest).
		return k.ReplaceAddress(op.Address, proto)
	case diff.Replace:
		if err := k.DeleteAddress(op.Old); err != nil {
			return err
		}
		return k.ReplaceAddress(op.Address, proto)
	case diff.Delete:
		return goneIsDone(k.DeleteAddress(op.Address))
	}
	return fmt.Errorf("%s %s %s: no such operation", op.Action, op.Kind, op.ID)
}
