package metrics

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// serve starts a server of reg's metrics on a loopback port, closed when
// the test ends, and returns its address.
func serve(t testing.TB, reg *prometheus.Registry, webConfig string) string {
	t.Helper()
	s, err := Listen(Options{Addr: "127.0.0.1:0", WebConfig: webConfig, Log: slog.New(slog.DiscardHandler)}, reg, reg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s.Addr().String()
}

// testRegistry is a registry with a series of each type, values that the
// text format must carry exactly, and label values to escape.
func testRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_events_total", Help: "Events, with \\ and\nnewline."}, []string{"kind"})
	c.WithLabelValues("nft_chain").Add(7)
	c.WithLabelValues("quote\" back\\slash\nline é").Inc()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_deadline_timestamp_seconds", Help: "A time."})
	g.Set(1893456000.25)
	tiny := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_tiny", Help: "Extremes."})
	tiny.Set(math.SmallestNonzeroFloat64)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t_duration_seconds", Help: "Durations.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 4)})
	for _, v := range []float64{0.0005, 0.003, 0.003, 1} {
		h.Observe(v)
	}
	reg.MustRegister(c, g, tiny, h)
	return reg
}

// get requests path with the given header fields.
func get(t *testing.T, method, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// The transport would undo gzip itself if it asked for it; asked
	// explicitly here, the body stays compressed.
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// What the endpoint serves, as a scraper reads it: the families and
// values set, in the text format by default, OpenMetrics when asked, never
// compressed (server.go says why), parsed back by Prometheus' own parser
// (expfmt).
func TestServesMetrics(t *testing.T) {
	addr := serve(t, testRegistry(), "")
	url := "http://" + addr + "/metrics"
	for _, tc := range []struct {
		name   string
		header []string
		ctype  string
		gzip   bool
	}{
		{"text", nil, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", false},
		{"text, gzip accepted", []string{"Accept-Encoding", "gzip"}, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", false},
		{"openmetrics", []string{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"}, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, "GET", url, tc.header...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s: %s", resp.Status, body)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzip {
				t.Errorf("gzip %v, want %v", got, tc.gzip)
			}
			if strings.HasPrefix(tc.ctype, "application/openmetrics-text") {
				// expfmt has no OpenMetrics parser: the lines that
				// differ from the text format, and the end.
				for _, want := range []string{
					"# TYPE t_events counter\n",
					`t_events_total{kind="nft_chain"} 7.0` + "\n",
					"t_deadline_timestamp_seconds 1.89345600025e+09\n",
					`t_duration_seconds_bucket{le="+Inf"} 4` + "\n",
				} {
					if !strings.Contains(body, want) {
						t.Errorf("OpenMetrics page lacks %q:\n%s", want, body)
					}
				}
				if !strings.HasSuffix(body, "# EOF\n") {
					t.Errorf("OpenMetrics page without # EOF:\n%s", body)
				}
				return
			}
			dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.Format(resp.Header.Get("Content-Type")))
			fams := map[string]*dto.MetricFamily{}
			for {
				var mf dto.MetricFamily
				err := dec.Decode(&mf)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("decode: %v\n%s", err, body)
				}
				fams[mf.GetName()] = &mf
			}
			checkFamilies(t, fams, body)
		})
	}
}

// checkFamilies compares what a page parsed into with testRegistry.
func checkFamilies(t *testing.T, fams map[string]*dto.MetricFamily, page string) {
	t.Helper()
	value := func(name string, labels ...string) float64 {
		t.Helper()
		mf := fams[name]
		if mf == nil {
			t.Fatalf("no family %s in\n%s", name, page)
		}
	next:
		for _, m := range mf.GetMetric() {
			for i, l := range m.GetLabel() {
				if 2*i+1 >= len(labels) || l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
					continue next
				}
			}
			if len(m.GetLabel()) != len(labels)/2 {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no series %s%v in\n%s", name, labels, page)
		return 0
	}
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{value("t_events_total", "kind", "nft_chain"), 7, "counter"},
		{value("t_events_total", "kind", "quote\" back\\slash\nline é"), 1, "counter with escaped label"},
		{value("t_deadline_timestamp_seconds"), 1893456000.25, "timestamp"},
		{value("t_tiny"), math.SmallestNonzeroFloat64, "smallest float"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	h := fams["t_duration_seconds"]
	if h == nil || len(h.GetMetric()) != 1 || h.GetMetric()[0].GetHistogram() == nil {
		t.Fatalf("histogram: %v", h)
	}
	hist := h.GetMetric()[0].GetHistogram()
	var cum []uint64
	for _, b := range hist.GetBucket() {
		cum = append(cum, b.GetCumulativeCount())
	}
	if fmt.Sprint(cum) != "[1 1 3 3 4]" || hist.GetSampleCount() != 4 || hist.GetSampleSum() != 1.0065 {
		t.Errorf("histogram buckets %v, count %d, sum %v; want [1 1 3 3 4], 4, 1.0065", cum, hist.GetSampleCount(), hist.GetSampleSum())
	}
	if fams["netreconcile_metrics_connections"] == nil || fams["promhttp_metric_handler_requests_total"] == nil {
		t.Errorf("the server's own metrics are missing:\n%s", page)
	}
}

// What else the endpoint answers: HEAD without a body, 404 elsewhere, 405
// for other methods, 431 for a head over MaxHeaderBytes, and a request that
// sends a body gets its answer and the connection closed.
func TestRequests(t *testing.T) {
	addr := serve(t, testRegistry(), "")
	for _, tc := range []struct {
		raw, status string
		close       bool
	}{
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK", false},
		{"GET /metrics?name[]=t_tiny HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK", false},
		{"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK", false},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", false},
		{"GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", false},
		// Where linked libraries (expvar, x/net/trace) register pages on
		// http.DefaultServeMux, which is never served.
		{"GET /debug/vars HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", false},
		{"GET /debug/requests HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", false},
		{"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed", false},
		{"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 405 Method Not Allowed", true},
		// A body announced and never sent: answered at once, not waited for.
		{"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "HTTP/1.1 200 OK", true},
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("a", 100)+"\r\n", 150) + "\r\n", "HTTP/1.1 431 Request Header Fields Too Large", true},
		{"\x00\x01\x02\r\n\r\n", "HTTP/1.1 400 Bad Request", true},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetDeadline(start.Add(5 * time.Second))
		if _, err := io.WriteString(c, tc.raw); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(tc.raw + " x")[0]})
		if err != nil {
			t.Fatalf("%.50q: %v", tc.raw, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status := resp.Proto + " " + resp.Status
		if status != tc.status {
			t.Errorf("%.50q: %s, want %s (%s)", tc.raw, status, tc.status, body)
		}
		if strings.HasPrefix(tc.raw, "HEAD") && len(body) != 0 {
			t.Errorf("HEAD answered with a body of %d bytes", len(body))
		}
		if strings.Contains(tc.status, "405") && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%.50q: Allow %q", tc.raw, resp.Header.Get("Allow"))
		}
		// Closed or kept: a closed connection reads EOF at once.
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = br.ReadByte()
		closed := errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
		if closed != tc.close {
			t.Errorf("%.50q: connection closed %v (%v), want %v", tc.raw, closed, err, tc.close)
		}
		// Answered, not left to a timeout: before the server's own read
		// timeout could have ended the exchange.
		if took := time.Since(start); took >= ReadTimeout {
			t.Errorf("%.50q: answered in %v, the server's read timeout", tc.raw, took)
		}
		c.Close()
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// A collector that fails makes the scrape a 500 with the reason, never a
// page with a family missing unnoticed.
func TestCollectorErrorIs500(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(failing{})
	resp, body := get(t, "GET", "http://"+serve(t, reg, "")+"/metrics")
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "no such file") {
		t.Errorf("%s: %s", resp.Status, body)
	}
}

type failing struct{}

var failingDesc = prometheus.NewDesc("t_failing", "Fails.", nil, nil)

func (failing) Describe(ch chan<- *prometheus.Desc) { ch <- failingDesc }
func (failing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(failingDesc, errors.New("read state: no such file"))
}

// A wrong address fails Listen, not later.
func TestListenErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := Listen(Options{Addr: "256.0.0.1:1", Log: slog.New(slog.DiscardHandler)}, reg, reg); err == nil {
		t.Error("Listen on 256.0.0.1: no error")
	}
}
