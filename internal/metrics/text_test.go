package metrics

import (
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testCollector emits what its function emits.
type testCollector struct {
	descs   []*Desc
	collect func(e *Emitter)
}

func (c testCollector) Describe() []*Desc  { return c.descs }
func (c testCollector) Collect(e *Emitter) { c.collect(e) }

// scrape asks r's responder for /metrics over TCP with net/http's
// client: an HTTP implementation other than the one under test.
func scrape(t *testing.T, r *Registry, method string) (*http.Response, string) {
	t.Helper()
	return request(t, r, method, "/metrics")
}

func request(t *testing.T, r *Registry, method, path string) (*http.Response, string) {
	t.Helper()
	addr := serveTest(t, r)
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// serveTest serves r on a loopback port until the test ends.
func serveTest(t testing.TB, r *Registry) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Serve(ln, Timeouts{Head: 2 * time.Second, Write: 2 * time.Second}) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// The page reads as client_golang wrote it: families by name, labels by
// name, series by label values, counters as floats, bucket counts as
// integers, a family without series left out.
func TestText(t *testing.T) {
	r := NewRegistry()
	changes := NewCounterVec("x_changes_total", "Changes by kind and action.", "kind", "action")
	changes.WithLabelValues("route", "create").Add(1152816)
	changes.WithLabelValues("link", "update").Inc()
	changes.WithLabelValues("addr", "delete")
	empty := NewCounterVec("x_empty_total", "Never used.", "a")
	g := NewGauge("x_last_seconds", "Help with a \\ backslash\nand a line feed.")
	g.Set(1.795554984269451e+09)
	h := NewHistogram("x_duration_seconds", "Durations.", ExponentialBuckets(0.001, 2, 3))
	for _, v := range []float64{0.0005, 0.001, 0.003, 5} {
		h.Observe(v)
	}
	peers := NewDesc(GaugeType, "x_peers", "Peers.", "link", "state")
	r.MustRegister(changes, empty, g, h, testCollector{[]*Desc{peers}, func(e *Emitter) {
		e.Emit(peers, 2, "wg\"0\\\n", "up")
		e.Emit(peers, math.Copysign(0, -1), "a", "down")
		e.Emit(peers, math.Inf(-1), "a", "up")
		e.Emit(peers, math.NaN(), "a", "unknown")
	}})
	res, got := scrape(t, r, http.MethodGet)
	want := `# HELP x_changes_total Changes by kind and action.
# TYPE x_changes_total counter
x_changes_total{action="create",kind="route"} 1.152816e+06
x_changes_total{action="delete",kind="addr"} 0
x_changes_total{action="update",kind="link"} 1
# HELP x_duration_seconds Durations.
# TYPE x_duration_seconds histogram
x_duration_seconds_bucket{le="0.001"} 2
x_duration_seconds_bucket{le="0.002"} 2
x_duration_seconds_bucket{le="0.004"} 3
x_duration_seconds_bucket{le="+Inf"} 4
x_duration_seconds_sum 5.0045
x_duration_seconds_count 4
# HELP x_last_seconds Help with a \\ backslash\nand a line feed.
# TYPE x_last_seconds gauge
x_last_seconds 1.795554984269451e+09
# HELP x_peers Peers.
# TYPE x_peers gauge
x_peers{link="a",state="down"} 0
x_peers{link="a",state="unknown"} NaN
x_peers{link="a",state="up"} -Inf
x_peers{link="wg\"0\\\n",state="up"} 2
`
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("page (-want +got):\n%s", d)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}

	res, got = scrape(t, r, http.MethodHead)
	if res.StatusCode != http.StatusOK || got != "" || res.Header.Get("Content-Type") != ContentType {
		t.Errorf("HEAD: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), got)
	}
	res, _ = scrape(t, r, http.MethodPost)
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

// A collector's mistake fails the scrape with its reason.
func TestScrapeErrors(t *testing.T) {
	d := NewDesc(GaugeType, "x_g", "G.", "a")
	other := NewDesc(GaugeType, "x_other", "Not registered.")
	for name, tc := range map[string]struct {
		emit func(e *Emitter)
		want string
	}{
		"twice":          {func(e *Emitter) { e.Emit(d, 1, "v"); e.Emit(d, 2, "v") }, `x_g: series ["v"] emitted twice`},
		"not registered": {func(e *Emitter) { e.Emit(other, 1) }, "x_other: emitted but not registered"},
		"label count":    {func(e *Emitter) { e.Emit(d, 1) }, "x_g: 0 label values for 1 label names"},
	} {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry()
			r.MustRegister(testCollector{[]*Desc{d}, tc.emit})
			res, body := scrape(t, r, http.MethodGet)
			if res.StatusCode != http.StatusInternalServerError || !strings.Contains(body, tc.want) {
				t.Errorf("%d %q, want 500 with %q", res.StatusCode, body, tc.want)
			}
		})
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	r := NewRegistry()
	r.MustRegister(NewCounter("x_total", "X."))
	defer func() {
		if recover() == nil {
			t.Error("no panic registering a family name twice")
		}
	}()
	r.MustRegister(NewGauge("x_total", "X again."))
}

func TestInvalidNamesPanic(t *testing.T) {
	for _, f := range map[string]func(){
		"metric name":    func() { NewDesc(GaugeType, "x-y", "") },
		"digit first":    func() { NewDesc(GaugeType, "1x", "") },
		"label name":     func() { NewDesc(GaugeType, "x", "", "a:b") },
		"reserved label": func() { NewDesc(GaugeType, "x", "", "__a") },
		"repeated label": func() { NewDesc(GaugeType, "x", "", "a", "a") },
		"le":             func() { NewDesc(HistogramType, "x", "", "le") },
		"buckets":        func() { NewHistogram("x", "", []float64{1, 1}) },
		"exponential":    func() { ExponentialBuckets(0, 2, 3) },
		"value count":    func() { NewCounterVec("x", "", "a").WithLabelValues() },
	} {
		func() {
			defer func() { _ = recover() }()
			f()
			t.Errorf("no panic")
		}()
	}
}
