package growth

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestSlope: the exponent of a power law, whatever its constant.
func TestSlope(t *testing.T) {
	for _, c := range []struct {
		k    float64
		c    time.Duration
		n, m int
	}{
		{1, time.Microsecond, 1000, 10000},
		{2, 3 * time.Nanosecond, 1000, 5000},
		{0, time.Millisecond, 1000, 100000},
		{1.5, time.Microsecond, 5000, 10000},
	} {
		t1 := time.Duration(float64(c.c) * math.Pow(float64(c.n), c.k))
		t2 := time.Duration(float64(c.c) * math.Pow(float64(c.m), c.k))
		if got := Slope(c.n, t1, c.m, t2); math.Abs(got-c.k) > 0.001 {
			t.Errorf("Slope(%d, %v, %d, %v) = %.4f, want %.1f", c.n, t1, c.m, t2, got, c.k)
		}
	}
	for _, c := range [][4]int{{1000, 0, 2000, 5}, {1000, 5, 1000, 7}, {0, 5, 1000, 7}} {
		if got := Slope(c[0], time.Duration(c[1]), c[2], time.Duration(c[3])); !math.IsNaN(got) {
			t.Errorf("Slope%v = %v, want NaN (no slope)", c, got)
		}
	}
}

func TestFaster(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		ours, peer float64
		want       bool
	}{
		{1.0, nan, false},
		{1.14, nan, false},
		{1.2, nan, true},
		{1.2, 1.1, false}, // the peer's grows as fast: the work does
		{1.5, 1.1, true},
		{0.5, 0.1, false}, // below 1: not faster than the work
		{nan, 1, false},
	} {
		if got := Faster(c.ours, c.peer); got != c.want {
			t.Errorf("Faster(%v, %v) = %v, want %v", c.ours, c.peer, got, c.want)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("10k, 1k,100k,1M,1000")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1000, 10000, 100000, 1000000}
	if len(got) != len(want) {
		t.Fatalf("ParseSizes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ParseSizes = %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", "k", "-5", "1.5k", "ten"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) = nil error, want one", bad)
		}
	}
}

// TestRunPrints: a measure that grows as the square of the size is marked,
// one that grows linearly is not; a measure without a peer has no ratio;
// notes and the error of a failed size are kept.
func TestRunPrints(t *testing.T) {
	b := Bench{Name: "bench-x", Unit: "things", Sizes: []int{1000, 2000, 4000, 8000}, Detail: "median of 1"}
	var out bytes.Buffer
	boom := errors.New("boom")
	err := b.Run(&out, func(n int) ([]Measure, error) {
		if n == 8000 {
			return nil, boom
		}
		lin := time.Duration(n) * time.Microsecond
		sq := time.Duration(n*n/1000) * time.Microsecond
		return []Measure{
			{Name: "linear", Ours: lin, Peer: "tool", Theirs: 2 * lin, Note: "1 message"},
			{Name: "square", Ours: sq, Peer: "tool", Theirs: lin},
			{Name: "alone", Ours: sq},
		}, nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "bench-x at 8000 things") {
		t.Errorf("Run's error = %v, want boom at 8000 things", err)
	}
	s := out.String()
	for _, want := range []string{
		"bench-x: growth with the number of things (median of 1)",
		"  load average ",
		"\n  linear\n",
		"     things  netreconcile  slope          tool  slope   ratio\n",
		"       1000        1.0 ms      -        2.0 ms      -    0.50  1 message\n",
		"       2000        2.0 ms   1.00        4.0 ms   1.00    0.50  1 message\n",
		"\n  square\n",
		"       2000        4.0 ms   2.00^       2.0 ms   1.00    2.00\n",
		"       4000       16.0 ms   2.00^       4.0 ms   1.00    4.00\n",
		"\n  alone\n     things  netreconcile  slope\n",
		"       1000        1.0 ms      -\n",
		"       4000       16.0 ms   2.00^\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "8000") {
		t.Errorf("the failed size printed a row:\n%s", s)
	}
}

func TestMedian(t *testing.T) {
	if got := Median([]time.Duration{5, 1, 3, 2, 4}); got != 3 {
		t.Errorf("Median = %v, want 3", got)
	}
	if got := Median(nil); got != 0 {
		t.Errorf("Median(nil) = %v, want 0", got)
	}
}
