package apply

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
)

// runRoutes applies consecutive route ops in one kernel batch, recording a
// result per op in plan order, as if they had run one by one.
func runRoutes(ctx context.Context, k kernel.Writer, proto int, ops []diff.Op, failedLinks map[string]bool, res *Result) {
	errs := make([]error, len(ops))
	ws := make([]kernel.RouteWrite, 0, len(ops))
	at := make([]int, 0, len(ops)) // at[n] is the op of ws[n]
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			errs[i] = fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, err)
			continue
		}
		if dep := dependsOn(op, failedLinks); dep != "" {
			errs[i] = fmt.Errorf("%s %s %s: skipped: link %s failed", op.Action, op.Kind, op.ID, dep)
			continue
		}
		w := kernel.RouteWrite{Route: op.Route}
		switch op.Action {
		case diff.Create:
			w.Action = kernel.RouteAdd
		case diff.Update:
			w.Action = kernel.RouteReplace
		case diff.Delete:
			w.Action = kernel.RouteDelete
		default:
			errs[i] = fmt.Errorf("%s %s %s: no such operation", op.Action, op.Kind, op.ID)
			continue
		}
		ws = append(ws, w)
		at = append(at, i)
	}
	if len(ws) > 0 {
		for n, err := range k.WriteRoutes(ws, proto) {
			// A route the kernel removed earlier in this plan (its link
			// was set down, its last IPv4 address went) is as the plan
			// wants it: gone.
			if ws[n].Action == kernel.RouteDelete && errors.Is(err, syscall.ESRCH) {
				err = nil
			}
			errs[at[n]] = err
		}
	}
	for i, op := range ops {
		if errs[i] != nil {
			res.Failed = append(res.Failed, Failure{op, errs[i]})
			continue
		}
		res.Done = append(res.Done, op)
	}
}
