// Package growth prints a benchmark's growth table: one measure taken at
// several sizes (say 1k, 10k, 100k), with our time, the peer tool's time on
// the same work in the same run, their ratio, and each side's slope: the
// exponent k of cost ∝ size^k between one size and the next (a log-log fit
// through the two points). A slope near 1 is cost that grows with the work;
// a slope well above 1, or above the peer tool's, is cost that grows faster
// than it and is marked, so that it shows at a glance.
//
// A benchmark gives a Bench its sizes and a function that measures one
// size; Run calls it for each size, smallest first, and prints one table
// per measure, headed by the load average before and after (the machine is
// shared: only same-run ratios mean anything, and the load says how much).
//
//	b := growth.Bench{Name: "bench-wg", Unit: "peers", Sizes: growth.Sizes("BENCH_WG_SIZES", 1000, 5000, 10000)}
//	b.Run(os.Stdout, func(n int) ([]growth.Measure, error) {
//		...
//		return []growth.Measure{{Name: "configure", Peer: "wg setconf", Ours: ours, Theirs: theirs}}, nil
//	})
//
// Tables of several benchmarks read alike: make bench prints them one after
// the other.
package growth

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Marks: how much a slope may exceed 1, or the peer tool's slope, before
// the row is marked. Times on a shared two-core machine wander by 10-20%
// between runs; between sizes ten times apart that moves a slope by less
// than 0.1, between sizes twice apart by up to 0.25.
const slopeTolerance = 0.15

// Measure is one measurement at one size.
type Measure struct {
	// Name is the table it belongs to ("configure N peers"): measures of
	// the same name at different sizes make one table.
	Name string
	// Ours is netreconcile's time.
	Ours time.Duration
	// Peer names the tool compared with ("wg setconf"); Theirs is its time
	// on the same work, 0 when there is none.
	Peer   string
	Theirs time.Duration
	// Note is shown at the end of the row: counts that are not times
	// (messages sent, objects written).
	Note string
}

// Bench is a benchmark run at several sizes.
type Bench struct {
	// Name heads the tables ("bench-wg").
	Name string
	// Unit names what the size counts ("peers", "routes").
	Unit string
	// Sizes, smallest first.
	Sizes []int
	// Detail is printed under the name (how each time is taken: "median
	// of 5 rounds, the tools taking turns").
	Detail string
}

// Run measures every size with measure and prints the tables to w. A
// failed size ends the run with its error, after printing what was
// measured.
func (b Bench) Run(w io.Writer, measure func(n int) ([]Measure, error)) error {
	t := Table{Bench: b, LoadBefore: LoadAverage()}
	var err error
	for _, n := range b.Sizes {
		var ms []Measure
		ms, err = measure(n)
		for _, m := range ms {
			t.Add(n, m)
		}
		if err != nil {
			err = fmt.Errorf("%s at %d %s: %w", b.Name, n, b.Unit, err)
			break
		}
	}
	t.LoadAfter = LoadAverage()
	t.Fprint(w)
	return err
}

// Table holds the measures of a Bench, by name in the order first added.
type Table struct {
	Bench
	LoadBefore, LoadAfter string
	names                 []string
	rows                  map[string][]row
}

type row struct {
	n int
	m Measure
}

// Add records m at size n.
func (t *Table) Add(n int, m Measure) {
	if t.rows == nil {
		t.rows = map[string][]row{}
	}
	if _, ok := t.rows[m.Name]; !ok {
		t.names = append(t.names, m.Name)
	}
	t.rows[m.Name] = append(t.rows[m.Name], row{n, m})
}

// Fprint writes the tables.
func (t *Table) Fprint(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: growth with the number of %s", t.Name, t.Unit)
	if t.Detail != "" {
		fmt.Fprintf(&b, " (%s)", t.Detail)
	}
	fmt.Fprintf(&b, "\n  load average %s before, %s after\n", orDash(t.LoadBefore), orDash(t.LoadAfter))
	for _, name := range t.names {
		t.fprintOne(&b, name, t.rows[name])
	}
	b.WriteString("  slope: k in time ∝ size^k from the size above (1: grows with the work);\n")
	fmt.Fprintf(&b, "  ^ marks ours above 1 or above the peer's by more than %.2f\n", slopeTolerance)
	_, _ = io.WriteString(w, b.String())
}

func (t *Table) fprintOne(b *strings.Builder, name string, rows []row) {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(x, y row) int { return x.n - y.n })
	peer := ""
	for _, r := range rows {
		if r.m.Peer != "" {
			peer = r.m.Peer
		}
	}
	fmt.Fprintf(b, "\n  %s\n", name)
	if peer != "" {
		fmt.Fprintf(b, "  %9s  %12s %6s  %12s %6s  %6s\n", t.Unit, "netreconcile", "slope", trunc(peer, 12), "slope", "ratio")
	} else {
		fmt.Fprintf(b, "  %9s  %12s %6s\n", t.Unit, "netreconcile", "slope")
	}
	var line strings.Builder
	for i, r := range rows {
		ours, theirs := "-", "-"
		mark := " "
		if i > 0 {
			prev := rows[i-1]
			so := Slope(prev.n, prev.m.Ours, r.n, r.m.Ours)
			ours = fmtSlope(so)
			if peer != "" {
				st := Slope(prev.n, prev.m.Theirs, r.n, r.m.Theirs)
				theirs = fmtSlope(st)
				if Faster(so, st) {
					mark = "^"
				}
			} else if Faster(so, math.NaN()) {
				mark = "^"
			}
		}
		line.Reset()
		fmt.Fprintf(&line, "  %9d  %12s %6s%s", r.n, fmtDur(r.m.Ours), ours, mark)
		if peer != "" {
			fmt.Fprintf(&line, " %12s %6s  %6s", fmtDur(r.m.Theirs), theirs, fmtRatio(r.m.Ours, r.m.Theirs))
		}
		if r.m.Note != "" {
			fmt.Fprintf(&line, "  %s", r.m.Note)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
}

// Slope is the exponent k of t ∝ n^k through (n1, t1) and (n2, t2): NaN
// when a time is missing or the sizes are equal.
func Slope(n1 int, t1 time.Duration, n2 int, t2 time.Duration) float64 {
	if n1 <= 0 || n2 <= 0 || n1 == n2 || t1 <= 0 || t2 <= 0 {
		return math.NaN()
	}
	return math.Log(float64(t2)/float64(t1)) / math.Log(float64(n2)/float64(n1))
}

// Faster reports whether our slope shows a cost growing faster than the
// work (above 1) or than the peer tool's (peer NaN: no peer), beyond the
// tolerance that noise between runs gives.
func Faster(ours, peer float64) bool {
	if math.IsNaN(ours) {
		return false
	}
	limit := 1.0
	if !math.IsNaN(peer) && peer > limit {
		limit = peer
	}
	return ours > limit+slopeTolerance
}

// Median returns the median of ds (the upper one of an even count); 0 for
// none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Sizes returns the sizes listed in the environment variable env (comma
// separated, "1000,5000,10000", with k and M for thousands and millions:
// "1k,10k,100k"), or def when it is unset or empty. A size that does not
// parse is an error, which Sizes reports by panicking: the benchmark's
// caller wrote it.
func Sizes(env string, def ...int) []int {
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return def
	}
	s, err := ParseSizes(v)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", env, v, err))
	}
	return s
}

// ParseSizes parses "1k,10k,100k" (k: thousands, M: millions), sorted
// smallest first.
func ParseSizes(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		mul := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mul, f = 1000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "M"):
			mul, f = 1000000, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("size %q: expected a positive whole number, with k or M for thousands or millions", f)
		}
		out = append(out, n*mul)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// LoadAverage is the 1, 5 and 15 minute load averages ("" where
// /proc/loadavg cannot be read).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func fmtSlope(k float64) string {
	if math.IsNaN(k) {
		return "-"
	}
	return fmt.Sprintf("%.2f", k)
}

func fmtRatio(ours, theirs time.Duration) string {
	if ours <= 0 || theirs <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(ours)/float64(theirs))
}

func trunc(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
