package daemon

import (
	"context"
	"time"
)

// Source is something that can tell the loop the kernel or the file may have
// changed: netlink notifications, the configuration directory, a timer.
//
// Run watches until ctx is done and calls wake whenever it saw a change.
// wake is cheap, never blocks and may be called from any goroutine, as often
// as the source likes: wake-ups only wake the loop, which coalesces them and
// then reads everything again (the pass after a wake-up from any source but
// the kernel's, which mark what changed, is a full resync), so a source need
// not say what changed, and a source that lost events (a closed
// subscription, ENOBUFS) recovers by subscribing again and calling wake.
//
// Run returns nil when ctx is done. An error means the source stopped
// working; the daemon logs it, wakes the loop and starts the source again
// after a delay, relying on the periodic resync meanwhile.
//
// KernelEvents and ConfigFiles are the usual sources; a new one is a Source
// appended to Options.Sources (docs/daemon.md, "Adding a wake-up source").
type Source interface {
	Name() string
	Run(ctx context.Context, wake func()) error
}

// SourceFunc adapts a function to Source.
type SourceFunc struct {
	SourceName string
	F          func(ctx context.Context, wake func()) error
}

// Name returns the source's name.
func (s SourceFunc) Name() string { return s.SourceName }

// Run calls F.
func (s SourceFunc) Run(ctx context.Context, wake func()) error { return s.F(ctx, wake) }

// tickerOn wakes the loop every interval of clk: the periodic full resync
// that repairs whatever no notification reported (a lost event, a change in
// a subsystem without notifications).
func tickerOn(clk clock, name string, every time.Duration) SourceFunc {
	return SourceFunc{name, func(ctx context.Context, wake func()) error {
		t := clk.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
				wake()
			}
		}
	}}
}

// runSource runs a source until ctx is done, restarting it with exponential
// backoff when it fails. A source that fails has lost events (a closed
// netlink subscription, ENOBUFS after a storm): the loop is woken for a
// full pass at once, and the source subscribes again after the delay.
func (d *Daemon) runSource(ctx context.Context, s Source, wake func()) {
	delay := sourceRestartMin
	for {
		start := d.clk.Now()
		err := s.Run(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		if d.clk.Now().Sub(start) > sourceRestartMax {
			delay = sourceRestartMin
		}
		d.log.Error("wake-up source stopped; restarting it", "source", s.Name(), "error", err, "retry_in", delay)
		// Whatever it would have reported meanwhile is caught by this
		// pass, which reads everything.
		d.f.markAll()
		wake()
		if !sleep(ctx, d.clk, delay) {
			return
		}
		// And what it missed while it was down is caught by the pass
		// after it is back: the wake-up comes a debounce before that pass
		// reads, time enough for Run to subscribe.
		d.f.markAll()
		wake()
		delay = min(2*delay, sourceRestartMax)
	}
}

// A failing source is restarted after 100 ms, then twice as late each time
// up to 10 s: fast enough that a lost netlink subscription costs no more
// than one debounce, slow enough not to spin on a source that cannot work.
const (
	sourceRestartMin = 100 * time.Millisecond
	sourceRestartMax = 10 * time.Second
)
