package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
)

// pass is one reconcile. It returns an error only when the daemon cannot go
// on (no valid configuration at start).
func (d *Daemon) pass(ctx context.Context) error {
	start := d.clk.Now()
	woke := d.wokeAt
	d.wokeAt = time.Time{}
	var locked, planned, applied time.Time
	// The files are read under the lock below in any case. Before it too
	// when the pass may be for them (the first pass, a wake-up from their
	// watch or anything else that reads everything, a reload): a new file
	// is then parsed while other writers may still run. A pass woken by
	// the notifications of a route, rule or nftables change reads them
	// once: beside ten thousand routes of ours a read is half a megabyte
	// hashed, and in a repair it was CPU spent twice before the write.
	if d.cfg == nil || d.forceParse || d.f.marksAll() {
		d.loadConfig()
	}
	if d.cfg == nil {
		return fmt.Errorf("%w: %w", ErrNoConfig, d.cfgErr)
	}
	st := d.cfg.State
	d.filterBeforeRead()
	d.stats.objects = st.Objects()
	d.m.objects.Set(float64(d.stats.objects))

	defer func() {
		end := d.clk.Now()
		took := end.Sub(start)
		d.stats.lastPass, d.stats.lastTook = end, took
		d.m.duration.Observe(took.Seconds())
	}()

	// The namespace's writer lock is held for the whole pass, so that an
	// apply or ipam run never interleaves with it.
	unlock, lockErr := d.eng.lock(ctx)
	if lockErr != nil {
		d.m.errors.WithLabelValues("read").Inc()
		d.m.passes.WithLabelValues("error").Inc()
		delay := d.bo.failed("kernel read", start)
		d.log.Error("pass not run", "error", lockErr, "retry_in", delay)
		d.stats.converged, d.stats.errors, d.stats.firstErr = false, 1, lockErr.Error()
		return nil
	}
	defer unlock()
	locked = d.clk.Now()
	// The files are read again under the lock (a few small reads; parsed
	// only when changed): a writer that held it while this pass waited
	// may have changed them (apply --candidate installs the file it
	// applies), and the configuration read before would undo its work.
	d.loadConfig()
	st = d.cfg.State
	d.filterBeforeRead()
	d.stats.objects = st.Objects()
	d.m.objects.Set(float64(d.stats.objects))

	d.awaitRouteEchoes()
	reread := d.rereadKinds(start)
	d.eng.setReread(reread)
	max := d.maxDisruption()
	plan, planErr := d.eng.plan(ctx, st, max)
	planned = d.clk.Now()
	if plan == nil {
		d.f.swap(nil) // no read to build a filter from: wake on everything
		d.f.markAll()
		d.m.errors.WithLabelValues("read").Inc()
		d.m.passes.WithLabelValues("error").Inc()
		delay := d.bo.failed("kernel read", start)
		d.log.Error("read kernel state failed", "error", planErr, "retry_in", delay)
		d.stats.converged, d.stats.errors, d.stats.firstErr = false, 1, planErr.Error()
		return nil
	}
	d.bo.succeeded("kernel read")
	d.readGen = d.gen
	if readsWireGuard(reread) {
		d.wgReadAt = start
	}
	d.m.countRouteRead(reread, d.eng.routesRead())
	if readsEveryTable(reread) {
		d.routesReadAt = start
	}
	d.reportConflicts(planErr)
	d.reportHeld(plan, max)

	now := d.clk.Now()
	// A plan that differs from the last one means the world moved (the
	// missing link appeared, a conflict was resolved): what waits for a
	// retry may work now, so everything is tried at once. A storm that
	// does not change the plan leaves the backoff alone.
	if sig := planSignature(plan, planErr); sig != d.lastPlan {
		d.lastPlan = sig
		d.bo.reset()
	}
	held := 0
	var todo *diff.Plan
	if !d.bo.empty() {
		// Keys only when something waits for a retry: a key per op is a
		// string per route of a 100k-route first converge.
		live := map[string]bool{}
		todo = plan.Select(func(op *diff.Op) bool {
			k := opKey(*op)
			live[k] = true
			if d.bo.ready(k, now) {
				return true
			}
			held++
			return false
		})
		d.bo.keep(live)
	} else {
		todo = plan.Select(func(*diff.Op) bool { return true })
	}

	var res *apply.Result
	var saveErr error
	if !todo.Empty() {
		echoed := d.f.routesEchoed()
		d.markWritten(todo, echoed)
		before := d.f.echoes.Load()
		res, saveErr = d.eng.apply(ctx, todo)
		if echoed {
			d.oweRouteEchoes(res, before)
		}
	} else {
		res = &apply.Result{}
		// Nothing to apply, but records a failed save left in memory
		// are written now, or the failure is reported again.
		saveErr = d.eng.saveLedger()
	}
	applied = d.clk.Now()
	d.logTimes(woke, start, locked, planned, applied, reread, len(todo.Ops))
	if ctx.Err() != nil {
		// Stopping: operations the cancellation skipped are no failures.
		d.logDone(res.Done, false)
		return nil
	}
	drift := d.gen == d.convergedGen && d.everConverged
	d.logDone(res.Done, drift)
	if drift {
		d.stats.drift += uint64(len(res.Done))
		d.m.drift.Add(float64(len(res.Done)))
	}
	for i := 0; i < len(res.Done) && !d.bo.empty(); i++ {
		d.bo.succeeded(opKey(*res.Done[i]))
	}
	// The plan is not needed past here, and res.Done points into its
	// array (50 MB for the first converge of a big host): let
	// go of it before the event filter's snapshot and the record of a
	// converged configuration allocate.
	done := len(res.Done)
	res.Done = nil
	d.logFailed(res.Failed, now)
	if saveErr != nil {
		d.m.errors.WithLabelValues("apply").Inc()
		d.log.Error("save ownership ledger failed", "error", saveErr)
	}

	d.filterAfterPass(st)
	d.bigPass = d.isBigPass(garbageKinds(reread), done+len(res.Failed))
	if d.m.serving {
		d.refreshParts(ctx, st)
	}

	var conflicts diff.Conflicts
	errors.As(planErr, &conflicts)
	d.stats.errors = len(res.Failed) + held + len(conflicts)
	d.stats.firstErr = ""
	switch {
	case len(res.Failed) > 0:
		d.stats.firstErr = res.Failed[0].Err.Error()
	case len(conflicts) > 0:
		d.stats.firstErr = conflicts[0]
	case held > 0:
		d.stats.firstErr = fmt.Sprintf("%d objects waiting to be retried", held)
	case saveErr != nil:
		d.stats.firstErr = saveErr.Error()
	}
	d.stats.converged = d.stats.errors == 0 && saveErr == nil && d.stats.held == 0
	switch {
	case d.stats.converged:
		d.m.passes.WithLabelValues("converged").Inc()
		d.m.lastSuccess.Set(float64(d.clk.Now().UnixNano()) / 1e9)
		d.convergedGen, d.everConverged = d.gen, true
		if d.opts.Converged != nil && d.reportedGen != d.gen {
			if err := d.opts.Converged(d.cfgSrcs); err != nil {
				d.log.Warn("record the converged configuration (retried on the next pass)", "error", err)
			} else {
				// Recorded: the files are not needed again for this
				// configuration (a big host's file is megabytes).
				d.reportedGen, d.cfgSrcs = d.gen, nil
			}
		}
	case len(conflicts) > 0 && len(res.Failed) == 0:
		d.m.passes.WithLabelValues("conflict").Inc()
	case d.stats.errors == 0 && saveErr == nil:
		d.m.passes.WithLabelValues("held").Inc()
	default:
		d.m.passes.WithLabelValues("failed").Inc()
	}
	return nil
}

// logTimes logs, at debug level, where a pass's time went: waiting since
// the first wake-up (the debounce, the gap after the last pass), for the
// namespace's lock, reading and planning, applying; and what it read of
// the routes.
func (d *Daemon) logTimes(woke, start, locked, planned, applied time.Time, read actual.Fresh, ops int) {
	if !d.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	waited := time.Duration(0)
	if !woke.IsZero() {
		waited = start.Sub(woke)
	}
	routes := "none"
	switch {
	case readsEveryTable(read):
		routes = "every table"
	case read.Kinds&actual.Routes != 0:
		routes = fmt.Sprint(slices.Sorted(maps.Keys(read.RouteTables)))
	}
	d.log.Debug("pass", "waited", waited, "lock", locked.Sub(start), "plan", planned.Sub(locked), "apply", applied.Sub(planned),
		"kinds", fmt.Sprintf("%05b", read.Kinds), "route_tables", routes, "ops", ops)
}

func (d *Daemon) reportConflicts(err error) {
	var c diff.Conflicts
	if !errors.As(err, &c) {
		d.lastConflicts = ""
		return
	}
	text := c.Error()
	if text == d.lastConflicts {
		return
	}
	d.lastConflicts = text
	d.m.errors.WithLabelValues("conflict").Add(float64(len(c)))
	for _, msg := range c {
		d.log.Error("conflict with the kernel state; object left alone", "error", msg)
	}
}

// maxDisruption is the most disruptive change a pass applies: run
// --max-disruption, else settings.max-disruption, else none (nil).
func (d *Daemon) maxDisruption() *diff.Disruption {
	if d.opts.MaxDisruption != nil {
		return d.opts.MaxDisruption
	}
	if d.cfg == nil || d.cfg.State.MaxDisruption == "" {
		return nil
	}
	// Validated with the file (desired.settings).
	v, err := diff.ParseDisruption(d.cfg.State.MaxDisruption)
	if err != nil {
		return nil
	}
	return &v
}

// reportHeld records what the plan holds back above max: the status
// line, the held-changes gauge, and a log line when it changes (one per
// change of what is held, not one per pass).
func (d *Daemon) reportHeld(plan *diff.Plan, max *diff.Disruption) {
	counts := map[string]float64{}
	for _, d := range diff.Disruptions() {
		counts[d.Snake()] = 0
	}
	var names []string
	for i := range plan.Held {
		op := &plan.Held[i]
		counts[op.Disruption.Snake()]++
		names = append(names, fmt.Sprintf("%s %s: %s", op.Kind, op.ID, op.Disruption.Words()))
	}
	d.m.setHeld(counts)
	d.stats.held = len(plan.Held) + len(plan.HeldDependents)
	d.stats.heldText = ""
	if len(plan.Held) > 0 {
		d.stats.heldText = fmt.Sprintf("above max-disruption %s: %s; apply them with netreconcile apply", max, strings.Join(names, ", "))
	}
	text := strings.Join(names, "\n") + "\x00" + strings.Join(plan.HeldDependents, "\n")
	if text == d.lastHeld {
		return
	}
	d.lastHeld = text
	if len(plan.Held) == 0 {
		if text != "\x00" {
			d.log.Info("no change held for max-disruption any more")
		}
		return
	}
	for i := range plan.Held {
		op := &plan.Held[i]
		d.log.Warn("change held: it disrupts more than max-disruption allows; apply it by hand with netreconcile apply",
			"kind", op.Kind, "id", op.ID, "action", op.Action, "disruption", op.Disruption.Snake(), "max_disruption", max.Snake(), "why", op.Reason)
	}
	for _, dep := range plan.HeldDependents {
		d.log.Warn("change held with it", "what", dep)
	}
}

// changedFields names the changed attributes, without their values: a value
// may be a secret.
func changedFields(op diff.Op) string {
	names := make([]string, len(op.Changes))
	for i, c := range op.Changes {
		names[i] = c.Field
	}
	return strings.Join(names, ",")
}

// planSignature identifies a plan by its operations and conflicts.
func planSignature(plan *diff.Plan, conflicts error) [sha256.Size]byte {
	h := sha256.New()
	for _, op := range plan.Ops {
		fmt.Fprintf(h, "%s %s\x00", op.Action, opKey(op))
	}
	if conflicts != nil {
		h.Write([]byte(conflicts.Error()))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func opKey(op diff.Op) string { return string(op.Kind) + " " + op.ID }
