package safeapply

import (
	"encoding/json"
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Collector exports the namespace's transactions from transaction.json at
// each scrape: the counts are kept in the file, so they count the
// transactions every actor ended (a confirm from a shell, a timer's
// rollback), and survive the daemon's restarts.
//
// The file holds copies of the configuration (650 KB with 10k routes), and
// decoded whole it cost the daemon 1.9 MB of heap per scrape: the
// collector decodes the counts and the pending deadline only, and only
// when the file changed (statedir.FileStamp).
type Collector struct {
	dir *statedir.Dir

	mu    sync.Mutex
	stamp statedir.FileStamp
	last  *txnSummary // nil: not read, or unreadable
}

var (
	confirmedDesc = prometheus.NewDesc("netreconcile_safeapply_confirmed_total",
		"Safe-apply transactions confirmed.", nil, nil)
	rolledBackDesc = prometheus.NewDesc("netreconcile_safeapply_rolled_back_total",
		"Safe-apply transactions rolled back, by cause: timeout, manual, probe, verify, apply, reboot.", []string{"cause"}, nil)
	pendingDesc = prometheus.NewDesc("netreconcile_safeapply_pending",
		"1 while a safe-apply transaction waits for its confirmation.", nil, nil)
	// A deadline, not a countdown: a timestamp stays right between
	// scrapes, and `deadline - time()` is the countdown.
	deadlineDesc = prometheus.NewDesc("netreconcile_safeapply_deadline_timestamp_seconds",
		"Unix time at which the pending safe-apply transaction rolls back unless confirmed; no series while none is pending.", nil, nil)
)

// txnSummary is what the metrics show of transaction.json.
type txnSummary struct {
	Version int    `json:"version"`
	Counts  Counts `json:"counts"`
	Pending *struct {
		Deadline time.Time `json:"deadline"`
	} `json:"pending"`
}

// NewCollector reads dir's transaction file.
func NewCollector(dir *statedir.Dir) *Collector {
	return &Collector{dir: dir}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{confirmedDesc, rolledBackDesc, pendingDesc, deadlineDesc} {
		ch <- d
	}
}

// Collect reads the file when it changed; an unreadable one gives no
// metrics (the daemon logs the error where it reads the file for its
// timer).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	f := c.summary()
	if f == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(confirmedDesc, prometheus.CounterValue, float64(f.Counts.Confirmed))
	for _, cause := range Causes {
		ch <- prometheus.MustNewConstMetric(rolledBackDesc, prometheus.CounterValue, float64(f.Counts.RolledBack[cause]), string(cause))
	}
	pending := 0.0
	if f.Pending != nil {
		pending = 1
		d := f.Pending.Deadline
		ch <- prometheus.MustNewConstMetric(deadlineDesc, prometheus.GaugeValue, float64(d.Unix())+float64(d.Nanosecond())/1e9)
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, pending)
}

// summary is the file's summary, read again when its stamp changed.
func (c *Collector) summary() *txnSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == nil {
		return &txnSummary{}
	}
	stamp, err := c.dir.Stamp(FileName)
	if err != nil {
		c.stamp, c.last = statedir.FileStamp{}, nil
		return nil
	}
	if c.last != nil && stamp == c.stamp {
		return c.last
	}
	c.stamp, c.last = stamp, nil
	data, err := c.dir.ReadFile(FileName, maxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		c.last = &txnSummary{}
		return c.last
	}
	var f txnSummary
	if err != nil || json.Unmarshal(data, &f) != nil || f.Version != formatVersion {
		return nil
	}
	c.last = &f
	return c.last
}
