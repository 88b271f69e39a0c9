package daemon

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// processNetlinkPorts returns the ports of every netlink socket this process
// holds: each descriptor under /proc/self/fd that getsockname says is one.
// About a hundred descriptors: well under a millisecond.
func processNetlinkPorts() map[uint32]bool {
	ports := map[uint32]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return ports
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A descriptor closed (or reused) since the listing answers
		// EBADF or another address family: skipped either way.
		sa, err := unix.Getsockname(fd)
		if err != nil {
			continue
		}
		if n, ok := sa.(*unix.SockaddrNetlink); ok && n.Pid != 0 {
			ports[n.Pid] = true
		}
	}
	return ports
}
