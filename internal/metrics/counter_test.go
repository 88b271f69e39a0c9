package metrics

import (
	"strings"
	"testing"
)

// Values that concatenate alike are distinct series, and a series' counter
// is the same on every call.
func TestCounterVecSeries(t *testing.T) {
	v := NewCounterVec("x_total", "X.", "a", "b")
	pairs := [][2]string{{"ab", "c"}, {"a", "bc"}, {"", "abc"}, {"abc", ""}, {"\x01a", "bc"}, {strings.Repeat("x", 300), "y"}}
	seen := map[*Counter]bool{}
	for i, p := range pairs {
		c := v.WithLabelValues(p[0], p[1])
		if seen[c] {
			t.Errorf("%q shares a counter with an earlier pair", p)
		}
		seen[c] = true
		c.Add(uint64(i + 1))
	}
	for i, p := range pairs {
		if got := v.WithLabelValues(p[0], p[1]).Value(); got != uint64(i+1) {
			t.Errorf("%q: %d, want %d", p, got, i+1)
		}
	}
}

// The lookup of an existing series, the hot path of a CounterVec, does not
// allocate.
func TestCounterVecLookupDoesNotAllocate(t *testing.T) {
	v := NewCounterVec("x_total", "X.", "source", "result")
	v.WithLabelValues("routes", "woke")
	if n := testing.AllocsPerRun(100, func() { v.WithLabelValues("routes", "woke").Inc() }); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}
