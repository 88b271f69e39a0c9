package metrics

import (
	"context"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// listen opens a TCP listener that hands over a connection only once its
// first bytes have come, or once the deferral has passed (Linux then
// retransmits its SYN-ACK a few times and takes the client's next ACK):
// a connection that sends nothing holds no descriptor, goroutine or place
// of the cap meanwhile, only the kernel's entry in the listen queue.
func listen(addr string, deferral time.Duration) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, int(deferral/time.Second))
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}

// unread returns how many bytes wait in c's receive queue (SIOCINQ), 0
// when it cannot tell.
func unread(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return n
}
