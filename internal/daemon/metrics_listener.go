package daemon

import (
	"errors"
	"net"
	"sync"
	"time"
)

// The metrics server's limits. The reconcile loop must never depend on the
// HTTP side: every connection holds a file descriptor, and a descriptor the
// loop cannot get is a kernel read that fails.
const (
	// maxMetricsConns caps open metrics connections. A Prometheus server
	// keeps one connection per target; 16 allows a few scrapers and a
	// curl, and stays far below any RLIMIT_NOFILE (1024 at the least; Go
	// raises the soft limit to the hard one at start).
	maxMetricsConns = 16
	// A request's head must come within 5 s (slowloris); the answer, a
	// few hundred lines, is written within 30 s even to a slow reader.
	// Nothing is kept alive: each connection carries one request.
	metricsHeadTimeout  = 5 * time.Second
	metricsWriteTimeout = 30 * time.Second
)

// limitListener accepts at most max connections at a time. A connection
// over the cap is closed at once rather than left in the kernel's backlog:
// the client sees a reset instead of a hang, and the daemon holds at most
// max+1 descriptors for the metrics side.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func newLimitListener(l net.Listener, max int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, max)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			c.Close()
		}
	}
}

// limitConn gives its slot back on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when it can (TCP): the metrics
// responder sends its answer, half-closes, and drains what the client
// still sends before it closes.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
