package safeapply

import (
	"context"
	"os"
	"path/filepath"
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
