package daemon

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/buildinfo"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/metrics"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Metrics are the daemon's Prometheus metrics. Registry is where other parts
// add theirs (the safe-apply transactions): register a prometheus.Collector
// on it, typically one whose Collect reads the part's own state, so that
// nothing has to be pushed from the loop.
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
	routeReads  *prometheus.CounterVec
	held        *prometheus.GaugeVec
	parts       *partsCollector
	scrapes     scrapeRelease
	// serving is set once Serve listens: the pool gauges cost a registry
	// read per pass, done only when someone can scrape them.
	serving bool
}

// partsCollector exports the latest snapshot of WireGuard peer states and
// IPAM pool usage. A snapshot is replaced whole, so a scrape never sees a
// half-updated set.
type partsCollector struct {
	mu    sync.Mutex
	peers map[[2]string]float64 // link, state
	pools []ipam.Usage
}

var (
	peersDesc = prometheus.NewDesc("netreconcile_wireguard_peers",
		"Declared WireGuard peers by link and state (up, unknown, down), as the endpoint rotation judged them in the last pass.",
		[]string{"link", "state"}, nil)
	// One family per unit and meaning, so that sum() over any of them
	// means something.
	poolBlocksDesc = prometheus.NewDesc("netreconcile_ipam_pool_blocks",
		"Blocks the IPAM pool holds for this host.", []string{"pool"}, nil)
	poolBlocksLimitDesc = prometheus.NewDesc("netreconcile_ipam_pool_blocks_limit",
		"Blocks the IPAM pool may hold for this host.", []string{"pool"}, nil)
	poolAddressesDesc = prometheus.NewDesc("netreconcile_ipam_pool_addresses",
		"Addresses in the blocks the IPAM pool holds (a dual-stack pair counts once).", []string{"pool"}, nil)
	poolAllocatedDesc = prometheus.NewDesc("netreconcile_ipam_pool_addresses_allocated",
		"Addresses of the IPAM pool handed out.", []string{"pool"}, nil)
	poolCoolingDesc = prometheus.NewDesc("netreconcile_ipam_pool_addresses_cooling",
		"Addresses of the IPAM pool released and waiting out the reuse delay.", []string{"pool"}, nil)
)

func (c *partsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{peersDesc, poolBlocksDesc, poolBlocksLimitDesc, poolAddressesDesc, poolAllocatedDesc, poolCoolingDesc} {
		ch <- d
	}
}

func (c *partsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.peers {
		ch <- prometheus.MustNewConstMetric(peersDesc, prometheus.GaugeValue, v, k[0], k[1])
	}
	for _, u := range c.pools {
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{poolBlocksDesc, float64(u.BlocksHeld)},
			{poolBlocksLimitDesc, float64(u.BlocksAllowed)},
			{poolAddressesDesc, float64(u.Addresses)},
			{poolAllocatedDesc, float64(u.Allocated)},
			{poolCoolingDesc, float64(u.Cooling)},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v, u.Pool)
		}
	}
}

func (c *partsCollector) set(peers map[[2]string]float64, pools []ipam.Usage) {
	c.mu.Lock()
	c.peers, c.pools = peers, pools
	c.mu.Unlock()
}

// NewMetrics creates the metrics on a registry of their own, with the build
// information and client_golang's Go runtime and process collectors.
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
			Help: "Reconcile passes by result: converged, failed (some operation failed or was held back for a retry), conflict, held (changes held above max-disruption, nothing failed), error (the kernel could not be read).",
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
		routeReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netreconcile_route_reads_total",
			Help: "Passes that read the kernel, by what they read of the routes: every_table (the first pass, a configuration change, a link or address change, a lost notification, the full resync), some_tables (those notifications named), patched (none read: the tables the notifications of our routes named are the previous read's, patched with them), none (taken from the previous read: the notifications vouch for them).",
		}, []string{"tables"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "netreconcile_held_changes",
			Help: "Changes the last pass held back because they disrupt more than max-disruption allows, by their disruption (in_place, table_replaced, readded, link_flapped, link_recreated); they wait for an apply by hand.",
		}, []string{"disruption"}),
		parts: &partsCollector{},
	}
	// Every series exists from the start, at 0, so that rate() and alerts
	// on "errors > 0" work before the first error.
	for _, r := range []string{"converged", "failed", "conflict", "held", "error"} {
		m.passes.WithLabelValues(r)
	}
	for _, d := range diff.Disruptions() {
		m.held.WithLabelValues(d.Snake())
	}
	for _, s := range []string{"config", "read", "apply", "conflict"} {
		m.errors.WithLabelValues(s)
	}
	for _, t := range []string{"every_table", "some_tables", "patched", "none"} {
		m.routeReads.WithLabelValues(t)
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "netreconcile_build_info",
		Help: "1, with the version and commit the binary was built from and the Go version that built it.",
		ConstLabels: prometheus.Labels{
			"version":   buildinfo.Version(),
			"revision":  buildinfo.Commit(),
			"goversion": buildinfo.GoVersion(),
		},
	})
	buildInfo.Set(1)
	r.MustRegister(m.duration, m.passes, m.changes, m.drift, m.errors, m.lastSuccess, m.objects, m.configOK, m.wakeups, m.routeReads, m.held, m.parts,
		buildInfo, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// countRouteRead counts a pass that asked for f of the kernel, and whose
// read took read of the routes (a table whose notifications could not be
// followed is read: some_tables).
func (m *Metrics) countRouteRead(f actual.Fresh, read actual.RoutesRead) {
	switch {
	case f.ReadsEveryTable():
		m.routeReads.WithLabelValues("every_table").Inc()
	case f.Kinds&actual.Routes != 0 || len(read.Tables) > 0:
		m.routeReads.WithLabelValues("some_tables").Inc()
	case len(read.Patched) > 0:
		m.routeReads.WithLabelValues("patched").Inc()
	default:
		m.routeReads.WithLabelValues("none").Inc()
	}
}

// setHeld sets the held-changes gauge: counts by disruption, every level
// given.
func (m *Metrics) setHeld(counts map[string]float64) {
	for d, n := range counts {
		m.held.WithLabelValues(d).Set(n)
	}
}

// Serve listens on addr and serves /metrics until ctx is done; webConfig is
// the exporter toolkit's web configuration file, "" for none. The listener
// is opened and the file checked before Serve returns, so that a bad
// address or file fails the start.
func (m *Metrics) Serve(ctx context.Context, addr, webConfig string, log *slog.Logger) error {
	srv, err := metrics.Listen(metrics.Options{Addr: addr, WebConfig: webConfig, Log: log, AfterScrape: m.scrapes.release}, m.Registry, m.Registry)
	if err != nil {
		return err
	}
	m.serving = true
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(); err != nil {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("serving metrics", "address", srv.Addr().String(), "web_config", webConfig)
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
	usage, err := d.eng.poolUsage(ctx, st)
	if err != nil {
		d.log.Warn("read IPAM pools for metrics", "error", err)
	}
	d.m.parts.set(peers, usage)
}
