// Package daemon keeps a host's network equal to its configuration file: a
// level-triggered loop over the engine. Wake-ups (netlink notifications, file
// changes, SIGHUP, a periodic timer, sources other packages add) only wake
// the loop; every pass reads the configuration and the whole kernel state,
// diffs and applies, so no event is ever interpreted and a lost one costs
// nothing but latency.
package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// Defaults, chosen for a repair latency well under 200 ms while a storm of
// notifications cannot make the loop run flat out.
const (
	// DefaultDebounce is how long the loop waits after the first wake-up
	// before it runs, so that a burst (an editor's write and rename, a link
	// going down with its addresses and routes) costs one pass. It is counted
	// from the first wake-up, not the last: a continuous storm delays a pass
	// by this much, never indefinitely.
	DefaultDebounce = 50 * time.Millisecond
	// DefaultMinInterval separates the end of a pass from the start of the
	// next; the gap grows to the last pass's duration when that is longer,
	// so that under a storm the loop spends at most half its time in passes
	// whatever their cost (100k routes take seconds), while a small
	// configuration is repaired within about debounce + one pass.
	DefaultMinInterval = 50 * time.Millisecond
	// DefaultResync is the period of the full resync that catches what no
	// notification reported.
	DefaultResync = 5 * time.Minute
	// DefaultRetryMin and DefaultRetryMax bound the exponential backoff of
	// failed objects: a transient failure (a link that is being created by
	// someone else) is retried soon, a permanent one (a missing kernel
	// module) costs one attempt and one log line every 30 s.
	DefaultRetryMin = 200 * time.Millisecond
	DefaultRetryMax = 30 * time.Second
)

// Options configure a Daemon. Config and Engine are required.
type Options struct {
	// Config is the main file, DropIn the drop-in directory ("" for none).
	Config, DropIn string
	Engine         *engine.Engine
	// Sources wake the loop; the daemon adds the periodic resync itself.
	// KernelEvents and ConfigFiles are the usual ones.
	Sources []Source
	// Reload delivers reload requests (SIGHUP): the loop runs at once and,
	// once it has reported ready, brackets the pass with RELOADING=1 and
	// READY=1 as Type=notify-reload expects.
	Reload <-chan struct{}

	Debounce, MinInterval, Resync, RetryMin, RetryMax time.Duration

	Log      *slog.Logger
	Notifier Notifier
	Metrics  *Metrics
	// Watchdog is the interval systemd expects WATCHDOG=1 within (0: none).
	Watchdog time.Duration
	// AllowInsecureConfig skips desired.CheckTrusted (--allow-insecure-config).
	AllowInsecureConfig bool
}

// Daemon is the reconcile loop.
type Daemon struct {
	opts Options
	log  *slog.Logger
	eng  *engine.Engine
	m    *Metrics
	bo   *backoff
	wake chan struct{}

	// The configuration being enforced and the hash of the sources it came
	// from; badHash is the hash of sources that failed to parse, so that an
	// invalid file is parsed and reported once, not on every pass.
	cfg              *desired.Config
	cfgHash, badHash [sha256.Size]byte
	// secrets is the stamp of the secret files cfg's keys were read from,
	// secretsDigest the keys' values (secrets.go).
	secrets, secretsDigest [sha256.Size]byte
	secretDirs             *secretDirs
	cfgErr                 error
	// gen counts configuration changes; convergedGen is gen at the last
	// converged pass. Changes applied while they are equal repair drift.
	gen, convergedGen uint64
	forceParse        bool
	// dropInGone: the drop-in directory is missing and the last good
	// configuration, which has fragments from it, stays (loadConfig).
	dropInGone    bool
	everConverged bool
	ready         bool

	// inPass is set while a pass runs; passesDone counts finished passes
	// (watchdog.go).
	inPass     atomic.Bool
	passesDone atomic.Uint64

	lastConflicts string
	lastPlan      [sha256.Size]byte
	stats         stats
}

// stats feed the STATUS= line.
type stats struct {
	objects   int
	drift     uint64
	errors    int
	lastPass  time.Time
	lastTook  time.Duration
	firstErr  string
	converged bool
}

// New checks the options and fills in defaults.
func New(opts Options) (*Daemon, error) {
	if opts.Engine == nil || opts.Config == "" {
		return nil, errors.New("daemon: Config and Engine are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.Debounce, DefaultDebounce)
	def(&opts.MinInterval, DefaultMinInterval)
	def(&opts.Resync, DefaultResync)
	def(&opts.RetryMin, DefaultRetryMin)
	def(&opts.RetryMax, DefaultRetryMax)
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Notifier == nil {
		opts.Notifier = SystemdNotifier(opts.Log)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	return &Daemon{
		opts: opts,
		log:  opts.Log,
		eng:  opts.Engine,
		m:    opts.Metrics,
		bo:   newBackoff(opts.RetryMin, opts.RetryMax),
		wake: make(chan struct{}, 1),

		secretDirs: newSecretDirs(),
	}, nil
}

// Wake asks for a pass. It never blocks; wake-ups coalesce.
func (d *Daemon) Wake() {
	d.m.wakeups.Inc()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// ErrNoConfig is returned by Run when the configuration is invalid at start:
// there is no last good configuration to enforce.
var ErrNoConfig = errors.New("no valid configuration to enforce")

// Run loads the configuration, converges, reports READY=1 and keeps the
// kernel converged until ctx is done. It returns nil when ctx is done; it
// leaves the kernel as it is then (an interrupted pass stops between two
// operations), never tearing anything down.
func (d *Daemon) Run(ctx context.Context) error {
	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	sources := append([]Source{Ticker("periodic resync", d.opts.Resync), d.secretDirs.source()}, d.opts.Sources...)
	for _, s := range sources {
		go d.runSource(srcCtx, s, d.Wake)
	}

	var watchdog <-chan time.Time
	if d.opts.Watchdog > 0 {
		// Half the interval, as sd_watchdog_enabled(3) recommends. The
		// ping comes from the loop itself: a pass stuck in the kernel
		// stops it, and systemd restarts the service.
		t := time.NewTicker(d.opts.Watchdog / 2)
		defer t.Stop()
		watchdog = t.C
		go d.feedWatchdogDuringPasses(srcCtx, d.opts.Watchdog/2)
	}

	timer := time.NewTimer(0) // the first pass runs at once
	defer timer.Stop()
	var due time.Time // when the scheduled pass runs; zero: none
	var lastEnd time.Time
	schedule := func(at time.Time) {
		gap := max(d.opts.MinInterval, d.stats.lastTook)
		if earliest := lastEnd.Add(gap); !lastEnd.IsZero() && at.Before(earliest) {
			at = earliest
		}
		if !due.IsZero() && !at.Before(due) {
			return
		}
		due = at
		timer.Reset(time.Until(at))
	}
	due = time.Now()
	reloading := false

	for {
		select {
		case <-ctx.Done():
			d.opts.Notifier.Notify(sdStopping)
			d.log.Info("stopping; the kernel state stays as it is")
			return nil
		case <-watchdog:
			d.opts.Notifier.Notify(sdWatchdog)
		case <-d.wake:
			// A wake-up brings the next pass forward to one debounce from
			// now, whatever is scheduled later (a WireGuard rotation tick,
			// a backoff retry 30 s away): otherwise an edit or a drift
			// would wait for that. A pass already due sooner stays: the
			// debounce is counted from the first wake-up of a burst.
			schedule(time.Now().Add(d.opts.Debounce))
		case <-d.opts.Reload:
			d.m.wakeups.Inc()
			d.log.Info("reload requested")
			if d.ready {
				reloading = true
				d.opts.Notifier.Notify(reloadingMsg())
			}
			// An explicit request skips the debounce and parses the files
			// even when they look unchanged.
			d.forceParse = true
			due = time.Time{}
			schedule(time.Now())
		case <-timer.C:
			due = time.Time{}
			d.inPass.Store(true)
			err := d.pass(ctx)
			d.passesDone.Add(1)
			d.inPass.Store(false)
			if err != nil {
				return err
			}
			lastEnd = time.Now()
			if ctx.Err() != nil {
				continue
			}
			d.notifyStatus()
			if reloading || (!d.ready && d.stats.converged) {
				d.opts.Notifier.Notify(sdReady)
				if !d.ready {
					d.log.Info("converged; ready", "objects", d.stats.objects, "took", d.stats.lastTook.Round(time.Microsecond))
				}
				d.ready, reloading = true, false
			}
			if t, ok := d.bo.next(); ok {
				schedule(t)
			}
			// WireGuard sends no notifications: endpoint rotation is
			// checked on a timer (every 30 s in KubeSpan's timings).
			if d.cfg != nil {
				if every := engine.RecheckInterval(d.cfg.State); every > 0 {
					schedule(time.Now().Add(every))
				}
			}
		}
	}
}

// Notify messages (sd_notify(3)).
const (
	sdReady    = "READY=1"
	sdStopping = "STOPPING=1"
	sdWatchdog = "WATCHDOG=1"
)

func (d *Daemon) notifyStatus() {
	d.opts.Notifier.Notify("STATUS=" + d.Status())
}

// Status is the one-line summary systemctl status shows.
func (d *Daemon) Status() string {
	s := d.stats
	var b strings.Builder
	switch {
	case d.cfgErr != nil:
		fmt.Fprintf(&b, "invalid configuration, enforcing the last good one: %s; ", oneLine(firstConfigError(d.cfgErr)))
	case s.converged:
		b.WriteString("converged: ")
	default:
		b.WriteString("not converged: ")
	}
	fmt.Fprintf(&b, "%d objects, %d drift repaired, %d errors", s.objects, s.drift, s.errors)
	if s.firstErr != "" {
		fmt.Fprintf(&b, " (%s)", oneLine(s.firstErr))
	}
	if !s.lastPass.IsZero() {
		fmt.Fprintf(&b, ", last reconcile %s", s.lastPass.Format("2006-01-02 15:04:05"))
	}
	// STATUS= is readable by every local user: nothing that looks like a
	// key leaves here (package redact).
	return redact.String(b.String())
}

// pass is one reconcile. It returns an error only when the daemon cannot go
// on (no valid configuration at start).
func (d *Daemon) pass(ctx context.Context) error {
	start := time.Now()
	d.loadConfig()
	if d.cfg == nil {
		return fmt.Errorf("%w: %w", ErrNoConfig, d.cfgErr)
	}
	st := d.cfg.State
	d.stats.objects = st.Objects()
	d.m.objects.Set(float64(d.stats.objects))

	defer func() {
		took := time.Since(start)
		d.stats.lastPass, d.stats.lastTook = time.Now(), took
		d.m.duration.Observe(took.Seconds())
	}()

	// The namespace's writer lock is held for the whole pass, so that an
	// apply or ipam run never interleaves with it.
	unlock, lockErr := d.eng.LockPass(ctx)
	if lockErr != nil {
		d.m.errors.WithLabelValues("read").Inc()
		d.m.passes.WithLabelValues("error").Inc()
		delay := d.bo.failed("kernel read", start)
		d.log.Error("pass not run", "error", lockErr, "retry_in", delay)
		d.stats.converged, d.stats.errors, d.stats.firstErr = false, 1, lockErr.Error()
		return nil
	}
	defer unlock()

	plan, _, planErr := d.eng.PlanDesired(ctx, st, false)
	if plan == nil {
		d.m.errors.WithLabelValues("read").Inc()
		d.m.passes.WithLabelValues("error").Inc()
		delay := d.bo.failed("kernel read", start)
		d.log.Error("read kernel state failed", "error", planErr, "retry_in", delay)
		d.stats.converged, d.stats.errors, d.stats.firstErr = false, 1, planErr.Error()
		return nil
	}
	d.bo.succeeded("kernel read")
	d.reportConflicts(planErr)

	now := time.Now()
	// A plan that differs from the last one means the world moved (the
	// missing link appeared, a conflict was resolved): what waits for a
	// retry may work now, so everything is tried at once. A storm that
	// does not change the plan leaves the backoff alone.
	if sig := planSignature(plan, planErr); sig != d.lastPlan {
		d.lastPlan = sig
		d.bo.reset()
	}
	live := map[string]bool{}
	held := 0
	todo := plan.Select(func(op *diff.Op) bool {
		k := opKey(*op)
		live[k] = true
		if d.bo.ready(k, now) {
			return true
		}
		held++
		return false
	})
	d.bo.keep(live)

	var res *apply.Result
	var saveErr error
	if !todo.Empty() {
		res, saveErr = d.eng.Apply(ctx, todo)
	} else {
		res = &apply.Result{}
		// Nothing to apply, but records a failed save left in memory
		// are written now, or the failure is reported again.
		saveErr = d.eng.SaveLedger()
	}
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
	for _, op := range res.Done {
		d.bo.succeeded(opKey(op))
	}
	for _, f := range res.Failed {
		delay := d.bo.failed(opKey(f.Op), now)
		d.m.errors.WithLabelValues("apply").Inc()
		d.log.Error("change failed", "kind", f.Op.Kind, "id", f.Op.ID, "action", string(f.Op.Action), "error", f.Err, "retry_in", delay)
	}
	if saveErr != nil {
		d.m.errors.WithLabelValues("apply").Inc()
		d.log.Error("save ownership ledger failed", "error", saveErr)
	}

	if d.m.serving {
		d.partMetrics(ctx, st)
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
	d.stats.converged = d.stats.errors == 0 && saveErr == nil
	switch {
	case d.stats.converged:
		d.m.passes.WithLabelValues("converged").Inc()
		d.m.lastSuccess.SetToCurrentTime()
		d.convergedGen, d.everConverged = d.gen, true
	case len(conflicts) > 0 && len(res.Failed) == 0:
		d.m.passes.WithLabelValues("conflict").Inc()
	default:
		d.m.passes.WithLabelValues("failed").Inc()
	}
	return nil
}

// loadConfig reads the files on every pass (a few small reads) and parses
// them only when their content changed. An invalid configuration leaves the
// last good one in force.
//
// A configuration in the middle of a change is not read (docs/daemon.md,
// "Writing configuration files"): while a file is being written in place,
// or while the drop-in directory that gave the configuration in force some
// of its fragments is missing (a deploy swapping directories), the last
// good configuration stays, and the files are read again when the writes
// stop or the directory is back (both wake the loop).
func (d *Daemon) loadConfig() {
	// Checked on every pass like the content: a drop-in made writable by
	// others later is refused (the last good configuration stays in force).
	if !d.opts.AllowInsecureConfig {
		if err := desired.CheckTrusted(d.opts.Config, d.opts.DropIn); err != nil {
			d.configFailed(err, [sha256.Size]byte{})
			return
		}
	}
	if d.cfg != nil {
		for _, s := range d.opts.Sources {
			if st, ok := s.(settler); ok && st.unsettled(time.Now()) > 0 {
				return
			}
		}
	}
	srcs, dropInPresent, err := desired.ReadSourcesDir(d.opts.Config, d.opts.DropIn)
	if err != nil {
		d.configFailed(err, [sha256.Size]byte{})
		return
	}
	if !dropInPresent && d.cfg != nil && len(d.cfg.Files) > 1 {
		if !d.dropInGone {
			d.log.Warn("drop-in directory missing; enforcing the last good configuration until it is back (to remove every fragment, empty the directory first)", "dir", d.opts.DropIn)
		}
		d.dropInGone = true
		return
	}
	d.dropInGone = false
	h := hashSources(srcs)
	force := d.forceParse
	d.forceParse = false
	// Stamped before the parse: a key file written during it shows as a
	// change on the next pass.
	var oldPaths []string
	if d.cfg != nil {
		oldPaths = secretPaths(d.cfg.State)
	}
	stamp := secretStamp(oldPaths)
	if !force && d.cfg != nil && h == d.cfgHash && stamp == d.secrets {
		d.configOK()
		return
	}
	if !force && h == d.badHash {
		return
	}
	cfg, err := desired.Parse(srcs)
	if err != nil {
		d.configFailed(err, h)
		return
	}
	if paths := secretPaths(cfg.State); !slices.Equal(paths, oldPaths) {
		stamp = secretStamp(paths)
	}
	digest := secretDigest(cfg.State)
	if d.cfg != nil && h == d.cfgHash && digest == d.secretsDigest {
		d.secrets = stamp
		d.configOK()
		if force {
			d.log.Info("configuration reloaded; unchanged")
		}
		return
	}
	first := d.cfg == nil
	if !first && h == d.cfgHash {
		// Which key changed is not said: only that one did.
		d.log.Info("secret files changed")
	}
	d.cfg, d.cfgHash, d.badHash = cfg, h, [sha256.Size]byte{}
	d.secrets, d.secretsDigest = stamp, digest
	d.secretDirs.set(secretPaths(cfg.State))
	d.gen++
	// A new configuration deserves a fresh attempt at everything.
	d.bo.reset()
	d.configOK()
	msg := "configuration changed"
	if first {
		msg = "configuration loaded"
	}
	d.log.Info(msg, "files", len(cfg.Files), "objects", cfg.State.Objects())
}

func (d *Daemon) configOK() {
	d.cfgErr = nil
	d.m.configOK.Set(1)
}

func (d *Daemon) configFailed(err error, h [sha256.Size]byte) {
	isNew := d.cfgErr == nil || d.cfgErr.Error() != err.Error()
	d.cfgErr, d.badHash = err, h
	d.m.configOK.Set(0)
	if !isNew {
		return
	}
	d.m.errors.WithLabelValues("config").Inc()
	if d.cfg != nil {
		d.log.Error("invalid configuration; enforcing the last good one", "error", err)
	}
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

func (d *Daemon) logDone(ops []diff.Op, drift bool) {
	for _, op := range ops {
		d.m.changes.WithLabelValues(string(op.Kind), string(op.Action)).Inc()
		attrs := []any{"kind", op.Kind, "id", op.ID, "action", string(op.Action)}
		if fields := changedFields(op); fields != "" {
			attrs = append(attrs, "fields", fields)
		}
		if drift {
			attrs = append(attrs, "drift", true)
		}
		d.log.Info("applied", attrs...)
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

func hashSources(srcs []desired.Source) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range srcs {
		fmt.Fprintf(h, "%s\x00%d\x00", s.Name, len(s.Data))
		h.Write(s.Data)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// countObjects counts the declared objects for the status line.

// firstConfigError returns the first positioned error of an invalid
// configuration (file:line:col: path: message), or the error itself.
func firstConfigError(err error) string {
	var es desired.Errors
	if errors.As(err, &es) && len(es) > 0 {
		if n := desired.ErrorCount(err); n > 1 {
			return fmt.Sprintf("%s (and %d more)", es[0].Error(), n-1)
		}
		return es[0].Error()
	}
	return err.Error()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	// systemctl status shows one line; keep it readable.
	const maxLen = 300
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return s
}

// partMetrics refreshes the WireGuard peer and IPAM pool gauges.
func (d *Daemon) partMetrics(ctx context.Context, st *model.State) {
	peers := map[[2]string]float64{}
	if hasWireGuard(st) {
		ps, err := d.eng.PeerStatuses(st)
		if err != nil {
			d.log.Warn("read WireGuard peers for metrics", "error", err)
		}
		for _, p := range ps {
			peers[[2]string{p.Link, p.State}]++
		}
	}
	pools := map[[2]string]float64{}
	if reg, err := d.eng.OpenRegistry(st); reg != nil && err == nil {
		usage, err := engine.PoolUsage(ctx, reg)
		if err != nil {
			d.log.Warn("read IPAM pools for metrics", "error", err)
		}
		for _, u := range usage {
			for measure, v := range map[string]float64{"blocks_held": float64(u.BlocksHeld), "blocks_allowed": float64(u.BlocksAllowed), "addresses": float64(u.Addresses), "allocated": float64(u.Allocated), "cooling": float64(u.Cooling)} {
				pools[[2]string{u.Pool, measure}] = v
			}
		}
	}
	d.m.parts.set(peers, pools)
}

func hasWireGuard(st *model.State) bool {
	for _, l := range st.Links {
		if l.WireGuard != nil {
			return true
		}
	}
	return false
}
