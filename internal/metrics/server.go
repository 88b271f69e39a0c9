// Package metrics serves the daemon's Prometheus metrics: client_golang's
// promhttp on net/http, with the Prometheus exporter toolkit's web
// configuration file (TLS, basic auth) when one is given, as node_exporter's
// --web.config.file, behind limits that keep whoever can connect from
// blinding the scrapes or starving the reconcile loop of descriptors
// (limit.go).
package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// The server's limits (docs/security.md states them).
const (
	// MaxConns is how many connections the server holds before it
	// closes one to make room (limit.go); it holds twice that at most,
	// when all are in a request: 2*MaxConns+1 descriptors, far below any
	// RLIMIT_NOFILE, so that the loop's kernel reads always get theirs.
	// A Prometheus server keeps one connection per target; the rest is
	// room for other scrapers, a curl, and the churn of connections that
	// a local user opens to fill the cap.
	MaxConns = 64
	// ReadHeaderTimeout bounds a request's head (or a TLS handshake): a
	// scraper sends its head in one packet, a slowloris client dribbles
	// it. A connection still in its head is one limit.go may close.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds a whole request, body included (no request
	// needs one; a connection that sends one is closed after the answer).
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds the answer, a few hundred lines, even to a slow
	// reader.
	WriteTimeout = 30 * time.Second
	// IdleTimeout keeps a scraper's connection between two scrapes at
	// Prometheus' default interval of one minute, with room to spare.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's head: a scraper's is a few hundred
	// bytes, with a bearer token a few thousand.
	MaxHeaderBytes = 8 << 10
)

// Options configure a Server.
type Options struct {
	// Addr is the address to listen on, host:port.
	Addr string
	// WebConfig is the exporter toolkit's web configuration file, "" for
	// plain HTTP without authentication.
	WebConfig string
	Log       *slog.Logger
	// AfterScrape, when set, runs after each answer of /metrics, in a
	// goroutine of its own.
	AfterScrape func()
}

// Server serves a gatherer's metrics at /metrics.
type Server struct {
	srv       *http.Server
	ln        *limitListener
	webConfig string
	log       *slog.Logger
}

// Listen opens o.Addr and readies the server: g's metrics at /metrics, in
// the text format or OpenMetrics as the scraper asks. The web configuration file is checked here, so that a bad
// address or file fails the daemon's start, and read again at each
// connection and request, so that certificates and users change without
// a restart. The server's own metrics (connections held and dropped,
// promhttp's request counts) are registered on reg.
func Listen(o Options, g prometheus.Gatherer, reg prometheus.Registerer) (*Server, error) {
	if err := web.Validate(o.WebConfig); err != nil {
		return nil, fmt.Errorf("metrics web configuration %s: %w", o.WebConfig, err)
	}
	log := o.Log
	l, err := listen(o.Addr, ReadHeaderTimeout)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	ln := newLimitListener(l, MaxConns)
	reg.MustRegister(&limitCollector{ln})
	s := &Server{ln: ln, webConfig: o.WebConfig, log: log}
	s.srv = &http.Server{
		Handler:           handler(g, reg, log, o.AfterScrape),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnState:         ln.connState,
		// Handshake failures and the like: one line per connection,
		// which whoever can connect could make a flood of.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Close, then returns nil.
func (s *Server) Serve() error {
	addrs := []string{s.ln.Addr().String()}
	err := web.Serve(s.ln, s.srv, &web.FlagConfig{WebListenAddresses: &addrs, WebConfigFile: &s.webConfig}, s.log)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close closes the listener and every connection.
func (s *Server) Close() error { return s.srv.Close() }

// handler answers GET and HEAD of /metrics.
func handler(g prometheus.Gatherer, reg prometheus.Registerer, log *slog.Logger, after func()) http.Handler {
	page := promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:          promLogger{log},
		EnableOpenMetrics: true,
		// The page is about 11 KB. gzip would make it 3 KB, and keep a
		// compressor of 700 KB alive between scrapes (promhttp pools
		// them): more memory than the daemon's whole heap grows by
		// with 10k routes, for 8 KB saved per scrape.
		DisableCompression: true,
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			// A request with a body (none needs one) is answered and
			// its connection closed, the body left unread: net/http
			// would read up to 256 KiB of it after the answer, for as
			// long as ReadTimeout lets the client make that last, and
			// the connection, in a request meanwhile, is not one
			// limit.go may close.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
		switch {
		case r.URL.Path != "/metrics":
			http.Error(w, "not found: the metrics are at /metrics", http.StatusNotFound)
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		default:
			page.ServeHTTP(w, r)
			if after != nil {
				go after()
			}
		}
	})
}

// promLogger logs promhttp's errors (a collector's failure: the scrape is
// answered 500).
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) { l.log.Error("serve metrics", "error", fmt.Sprint(v...)) }

// limitCollector exports the listener's counts.
type limitCollector struct{ l *limitListener }

var (
	connsDesc = prometheus.NewDesc("netreconcile_metrics_connections",
		"Connections the metrics server holds.", nil, nil)
	droppedDesc = prometheus.NewDesc("netreconcile_metrics_connections_dropped_total",
		"Connections the metrics server closed over its cap, by reason: evicted (held without a request in progress, closed to make room for a new one) or refused (a new one, at twice the cap, every held one in a request).",
		[]string{"reason"}, nil)
)

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- connsDesc
	ch <- droppedDesc
}

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	held, evicted, refused := c.l.stats()
	ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(held))
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(evicted), "evicted")
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(refused), "refused")
}
