package safeapply

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// TestArrangeBesideDaemonWithoutFallback: with a daemon holding the state
// directory and no fallback timer of its own possible, the daemon holds
// the deadline, a warning says why there is no fallback, and what the
// caller releases after recording the transaction is callable. A nil
// Release crashed root's second apply --confirm-within in the guest's
// systemd checks.
func TestArrangeBesideDaemonWithoutFallback(t *testing.T) {
	tmp := t.TempDir()
	dir, err := statedir.Open(filepath.Join(tmp, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := dir.Lock(context.Background(), DaemonLock, statedir.LockOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// A namespace handed as a descriptor makes the fallback a process
	// timer (never systemd), and a program that does not exist makes
	// starting it fail.
	ns, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	tm := &Timer{Mode: TimerAuto, Dir: dir, Program: filepath.Join(tmp, "missing"), Netns: ns}
	tx := &Txn{ID: "20261129T110814Z-b0f12e", Deadline: time.Now().Add(time.Minute)}
	a, err := tm.Arrange(tx)
	if err != nil {
		t.Fatalf("Arrange beside a daemon: %v", err)
	}
	if !strings.HasPrefix(a.Holder, "daemon:") || a.Fallback != "" {
		t.Errorf("holder %q, fallback %q: want the daemon and no fallback", a.Holder, a.Fallback)
	}
	if a.Warning == nil {
		t.Error("no warning that the fallback timer could not be started")
	}
	if a.Release == nil {
		t.Fatal("Release is nil: Begin calls it after recording the transaction")
	}
	a.Release()
}

// TestArrangeFallsBackToAProcessTimer: where systemd is the service manager
// but systemd-run fails (a user other than root without a system bus, as
// when root's command runs as the service's user), a process timer holds
// the deadline and a warning says why; asked for by name, the systemd
// timer's failure is the error.
func TestArrangeFallsBackToAProcessTimer(t *testing.T) {
	tmp := t.TempDir()
	dir, err := statedir.Open(filepath.Join(tmp, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	failing := filepath.Join(tmp, "systemd-run")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'Failed to connect to bus: No such file or directory' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	booted := func() bool { return true }
	// The timer's program exits at once: what is checked is who holds the
	// deadline, not the rollback.
	tx := &Txn{ID: "20261129T120000Z-0a1b2c", Deadline: time.Now().Add(time.Minute)}
	tm := &Timer{Mode: TimerAuto, Dir: dir, Program: "/bin/true", SystemdRun: failing, Booted: booted}
	a, err := tm.Arrange(tx)
	if err != nil {
		t.Fatalf("Arrange: %v", err)
	}
	a.Release()
	if !strings.HasPrefix(a.Holder, "process:") {
		t.Errorf("holder %q: want a process timer", a.Holder)
	}
	if a.Warning == nil || !strings.Contains(a.Warning.Error(), "Failed to connect to bus") || !strings.Contains(a.Warning.Error(), "process timer") {
		t.Errorf("warning %v: want systemd-run's failure and the process timer named", a.Warning)
	}
	tm.Mode = TimerSystemd
	if _, err := tm.Arrange(tx); err == nil || !strings.Contains(err.Error(), "Failed to connect to bus") {
		t.Errorf("--rollback-timer systemd with systemd-run failing: %v, want its error", err)
	}
}

// The daemon's STATUS= part says what is true of the pending transaction:
// its deadline while it may be confirmed; once its rollback began (the
// record says rolling_back), that it is rolling back and can no longer be
// confirmed. A change of that alone wakes a pass, which refreshes STATUS=.
func TestSourceStatusOfARollbackUnderWay(t *testing.T) {
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	t1 := &Txn{ID: "20261124T010000Z-abcdef", State: Pending, Deadline: now.Add(2 * time.Minute)}
	var s Source
	woken := 0
	s.setPending(t1, func() { woken++ })
	if got := s.Status(now); got != "transaction 20261124T010000Z-abcdef pending: rolls back at 01:02:00 UTC (in 2m0s) unless confirmed" {
		t.Errorf("pending: %q", got)
	}
	t2 := *t1
	t2.RollingBack = CauseTimeout
	s.setPending(&t2, func() { woken++ })
	if got := s.Status(now); got != "transaction 20261124T010000Z-abcdef rolling back (timeout): no longer confirmable" {
		t.Errorf("rolling back: %q", got)
	}
	if woken != 2 {
		t.Errorf("%d wakes for the transaction appearing and its rollback beginning, want 2", woken)
	}
}

// An extension with --rollback-timer daemon of a transaction whose process
// timer still waits keeps that timer named (as the fallback): the record
// named the daemon alone, so a confirm or rollback did not stop the process
// timer, which lived on until the deadline (an hour, for a window of one).
func TestTxWalkFinding123ExtensionByTheDaemonKeepsTheTimerNamed(t *testing.T) {
	tmp := t.TempDir()
	dir, err := statedir.Open(filepath.Join(tmp, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := dir.Lock(context.Background(), DaemonLock, statedir.LockOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	tx := &Txn{ID: "20261129T200408Z-52d3a2", Deadline: time.Now().Add(time.Hour)}
	// A process whose command line is a timer's for tx.
	timer := exec.Command("sh", "-c", "sleep 100; :", "rollback", "--due", tx.ID)
	if err := timer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = timer.Process.Kill(); _ = timer.Wait() })
	tx.Timer = "process:" + strconv.Itoa(timer.Process.Pid)
	for end := time.Now().Add(5 * time.Second); !processWaits(tx.Timer, tx.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the stand-in timer never showed its command line")
		}
	}
	a, err := (&Timer{Mode: TimerDaemon, Dir: dir}).Arrange(tx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Holder, "daemon:") || a.Fallback != tx.Timer {
		t.Fatalf("holder %q, fallback %q: want the daemon, and %s still named", a.Holder, a.Fallback, tx.Timer)
	}
	// Ended, the transaction's timers are stopped: this one too.
	tx.Timer, tx.Fallback = a.Holder, a.Fallback
	stopTimer(tx)
	done := make(chan error, 1)
	go func() { done <- timer.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the process timer outlives its transaction")
	}
}
