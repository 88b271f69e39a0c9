package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The metrics page is served by a responder of its own, not net/http: one
// page of text to GET and HEAD of /metrics, one request per connection
// (the answer says Connection: close, and a scraper opens the next one).
// net/http brings its TLS, HTTP/2 and MIME code and their initialisation
// into the binary: 1.4 MB of the daemon's resident pages and 0.3 MB of
// heap, for a page that most hosts never serve.

// Timeouts bound a connection: its request head must arrive within Head,
// the answer be written within Write.
type Timeouts struct {
	Head, Write time.Duration
}

// maxHead bounds a request's head (request line and header fields): a
// scraper's is a few hundred bytes.
const maxHead = 8 << 10

// Serve answers the connections ln accepts until ln is closed (nil then).
// A failing Accept (descriptors exhausted) is retried after a pause that
// doubles up to a second, as net/http does.
func (r *Registry) Serve(ln net.Listener, t Timeouts) error {
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		go r.serveConn(c, t)
	}
}

// serveConn reads one request head and answers it.
func (r *Registry) serveConn(c net.Conn, t Timeouts) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(t.Head))
	// The buffer holds a whole head: one line may take all of it (a long
	// bearer token), which a smaller one refused as too large.
	method, target, err := readHead(bufio.NewReaderSize(io.LimitReader(c, maxHead+1), maxHead+1))
	_ = c.SetWriteDeadline(time.Now().Add(t.Write))
	var resp []byte
	head := method == "HEAD" // an answer to HEAD has no body, whatever its status
	switch {
	case errors.Is(err, errHeadTooLarge):
		resp = answer("431 Request Header Fields Too Large", "text/plain; charset=utf-8", []byte("request head too large\n"), false, "")
	case errors.Is(err, errBadRequest):
		resp = answer("400 Bad Request", "text/plain; charset=utf-8", []byte(err.Error()+"\n"), false, "")
	case err != nil:
		return // closed or timed out before a whole head: nobody to answer
	case method != "GET" && method != "HEAD":
		resp = answer("405 Method Not Allowed", "text/plain; charset=utf-8", []byte("method not allowed\n"), head, "Allow: GET, HEAD\r\n")
	case pathOf(target) != "/metrics":
		resp = answer("404 Not Found", "text/plain; charset=utf-8", []byte("not found: the metrics are at /metrics\n"), head, "")
	default:
		page, err := r.Page()
		if err != nil {
			resp = answer("500 Internal Server Error", "text/plain; charset=utf-8", []byte("gather metrics: "+err.Error()+"\n"), head, "")
		} else {
			resp = answer("200 OK", ContentType, page, head, "")
		}
	}
	if _, err := c.Write(resp); err != nil {
		return
	}
	// Half-close, then drain what the client may still send (a body, a
	// pipelined request) for a moment: closing with unread data makes the
	// kernel reset the connection, and the client may lose the answer.
	if tc, ok := c.(interface{ CloseWrite() error }); ok && tc.CloseWrite() == nil {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
}

var (
	errHeadTooLarge = errors.New("request head too large")
	errBadRequest   = errors.New("bad request")
)

// readHead reads a request line and header fields up to the empty line
// that ends them, and returns the method and the request target. Lines
// end in CRLF or, leniently, LF.
func readHead(br *bufio.Reader) (method, target string, err error) {
	n := 0
	for i := 0; ; i++ {
		line, err := br.ReadSlice('\n')
		n += len(line)
		switch {
		case n > maxHead || errors.Is(err, bufio.ErrBufferFull):
			return "", "", errHeadTooLarge
		case err != nil:
			return "", "", err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if i == 0 {
			m, rest, ok1 := bytes.Cut(line, []byte(" "))
			tg, version, ok2 := bytes.Cut(rest, []byte(" "))
			if !ok1 || !ok2 || len(m) == 0 || len(tg) == 0 || !bytes.HasPrefix(version, []byte("HTTP/1.")) {
				return "", "", fmt.Errorf("%w: not an HTTP/1 request line", errBadRequest)
			}
			method, target = string(m), string(tg)
			continue
		}
		if len(line) == 0 {
			return method, target, nil
		}
	}
}

// pathOf is a request target's path: without its query, and taken from
// the absolute form (http://host/path) too.
func pathOf(target string) string {
	target, _, _ = strings.Cut(target, "?")
	for _, scheme := range []string{"http://", "https://"} {
		if rest, ok := strings.CutPrefix(target, scheme); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				return rest[i:]
			}
			return "/"
		}
	}
	return target
}

// answer is a whole response: status line, header fields, body (none for
// HEAD, its length given all the same).
func answer(status, ctype string, body []byte, head bool, extra string) []byte {
	b := make([]byte, 0, 160+len(body))
	b = append(b, "HTTP/1.1 "+status+"\r\nContent-Type: "+ctype+"\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nConnection: close\r\n"+extra+"\r\n"...)
	if !head {
		b = append(b, body...)
	}
	return b
}

// Page is the registry's families in the text format. The whole page is
// gathered before anything is written, so a collector's mistake is a 500
// with its reason, never a truncated page.
func (r *Registry) Page() ([]byte, error) {
	fams, err := r.gather()
	if err != nil {
		return nil, err
	}
	return appendText(nil, fams), nil
}
