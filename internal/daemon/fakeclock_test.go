package daemon

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when a test moves it. Timers and
// tickers fire, by sending on their channel, when the clock reaches their
// deadline. Safe for concurrent use: the loop's tests drive handle from the
// test goroutine, runSource and Run run in goroutines of their own.
type fakeClock struct {
	mu     sync.Mutex
	armed  *sync.Cond // broadcast whenever a timer is armed
	now    time.Time
	timers []*fakeTimer
}

func newFakeClock() *fakeClock {
	c := &fakeClock{now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	c.armed = sync.NewCond(&c.mu)
	return c
}

// fakeTimer is a timer, or a ticker when period > 0.
type fakeTimer struct {
	clk    *fakeClock
	c      chan time.Time
	at     time.Time
	period time.Duration
	on     bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) timer { return c.add(d, 0) }

func (c *fakeClock) NewTicker(d time.Duration) ticker { return c.add(d, d) }

func (c *fakeClock) add(d, period time.Duration) *fakeTimer {
	t := &fakeTimer{clk: c, c: make(chan time.Time, 1), period: period}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	t.Reset(d)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

// Reset drops a value not received yet, as Go 1.23 timers do.
func (t *fakeTimer) Reset(d time.Duration) {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	t.drain()
	t.at, t.on = c.now.Add(d), true
	c.fireLocked()
	c.armed.Broadcast()
}

func (t *fakeTimer) Stop() {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	t.on = false
	t.drain()
}

func (t *fakeTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

// fireLocked fires every armed timer whose deadline has come. A ticker that
// is late drops ticks, as time.Ticker does.
func (c *fakeClock) fireLocked() {
	for _, t := range c.timers {
		if !t.on || t.at.After(c.now) {
			continue
		}
		select {
		case t.c <- t.at:
		default:
		}
		if t.period > 0 {
			for !t.at.After(c.now) {
				t.at = t.at.Add(t.period)
			}
		} else {
			t.on = false
		}
	}
}

// set moves the clock to at (never back) and fires what is due.
func (c *fakeClock) set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
	c.fireLocked()
}

func (c *fakeClock) advance(d time.Duration) { c.set(c.Now().Add(d)) }

// next returns the earliest deadline of an armed timer or ticker.
func (c *fakeClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, t := range c.timers {
		if t.on && (at.IsZero() || t.at.Before(at)) {
			at = t.at
		}
	}
	return at, !at.IsZero()
}

// waitArmed blocks until a timer that is not a ticker is armed for at,
// which another goroutine is about to do; it fails the test after 10 s of
// wall time (a guard against a hang, never a wait the test relies on).
func (c *fakeClock) waitArmed(t *testing.T, at time.Time) {
	t.Helper()
	guard := time.AfterFunc(10*time.Second, func() {
		c.mu.Lock()
		c.armed.Broadcast()
		c.mu.Unlock()
	})
	defer guard.Stop()
	deadline := time.Now().Add(10 * time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for _, tm := range c.timers {
			if tm.on && tm.period == 0 && tm.at.Equal(at) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no timer armed for %s", at.Format("15:04:05.000"))
		}
		c.armed.Wait()
	}
}
