package ipam

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive flock on path, waiting until ctx is done. The lock belongs to the open
// file, so it also excludes other goroutines of this process, and the kernel drops it when the
// holder dies, even by SIGKILL. The returned function releases it.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	fd := int(f.Fd())
	release := func() { f.Close() }
	err = flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if ctx.Done() == nil {
		if err := flock(fd, unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return release, nil
	}
	// flock(2) cannot be interrupted on demand: wait in a goroutine, and if ctx ends first,
	// leave it to close the file (dropping the lock) once it gets the lock.
	done := make(chan error, 1)
	go func() { done <- flock(fd, unix.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return release, nil
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return nil, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
	}
}

// flock retries on EINTR: the Go runtime's preemption signals interrupt a blocked flock.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}
