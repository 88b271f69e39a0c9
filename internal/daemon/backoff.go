package daemon

import "time"

// backoff holds the objects whose last operation failed and when each may be
// tried again. The delay doubles with every failure, from min up to max; an
// object leaves the table when it succeeds, when no pass needs to touch it
// any more, or when the configuration changes.
type backoff struct {
	min, max time.Duration
	m        map[string]*retry
}

type retry struct {
	delay time.Duration
	next  time.Time
}

func newBackoff(minDelay, maxDelay time.Duration) *backoff {
	return &backoff{min: minDelay, max: maxDelay, m: map[string]*retry{}}
}

// failed records a failure at now and returns the delay before the next try.
func (b *backoff) failed(key string, now time.Time) time.Duration {
	r := b.m[key]
	if r == nil {
		r = &retry{delay: b.min}
		b.m[key] = r
	} else {
		r.delay = min(2*r.delay, b.max)
	}
	r.next = now.Add(r.delay)
	return r.delay
}

func (b *backoff) succeeded(key string) { delete(b.m, key) }

// empty reports whether nothing waits for a retry.
func (b *backoff) empty() bool { return len(b.m) == 0 }

// ready reports whether key may be tried at now.
func (b *backoff) ready(key string, now time.Time) bool {
	r := b.m[key]
	return r == nil || !now.Before(r.next)
}

// keep forgets the objects not in live.
func (b *backoff) keep(live map[string]bool) {
	for k := range b.m {
		if !live[k] {
			delete(b.m, k)
		}
	}
}

func (b *backoff) reset() { clear(b.m) }

// next returns the earliest time an object may be tried again.
func (b *backoff) next() (time.Time, bool) {
	var t time.Time
	for _, r := range b.m {
		if t.IsZero() || r.next.Before(t) {
			t = r.next
		}
	}
	return t, !t.IsZero()
}
