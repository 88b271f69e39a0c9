package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the daemon's Prometheus metrics. Registry is where other parts
// add theirs (IPAM pool usage, WireGuard peer states): register a
// prometheus.Collector on it, typically one whose Collect reads the part's
// own state, so that nothing has to be pushed from the loop.
type Metrics struct {
	Registry *prometheus.Registry

	duration    prometheus.Histogram
	passes      *prometheus.CounterVec
	changes     *prometheus.CounterVec
	drift       prometheus.Counter
	errors      *prometheus.CounterVec
	lastSuccess prometheus.Gauge
	objects     prometheus.Gauge
	configOK    prometheus.Gauge
	wakeups     prometheus.Counter
	parts       *partsCollector
	// serving is set once Serve listens: the pool gauges cost a registry
	// read per pass, done only when someone can scrape them.
	serving bool
}

// partsCollector exports the latest snapshot of WireGuard peer states and
// IPAM pool usage. A snapshot is replaced whole, so a scrape never sees a
// half-updated set (resetting a GaugeVec and filling it again would).
type partsCollector struct {
	peersDesc, poolDesc *prometheus.Desc

	mu    sync.Mutex
	peers map[[2]string]float64 // link, state
	pools map[[2]string]float64 // pool, measure
}

func (c *partsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.peersDesc
	ch <- c.poolDesc
}

func (c *partsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.peers {
		ch <- prometheus.MustNewConstMetric(c.peersDesc, prometheus.GaugeValue, v, k[0], k[1])
	}
	for k, v := range c.pools {
		ch <- prometheus.MustNewConstMetric(c.poolDesc, prometheus.GaugeValue, v, k[0], k[1])
	}
}

func (c *partsCollector) set(peers, pools map[[2]string]float64) {
	c.mu.Lock()
	c.peers, c.pools = peers, pools
	c.mu.Unlock()
}

// NewMetrics creates the metrics on a registry of their own, with the Go
// runtime and process collectors.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "netreconcile_reconcile_duration_seconds",
			Help: "Duration of a reconcile pass: load configuration, read the kernel, diff, apply.",
			// 1 ms to about 8 s: a pass over a few objects takes a few
			// milliseconds, one over 100k routes a few seconds.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netreconcile_reconciles_total",
			Help: "Reconcile passes by result: converged, failed (some operation failed or was held back), conflict, error (the kernel could not be read).",
		}, []string{"result"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netreconcile_changes_total",
			Help: "Kernel changes applied, by object kind and action.",
		}, []string{"kind", "action"}),
		drift: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "netreconcile_drift_repaired_total",
			Help: "Changes applied while the configuration was unchanged since the last converged pass: repairs of changes made behind netreconcile's back.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netreconcile_errors_total",
			Help: "Errors by stage: config (invalid configuration), read (kernel read), apply (failed operation), conflict.",
		}, []string{"stage"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "netreconcile_last_success_timestamp_seconds",
			Help: "Unix time of the end of the last pass that left the kernel equal to the configuration.",
		}),
		objects: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "netreconcile_objects",
			Help: "Objects the enforced configuration declares.",
		}),
		configOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "netreconcile_config_valid",
			Help: "1 when the configuration on disk is valid and enforced, 0 when the last good one is enforced instead.",
		}),
		wakeups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "netreconcile_wakeups_total",
			Help: "Wake-ups received from every source, before coalescing.",
		}),
		parts: &partsCollector{
			peersDesc: prometheus.NewDesc("netreconcile_wireguard_peers",
				"Declared WireGuard peers by link and state (up, unknown, down), as the endpoint rotation judged them in the last pass.", []string{"link", "state"}, nil),
			poolDesc: prometheus.NewDesc("netreconcile_ipam_pool",
				"IPAM pool usage: blocks_held, blocks_allowed, addresses (in held blocks), allocated, cooling (released, waiting the reuse delay).", []string{"pool", "measure"}, nil),
		},
	}
	// Every series exists from the start, at 0, so that rate() and alerts
	// on "errors > 0" work before the first error.
	for _, r := range []string{"converged", "failed", "conflict", "error"} {
		m.passes.WithLabelValues(r)
	}
	for _, s := range []string{"config", "read", "apply", "conflict"} {
		m.errors.WithLabelValues(s)
	}
	r.MustRegister(m.duration, m.passes, m.changes, m.drift, m.errors, m.lastSuccess, m.objects, m.configOK, m.wakeups, m.parts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Serve listens on addr and serves /metrics until ctx is done. The listener
// is opened before Serve returns, so a bad address fails the start.
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	m.serving = true
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: metricsReadHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       metricsIdleTimeout,
	}
	ln = newLimitListener(ln, maxMetricsConns)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("serving metrics", "address", ln.Addr().String())
	return nil
}

// refreshParts refreshes the WireGuard peer and IPAM pool gauges after a
// pass.
//
// The peer gauge is the rotation's judgment of each declared peer in the
// pass that just ended, made from the kernel state that pass read (with the
// endpoints it wrote judged again): no second dump of the links. It is as
// fresh as the last pass: passes run on every wake-up, at least every
// rotation interval (30 s by default) while a peer has endpoint candidates,
// and at least every resync interval (5 min) otherwise. The pool gauge reads
// the registry, which other processes (ipam allocate) also change.
func (d *Daemon) refreshParts(ctx context.Context, st *model.State) {
	peers := map[[2]string]float64{}
	for _, p := range d.eng.peerStates() {
		peers[[2]string{p.Link, p.State.String()}]++
	}
	pools := map[[2]string]float64{}
	usage, err := d.eng.poolUsage(ctx, st)
	if err != nil {
		d.log.Warn("read IPAM pools for metrics", "error", err)
	}
	for _, u := range usage {
		for measure, v := range map[string]float64{"blocks_held": float64(u.BlocksHeld), "blocks_allowed": float64(u.BlocksAllowed), "addresses": float64(u.Addresses), "allocated": float64(u.Allocated), "cooling": float64(u.Cooling)} {
			pools[[2]string{u.Pool, measure}] = v
		}
	}
	d.m.parts.set(peers, pools)
}
