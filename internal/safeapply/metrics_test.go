package safeapply

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// page is reg's metrics in the text format.
func page(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func scrapeSafeApply(t *testing.T, dir *statedir.Dir) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(dir))
	var lines []string
	for _, l := range strings.Split(page(t, reg), "\n") {
		if strings.HasPrefix(l, "netreconcile_") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// The collector reads the counts and the pending transaction from the
// file at each scrape; every series exists without a file, at 0, but the
// deadline, which exists while a transaction is pending; an unreadable
// file gives none.
func TestCollector(t *testing.T) {
	_, dir := metricsStateDir(t)

	zero := `netreconcile_safeapply_confirmed_total 0
netreconcile_safeapply_pending 0
netreconcile_safeapply_rolled_back_total{cause="apply"} 0
netreconcile_safeapply_rolled_back_total{cause="manual"} 0
netreconcile_safeapply_rolled_back_total{cause="probe"} 0
netreconcile_safeapply_rolled_back_total{cause="reboot"} 0
netreconcile_safeapply_rolled_back_total{cause="timeout"} 0
netreconcile_safeapply_rolled_back_total{cause="verify"} 0`
	if got := scrapeSafeApply(t, dir); got != zero {
		t.Errorf("no file:\n%s\nwant\n%s", got, zero)
	}

	deadline := time.Unix(1893456000, 250e6) // 2030-01-01 00:00:00.25 UTC
	f := &File{
		Pending: &Txn{ID: "t1", Deadline: deadline},
		Counts:  Counts{Confirmed: 3, RolledBack: map[Cause]uint64{CauseTimeout: 2, CauseProbe: 1}},
	}
	if err := f.Save(dir); err != nil {
		t.Fatal(err)
	}
	got := scrapeSafeApply(t, dir)
	want := `netreconcile_safeapply_confirmed_total 3
netreconcile_safeapply_deadline_timestamp_seconds 1.89345600025e+09
netreconcile_safeapply_pending 1
netreconcile_safeapply_rolled_back_total{cause="apply"} 0
netreconcile_safeapply_rolled_back_total{cause="manual"} 0
netreconcile_safeapply_rolled_back_total{cause="probe"} 1
netreconcile_safeapply_rolled_back_total{cause="reboot"} 0
netreconcile_safeapply_rolled_back_total{cause="timeout"} 2
netreconcile_safeapply_rolled_back_total{cause="verify"} 0`
	if got != want {
		t.Errorf("with a pending transaction:\n%s\nwant\n%s", got, want)
	}

	if err := dir.WriteFile(FileName, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := scrapeSafeApply(t, dir); got != "" {
		t.Errorf("unreadable file: %q, want no series", got)
	}
}

// One collector across scrapes: the file is read again only when it
// changed, a rewrite that keeps size and time (two saves within a tick)
// included, and a scrape of an unchanged file does not decode the copies of
// the configuration it holds (a 1 MB one here; whole, each scrape decoded
// 1.9 MB with 10k routes).
func TestCollectorReadsTheFileWhenItChanged(t *testing.T) {
	tmp, dir := metricsStateDir(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(dir))
	confirmed := func() string {
		t.Helper()
		return regexp.MustCompile(`(?m)^netreconcile_safeapply_confirmed_total (\S+)$`).FindStringSubmatch(page(t, reg))[1]
	}
	big := &Snapshot{Files: []FileCopy{{Path: "/etc/netreconcile/netreconcile.yaml", Data: bytes.Repeat([]byte("# padding\n"), 100_000)}}}
	// Every save gets the first one's time: only the inode tells them
	// apart, as two saves within a tick of the coarse clock.
	same := time.Now().Add(-time.Hour)
	for i := 1; i <= 9; i++ {
		f := &File{Confirmed: big, Counts: Counts{Confirmed: uint64(i)}}
		if err := f.Save(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(tmp, "state", FileName), same, same); err != nil {
			t.Fatal(err)
		}
		if got := confirmed(); got != strconv.Itoa(i) {
			t.Fatalf("after save %d: confirmed_total %s", i, got)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		confirmed()
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("10 scrapes of an unchanged file allocated %d bytes", n)
	}
}

// metricsStateDir is a state directory "state" in a private temporary one,
// returned with it.
func metricsStateDir(t *testing.T) (string, *statedir.Dir) {
	t.Helper()
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := statedir.Open(filepath.Join(tmp, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return tmp, dir
}
