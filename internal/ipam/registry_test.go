package ipam

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestLockWaitsForContext(t *testing.T) {
	dir := t.TempDir()
	r := openTest(t, dir, newFakeClock(), testPool("p", 5, 0, v4("10.0.0.0/24")))
	unlock, err := lock(context.Background(), filepath.Join(dir, "ipam", "p.lock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = r.Allocate(ctx, "p", "a", "")
	if !errors.Is(err, context.DeadlineExceeded) || !contains(err, "p.lock") {
		t.Errorf("Allocate while the lock is held: %v, want a deadline error naming the lock", err)
	}
	// The abandoned wait must drop the lock once it gets it, or this would hang.
	unlock()
	done := make(chan error, 1)
	go func() {
		_, err := r.Allocate(context.Background(), "p", "a", "")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Allocate still waits for the lock")
	}
}

func TestOpenCreatesStateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "netreconcile")
	r := openTest(t, dir, newFakeClock(), testPool("p", 5, 0, v4("10.0.0.0/24")))
	if _, err := r.Allocate(context.Background(), "p", "a", ""); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Path("p"), filepath.Join(dir, "ipam", "p.registry"); got != want {
		t.Errorf("Path = %s, want %s", got, want)
	}
}
