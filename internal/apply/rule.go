package apply

import (
	"fmt"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
)

// runRule adds a rule with our protocol, or deletes one.
func runRule(k kernel.Interface, proto int, op diff.Op) error {
	switch op.Action {
	case diff.Create:
		return k.AddRule(op.Rule, proto)
	case diff.Delete:
		return goneIsDone(k.DeleteRule(op.Rule))
	}
	return fmt.Errorf("%s %s %s: no such operation", op.Action, op.Kind, op.ID)
}
