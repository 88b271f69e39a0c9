package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
)

// DefaultLogChanges is how many changes, and separately how many failures,
// a pass logs one line each at info level. Converging 100k routes must not
// write 100k lines to the journal: past the limit each change is logged at
// debug level only, and one summary line per kind and action gives the
// counts: logs that scale with the host.
const DefaultLogChanges = 100

// logDone logs the changes a pass applied: the first opts.LogChanges one
// line each, the rest as counts per kind and action. Metrics count every
// change.
func (d *Daemon) logDone(ops []*diff.Op, drift bool) {
	var over counts
	for i, op := range ops {
		d.m.changes.WithLabelValues(metricKind(op.Kind), string(op.Action)).Inc()
		level := slog.LevelInfo
		if d.overLimit(i) {
			over.add(*op)
			level = slog.LevelDebug
			if !d.log.Enabled(context.Background(), level) {
				continue
			}
		}
		attrs := []any{"kind", op.Kind, "id", op.Name(), "action", string(op.Action)}
		if fields := changedFields(*op); fields != "" {
			attrs = append(attrs, "fields", fields)
		}
		if drift {
			attrs = append(attrs, "drift", true)
		}
		d.log.Log(context.Background(), level, "applied", attrs...)
	}
	for _, c := range over.sorted() {
		attrs := []any{"kind", diff.Kind(c.kind), "action", c.action, "count", c.n}
		if drift {
			attrs = append(attrs, "drift", true)
		}
		d.log.Info(fmt.Sprintf("applied %d more changes, one line each at debug level", c.n), attrs...)
	}
}

// logFailed logs the changes that failed, capped like logDone; each failure
// still gets its own backoff.
func (d *Daemon) logFailed(failed []apply.Failure, now time.Time) {
	var over counts
	for i, f := range failed {
		delay := d.bo.failed(opKey(f.Op), now)
		d.m.errors.WithLabelValues("apply").Inc()
		level := slog.LevelError
		if d.overLimit(i) {
			over.add(f.Op)
			level = slog.LevelDebug
		}
		d.log.Log(context.Background(), level, "change failed", "kind", f.Op.Kind, "id", f.Op.Name(), "action", string(f.Op.Action), "error", f.Err, "retry_in", delay)
	}
	for _, c := range over.sorted() {
		d.log.Error(fmt.Sprintf("%d more changes failed, one line each at debug level", c.n), "kind", diff.Kind(c.kind), "action", c.action, "count", c.n)
	}
}

// overLimit reports whether the i-th change of a pass is past the per-line
// limit (a negative limit: none).
func (d *Daemon) overLimit(i int) bool {
	return d.opts.LogChanges >= 0 && i >= d.opts.LogChanges
}

// counts counts changes per kind and action.
type counts map[[2]string]int

type count struct {
	kind, action string
	n            int
}

func (c *counts) add(op diff.Op) {
	if *c == nil {
		*c = counts{}
	}
	(*c)[[2]string{string(op.Kind), string(op.Action)}]++
}

func (c counts) sorted() []count {
	out := make([]count, 0, len(c))
	for k, n := range c {
		out = append(out, count{k[0], k[1], n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].kind != out[j].kind {
			return out[i].kind < out[j].kind
		}
		return out[i].action < out[j].action
	})
	return out
}

// metricKind is a kind as a label value: snake_case ("nft_chain"), as
// Prometheus label values are written.
func metricKind(k diff.Kind) string { return strings.ReplaceAll(string(k), " ", "_") }
