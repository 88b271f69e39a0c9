package daemon_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// binary is the netreconcile command built by TestMain: the daemon is tested
// as systemd runs it, a process of its own receiving signals.
var binary string

func TestMain(m *testing.M) { nettest.MainWithBinary(m, &binary) }

// proc is a running daemon and the service manager side of its
// NOTIFY_SOCKET.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu     sync.Mutex
	cond   *sync.Cond
	msgs   []string    // one per datagram
	times  []time.Time // when each of msgs arrived
	stderr bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

// Stderr returns what the daemon logged so far.
func (p *proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startDaemon runs `netreconcile run` against the namespace with a notify
// socket of its own; extra environment variables come in env.
func startDaemon(t *testing.T, ns, config, stateDir string, env []string, args ...string) *proc {
	t.Helper()
	// sun_path holds 108 bytes: t.TempDir() paths can be longer.
	sockDir, err := os.MkdirTemp("", "nrd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			p.mu.Lock()
			p.msgs = append(p.msgs, string(buf[:n]))
			p.times = append(p.times, time.Now())
			p.cond.Broadcast()
			p.mu.Unlock()
		}
	}()
	all := append([]string{"run", "--netns", ns, "-c", config, "--state-dir", stateDir}, args...)
	p.cmd = exec.Command(binary, all...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.Env = append(cleanEnv(), append([]string{"NOTIFY_SOCKET=" + sock}, env...)...)
	if err := p.cmd.Start(); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	t.Cleanup(func() {
		p.kill()
		conn.Close()
		if t.Failed() {
			t.Logf("daemon log:\n%s", p.Stderr())
		}
	})
	return p
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to end and returns its exit error.
func (p *proc) wait(timeout time.Duration) error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("daemon still running after %s", timeout)
		return nil
	}
}

// count returns the number of notifications received so far.
func (p *proc) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

// arrived returns when notification i arrived.
func (p *proc) arrived(i int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.times[i]
}

// messages returns the notifications received so far.
func (p *proc) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.msgs...)
}

// waitMsg waits for a notification at index from or later that contains
// want as one of its lines (or a line prefix ending in "="), and returns its
// index. It fails the test at the deadline or when the daemon exits.
func (p *proc) waitMsg(from int, want string, timeout time.Duration) (int, string) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for i := from; i < len(p.msgs); i++ {
			if hasLine(p.msgs[i], want) {
				return i, p.msgs[i]
			}
		}
		from = len(p.msgs)
		if p.exited() {
			p.t.Fatalf("daemon exited (%v) before sending %q; notifications: %q", p.err, want, p.msgs)
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q notification within %s; notifications: %q", want, timeout, p.msgs)
		}
		p.cond.Wait()
	}
}

func hasLine(msg, want string) bool {
	for _, line := range strings.Split(msg, "\n") {
		if line == want || (strings.HasSuffix(want, "=") && strings.HasPrefix(line, want)) {
			return true
		}
	}
	return false
}

// statusAfter returns the first STATUS= line at index from or later that
// contains sub.
func (p *proc) statusAfter(from int, sub string, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		i, msg := p.waitMsg(from, "STATUS=", time.Until(deadline))
		if strings.Contains(msg, sub) {
			return strings.TrimPrefix(msg, "STATUS=")
		}
		from = i + 1
	}
}

// eventually polls cond every 10 ms until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeInPlace rewrites a file in place (truncate and write, same inode),
// as `cat > file` or an editor without backup copies does.
func writeInPlace(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeByRename writes a new file and renames it over path, as vim's
// backupcopy=no, sed -i and Ansible's copy module do.
func writeByRename(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// settle waits until the daemon has sent no notification for 300 ms: the
// passes its own writes triggered are over, so the next pass can only come
// from what the test does next.
func (p *proc) settle() {
	p.t.Helper()
	n := p.count()
	for {
		time.Sleep(300 * time.Millisecond)
		m := p.count()
		if m == n {
			return
		}
		n = m
	}
}

var servingMetrics = regexp.MustCompile(`msg="serving metrics" address=(\S+)`)

// metricsAddr waits for the daemon's "serving metrics" line (its standard
// error is copied by another goroutine, so READY=1 may arrive first) and
// returns the submatch, nil if none came within 5 s.
func (p *proc) metricsAddr() []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m := servingMetrics.FindStringSubmatch(p.Stderr()); m != nil || time.Now().After(deadline) {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
}
