package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/netreconcile/netreconcile/internal/metrics"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Metrics are the daemon's Prometheus metrics. Registry is where other parts
// add theirs (IPAM pool usage, WireGuard peer states): register a
// metrics.Collector on it, typically one whose Collect reads the part's
// own state, so that nothing has to be pushed from the loop.
type Metrics struct {
	Registry *metrics.Registry

	duration    *metrics.Histogram
	passes      *metrics.CounterVec
	changes     *metrics.CounterVec
	drift       *metrics.Counter
	errors      *metrics.CounterVec
	lastSuccess *metrics.Gauge
	objects     *metrics.Gauge
	configOK    *metrics.Gauge
	wakeups     *metrics.Counter
	parts       *partsCollector
	// serving is set once Serve listens: the pool gauges cost a registry
	// read per pass, done only when someone can scrape them.
	serving bool
}

// partsCollector exports the latest snapshot of WireGuard peer states and
// IPAM pool usage. A snapshot is replaced whole, so a scrape never sees a
// half-updated set.
type partsCollector struct {
	peersDesc, poolDesc *metrics.Desc

	mu    sync.Mutex
	peers map[[2]string]float64 // link, state
	pools map[[2]string]float64 // pool, measure
}

func (c *partsCollector) Describe() []*metrics.Desc {
	return []*metrics.Desc{c.peersDesc, c.poolDesc}
}

func (c *partsCollector) Collect(e *metrics.Emitter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.peers {
		e.Emit(c.peersDesc, v, k[0], k[1])
	}
	for k, v := range c.pools {
		e.Emit(c.poolDesc, v, k[0], k[1])
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
	r := metrics.NewRegistry()
	m := &Metrics{
		Registry: r,
		duration: metrics.NewHistogram("netreconcile_reconcile_duration_seconds",
			"Duration of a reconcile pass: load configuration, read the kernel, diff, apply.",
			// 1 ms to about 8 s: a pass over a few objects takes a few
			// milliseconds, one over 100k routes a few seconds.
			metrics.ExponentialBuckets(0.001, 2, 14)),
		passes: metrics.NewCounterVec("netreconcile_reconciles_total",
			"Reconcile passes by result: converged, failed (some operation failed or was held back), conflict, error (the kernel could not be read).",
			"result"),
		changes: metrics.NewCounterVec("netreconcile_changes_total",
			"Kernel changes applied, by object kind and action.",
			"kind", "action"),
		drift: metrics.NewCounter("netreconcile_drift_repaired_total",
			"Changes applied while the configuration was unchanged since the last converged pass: repairs of changes made behind netreconcile's back."),
		errors: metrics.NewCounterVec("netreconcile_errors_total",
			"Errors by stage: config (invalid configuration), read (kernel read), apply (failed operation), conflict.",
			"stage"),
		lastSuccess: metrics.NewGauge("netreconcile_last_success_timestamp_seconds",
			"Unix time of the end of the last pass that left the kernel equal to the configuration."),
		objects: metrics.NewGauge("netreconcile_objects",
			"Objects the enforced configuration declares."),
		configOK: metrics.NewGauge("netreconcile_config_valid",
			"1 when the configuration on disk is valid and enforced, 0 when the last good one is enforced instead."),
		wakeups: metrics.NewCounter("netreconcile_wakeups_total",
			"Wake-ups received from every source, before coalescing."),
		parts: &partsCollector{
			peersDesc: metrics.NewDesc(metrics.GaugeType, "netreconcile_wireguard_peers",
				"Declared WireGuard peers by link and state (up, unknown, down), as the endpoint rotation judged them in the last pass.", "link", "state"),
			poolDesc: metrics.NewDesc(metrics.GaugeType, "netreconcile_ipam_pool",
				"IPAM pool usage: blocks_held, blocks_allowed, addresses (in held blocks), allocated, cooling (released, waiting the reuse delay).", "pool", "measure"),
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
		metrics.NewGoCollector(), metrics.NewProcessCollector())
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
	ln = newLimitListener(ln, maxMetricsConns)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		if err := m.Registry.Serve(ln, metrics.Timeouts{Head: metricsHeadTimeout, Write: metricsWriteTimeout}); err != nil {
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
