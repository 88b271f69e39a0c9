package statedir

import "golang.org/x/sys/unix"

// openUnnamed opens a new file without a name in the directory dirfd
// (O_TMPFILE), for writing.
func openUnnamed(dirfd int, perm uint32) (int, error) {
	return unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, perm)
}
