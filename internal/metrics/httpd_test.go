package metrics

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exchange sends raw on a new connection to addr and returns everything
// the responder wrote before it closed.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%q: read the answer: %v (read %q)", raw, err, b)
	}
	return string(b)
}

// parseAnswer splits an answer into status line, header fields and body,
// and checks its framing: CRLF lines, Content-Length, Connection: close.
func parseAnswer(t *testing.T, raw, ans string, head bool) (status string, fields map[string]string, body string) {
	t.Helper()
	hdr, body, ok := strings.Cut(ans, "\r\n\r\n")
	if !ok {
		t.Fatalf("%q: no end of head in %q", raw, ans)
	}
	lines := strings.Split(hdr, "\r\n")
	fields = map[string]string{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("%q: bad header line %q", raw, l)
		}
		fields[k] = v
	}
	n, err := strconv.Atoi(fields["Content-Length"])
	switch {
	case err != nil:
		t.Errorf("%q: Content-Length %q", raw, fields["Content-Length"])
	case head && body != "":
		t.Errorf("%q: HEAD answered with a body", raw)
	case !head && n != len(body):
		t.Errorf("%q: Content-Length %d, body of %d bytes", raw, n, len(body))
	}
	if fields["Connection"] != "close" {
		t.Errorf("%q: Connection %q", raw, fields["Connection"])
	}
	return lines[0], fields, body
}

// The responder over TCP, request by request: what it serves, what it
// refuses and how, one request per connection (a pipelined second one is
// not answered), a request that sent a body still gets its whole answer.
func TestResponder(t *testing.T) {
	r := NewRegistry()
	c := NewCounter("x_total", "X.")
	c.Add(7)
	r.MustRegister(c)
	page, err := r.Page()
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTest(t, r)
	big := "GET /metrics HTTP/1.1\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("a", 100)+"\r\n", 90) + "\r\n"
	for _, tc := range []struct {
		raw, status string
		head        bool
		page        bool
	}{
		{"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n", "HTTP/1.1 200 OK", false, true},
		{"HEAD /metrics HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK", true, false},
		{"GET /metrics?name[]=x_total HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK", false, true},
		{"GET http://host:9100/metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK", false, true},
		{"GET /metrics HTTP/1.1\n\n", "HTTP/1.1 200 OK", false, true},
		{"GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK", false, true},
		{"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 405 Method Not Allowed", false, false},
		{"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found", false, false},
		{"GET /metricsx HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found", false, false},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 400 Bad Request", false, false},
		{"GET /metrics\r\n\r\n", "HTTP/1.1 400 Bad Request", false, false},
		{"\x00\x01\x02\r\n\r\n", "HTTP/1.1 400 Bad Request", false, false},
		{big, "HTTP/1.1 431 Request Header Fields Too Large", false, false},
		// One long line (a bearer token) within the 8 KiB.
		{"GET /metrics HTTP/1.1\r\nAuthorization: Bearer " + strings.Repeat("t", 6000) + "\r\n\r\n", "HTTP/1.1 200 OK", false, true},
		// No body in an answer to HEAD, whatever its status.
		{"HEAD /foo HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found", true, false},
	} {
		ans := exchange(t, addr, tc.raw)
		status, fields, body := parseAnswer(t, tc.raw, ans, tc.head)
		if status != tc.status {
			t.Errorf("%.40q: status %q, want %q", tc.raw, status, tc.status)
		}
		if tc.page && body != string(page) {
			t.Errorf("%.40q: body %q, want the page %q", tc.raw, body, page)
		}
		if tc.page || tc.head && strings.HasSuffix(tc.status, " 200 OK") {
			if fields["Content-Type"] != ContentType || fields["Content-Length"] != strconv.Itoa(len(page)) {
				t.Errorf("%.40q: fields %v", tc.raw, fields)
			}
		}
		if strings.HasPrefix(tc.status, "HTTP/1.1 405") && fields["Allow"] != "GET, HEAD" {
			t.Errorf("%.40q: Allow %q", tc.raw, fields["Allow"])
		}
	}
}

// A client that sends no head, or half of one, is closed once the head
// timeout passes: it holds a connection (one of the daemon's few) no
// longer.
func TestResponderClosesSlowClients(t *testing.T) {
	r := NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = r.Serve(ln, Timeouts{Head: 200 * time.Millisecond, Write: time.Second}) }()
	for _, sent := range []string{"", "GET /metrics HTTP/1.1\r\nHost: x\r\n"} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, sent); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil || len(b) != 0 {
			t.Errorf("after %q: read %q, %v; want the connection closed without an answer", sent, b, err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("after %q: closed after %v", sent, took)
		}
		c.Close()
	}
}

// readHead never panics, and what it accepts is a request line of three
// words, the version HTTP/1.x, followed by the end of the head.
func FuzzReadHead(f *testing.F) {
	for _, s := range []string{"GET /metrics HTTP/1.1\r\n\r\n", "HEAD / HTTP/1.0\n\n", "GET  HTTP/1.1\r\n\r\n", "\r\n\r\n", "GET / HTTP/1.1\r\nA: b\r\n", strings.Repeat("x", 9000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		method, target, err := readHead(bufio.NewReaderSize(io.LimitReader(bytes.NewReader(data), maxHead+1), 1024))
		if err != nil {
			return
		}
		line, _, _ := bytes.Cut(data, []byte("\n"))
		if method == "" || target == "" || strings.ContainsAny(method+target, " \n") || !bytes.Contains(line, []byte(" HTTP/1.")) {
			t.Errorf("accepted %q: method %q, target %q", data, method, target)
		}
		if !bytes.Contains(data, []byte("\n\n")) && !bytes.Contains(data, []byte("\n\r\n")) {
			t.Errorf("accepted %q without the end of its head", data)
		}
	})
}

// Label values that differ only in bytes that are not UTF-8 are the same
// series on the page (each such byte is written as U+FFFD): emitted
// together, they fail the scrape as a series emitted twice.
func TestInvalidUTF8LabelsCollide(t *testing.T) {
	r := NewRegistry()
	v := NewCounterVec("x_total", "X.", "link")
	v.WithLabelValues("wg\xff").Inc()
	v.WithLabelValues("wg\xfe").Inc()
	r.MustRegister(v)
	if page, err := r.Page(); err == nil {
		t.Errorf("no error; page:\n%s", page)
	}
}
