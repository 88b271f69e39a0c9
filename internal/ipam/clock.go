package ipam

import "time"

// Clock tells the time of allocations and releases; tests pass a fake one.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock. The times it gives are stored in the registry and compared by
// other processes, so it must be the wall clock, not a monotonic one.
type SystemClock struct{}

// Now returns the current wall-clock time.
func (SystemClock) Now() time.Time { return time.Now() }
