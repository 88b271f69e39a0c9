package ipam

import "golang.org/x/sys/unix"

func processExists(pid int) bool {
	// EPERM: the process exists but belongs to someone else.
	return unix.Kill(pid, 0) != unix.ESRCH
}
