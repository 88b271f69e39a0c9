package metrics

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/netreconcile/netreconcile/test/flood"
)

// Issue 29: a local user holding 1,000 idle connections and 200 slowloris
// ones must not blind monitoring. Two scrapers, one that opens a new
// connection for every scrape and one that keeps its connection (as
// Prometheus does), scrape every 100 ms for 12 s, past the head timeout
// that closes the slowloris connections, from loopback like the flood
// (one source: the hard case); every scrape must be answered within
// Prometheus' default scrape timeout of 10 s. With a plain cap of
// connections instead of limit.go's eviction, most are refused.
func TestScrapesAnsweredUnderConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test of 12 s: make test runs it")
	}
	reg := testRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	addr := serve(t, reg, "")
	f := flood.Start(addr, 1000, 200)
	// Let it take every place first.
	time.Sleep(2 * time.Second)
	var (
		lat      []time.Duration
		failures []string
	)
	fresh := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	kept := &http.Client{Timeout: 10 * time.Second}
	heldDuring := f.Held()
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); {
		for _, c := range []*http.Client{fresh, kept} {
			start := time.Now()
			resp, err := c.Get("http://" + addr + "/metrics")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
			if err != nil {
				failures = append(failures, err.Error())
				continue
			}
			lat = append(lat, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	dials := f.Stop()
	_, evicted, refused := lookupStats(t, reg)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	t.Logf("flood of 1,000 idle + 200 slowloris connections (%d held by the client at the start of the scrapes, %d dialled in all): %d scrapes answered, %d failed; latency p50 %v, p99 %v, max %v; server evicted %v, refused %v",
		heldDuring, dials, len(lat), len(failures), pct(0.5), pct(0.99), pct(1), evicted, refused)
	if len(failures) > 0 {
		t.Errorf("%d scrapes failed, the first: %s", len(failures), failures[0])
	}
	if len(lat) < 50 {
		t.Errorf("only %d scrapes in 12 s", len(lat))
	}
	if evicted < 1000 {
		t.Errorf("the server evicted %v connections: the flood did not reach the cap", evicted)
	}
}

// lookupStats reads the server's own counters from reg.
func lookupStats(t *testing.T, reg *prometheus.Registry) (held, evicted, refused float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case mf.GetName() == "netreconcile_metrics_connections":
				held = m.GetGauge().GetValue()
			case mf.GetName() == "netreconcile_metrics_connections_dropped_total" && m.GetLabel()[0].GetValue() == "evicted":
				evicted = m.GetCounter().GetValue()
			case mf.GetName() == "netreconcile_metrics_connections_dropped_total" && m.GetLabel()[0].GetValue() == "refused":
				refused = m.GetCounter().GetValue()
			}
		}
	}
	return held, evicted, refused
}

// The victim over the cap: never a connection in a request; from the
// source holding the most connections; the one waiting longest there. All
// loopback addresses are one source, an IPv6 /64 is one.
func TestVictim(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	src := func(s string) netip.Prefix {
		return sourceOf(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)))
	}
	conn := func(addr string, busy bool, age int) *limitConn {
		return &limitConn{source: src(addr), busy: busy, since: t0.Add(-time.Duration(age) * time.Second)}
	}
	for _, tc := range []struct {
		name  string
		conns []*limitConn
		want  int // index in conns; -1: none
	}{
		{"oldest of the source with the most", []*limitConn{
			conn("192.0.2.1:1", false, 50),
			conn("127.0.0.1:1", false, 10),
			conn("127.0.0.9:2", false, 20),
			conn("[::1]:3", false, 5),
		}, 2},
		{"busy ones are never chosen", []*limitConn{
			conn("127.0.0.1:1", true, 100),
			conn("127.0.0.1:2", true, 90),
			conn("192.0.2.1:1", false, 1),
		}, 2},
		{"every one busy", []*limitConn{
			conn("127.0.0.1:1", true, 100),
			conn("192.0.2.1:1", true, 1),
		}, -1},
		{"an IPv6 /64 is one source", []*limitConn{
			conn("[2001:db8::1]:1", false, 1),
			conn("[2001:db8::2]:1", false, 2),
			conn("[2001:db8:0:1::1]:1", false, 100),
			conn("192.0.2.1:1", false, 100),
		}, 1},
		{"IPv4-mapped loopback is loopback", []*limitConn{
			conn("[::ffff:127.0.0.1]:1", false, 1),
			conn("127.0.0.2:1", false, 2),
			conn("192.0.2.1:1", false, 100),
		}, 1},
	} {
		l := &limitListener{conns: map[*limitConn]bool{}}
		for _, c := range tc.conns {
			l.conns[c] = true
		}
		got := slices.Index(tc.conns, l.victim())
		if got != tc.want {
			t.Errorf("%s: victim %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A victim is closed only at the end of its grace, and not at all if a
// request has begun on it meanwhile (net/http says so once it has read
// the whole head, which a descheduled goroutine may do late).
func TestVictimSparedWhenARequestBegins(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(raw, 1)
	defer l.Close()
	dial := func() (client net.Conn, server *limitConn) {
		t.Helper()
		client, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		sc, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return client, sc.(*limitConn)
	}
	closed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(2 * evictGrace))
		_, err := c.Read(make([]byte, 1))
		return errors.Is(err, io.EOF)
	}
	clientA, a := dial()
	clientB, _ := dial() // over the cap: a is the victim
	l.connState(a, http.StateActive)
	if closed(clientA) {
		t.Error("the victim was closed although a request had begun on it")
	}
	clientC, _ := dial() // b is the victim now, a being busy
	if !closed(clientB) {
		t.Error("the second victim, with no request, was not closed")
	}
	if closed(clientC) {
		t.Error("the newcomer was closed")
	}
	if held, evicted, _ := l.stats(); held != 2 || evicted != 1 {
		t.Errorf("held %d, evicted %d; want 2 and 1", held, evicted)
	}
}
