package daemon

import (
	"context"
	"time"
)

// The watchdog. Between passes the loop pings systemd
// itself: its select serves the ticker, so a ping proves the loop is alive.
// During a pass the loop cannot ping, and a pass may rightly take longer
// than WatchdogSec: deleting 1,358 bridges took 49 s. So while a pass runs,
// a goroutine pings on the loop's behalf, but only if the pass made progress
// (a kernel write) since the previous tick: a pass stuck in one kernel call
// stops the pings, and systemd kills and restarts the service as before.
// What WatchdogSec must cover is then the longest stretch of a pass without
// a write (reading the kernel state, one kernel call), not a whole pass.

// progress is a count that grows while a pass advances: kernel writes (each
// is counted as it starts) and finished passes.
func (d *Daemon) progress() uint64 {
	return d.eng.writes() + d.passesDone.Load()
}

// feedWatchdogDuringPasses pings every interval while a pass is running and
// progressing, until ctx is done.
func (d *Daemon) feedWatchdogDuringPasses(ctx context.Context, every time.Duration) {
	t := d.clk.NewTicker(every)
	defer t.Stop()
	last := d.progress()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		now := d.progress()
		if d.inPass.Load() && now != last {
			d.opts.Notifier.Notify(sdWatchdog)
		}
		last = now
	}
}
