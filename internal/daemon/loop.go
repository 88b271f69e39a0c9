package daemon

import (
	"context"
	"time"
)

// event is what the loop reacts to.
type event int

const (
	evWake     event = iota // a source saw a change (Wake)
	evRepair                // a kernel notification of drift (wakeRepair)
	evReload                // SIGHUP (Options.Reload)
	evTimer                 // the scheduled pass is due
	evWatchdog              // time to tell systemd the loop is alive
)

// Run loads the configuration, converges, reports READY=1 and keeps the
// kernel converged until ctx is done. It returns nil when ctx is done; it
// leaves the kernel as it is then (an interrupted pass stops between two
// operations), never tearing anything down.
//
// Run only waits: what the loop does with each event is handle's, which the
// loop's unit tests drive on a fake clock.
func (d *Daemon) Run(ctx context.Context) error {
	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	sources := append([]Source{resyncSource{tickerOn(d.clk, "periodic resync", d.opts.Resync)}, d.secretDirs.source()}, d.opts.Sources...)
	for _, s := range sources {
		// Kernel sources mark the kinds their events are about, the
		// resync asks for a resync (filter_pass.go); a wake-up from any
		// other asks for a full read.
		wake := d.Wake
		switch s.(type) {
		case kindMarker:
			wake = d.wakeRepair
		case resyncSource:
			wake = d.resync
		}
		go d.runSource(srcCtx, s, wake)
	}

	var watchdog <-chan time.Time
	if d.opts.Watchdog > 0 {
		// Half the interval, as sd_watchdog_enabled(3) recommends. The
		// ping comes from the loop itself: a pass stuck in the kernel
		// stops it, and systemd restarts the service.
		t := d.clk.NewTicker(d.opts.Watchdog / 2)
		defer t.Stop()
		watchdog = t.C()
		go d.feedWatchdogDuringPasses(srcCtx, d.opts.Watchdog/2)
	}

	d.start()
	defer d.timer.Stop()
	for {
		var ev event
		select {
		case <-ctx.Done():
			d.opts.Notifier.Notify(sdStopping)
			d.log.Info("stopping; the kernel state stays as it is")
			return nil
		case <-watchdog:
			ev = evWatchdog
		case <-d.wake:
			ev = evWake
		case <-d.repair:
			ev = evRepair
		case <-d.opts.Reload:
			ev = evReload
		case <-d.timer.C():
			ev = evTimer
		}
		if err := d.handle(ctx, ev); err != nil {
			return err
		}
	}
}

// start schedules the first pass, at once.
func (d *Daemon) start() {
	d.timer = d.clk.NewTimer(0)
	d.sched.due = d.clk.Now()
}

// handle is the loop's answer to one event. It returns an error only when
// the daemon cannot go on (no valid configuration at start).
func (d *Daemon) handle(ctx context.Context, ev event) error {
	switch ev {
	case evWatchdog:
		d.opts.Notifier.Notify(sdWatchdog)
	case evWake:
		// A wake-up brings the next pass forward to one debounce from
		// now, whatever is scheduled later (a WireGuard rotation tick,
		// a backoff retry 30 s away): otherwise an edit or a drift
		// would wait for that. A pass already due sooner stays: the
		// debounce is counted from the first wake-up of a burst.
		if d.wokeAt.IsZero() {
			d.wokeAt = d.clk.Now()
		}
		d.arm(d.sched.wake(d.clk.Now()))
	case evRepair:
		// The same, sooner: see schedule.
		if d.wokeAt.IsZero() {
			d.wokeAt = d.clk.Now()
		}
		d.arm(d.sched.repair(d.clk.Now()))
	case evReload:
		d.m.wakeups.Inc()
		d.log.Info("reload requested")
		if d.ready {
			d.reloading = true
			d.opts.Notifier.Notify(reloadingMsg())
		}
		// An explicit request skips the debounce and parses the files
		// even when they look unchanged.
		d.forceParse = true
		d.f.markAll()
		d.arm(d.sched.now(d.clk.Now()))
	case evTimer:
		return d.runScheduledPass(ctx)
	}
	return nil
}

// arm sets the timer to the scheduled pass when the schedule changed.
func (d *Daemon) arm(changed bool) {
	if changed {
		d.timer.Reset(d.sched.due.Sub(d.clk.Now()))
	}
}

// runScheduledPass runs the pass the timer was set for, then reports to
// systemd and schedules what the pass left for later.
func (d *Daemon) runScheduledPass(ctx context.Context) error {
	d.sched.started()
	start := d.clk.Now()
	d.inPass.Store(true)
	d.bigPass, d.periodic = false, false
	err := d.pass(ctx)
	d.passesDone.Add(1)
	d.inPass.Store(false)
	// Once the pass's plan and readings are garbage (memory.go).
	if d.bigPass {
		d.releaseMemory()
	}
	if err != nil {
		return err
	}
	cost := d.sched.cost(d.stats.lastTook)
	if d.periodic {
		// The resync's read of every kind is no storm: a repair
		// that woke during it waits for its end, not for as long
		// again after it.
		cost = 0
	}
	d.sched.ended(start, d.clk.Now(), cost)
	if ctx.Err() != nil {
		return nil
	}
	d.notifyStatus()
	// READY=1 only once the kernel holds the file's state; after that,
	// every reload's pass ends its RELOADING=1 with READY=1, converged or
	// not (the reload is done; STATUS= says how it went).
	if d.reloading || (!d.ready && d.stats.converged) {
		d.opts.Notifier.Notify(sdReady)
		if !d.ready {
			d.log.Info("converged; ready", "objects", d.stats.objects, "took", d.stats.lastTook.Round(time.Microsecond))
		}
		d.ready, d.reloading = true, false
	}
	if t, ok := d.bo.next(); ok {
		d.arm(d.sched.at(t))
	}
	// WireGuard sends no notifications: endpoint rotation is checked on a
	// timer (every 30 s in KubeSpan's timings), from the last pass that
	// read the devices (filter_pass.go).
	if due, ok := d.wgRecheckDue(); ok {
		d.arm(d.sched.at(due))
	}
	return nil
}
