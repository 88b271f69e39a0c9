package metrics

import (
	"cmp"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// limitListener holds max connections, twice that at worst. Every
// connection costs a descriptor and a goroutine with its buffers, and the
// reconcile loop must keep the descriptors it needs; but a plain cap lets
// whoever can connect fill it with connections that never send a request,
// and the scraper is then turned away. So a connection over the cap is not
// refused: the listener closes one that is not in a request to make room.
// The victim comes from the source holding the most connections
// (sourceOf), the one waiting longest first; a connection whose bytes wait
// unread in the kernel is never taken, since those bytes may be a whole
// request that its goroutine has not read yet: a scraper's connection,
// which sends its request at once, is not closed in that moment, whatever
// rate of new connections a flood brings. And the victim is closed only
// evictGrace later, unless a request has begun on it meanwhile: net/http
// tells a request begun (ConnState) only once it has read and parsed the
// whole head, and a goroutine descheduled in between must not lose it.
// When every held connection is in a request (each bounded by the server's
// timeouts), has bytes waiting or is being closed, the newcomer is taken
// over the cap, up to twice the cap; beyond, the accept loop waits for
// room, and closes the newcomer if none comes within a second.
//
// The listening socket also defers accepting a connection until it has
// sent something (TCP_DEFER_ACCEPT, limit_linux.go): a connection that
// sends nothing waits in the kernel, without a descriptor, until the
// deferral ends, and costs the daemon nothing meanwhile.
type limitListener struct {
	net.Listener
	max int
	now func() time.Time

	mu    sync.Mutex
	conns map[*limitConn]bool
	// closing counts the held connections chosen as victims, to be closed
	// at the end of their grace.
	closing int
	// evicted and refused count the connections closed to make room and
	// the newcomers closed because none could be.
	evicted, refused uint64
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, max: max, now: time.Now, conns: map[*limitConn]bool{}}
}

// limitConn is a connection the listener holds. Its fields but Conn are
// guarded by the listener's mutex.
type limitConn struct {
	net.Conn
	l      *limitListener
	source netip.Prefix
	// busy is true from when the server has read a request's head (or,
	// over HTTP/2, while a stream is open) until the answer is written;
	// since is when the connection was accepted or last became idle. A
	// TLS handshake, and the next head on a kept-alive connection, are
	// not busy.
	busy  bool
	since time.Time
	// closing: chosen as a victim, closed at the end of the grace.
	closing bool
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitConn{Conn: c, l: l, source: sourceOf(c.RemoteAddr()), since: l.now()}
		if l.admit(lc) {
			return lc, nil
		}
		c.Close()
	}
}

// admit makes room for c and holds it, or reports that it cannot. While
// there is none, it waits a little for some to appear (goroutines that
// read their request, answers written, victims closed), holding up the
// accept loop: the connections behind wait in the kernel's listen queue
// meanwhile, rather than being closed in a burst that the goroutines have
// not caught up with.
func (l *limitListener) admit(c *limitConn) bool {
	for wait := admitWait; ; wait -= admitPoll {
		l.mu.Lock()
		if len(l.conns)-l.closing >= l.max {
			if v := l.victim(); v != nil {
				l.evict(v)
			}
		}
		// Victims count until they are closed: they hold their
		// descriptors.
		if len(l.conns) < 2*l.max {
			l.conns[c] = true
			l.mu.Unlock()
			return true
		}
		if wait <= 0 {
			l.refused++
			l.mu.Unlock()
			return false
		}
		l.mu.Unlock()
		time.Sleep(admitPoll)
	}
}

// How long admit waits for room, and how often it looks. A second is a
// tenth of Prometheus' default scrape timeout.
const (
	admitWait = time.Second
	admitPoll = 5 * time.Millisecond
)

// evictGrace is how long a victim stays before it is closed: far longer
// than a goroutine takes from reading a head to parsing it, even
// descheduled for a time slice or two on a loaded machine, and short
// enough that the victims waiting for it stay few under a flood of a
// thousand connections a second (25 of them).
const evictGrace = 25 * time.Millisecond

// evict closes v at the end of its grace, unless a request has begun on it
// by then. l.mu is held.
func (l *limitListener) evict(v *limitConn) {
	v.closing = true
	l.closing++
	time.AfterFunc(evictGrace, func() {
		l.mu.Lock()
		if !v.closing {
			l.mu.Unlock()
			return // closed meanwhile
		}
		v.closing = false
		l.closing--
		if v.busy {
			l.mu.Unlock()
			return
		}
		delete(l.conns, v)
		l.evicted++
		l.mu.Unlock()
		// The server's goroutine for it sees the error on its next read
		// and ends.
		v.Conn.Close()
	})
}

// remove forgets c. l.mu is held.
func (l *limitListener) remove(c *limitConn) {
	if c.closing {
		c.closing = false
		l.closing--
	}
	delete(l.conns, c)
}

// victim returns the connection to close to make room, nil if there is
// none. l.mu is held.
func (l *limitListener) victim() *limitConn {
	held := map[netip.Prefix]int{}
	var cands []*limitConn
	for c := range l.conns {
		if c.closing {
			continue
		}
		held[c.source]++
		if !c.busy {
			cands = append(cands, c)
		}
	}
	slices.SortFunc(cands, func(a, b *limitConn) int {
		if n := cmp.Compare(held[b.source], held[a.source]); n != 0 {
			return n
		}
		return a.since.Compare(b.since)
	})
	for _, c := range cands {
		if unread(c.Conn) == 0 {
			return c
		}
	}
	return nil
}

// connState is the server's ConnState hook: it tells which connections
// are in a request.
func (l *limitListener) connState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateActive:
		lc.busy = true
	case http.StateIdle:
		lc.busy, lc.since = false, l.now()
	case http.StateHijacked, http.StateClosed:
		l.remove(lc)
	}
}

// Close gives the connection's place back.
func (c *limitConn) Close() error {
	c.l.mu.Lock()
	c.l.remove(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// stats returns the connections held, evicted and refused.
func (l *limitListener) stats() (held int, evicted, refused uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns), l.evicted, l.refused
}

// sourceOf is the source a connection is counted under: its IPv4 address,
// its IPv6 /64 (what one host is usually given), and one source for every
// loopback address, since any local user can use any of 127.0.0.0/8.
func sourceOf(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	switch {
	case ip.IsLoopback():
		return netip.PrefixFrom(netip.IPv6Loopback(), 0)
	case ip.Is4():
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.WithZone("").Prefix(64)
	return p
}
