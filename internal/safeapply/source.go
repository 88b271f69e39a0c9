package safeapply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Source is the daemon's hold on the namespace's transactions, a
// daemon.Source. It reads transaction.json when it starts, whenever the
// state directory changes (a command line recorded or extended a
// transaction), after a lost notification and on every resync, and keeps a
// timer at the pending transaction's deadline. Nothing is handed to it but
// the file: a notification it misses only delays its reading to the next
// resync, and the deadline is in the file, so a daemon killed and started
// again during the window rolls back at the same deadline.
type Source struct {
	Dir *statedir.Dir
	// Open takes the namespace's lock and opens a Host for a rollback;
	// the returned function releases both.
	Open   func(ctx context.Context) (*Host, func(), error)
	Resync time.Duration
	Log    *slog.Logger
	Getenv func(string) string

	mu      sync.Mutex
	pending *Txn
}

// Name is the source's name in the daemon's logs.
func (s *Source) Name() string { return "safe-apply transactions" }

// Run watches until ctx is done.
func (s *Source) Run(ctx context.Context, wake func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", s.Dir.Path(), err)
	}
	defer w.Close()
	if err := w.Add(s.Dir.Path()); err != nil {
		return fmt.Errorf("watch %s: %w", s.Dir.Path(), err)
	}
	resync := s.Resync
	if resync <= 0 {
		resync = 5 * time.Minute
	}
	tick := time.NewTicker(resync)
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.check(ctx, wake)
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
		}
		for again := false; !again; {
			select {
			case <-ctx.Done():
				return nil
			case ev, ok := <-w.Events:
				if !ok {
					return errors.New("state directory watch closed")
				}
				again = filepath.Base(ev.Name) == FileName
			case err, ok := <-w.Errors:
				if !ok {
					return errors.New("state directory watch closed")
				}
				// An overflow lost events: read the file again.
				s.Log.Warn("watching the state directory", "error", err)
				again = true
			case <-tick.C:
				again = true
			case <-timer.C:
				again = true
			}
		}
	}
}

// check reads the file and rolls back what is due; it returns the pending
// transaction's deadline (zero when none).
func (s *Source) check(ctx context.Context, wake func()) time.Time {
	f, err := Load(s.Dir)
	if err != nil {
		s.Log.Error("read the safe-apply transaction; retried at the next change or resync", "error", err)
		return time.Time{}
	}
	s.setPending(f.Pending, wake)
	t := f.Pending
	if t == nil {
		return time.Time{}
	}
	probe := &Host{Getenv: s.Getenv}
	if probe.stale(t) == "" {
		return t.Deadline
	}
	h, closeFn, err := s.Open(ctx)
	if err != nil {
		s.Log.Error("roll back the safe-apply transaction: retried in a second", "id", t.ID, "error", err)
		return time.Now().Add(time.Second)
	}
	rolled, next, err := h.Due(ctx)
	closeFn()
	if err != nil {
		s.Log.Error("roll back the safe-apply transaction", "id", t.ID, "error", err)
	}
	if rolled != nil {
		LogRollback(s.Log, rolled)
		wake()
	}
	if f, err := Load(s.Dir); err == nil {
		s.setPending(f.Pending, wake)
	}
	return next
}

// LogRollback logs a rollback's outcome.
func LogRollback(log *slog.Logger, r *RollbackResult) {
	attrs := []any{"id", r.Txn.ID, "cause", string(r.Txn.Cause), "files", len(r.Files)}
	if r.Outcome != nil {
		attrs = append(attrs, "operations", len(r.Outcome.Done))
	}
	if r.Err != nil {
		log.Error("safe-apply transaction rolled back, incompletely", append(attrs, "error", r.Err)...)
		return
	}
	log.Warn("safe-apply transaction rolled back", attrs...)
}

func (s *Source) setPending(t *Txn, wake func()) {
	s.mu.Lock()
	changed := (t == nil) != (s.pending == nil) || t != nil && (t.ID != s.pending.ID || !t.Deadline.Equal(s.pending.Deadline) || t.RollingBack != s.pending.RollingBack)
	s.pending = t
	s.mu.Unlock()
	if changed {
		// A pass refreshes STATUS=, which shows the transaction.
		wake()
	}
}

// Status is the daemon's STATUS= part for a pending transaction ("" when
// none).
func (s *Source) Status(now time.Time) string {
	s.mu.Lock()
	t := s.pending
	s.mu.Unlock()
	if t == nil {
		return ""
	}
	if t.RollingBack != "" {
		return fmt.Sprintf("transaction %s rolling back (%s): no longer confirmable", t.ID, t.RollingBack)
	}
	return fmt.Sprintf("transaction %s pending: rolls back at %s (in %s) unless confirmed",
		t.ID, t.Deadline.UTC().Format("15:04:05 UTC"), max(t.Deadline.Sub(now), 0).Round(time.Second))
}
