package cli

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/netreconcile/netreconcile/internal/buildinfo"
	"github.com/netreconcile/netreconcile/internal/daemon"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// serviceLockWait bounds the service's wait for the namespace's lock: a
// third of the packaged unit's WatchdogSec=30s.
const serviceLockWait = 10 * time.Second

func runRun(ctx context.Context, env *Env, args []string) int {
	var g globals
	var resync, fullResync time.Duration
	var metricsAddr, metricsWebConfig, logLevel, logFormat string
	var logChanges int
	var memLimit string
	var maxDisruption disruptionFlag
	fs := g.flags("run")
	fs.Var(&maxDisruption, "max-disruption", "")
	fs.DurationVar(&resync, "resync-interval", daemon.DefaultResync, "")
	fs.DurationVar(&fullResync, "full-resync-interval", daemon.DefaultFullResync, "")
	fs.StringVar(&metricsAddr, "metrics-listen", "", "")
	fs.StringVar(&metricsWebConfig, "metrics-web-config", "", "")
	fs.StringVar(&logLevel, "log-level", "info", "")
	fs.StringVar(&logFormat, "log-format", "text", "")
	// -o is --log-format: what run prints is its log.
	outputFlag(fs, &logFormat)
	fs.IntVar(&logChanges, "log-changes", daemon.DefaultLogChanges, "")
	fs.StringVar(&memLimit, "memory-limit", "auto", "")
	if ok, code := parse(env, fs, runHelp, args); !ok {
		return code
	}
	if logChanges < -1 {
		badUsage(env, "run", fmt.Sprintf("--log-changes must be -1 (no limit), 0 (counts only) or more, not %d", logChanges))
		return ExitUsage
	}
	memoryLimit, err := parseMemoryLimit(memLimit, env.Getenv("GOMEMLIMIT"))
	if err != nil {
		badUsage(env, "run", fmt.Sprintf("--memory-limit: %v", err))
		return ExitUsage
	}
	if metricsWebConfig != "" && metricsAddr == "" {
		badUsage(env, "run", "--metrics-web-config needs --metrics-listen")
		return ExitUsage
	}
	if resync <= 0 {
		badUsage(env, "run", fmt.Sprintf("--resync-interval must be positive, not %s", resync))
		return ExitUsage
	}
	if fullResync <= 0 {
		badUsage(env, "run", fmt.Sprintf("--full-resync-interval must be positive, not %s", fullResync))
		return ExitUsage
	}
	log, err := newLogger(env, logLevel, logFormat)
	if err != nil {
		badUsage(env, "run", err.Error())
		return ExitUsage
	}

	// SIGHUP's default action kills the process: catch it before anything
	// can take time.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				select {
				case reload <- struct{}{}:
				default:
				}
			}
		}
	}()

	nst, err := g.openState(false)
	if err != nil {
		return fail(env, "run", err)
	}
	defer nst.close()
	k, err := kernel.Open(g.nsPath())
	if err != nil {
		return fail(env, "run", err)
	}
	defer k.Close()
	// Each pass reads the ledger again once it holds the namespace's lock
	// (engine.LockPass): an apply run between two passes may have changed it.
	l, err := ledger.OpenIn(nst.dir, nst.id.Cookie)
	if err != nil {
		return fail(env, "run", err)
	}
	if l.Discarded {
		log.Warn("the ownership ledger was recorded for an earlier namespace under this name; its records are dropped")
	}
	// A pass waits for another writer (an apply) at most serviceLockWait:
	// the loop sends no WATCHDOG=1 while it waits. A pass that gives up is
	// retried with backoff like a failed kernel read.
	lg := g
	lg.lockTimeout = min(g.lockTimeout, serviceLockWait)
	lock := lg.lockFn(nst, func(pid int) {
		log.Warn("waiting for the namespace's lock held by another writer", "pid", pid, "timeout", lg.lockTimeout)
	})
	// The daemon holds the namespace's safe-apply transactions: it says so
	// by holding safeapply.DaemonLock for its whole life (apply
	// --confirm-within then leaves the deadline to it), rolls back before
	// the first converge a transaction begun before a reboot or past its
	// deadline, and keeps a timer at the pending one's deadline.
	if unlockDaemon, err := nst.dir.Lock(ctx, safeapply.DaemonLock, statedir.LockOptions{RecordPID: true, NoWait: true}); err != nil {
		log.Warn("another daemon holds this namespace's state directory; safe-apply deadlines are left to it", "error", err)
	} else {
		defer unlockDaemon()
	}
	openTxnHost := func(ctx context.Context) (*safeapply.Host, func(), error) {
		unlock, err := g.lockFn(nst, func(pid int) {
			log.Warn("safe apply waits for the namespace's lock held by another writer", "pid", pid)
		})(ctx)
		if err != nil {
			return nil, nil, err
		}
		// The daemon's namespace, held since its start: the path it was
		// given may be gone (a /proc/PID/ns/net whose process exited).
		tk, err := k.Reopen()
		if err != nil {
			unlock()
			return nil, nil, err
		}
		tl, err := ledger.OpenIn(nst.dir, nst.id.Cookie)
		if err != nil {
			tk.Close()
			unlock()
			return nil, nil, err
		}
		h := &safeapply.Host{Dir: nst.dir, Engine: &engine.Engine{Kernel: tk, Ledger: tl, State: nst.dir}, Netns: g.netns,
			AllowInsecureConfig: g.allowInsecureConfig, Getenv: env.Getenv}
		return h, func() { tk.Close(); unlock() }, nil
	}
	if h, closeTxn, err := openTxnHost(ctx); err != nil {
		log.Error("check for a safe-apply transaction to roll back", "error", err)
	} else {
		rolled, _, err := h.Due(ctx)
		closeTxn()
		if err != nil {
			log.Error("roll back a safe-apply transaction at start", "error", err)
		}
		if rolled != nil {
			safeapply.LogRollback(log, rolled)
		}
	}
	rec := &safeapply.Recorder{Dir: nst.dir}
	txns := &safeapply.Source{Dir: nst.dir, Open: openTxnHost, Resync: resync, Log: log, Getenv: env.Getenv}
	metrics := daemon.NewMetrics()
	metrics.Registry.MustRegister(safeapply.NewCollector(nst.dir))
	if metricsAddr != "" {
		// The web configuration names who may scrape and the TLS key:
		// whoever can change it could read the metrics or stop them, so
		// it is held to the configuration's rule.
		if metricsWebConfig != "" && !g.allowInsecureConfig {
			if err := desired.CheckTrusted(metricsWebConfig, ""); err != nil {
				return fail(env, "run", fmt.Errorf("metrics web configuration: %w", err))
			}
		}
		if err := metrics.Serve(ctx, metricsAddr, metricsWebConfig, log); err != nil {
			return fail(env, "run", err)
		}
	}
	watchdog, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("ignoring the watchdog settings", "error", err)
	}
	filter := daemon.NewEventFilter()
	sources := append(daemon.KernelEvents(k.NsHandle(), filter), daemon.ConfigFiles(g.config, g.dropIn()), txns)
	d, err := daemon.New(daemon.Options{
		Config:   g.config,
		DropIn:   g.dropIn(),
		Engine:   &engine.Engine{Kernel: k, Ledger: l, State: nst.dir, Lock: lock},
		Sources:  sources,
		Reload:   reload,
		Resync:   resync,
		Log:      log,
		Metrics:  metrics,
		Filter:   filter,
		Watchdog: watchdog,

		FullResync:          fullResync,
		AllowInsecureConfig: g.allowInsecureConfig,
		LogChanges:          logChanges,
		MemoryLimit:         memoryLimit,
		NoChangeLines:       logChanges == 0,
		StatusExtra:         txns.Status,
		MaxDisruption:       maxDisruption.v,
		Pin:                 (&safeapply.Pin{Dir: nst.dir}).Sources,
		Converged: func(srcs []desired.Source) error {
			return rec.Record(func() (*safeapply.Snapshot, error) {
				return safeapply.SnapshotOf(g.config, g.dropIn(), srcs, time.Now(), "run")
			})
		},
	})
	if err != nil {
		return fail(env, "run", err)
	}
	attrs := []any{"version", buildinfo.Version(), "commit", buildinfo.Commit(), "config", g.config, "conf_dir", g.dropIn()}
	if g.netns != "" {
		attrs = append(attrs, "netns", g.netns)
	}
	log.Info("starting", attrs...)
	if err := d.Run(ctx); err != nil {
		return fail(env, "run", err)
	}
	return ExitOK
}

// newLogger logs to standard error. Under systemd (JOURNAL_STREAM set) the
// journal stamps every line, so the time is left out. Every string a
// record holds is made inert (inert.ReplaceAttr): link names, aliases and
// errors from the kernel and the files reach the journal and terminals.
func newLogger(env *Env, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	journal := env.Getenv("JOURNAL_STREAM") != ""
	jsonFormat := strings.EqualFold(format, "json")
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if journal && len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		if jsonFormat && a.Value.Kind() == slog.KindDuration {
			// As the JSON output gives durations (docs/json.md): a
			// number of seconds, the unit in the name; slog's JSON
			// would write nanoseconds. Text keeps "retry_in=200ms".
			return slog.Float64(a.Key+"_seconds", a.Value.Duration().Seconds())
		}
		return inert.ReplaceAttr(groups, a)
	}}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(env.Stderr, opts)), nil
	case "json":
		// Not through Stderr's inert writer, whose escapes would break
		// a JSON string: the record's strings are inert already.
		out := env.logOut
		if out == nil {
			out = env.Stderr
		}
		return slog.New(slog.NewJSONHandler(out, opts)), nil
	}
	return nil, fmt.Errorf("--log-format (-o) must be text or json, not %q", format)
}

// parseMemoryLimit reads --memory-limit: auto, off, or a size in bytes
// with an optional suffix (K, M, G: powers of 1024; KiB, MiB, GiB too). A
// GOMEMLIMIT in the environment is the runtime's limit already: auto then
// leaves it alone, and an explicit size still wins.
func parseMemoryLimit(s, gomemlimit string) (int64, error) {
	switch s {
	case "auto":
		if gomemlimit != "" {
			return daemon.MemoryLimitOff, nil
		}
		return daemon.MemoryLimitAuto, nil
	case "off":
		return daemon.MemoryLimitOff, nil
	}
	num := strings.TrimRight(s, "KMGiB")
	mult := int64(1)
	switch strings.TrimSuffix(strings.TrimSuffix(s[len(num):], "iB"), "B") {
	case "":
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("want auto, off or a size such as 200M, not %q", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want auto, off or a size such as 200M, not %q", s)
	}
	if n*mult < 16<<20 {
		return 0, fmt.Errorf("%s is below the 16M the daemon needs to run at all", s)
	}
	return n * mult, nil
}
