package daemon

import "time"

// schedule decides when the next pass runs. It reads no clock and holds no
// timer: every method is given the time, and the loop (loop.go) sets its
// timer to due whenever a method reports a change. The rules:
//
//   - a wake-up asks for a pass one debounce from now, and a pass already due
//     sooner stays, so the debounce counts from the first wake-up of a burst
//     and a storm cannot postpone a pass forever;
//   - a kernel notification of drift (repair) asks with a shorter debounce:
//     the notifications of one kernel operation (a link going down with its
//     addresses and routes) are queued together, within microseconds, so a
//     long wait buys no coalescing and only delays the repair. It does not
//     bring a pass before the debounce of a file's wake-up still running: an
//     editor's write and its rename stay one pass;
//   - a wake-up brings forward a pass due later (a WireGuard rotation tick
//     30 s away, the backoff retry of an object that keeps failing): an edit
//     or a repair never waits for those;
//   - passes are paced by a budget of pass time (a token bucket): each
//     pass spends max(minInterval, its duration), time between passes
//     earns it back one for one, up to burst. A pass waits after the
//     previous one while the budget is spent. Under a storm the loop thus
//     spends at most half its time in passes, whatever they cost, once the
//     burst is spent; an isolated repair or edit after a quiet spell runs
//     without waiting for a gap after the pass before it. A periodic
//     resync that nothing else asked for spends nothing: it is no storm,
//     and beside a full table the repair that woke during its read of
//     every table would wait as long again after it.
type schedule struct {
	debounce, repairDebounce, minInterval, burst time.Duration

	// due is when the next pass runs; zero: none is scheduled.
	due time.Time
	// editDue is the end of the debounce of the running burst of file
	// (or full-read) wake-ups; zero when none runs.
	editDue time.Time
	// lastEnd is the end of the last pass, zero before the first; credit
	// is the budget left at lastEnd (negative: the gap still owed).
	lastEnd time.Time
	credit  time.Duration
}

// earliest is when a pass may start: once the budget is earned back.
func (s *schedule) earliest() time.Time {
	if s.lastEnd.IsZero() || s.credit >= 0 {
		return time.Time{}
	}
	return s.lastEnd.Add(-s.credit)
}

// at asks for a pass no later than t, moved to the end of the gap after the
// last pass if t falls inside it. It reports whether due changed; a pass
// already due at or before that time stays.
func (s *schedule) at(t time.Time) bool {
	if earliest := s.earliest(); t.Before(earliest) {
		t = earliest
	}
	if !s.due.IsZero() && !t.Before(s.due) {
		return false
	}
	s.due = t
	return true
}

// wake is a wake-up at now: a pass one debounce from now, or sooner.
func (s *schedule) wake(now time.Time) bool {
	t := now.Add(s.debounce)
	if s.editDue.IsZero() || t.Before(s.editDue) {
		s.editDue = t
	}
	return s.at(t)
}

// repair is a kernel notification's wake-up at now: a pass one repair
// debounce from now, or sooner, but not inside a file's debounce.
func (s *schedule) repair(now time.Time) bool {
	t := now.Add(s.repairDebounce)
	if t.Before(s.editDue) {
		t = s.editDue
	}
	return s.at(t)
}

// now is an explicit request (a reload) at now: a pass as soon as the gap
// allows, without the debounce.
func (s *schedule) now(now time.Time) bool {
	s.due = time.Time{}
	return s.at(now)
}

// started is the start of the scheduled pass: none is due any more, and
// the pass reads the files as they are now.
func (s *schedule) started() { s.due, s.editDue = time.Time{}, time.Time{} }

// ended is the end of a pass that ran from start to end and spends cost of
// the budget (zero for a periodic resync, max(minInterval, its duration)
// otherwise): the time since the previous pass earned its share first.
func (s *schedule) ended(start, end time.Time, cost time.Duration) {
	if s.lastEnd.IsZero() {
		s.credit = s.burst
	} else {
		s.credit = min(s.burst, s.credit+start.Sub(s.lastEnd))
	}
	s.credit -= cost
	s.lastEnd = end
}

// cost is what a pass that took took spends of the budget.
func (s *schedule) cost(took time.Duration) time.Duration { return max(s.minInterval, took) }
