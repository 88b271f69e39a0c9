//go:build !linux

package metrics

import (
	"net"
	"time"
)

// listen opens a TCP listener; deferring accepts is Linux's
// (limit_linux.go).
func listen(addr string, _ time.Duration) (net.Listener, error) { return net.Listen("tcp", addr) }

// unread is 0: the queue's length is read on Linux only.
func unread(net.Conn) int { return 0 }
