package safeapply

import (
	"time"

	"github.com/netreconcile/netreconcile/internal/metrics"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Collector exports the namespace's transactions from transaction.json at
// each scrape: the counts are kept in the file, so they count the
// transactions every actor ended (a confirm from a shell, a timer's
// rollback), and survive the daemon's restarts.
type Collector struct {
	dir                                  *statedir.Dir
	confirmed, rolledBack, pending, left *metrics.Desc
}

// NewCollector reads dir's transaction file.
func NewCollector(dir *statedir.Dir) *Collector {
	return &Collector{
		dir:        dir,
		confirmed:  metrics.NewDesc(metrics.CounterType, "netreconcile_safeapply_confirmed_total", "Safe-apply transactions confirmed."),
		rolledBack: metrics.NewDesc(metrics.CounterType, "netreconcile_safeapply_rolled_back_total", "Safe-apply transactions rolled back, by cause: timeout, manual, probe, verify, apply, reboot.", "cause"),
		pending:    metrics.NewDesc(metrics.GaugeType, "netreconcile_safeapply_pending", "1 while a safe-apply transaction waits for its confirmation."),
		left:       metrics.NewDesc(metrics.GaugeType, "netreconcile_safeapply_seconds_left", "Seconds until the pending transaction rolls back (0 when none is pending)."),
	}
}

// Describe returns the descriptors.
func (c *Collector) Describe() []*metrics.Desc {
	return []*metrics.Desc{c.confirmed, c.rolledBack, c.pending, c.left}
}

// Collect reads the file; an unreadable one gives no metrics (the daemon
// logs the error where it reads the file for its timer).
func (c *Collector) Collect(e *metrics.Emitter) {
	f, err := Load(c.dir)
	if err != nil {
		return
	}
	e.Emit(c.confirmed, float64(f.Counts.Confirmed))
	for _, cause := range Causes {
		e.Emit(c.rolledBack, float64(f.Counts.RolledBack[cause]), string(cause))
	}
	pending, left := 0.0, 0.0
	if f.Pending != nil {
		pending, left = 1, max(time.Until(f.Pending.Deadline).Seconds(), 0)
	}
	e.Emit(c.pending, pending)
	e.Emit(c.left, left)
}
