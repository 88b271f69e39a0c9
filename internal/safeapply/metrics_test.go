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

	"github.com/netreconcile/netreconcile/internal/metrics"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

func scrapeSafeApply(t *testing.T, dir *statedir.Dir) string {
	t.Helper()
	reg := metrics.NewRegistry()
	reg.MustRegister(NewCollector(dir))
	b, err := reg.Page()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "netreconcile_") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// The collector reads the counts and the pending transaction from the
// file at each scrape; every series exists without a file, at 0; an
// unreadable file gives none.
func TestCollector(t *testing.T) {
	_, dir := metricsStateDir(t)

	zero := `netreconcile_safeapply_confirmed_total 0
netreconcile_safeapply_pending 0
netreconcile_safeapply_rolled_back_total{cause="apply"} 0
netreconcile_safeapply_rolled_back_total{cause="manual"} 0
netreconcile_safeapply_rolled_back_total{cause="probe"} 0
netreconcile_safeapply_rolled_back_total{cause="reboot"} 0
netreconcile_safeapply_rolled_back_total{cause="timeout"} 0
netreconcile_safeapply_rolled_back_total{cause="verify"} 0
netreconcile_safeapply_seconds_left 0`
	if got := scrapeSafeApply(t, dir); got != zero {
		t.Errorf("no file:\n%s\nwant\n%s", got, zero)
	}

	f := &File{
		Pending: &Txn{ID: "t1", Deadline: time.Now().Add(90 * time.Second)},
		Counts:  Counts{Confirmed: 3, RolledBack: map[Cause]uint64{CauseTimeout: 2, CauseProbe: 1}},
	}
	if err := f.Save(dir); err != nil {
		t.Fatal(err)
	}
	got := scrapeSafeApply(t, dir)
	left := regexp.MustCompile(`(?m)^netreconcile_safeapply_seconds_left (\S+)$`).FindStringSubmatch(got)
	if left == nil {
		t.Fatalf("no seconds_left:\n%s", got)
	}
	if s, err := strconv.ParseFloat(left[1], 64); err != nil || s <= 80 || s > 90 {
		t.Errorf("seconds_left %s, want about 90", left[1])
	}
	want := `netreconcile_safeapply_confirmed_total 3
netreconcile_safeapply_pending 1
netreconcile_safeapply_rolled_back_total{cause="apply"} 0
netreconcile_safeapply_rolled_back_total{cause="manual"} 0
netreconcile_safeapply_rolled_back_total{cause="probe"} 1
netreconcile_safeapply_rolled_back_total{cause="reboot"} 0
netreconcile_safeapply_rolled_back_total{cause="timeout"} 2
netreconcile_safeapply_rolled_back_total{cause="verify"} 0
` + left[0]
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
	reg := metrics.NewRegistry()
	reg.MustRegister(NewCollector(dir))
	confirmed := func() string {
		t.Helper()
		b, err := reg.Page()
		if err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`(?m)^netreconcile_safeapply_confirmed_total (\S+)$`).FindStringSubmatch(string(b))[1]
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
