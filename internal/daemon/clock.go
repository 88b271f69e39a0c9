package daemon

import (
	"context"
	"time"
)

// clock is the daemon's time: the loop's timer and watchdog ticker, the
// timestamps and durations of passes, the backoff of failed objects, the
// periodic resync and the restart delays of wake-up sources. Production runs
// on the wall clock; the loop's unit tests (loop_test.go) run on a fake one
// they move by hand, so that a debounce, a gap or a 30 s backoff is tested
// without waiting for it.
//
// The file watch's settle delay (files.go) stays on the wall clock: it
// belongs to fsnotify's source, not to the loop.
type clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) timer
	// NewTicker returns a ticker that fires every d.
	NewTicker(d time.Duration) ticker
}

// timer is a time.Timer behind an interface. As with Go 1.23 timers, Reset
// and Stop drop a value that was sent and not received yet: after Reset the
// channel delivers the new deadline only.
type timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// ticker is a time.Ticker behind an interface.
type ticker interface {
	C() <-chan time.Time
	Stop()
}

// wallClock is the clock of production.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) NewTimer(d time.Duration) timer { return wallTimer{time.NewTimer(d)} }

func (wallClock) NewTicker(d time.Duration) ticker { return wallTicker{time.NewTicker(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time   { return w.t.C }
func (w wallTimer) Reset(d time.Duration) { w.t.Reset(d) }
func (w wallTimer) Stop()                 { w.t.Stop() }

type wallTicker struct{ t *time.Ticker }

func (w wallTicker) C() <-chan time.Time { return w.t.C }
func (w wallTicker) Stop()               { w.t.Stop() }

// sleep waits for d on clk, or until ctx is done; it reports whether the
// whole delay passed.
func sleep(ctx context.Context, clk clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
