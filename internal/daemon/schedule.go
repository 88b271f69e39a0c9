package daemon

import "time"

// schedule decides when the next pass runs. It reads no clock and holds no
// timer: every method is given the time, and the loop (loop.go) sets its
// timer to due whenever a method reports a change. The rules:
//
//   - a wake-up asks for a pass one debounce from now, and a pass already due
//     sooner stays, so the debounce counts from the first wake-up of a burst
//     and a storm cannot postpone a pass forever;
//   - a wake-up brings forward a pass due later (a WireGuard rotation tick
//     30 s away, the backoff retry of an object that keeps failing): an edit
//     or a repair never waits for those;
//   - a pass starts no sooner after the end of the previous one than
//     max(minInterval, that pass's duration): under a storm the loop spends
//     at most half its time in passes, whatever they cost. A periodic
//     resync that nothing else asked for counts as taking no time: it is no
//     storm, and beside a full table the repair that woke during its read
//     of every table would wait as long again after it.
type schedule struct {
	debounce, minInterval time.Duration

	// due is when the next pass runs; zero: none is scheduled.
	due time.Time
	// lastEnd and lastTook are the end and the duration of the last pass;
	// lastEnd is zero before the first.
	lastEnd  time.Time
	lastTook time.Duration
}

// at asks for a pass no later than t, moved to the end of the gap after the
// last pass if t falls inside it. It reports whether due changed; a pass
// already due at or before that time stays.
func (s *schedule) at(t time.Time) bool {
	if earliest := s.lastEnd.Add(max(s.minInterval, s.lastTook)); !s.lastEnd.IsZero() && t.Before(earliest) {
		t = earliest
	}
	if !s.due.IsZero() && !t.Before(s.due) {
		return false
	}
	s.due = t
	return true
}

// wake is a wake-up at now: a pass one debounce from now, or sooner.
func (s *schedule) wake(now time.Time) bool { return s.at(now.Add(s.debounce)) }

// now is an explicit request (a reload) at now: a pass as soon as the gap
// allows, without the debounce.
func (s *schedule) now(now time.Time) bool {
	s.due = time.Time{}
	return s.at(now)
}

// started is the start of the scheduled pass: none is due any more.
func (s *schedule) started() { s.due = time.Time{} }

// ended is the end of a pass at end, which took took.
func (s *schedule) ended(end time.Time, took time.Duration) {
	s.lastEnd, s.lastTook = end, took
}
