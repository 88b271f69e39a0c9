// Package daemon keeps a host's network equal to its configuration file: a
// level-triggered loop over the engine. Wake-ups (netlink notifications, file
// changes, SIGHUP, a periodic timer, sources other packages add) only wake
// the loop; every pass reads the configuration and the kernel state, diffs
// and applies, so no event is ever interpreted and a lost one costs nothing
// but latency. Kernel notifications that cannot change the plan are dropped
// (filter.go), and a pass reads again only the kinds of kernel state that
// may have changed (filter_pass.go); the periodic resync reads everything.
package daemon

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
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
	// DefaultRepairDebounce is the debounce of a kernel notification that
	// something the file declares drifted: the notifications of one kernel
	// operation arrive together, so a repair need not wait longer.
	DefaultRepairDebounce = 5 * time.Millisecond
	// DefaultMinInterval is the least a pass spends of the loop's budget
	// of pass time; a longer pass spends its duration. Time between passes
	// earns the budget back one for one, so that under a storm the loop
	// spends at most half its time in passes whatever their cost (100k
	// routes take seconds), and at most one pass per 50 ms when they are
	// cheap.
	DefaultMinInterval = 50 * time.Millisecond
	// DefaultBurst is the most the budget holds: after a quiet spell, half
	// a second of passes runs without a gap, so a repair is not held back
	// by the pass just before it, while a storm soon meets the gap.
	DefaultBurst = 500 * time.Millisecond
	// DefaultResync is the period of the resync that catches what no
	// notification reported.
	DefaultResync = 5 * time.Minute
	// DefaultFullResync is how often a resync reads every route table,
	// also those the notifications vouch for (filter_pass.go): the
	// backstop for a change the kernel makes without a word that the
	// daemon does not know of. Beside a full Internet table such a read
	// walks a million foreign routes (about 0.1 s of the kernel's time per
	// million): once an hour, not every 5 minutes.
	DefaultFullResync = time.Hour
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

	Debounce, RepairDebounce, MinInterval, Burst, Resync, RetryMin, RetryMax time.Duration
	// FullResync is how often a resync reads every route table, those
	// the notifications vouch for included (DefaultFullResync); one no
	// longer than Resync makes every resync read them.
	FullResync time.Duration

	Log      *slog.Logger
	Notifier Notifier
	Metrics  *Metrics
	// Filter is shared with the kernel sources (KernelEvents): the daemon
	// gives it a new snapshot after every pass, so that notifications that
	// cannot change the plan do not wake the loop (filter.go). When nil,
	// the daemon makes its own, which sources can read through Filter().
	Filter *EventFilter
	// Watchdog is the interval systemd expects WATCHDOG=1 within (0: none).
	Watchdog time.Duration
	// AllowInsecureConfig skips desired.CheckTrusted (--allow-insecure-config).
	AllowInsecureConfig bool
	// LogChanges is how many changes (and failures) a pass logs one line
	// each at info level before it logs counts per kind and action
	// (changelog.go). 0 means DefaultLogChanges, a negative value no limit;
	// NoChangeLines logs counts only.
	LogChanges    int
	NoChangeLines bool
	// MemoryLimit is the Go runtime's soft memory limit (memory.go):
	// MemoryLimitAuto derives it from each configuration, MemoryLimitOff
	// leaves the runtime's own (GOMEMLIMIT, or none), a positive value is
	// bytes.
	MemoryLimit int64
	// StatusExtra, when set, adds to STATUS= (a pending safe-apply
	// transaction and its time left); "" adds nothing.
	StatusExtra func(now time.Time) string
	// Converged, when set, is called once per configuration after the
	// first pass that converged it, with the namespace's lock held and the
	// files' content as that pass enforced it: safe apply records them as
	// the last confirmed configuration, or, while a transaction is
	// pending, in the transaction, whose confirm records them. An error
	// is logged, and the call made again after the next converged pass.
	Converged func(srcs []desired.Source) error
	// MaxDisruption, when set (run --max-disruption), is the most
	// disruptive change a pass applies; it overrides the configuration's
	// settings.max-disruption. Changes above it are held (status, metrics
	// and a log line say which) until an apply by hand.
	MaxDisruption *diff.Disruption
	// Pin, when set, may replace the files' sources by others to enforce
	// (safeapply.Pin: the confirmed configuration, while the files hold
	// one a rollback could not write back); by names who pinned them.
	Pin func(srcs []desired.Source) (out []desired.Source, by string, err error)
}

// Daemon is the reconcile loop.
type Daemon struct {
	opts Options
	log  *slog.Logger
	eng  passEngine
	clk  clock
	m    *Metrics
	f    *EventFilter
	bo   *backoff
	wake chan struct{}
	// repair carries the kernel sources' wake-ups (wakeRepair).
	repair chan struct{}

	// The loop's state (loop.go): when the next pass runs, the timer set to
	// it, whether READY=1 was sent and whether a reload waits for its pass.
	sched     schedule
	timer     timer
	ready     bool
	reloading bool

	// The configuration being enforced and the hash of the sources it came
	// from; badHash is the hash of sources that failed to parse, so that an
	// invalid file is parsed and reported once, not on every pass.
	cfg *desired.Config
	// pinnedBy is the transaction whose rollback pins the configuration
	// (Options.Pin), "" when none does.
	pinnedBy string
	// cfgSrcs are the files cfg was parsed from (Options.Converged), side
	// files included.
	cfgSrcs []desired.Source
	// sides are the side files the last parse named (config.go).
	sides            []string
	cfgHash, badHash [sha256.Size]byte
	// secrets is the stamp of the secret files cfg's keys were read from,
	// secretsDigest the keys' values (secrets.go).
	secrets, secretsDigest [sha256.Size]byte
	secretDirs             *secretDirs
	cfgErr                 error
	// gen counts configuration changes; convergedGen is gen at the last
	// converged pass. Changes applied while they are equal repair drift.
	gen, convergedGen uint64
	// reportedGen is gen when Options.Converged last succeeded.
	reportedGen uint64
	forceParse  bool
	// dropInGone: the drop-in directory is missing and the last good
	// configuration, which has fragments from it, stays (loadConfig).
	dropInGone    bool
	everConverged bool

	// inPass is set while a pass runs; passesDone counts finished passes
	// (watchdog.go).
	inPass     atomic.Bool
	passesDone atomic.Uint64

	// filterGen is the configuration generation the filter's snapshot
	// was built for (filter_pass.go).
	filterGen uint64
	// lastRoutes is the route part of the last snapshot, built for
	// configuration generation lastRoutesGen.
	lastRoutes    *declaredRoutes
	lastRoutesGen uint64
	// readGen is gen at the last pass that read the kernel: a pass after a
	// configuration change reads everything (filter_pass.go).
	readGen uint64
	// wgReadAt is when a pass last read the WireGuard devices: the
	// endpoint rotation reads them again every rotation interval
	// (filter_pass.go).
	wgReadAt time.Time
	// resyncDue is set by the periodic resync for the next pass;
	// routesReadAt is when the last pass that read every route table
	// started (filter_pass.go).
	resyncDue    atomic.Bool
	routesReadAt time.Time
	// periodic says the pass was the periodic resync's alone: nothing
	// else asked for it (rereadKinds). The gap after it is the least
	// one (schedule.ended).
	periodic bool
	// wokeAt is the first wake-up since the last pass started (zero:
	// none): the pass's debug line says how long it waited.
	wokeAt time.Time

	lastConflicts string
	lastPlan      [sha256.Size]byte
	// lastHeld is what the last pass held back for max-disruption, as
	// logged: a log line is written when it changes.
	lastHeld string
	// released is when releaseMemory last gave memory back (memory.go).
	released       time.Time
	releasePending atomic.Bool
	// bigPass says the pass that just ran leaves garbage to give back.
	bigPass bool
	// owed are the notifications the last pass's route writes owe the
	// next (awaitRouteEchoes).
	owed  owedEchoes
	stats stats
}

// New checks the options and fills in defaults.
func New(opts Options) (*Daemon, error) {
	if opts.Engine == nil || opts.Config == "" {
		return nil, errors.New("daemon: Config and Engine are required")
	}
	// The notifications of the pass's route writes patch the tables they
	// wrote; the daemon marks them read again when none will come.
	opts.Engine.RouteEchoes = true
	return newDaemon(opts, engineAdapter{opts.Engine}, wallClock{}), nil
}

// newDaemon is New over any engine and clock (loop_test.go: fakes).
func newDaemon(opts Options, eng passEngine, clk clock) *Daemon {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.Debounce, DefaultDebounce)
	def(&opts.RepairDebounce, DefaultRepairDebounce)
	def(&opts.MinInterval, DefaultMinInterval)
	def(&opts.Burst, DefaultBurst)
	def(&opts.Resync, DefaultResync)
	def(&opts.FullResync, DefaultFullResync)
	def(&opts.RetryMin, DefaultRetryMin)
	def(&opts.RetryMax, DefaultRetryMax)
	switch {
	case opts.NoChangeLines:
		opts.LogChanges = 0
	case opts.LogChanges == 0:
		opts.LogChanges = DefaultLogChanges
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Notifier == nil {
		opts.Notifier = SystemdNotifier(opts.Log)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.Filter == nil {
		opts.Filter = NewEventFilter()
	}
	opts.Metrics.Registry.MustRegister(opts.Filter.count)
	return &Daemon{
		opts:   opts,
		log:    opts.Log,
		eng:    eng,
		clk:    clk,
		m:      opts.Metrics,
		f:      opts.Filter,
		bo:     newBackoff(opts.RetryMin, opts.RetryMax),
		wake:   make(chan struct{}, 1),
		repair: make(chan struct{}, 1),
		sched: schedule{debounce: opts.Debounce, repairDebounce: opts.RepairDebounce,
			minInterval: opts.MinInterval, burst: opts.Burst},

		secretDirs: newSecretDirs(),
	}
}

// Wake asks for a pass that reads the whole kernel state. It never blocks;
// wake-ups coalesce.
func (d *Daemon) Wake() {
	d.f.markAll()
	d.wakeLoop()
}

// wakeLoop asks for a pass, which reads the kinds marked dirty
// (filter_pass.go).
func (d *Daemon) wakeLoop() {
	d.m.wakeups.Inc()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// wakeRepair is the wake of the kernel sources, which mark their kind: a
// pass after the repair debounce (schedule).
func (d *Daemon) wakeRepair() {
	d.m.wakeups.Inc()
	select {
	case d.repair <- struct{}{}:
	default:
	}
}

// ErrNoConfig is returned by Run when the configuration is invalid at start:
// there is no last good configuration to enforce.
var ErrNoConfig = errors.New("no valid configuration to enforce")
