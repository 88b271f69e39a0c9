package e2e

import (
	"net"
	"strings"
	"testing"
	"time"
)

// apply runs `netreconcile apply` of an example inside ns with a private state
// directory, and checks that a second apply of the same file changes nothing.
func applyExample(t *testing.T, ns *NetNS, file string) {
	t.Helper()
	state := t.TempDir()
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	out := runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	if !strings.Contains(out, "No changes") {
		t.Fatalf("second apply of %s changed something:\n%s", file, out)
	}
}

// mustContain fails unless every want line appears in got.
func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: missing %q in:\n%s", what, w, got)
		}
	}
}

// veth joins two namespaces with a veth pair, addressed and up.
func veth(t *testing.T, a *NetNS, aName, aAddr string, b *NetNS, bName, bAddr string) {
	t.Helper()
	a.IP(t, "link", "add", aName, "type", "veth", "peer", "name", bName, "netns", b.Name)
	if aAddr != "" {
		a.IP(t, "addr", "add", aAddr, "dev", aName)
	}
	a.IP(t, "link", "set", aName, "up")
	if bAddr != "" {
		b.IP(t, "addr", "add", bAddr, "dev", bName)
	}
	b.IP(t, "link", "set", bName, "up")
}

// listen starts a TCP echo-once server inside ns; it answers "hello from <ns>".
func listen(t *testing.T, ns *NetNS, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	ns.Do(t, func() {
		var err error
		l, err = net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s in %s: %v", addr, ns.Name, err)
		}
	})
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from " + ns.Name + " to " + c.RemoteAddr().String() + "\n"))
			c.Close()
		}
	}()
	return l
}

// dial connects from inside ns and returns what the server said, or the error.
func dial(t *testing.T, ns *NetNS, addr string, timeout time.Duration) (string, error) {
	t.Helper()
	var c net.Conn
	var err error
	ns.Do(t, func() {
		// The socket is made here, in the namespace; reading can happen anywhere.
		c, err = net.DialTimeout("tcp", addr, timeout)
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}
