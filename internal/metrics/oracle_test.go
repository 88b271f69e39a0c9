package metrics

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The oracle of these tests is Prometheus' own text parser
// (prometheus/common/expfmt), which this package's code does not use: a
// page it parses into something other than what was set is a bug here.

var seedFlag = flag.Uint64("metrics.seed", 0, "seed of TestAgainstExpfmt (0: from the clock); a failure prints its seed")

// want is what a family must parse into.
type want struct {
	help   string
	typ    dto.MetricType
	series map[string]*wantSeries // by labelKey
}

type wantSeries struct {
	labels map[string]string
	value  float64
	// A histogram's: cumulative counts by bound (+Inf included), sum and
	// count.
	buckets map[float64]uint64
	sum     float64
	count   uint64
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k, v := range l {
		keys = append(keys, fmt.Sprintf("%q=%q", k, v))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// randomValue returns a float of every kind the format must carry.
func randomValue(r *rand.Rand) float64 {
	switch r.IntN(12) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return math.NaN()
	case 3:
		return math.Inf(+1)
	case 4:
		return math.Inf(-1)
	case 5:
		return math.MaxFloat64 * float64(1-2*r.IntN(2))
	case 6:
		return math.SmallestNonzeroFloat64 * float64(1+r.IntN(9))
	case 7:
		return float64(r.Int64N(1e6) - 5e5)
	case 8:
		return (r.Float64() - 0.5) * 1e-300
	case 9:
		return r.NormFloat64() * 1e21
	default:
		// Any bits: every exponent, both signs, NaNs with payloads.
		return math.Float64frombits(r.Uint64())
	}
}

// randomString returns text with what a writer must escape or keep:
// quotes, backslashes, line feeds, tabs, other control bytes, non-ASCII
// letters and symbols, and often nothing at all.
func randomString(r *rand.Rand) string {
	pieces := []string{`"`, `\`, "\n", "\t", " ", "\r", "\x00", "\x7f", `\n`, `\"`, "é", "ß", "日本", "🦊", "\u2028", "}", "{", ",", "=", "#", "a", "Z", "0", "_"}
	var b strings.Builder
	for range r.IntN(6) {
		if r.IntN(4) == 0 {
			b.WriteRune(rune(r.IntN(0x2FFFF)))
			continue
		}
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// randomHelp is random text that does not start with a blank or a tab:
// the format has no way to keep those (the parser skips them, as it skips
// the blanks before any field).
func randomHelp(r *rand.Rand) string {
	return strings.TrimLeft(randomString(r), " \t")
}

func randomLabelNames(r *rand.Rand) []string {
	all := []string{"a", "b", "kind", "action", "source", "result", "z_9", "_x", "Link", "state"}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:r.IntN(4)]
}

func randomLabelValues(r *rand.Rand, names []string) ([]string, map[string]string) {
	vals := make([]string, len(names))
	m := map[string]string{}
	for i, n := range names {
		vals[i] = randomString(r)
		m[n] = vals[i]
	}
	return vals, m
}

// randomRegistry fills a registry with random families of every kind and
// returns what each must read as.
func randomRegistry(r *rand.Rand) (*Registry, map[string]*want) {
	reg := NewRegistry()
	wants := map[string]*want{}
	for i := range 1 + r.IntN(8) {
		name := fmt.Sprintf("f%d_%s", i, []string{"total", "seconds", "x", "bytes"}[r.IntN(4)])
		help := randomHelp(r)
		w := &want{help: help, series: map[string]*wantSeries{}}
		switch r.IntN(6) {
		case 0: // counter
			c := NewCounter(name, help)
			n := r.Uint64N(1 << 62)
			if r.IntN(3) == 0 {
				n = r.Uint64N(10)
			}
			c.Add(n)
			w.typ = dto.MetricType_COUNTER
			w.series[""] = &wantSeries{labels: map[string]string{}, value: float64(n)}
			reg.MustRegister(c)
		case 1: // counter vector, some series touched more than once
			names := randomLabelNames(r)
			v := NewCounterVec(name, help, names...)
			w.typ = dto.MetricType_COUNTER
			var seen [][]string
			for range r.IntN(6) {
				vals, m := randomLabelValues(r, names)
				if len(seen) > 0 && r.IntN(3) == 0 {
					vals = seen[r.IntN(len(seen))]
					m = map[string]string{}
					for i, n := range names {
						m[n] = vals[i]
					}
				}
				seen = append(seen, vals)
				n := r.Uint64N(1 << 40)
				v.WithLabelValues(vals...).Add(n)
				s := w.series[labelKey(m)]
				if s == nil {
					s = &wantSeries{labels: m}
					w.series[labelKey(m)] = s
				}
				s.value = float64(uint64(s.value) + n)
			}
			reg.MustRegister(v)
		case 2: // gauge
			g := NewGauge(name, help)
			v := randomValue(r)
			g.Set(v)
			w.typ = dto.MetricType_GAUGE
			w.series[""] = &wantSeries{labels: map[string]string{}, value: v}
			reg.MustRegister(g)
		case 3, 4: // a collector's gauge or counter family
			typ, dtyp := GaugeType, dto.MetricType_GAUGE
			if r.IntN(2) == 0 {
				typ, dtyp = CounterType, dto.MetricType_COUNTER
			}
			names := randomLabelNames(r)
			d := NewDesc(typ, name, help, names...)
			w.typ = dtyp
			type sample struct {
				v    float64
				vals []string
			}
			var samples []sample
			for range r.IntN(6) {
				vals, m := randomLabelValues(r, names)
				if w.series[labelKey(m)] != nil {
					continue // a collector emits a series once
				}
				v := randomValue(r)
				samples = append(samples, sample{v, vals})
				w.series[labelKey(m)] = &wantSeries{labels: m, value: v}
			}
			reg.MustRegister(testCollector{[]*Desc{d}, func(e *Emitter) {
				for _, s := range samples {
					e.Emit(d, s.v, s.vals...)
				}
			}})
		case 5: // histogram
			var bounds []float64
			if r.IntN(2) == 0 {
				bounds = ExponentialBuckets(math.Ldexp(1+r.Float64(), r.IntN(40)-20), 1+r.Float64()*3, 1+r.IntN(20))
			} else {
				for range r.IntN(8) {
					bounds = append(bounds, float64(r.IntN(200)-100)/8)
				}
				slices.Sort(bounds)
				bounds = slices.Compact(bounds)
			}
			h := NewHistogram(name, help, bounds)
			w.typ = dto.MetricType_HISTOGRAM
			s := &wantSeries{labels: map[string]string{}, buckets: map[float64]uint64{math.Inf(+1): 0}}
			for _, b := range bounds {
				s.buckets[b] = 0
			}
			for range r.IntN(50) {
				var v float64
				switch r.IntN(5) {
				case 0: // on a bound: counted in that bucket (le: less or equal)
					if len(bounds) > 0 {
						v = bounds[r.IntN(len(bounds))]
					}
				case 1:
					v = randomValue(r)
				default:
					v = r.NormFloat64() * 20
				}
				h.Observe(v)
				s.sum += v
				s.count++
				for b := range s.buckets {
					if v <= b || math.IsInf(b, +1) {
						s.buckets[b]++
					}
				}
			}
			w.series[""] = s
			reg.MustRegister(h)
		}
		if len(w.series) > 0 {
			wants[name] = w
		}
	}
	return reg, wants
}

// parsePage checks the headers of a GET /metrics and parses its body.
func parsePage(t *testing.T, reg *Registry) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	res, page := scrape(t, reg, http.MethodGet)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, page)
	}
	if got := expfmt.ResponseFormat(res.Header); got != expfmt.NewFormat(expfmt.TypeTextPlain) {
		t.Fatalf("Content-Type %q is read as %q", res.Header.Get("Content-Type"), got)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("expfmt cannot parse the page: %v\n%s", err, page)
	}
	return fams, page
}

func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// compare returns the first difference between what was set and what
// the parser read.
func compare(wants map[string]*want, got map[string]*dto.MetricFamily) error {
	for name := range got {
		if wants[name] == nil {
			return fmt.Errorf("unexpected family %s", name)
		}
	}
	for name, w := range wants {
		f := got[name]
		switch {
		case f == nil:
			return fmt.Errorf("family %s missing", name)
		case f.GetHelp() != w.help:
			return fmt.Errorf("%s: help %q, want %q", name, f.GetHelp(), w.help)
		case f.GetType() != w.typ:
			return fmt.Errorf("%s: type %v, want %v", name, f.GetType(), w.typ)
		case len(f.GetMetric()) != len(w.series):
			return fmt.Errorf("%s: %d series, want %d", name, len(f.GetMetric()), len(w.series))
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				if l.GetName() != "le" || w.typ != dto.MetricType_HISTOGRAM {
					labels[l.GetName()] = l.GetValue()
				}
			}
			s := w.series[labelKey(labels)]
			if s == nil {
				return fmt.Errorf("%s: unexpected series %v", name, labels)
			}
			switch w.typ {
			case dto.MetricType_COUNTER:
				if v := m.GetCounter().GetValue(); !sameFloat(v, s.value) {
					return fmt.Errorf("%s%v: %v, want %v", name, labels, v, s.value)
				}
			case dto.MetricType_GAUGE:
				if v := m.GetGauge().GetValue(); !sameFloat(v, s.value) {
					return fmt.Errorf("%s%v: %v, want %v", name, labels, v, s.value)
				}
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				if h.GetSampleCount() != s.count || !sameFloat(h.GetSampleSum(), s.sum) {
					return fmt.Errorf("%s: count %d sum %v, want %d %v", name, h.GetSampleCount(), h.GetSampleSum(), s.count, s.sum)
				}
				if len(h.GetBucket()) != len(s.buckets) {
					return fmt.Errorf("%s: %d buckets, want %d", name, len(h.GetBucket()), len(s.buckets))
				}
				for _, b := range h.GetBucket() {
					n, ok := s.buckets[b.GetUpperBound()]
					if !ok || n != b.GetCumulativeCount() {
						return fmt.Errorf("%s: bucket le=%v: %d, want %d (known bound: %v)", name, b.GetUpperBound(), b.GetCumulativeCount(), n, ok)
					}
				}
			}
		}
	}
	return nil
}

// Random families of every kind, scraped and read back by Prometheus'
// parser, read as what was set. Run with -metrics.seed=N to repeat a
// failure.
func TestAgainstExpfmt(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	cases := 2000
	if testing.Short() {
		cases = 200
	}
	for i := range uint64(cases) {
		r := rand.New(rand.NewPCG(seed, i))
		reg, wants := randomRegistry(r)
		fams, page := parsePage(t, reg)
		if err := compare(wants, fams); err != nil {
			t.Fatalf("-metrics.seed=%d, case %d: %v\npage:\n%s", seed, i, err, page)
		}
		// Deterministic: families by name, series by labels; the same
		// state reads the same.
		if _, again := scrape(t, reg, http.MethodGet); again != page {
			t.Fatalf("-metrics.seed=%d, case %d: two scrapes of one state differ", seed, i)
		}
		if !sortedFamilies(page) {
			t.Fatalf("-metrics.seed=%d, case %d: families not sorted by name:\n%s", seed, i, page)
		}
	}
}

func sortedFamilies(page string) bool {
	var names []string
	for _, l := range strings.Split(page, "\n") {
		if n, ok := strings.CutPrefix(l, "# TYPE "); ok {
			names = append(names, strings.Fields(n)[0])
		}
	}
	return slices.IsSorted(names) && len(slices.Compact(slices.Clone(names))) == len(names)
}

// Writers running during scrapes: every page parses, no count goes back,
// a histogram's +Inf bucket is its count, and once the writers stop the
// page holds every increment. Meant for -race.
func TestConcurrentWritersDuringScrapes(t *testing.T) {
	reg := NewRegistry()
	vec := NewCounterVec("c_total", "C.", "w", "k")
	g := NewGauge("g", "G.")
	h := NewHistogram("h_seconds", "H.", ExponentialBuckets(0.001, 2, 8))
	reg.MustRegister(vec, g, h)
	const writers, rounds = 4, 2000
	// More Ps than cores: the OS then interleaves writers at any
	// instruction, even on a machine of two cores where the scraper would
	// otherwise keep one P and the writers take turns on the other.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(writers + 1))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range rounds {
				// New series appear during scrapes, old ones grow.
				vec.WithLabelValues(fmt.Sprint(w), fmt.Sprint(i%17)).Inc()
				// and every writer adds to one series.
				shared := vec.WithLabelValues("all", "")
				for range 1000 {
					shared.Inc()
				}
				g.Set(float64(i))
				h.Observe(float64(i%13) / 1000)
			}
		})
	}
	scrapes := make(chan error, 1)
	go func() {
		last := map[string]float64{}
		for {
			select {
			case <-stop:
				scrapes <- nil
				return
			default:
			}
			fams, err := reg.gather()
			if err != nil {
				scrapes <- err
				return
			}
			page := appendText(nil, fams)
			p := expfmt.NewTextParser(model.LegacyValidation)
			parsed, err := p.TextToMetricFamilies(bytes.NewReader(page))
			if err != nil {
				scrapes <- fmt.Errorf("parse: %w\n%s", err, page)
				return
			}
			for _, m := range parsed["c_total"].GetMetric() {
				k := labelKey(map[string]string{"w": m.GetLabel()[1].GetValue(), "k": m.GetLabel()[0].GetValue()})
				if v := m.GetCounter().GetValue(); v < last[k] {
					scrapes <- fmt.Errorf("c_total{%s} went from %v to %v", k, last[k], v)
					return
				} else {
					last[k] = v
				}
			}
			if hs := parsed["h_seconds"].GetMetric(); len(hs) == 1 {
				hh := hs[0].GetHistogram()
				b := hh.GetBucket()
				if inf := b[len(b)-1]; !math.IsInf(inf.GetUpperBound(), +1) || inf.GetCumulativeCount() != hh.GetSampleCount() {
					scrapes <- fmt.Errorf("histogram +Inf bucket %v, count %d", inf, hh.GetSampleCount())
					return
				}
				for i := 1; i < len(b); i++ {
					if b[i].GetCumulativeCount() < b[i-1].GetCumulativeCount() {
						scrapes <- fmt.Errorf("histogram buckets not cumulative: %v", b)
						return
					}
				}
			}
		}
	}()
	close(start)
	wg.Wait()
	close(stop)
	if err := <-scrapes; err != nil {
		t.Fatal(err)
	}

	fams, _ := parsePage(t, reg)
	var total float64
	for _, m := range fams["c_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if total != writers*rounds*1001 || len(fams["c_total"].GetMetric()) != writers*17+1 {
		t.Errorf("c_total sums to %v over %d series, want %d over %d", total, len(fams["c_total"].GetMetric()), writers*rounds*1001, writers*17+1)
	}
	if n := fams["h_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); n != writers*rounds {
		t.Errorf("histogram count %d, want %d", n, writers*rounds)
	}
	if v := fams["g"].GetMetric()[0].GetGauge().GetValue(); v != rounds-1 {
		t.Errorf("gauge %v, want %d", v, rounds-1)
	}
}

// FuzzLabelEscaping: any label value and help text, UTF-8 or not, reads
// back through Prometheus' parser as written (bytes that are not UTF-8 as
// U+FFFD).
func FuzzLabelEscaping(f *testing.F) {
	for _, s := range []string{"", `"`, `\`, "\n", `\n`, `a\"b`, "日本\x00", "\xff\xfe", "}\"{,="} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, value, help string) {
		help = strings.TrimLeft(help, " \t")
		reg := NewRegistry()
		v := NewCounterVec("x_total", help, "v")
		v.WithLabelValues(value).Add(3)
		reg.MustRegister(v)
		fams, page := parsePage(t, reg)
		wants := map[string]*want{"x_total": {
			help: strings.TrimLeft(strings.ToValidUTF8(help, "\uFFFD"), " \t"),
			typ:  dto.MetricType_COUNTER,
			series: map[string]*wantSeries{"": {
				labels: map[string]string{"v": strings.ToValidUTF8(value, "\uFFFD")}, value: 3,
			}},
		}}
		w := wants["x_total"]
		w.series = map[string]*wantSeries{labelKey(w.series[""].labels): w.series[""]}
		if err := compare(wants, fams); err != nil {
			t.Fatalf("%v\npage:\n%s", err, page)
		}
	})
}

// The runtime and process collectors give every series they document,
// with values that make sense for this process.
func TestRuntimeAndProcess(t *testing.T) {
	reg := NewRegistry()
	reg.MustRegister(NewGoCollector(), NewProcessCollector())
	fams, page := parsePage(t, reg)
	value := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Errorf("%s missing or not one series:\n%s", name, page)
			return math.NaN()
		}
		m := f.GetMetric()[0]
		if f.GetType() == dto.MetricType_COUNTER {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	now := float64(time.Now().Unix())
	for name, ok := range map[string]func(float64) bool{
		"go_goroutines":                 func(v float64) bool { return v >= 1 },
		"go_threads":                    func(v float64) bool { return v >= 1 },
		"go_info":                       func(v float64) bool { return v == 1 },
		"go_memstats_alloc_bytes":       func(v float64) bool { return v > 0 },
		"go_memstats_heap_alloc_bytes":  func(v float64) bool { return v == value("go_memstats_alloc_bytes") },
		"go_memstats_alloc_bytes_total": func(v float64) bool { return v >= value("go_memstats_alloc_bytes") },
		"go_memstats_sys_bytes":         func(v float64) bool { return v > value("go_memstats_alloc_bytes") },
		"go_memstats_next_gc_bytes":     func(v float64) bool { return v > 0 },
		"go_gc_gomemlimit_bytes":        func(v float64) bool { return v > 0 },
		"go_gc_cycles_total":            func(v float64) bool { return v >= 0 },
		"process_cpu_seconds_total":     func(v float64) bool { return v > 0 && v < 3600 },
		"process_resident_memory_bytes": func(v float64) bool { return v > 1<<20 && v < value("process_virtual_memory_bytes") },
		"process_virtual_memory_bytes":  func(v float64) bool { return v > 1<<20 },
		"process_open_fds":              func(v float64) bool { return v >= 3 && v <= value("process_max_fds") },
		"process_max_fds":               func(v float64) bool { return v >= 3 },
		"process_start_time_seconds":    func(v float64) bool { return v > now-3600 && v <= now+1 },
	} {
		if v := value(name); !ok(v) {
			t.Errorf("%s = %v: implausible", name, v)
		}
	}
	if got := fams["go_info"].GetMetric()[0].GetLabel()[0].GetValue(); !strings.HasPrefix(got, "go") {
		t.Errorf("go_info version %q", got)
	}
	if len(fams) != 16 {
		t.Errorf("%d families, want the 16 documented:\n%s", len(fams), page)
	}
}
