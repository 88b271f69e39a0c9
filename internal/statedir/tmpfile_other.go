//go:build !linux

package statedir

import "golang.org/x/sys/unix"

// openUnnamed: only Linux makes files without a name; Stage names its own.
func openUnnamed(dirfd int, perm uint32) (int, error) { return -1, unix.ENOTSUP }
