// Package flood is what a local user can do to a TCP port such as the
// metrics endpoint: hold idle connections, each dialled again as soon as
// the server closes it, and slowloris ones that send a request head a line
// every 500 ms and never finish it. The connections come from 127.0.0.1
// and from other loopback addresses, as any local user can bind.
package flood

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Flood is a running flood.
type Flood struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	dials  atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// Start floods addr with idle and slow connections until Stop.
func Start(addr string, idle, slow int) *Flood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Flood{ctx: ctx, cancel: cancel, conns: map[net.Conn]bool{}}
	for i := range idle + slow {
		f.wg.Add(1)
		go f.run(addr, i, i >= idle)
	}
	return f
}

func (f *Flood) run(addr string, i int, slowloris bool) {
	defer f.wg.Done()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(i/250), byte(1+i%250))}}
	for f.ctx.Err() == nil {
		c, err := d.DialContext(f.ctx, "tcp", addr)
		if err != nil {
			// Ports or the listen queue momentarily exhausted: the flood
			// goes on.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		f.dials.Add(1)
		f.mu.Lock()
		if f.ctx.Err() != nil {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[c] = true
		f.mu.Unlock()
		if slowloris {
			_, err = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
			for i := 0; err == nil && f.ctx.Err() == nil; i++ {
				time.Sleep(500 * time.Millisecond)
				_, err = fmt.Fprintf(c, "X-%d: y\r\n", i)
			}
		} else {
			// Idle until the server closes it.
			_, _ = c.Read(make([]byte, 1))
		}
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		c.Close()
	}
}

// Held is how many connections the flood holds open on its side (some may
// still wait in the server's listen queue).
func (f *Flood) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// Stop ends the flood and returns how many connections it opened.
func (f *Flood) Stop() int64 {
	f.mu.Lock()
	f.cancel()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return f.dials.Load()
}
