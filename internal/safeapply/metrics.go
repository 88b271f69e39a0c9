package safeapply

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Collector exports the namespace's transactions from transaction.json at
// each scrape: the counts are kept in the file, so they count the
// transactions every actor ended (a confirm from a shell, a timer's
// rollback), and survive the daemon's restarts.
type Collector struct {
	dir                                  *statedir.Dir
	confirmed, rolledBack, pending, left *prometheus.Desc
}

// NewCollector reads dir's transaction file.
func NewCollector(dir *statedir.Dir) *Collector {
	return &Collector{
		dir:        dir,
		confirmed:  prometheus.NewDesc("netreconcile_safeapply_confirmed_total", "Safe-apply transactions confirmed.", nil, nil),
		rolledBack: prometheus.NewDesc("netreconcile_safeapply_rolled_back_total", "Safe-apply transactions rolled back, by cause: timeout, manual, probe, verify, apply, reboot.", []string{"cause"}, nil),
		pending:    prometheus.NewDesc("netreconcile_safeapply_pending", "1 while a safe-apply transaction waits for its confirmation.", nil, nil),
		left:       prometheus.NewDesc("netreconcile_safeapply_seconds_left", "Seconds until the pending transaction rolls back (0 when none is pending).", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.confirmed
	ch <- c.rolledBack
	ch <- c.pending
	ch <- c.left
}

// Collect reads the file; an unreadable one gives no metrics (the daemon
// logs the error where it reads the file for its timer).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	f, err := Load(c.dir)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.confirmed, prometheus.CounterValue, float64(f.Counts.Confirmed))
	for _, cause := range Causes {
		ch <- prometheus.MustNewConstMetric(c.rolledBack, prometheus.CounterValue, float64(f.Counts.RolledBack[cause]), string(cause))
	}
	pending, left := 0.0, 0.0
	if f.Pending != nil {
		pending, left = 1, max(time.Until(f.Pending.Deadline).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, pending)
	ch <- prometheus.MustNewConstMetric(c.left, prometheus.GaugeValue, left)
}
