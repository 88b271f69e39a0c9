//go:build unix

package desired

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a final symlink
// and without waiting for a FIFO's writer.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// isSymlinkErr reports the error O_NOFOLLOW gives for a symlink.
func isSymlinkErr(err error) bool { return errors.Is(err, syscall.ELOOP) }
