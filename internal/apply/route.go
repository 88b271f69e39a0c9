package apply

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// runRoutes applies consecutive route ops in one kernel batch, recording a
// result per op in plan order, as if they had run one by one.
func runRoutes(ctx context.Context, k kernel.Interface, proto int, ops []diff.Op, failedLinks map[string]bool, res *Result) {
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
			if ws[n].Action == kernel.RouteDelete {
				err = goneIsDone(err)
			}
			errs[at[n]] = err
		}
	}
	explainExists(k, proto, ops, errs)
	for i, op := range ops {
		if errs[i] != nil {
			res.Failed = append(res.Failed, Failure{op, errs[i]})
			continue
		}
		res.Done = append(res.Done, op)
	}
}

// explainExists says whose route a create met, for the creates the kernel
// refused with EEXIST: the plan saw no route with that key, so another
// program (or another netreconcile run, with our protocol) added one since.
// The table is read once, after the batch.
func explainExists(k kernel.Interface, proto int, ops []diff.Op, errs []error) {
	tables := map[int][]model.Route{}
	for i, op := range ops {
		if op.Action != diff.Create || !errors.Is(errs[i], unix.EEXIST) {
			continue
		}
		key := op.Route.Key()
		rs, seen := tables[key.Table]
		if !seen {
			var err error
			if rs, err = k.TableRoutes(key.Table); err != nil {
				continue // the kernel's answer stands alone
			}
			tables[key.Table] = rs
		}
		for _, h := range rs {
			if h.Key() != key {
				continue
			}
			whose := fmt.Sprintf("another program's (protocol %s, not ours, %d)", model.ProtocolName(h.Protocol), proto)
			if h.Protocol == proto {
				whose = fmt.Sprintf("ours (protocol %d), written since the plan was made: by another netreconcile run?", proto)
			}
			errs[i] = fmt.Errorf("%w: the route with this key is %s", errs[i], whose)
			break
		}
	}
}
