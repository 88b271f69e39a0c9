package safeapply_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Privileged tests of safe apply on the real kernel, with a management
// session: a TCP connection from a client namespace to the managed one,
// whose return path is a route of the file over a veth pair of the file.
// The command line and the daemon run as the built binary, processes of
// their own, so that a timer outlives the command and a daemon can be
// SIGKILLed.

var binary string

func TestMain(m *testing.M) { nettest.MainWithBinary(m, &binary) }

const (
	serverAddr = "10.77.0.1:2222" // in the managed namespace, on the file's link
	clientIP   = "10.66.0.2"      // in the client namespace, routed by the file
	probePort  = "2223"           // a listener on clientIP, for --probe tcp:
)

// mgmtConf is the file: a veth pair to the client namespace and the route
// to the client through it. broken replaces the route with a blackhole.
func mgmtConf(clientNS string, broken bool) string {
	route := "{to: 10.66.0.0/24, via: 10.77.0.2}"
	if broken {
		route = "{to: 10.66.0.0/24, type: blackhole}"
	}
	return fmt.Sprintf(`version: 1
links:
  mg0:
    kind: veth
    veth: {peer: mg0c, peer-netns: %s}
    addresses: [10.77.0.1/30]
routes:
  - %s
`, clientNS, route)
}

type mgmt struct {
	t              *testing.T
	host, client   string
	dir, conf, bad string
	state, bootID  string
	good           string
}

func newMgmt(t *testing.T) *mgmt {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	m := &mgmt{t: t, host: nettest.NewNetNSPrefixed(t, "sa-h"), client: nettest.NewNetNSPrefixed(t, "sa-c"), dir: t.TempDir()}
	m.conf = filepath.Join(m.dir, "etc", "netreconcile.yaml")
	m.bad = filepath.Join(m.dir, "bad.yaml")
	m.state = filepath.Join(m.dir, "state")
	m.bootID = filepath.Join(m.dir, "boot_id")
	m.setBootID("11111111-1111-1111-1111-111111111111")
	if err := os.MkdirAll(filepath.Dir(m.conf), 0o755); err != nil {
		t.Fatal(err)
	}
	m.good = mgmtConf(m.client, false)
	writeFile(t, m.conf, m.good)
	writeFile(t, m.bad, mgmtConf(m.client, true))
	m.setupNamespaces()
	if r := m.cli("apply"); r.code != 0 {
		t.Fatalf("first apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m.setupClient()
	return m
}

func (m *mgmt) setupNamespaces() {
	t := m.t
	for _, ns := range []string{m.host, m.client} {
		nettest.IP(t, ns, "link", "set", "lo", "up")
	}
	nettest.IP(t, m.client, "addr", "add", clientIP+"/32", "dev", "lo")
	// Someone else's objects in the managed namespace. No duplicate
	// address detection: an address "tentative" in one dump and not in the
	// next is no change of ours.
	nettest.InNS(t, m.host, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
	nettest.IP(t, m.host, "link", "add", "fx0", "type", "veth", "peer", "name", "fx1")
	nettest.IP(t, m.host, "addr", "add", "10.55.0.1/24", "dev", "fx0")
	nettest.IP(t, m.host, "link", "set", "fx0", "up")
	nettest.IP(t, m.host, "link", "set", "fx1", "up")
	nettest.IP(t, m.host, "route", "add", "10.54.0.0/24", "via", "10.55.0.2", "proto", "static")
	nettest.IP(t, m.host, "route", "add", "10.66.1.0/24", "via", "10.55.0.2", "proto", "static")
	nettest.IP(t, m.host, "rule", "add", "priority", "500", "from", "10.53.0.0/24", "lookup", "200")
	nettest.InNS(t, m.host, "nft", "add table inet foreign; add chain inet foreign c { type filter hook input priority 0; }; add rule inet foreign c tcp dport 9 counter")
}

// setupClient configures the client's end, which the file creates there.
func (m *mgmt) setupClient() {
	nettest.IP(m.t, m.client, "addr", "add", "10.77.0.2/30", "dev", "mg0c")
	nettest.IP(m.t, m.client, "link", "set", "mg0c", "up")
	nettest.IP(m.t, m.client, "route", "add", "default", "via", "10.77.0.1", "src", clientIP)
}

func (m *mgmt) setBootID(id string) { writeFile(m.t, m.bootID, id+"\n") }

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *mgmt) env() []string {
	return append(os.Environ(), safeapply.BootIDFileEnv+"="+m.bootID)
}

type result struct {
	code           int
	stdout, stderr string
}

func (m *mgmt) args(cmd string, args ...string) []string {
	return append([]string{cmd, "--netns", m.host, "-c", m.conf, "--state-dir", m.state, "--allow-insecure-config"}, args...)
}

func (m *mgmt) cli(cmd string, args ...string) result {
	m.t.Helper()
	c := exec.Command(binary, m.args(cmd, args...)...)
	c.Env = m.env()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatalf("%s: %v", cmd, err)
	}
	return r
}

// applyOutput is the part of apply -o json the tests read.
type applyOutput struct {
	Transaction *safeapply.TxnReport      `json:"transaction"`
	Rollback    *safeapply.RollbackReport `json:"rollback"`
	Probes      *struct {
		Armed   []string                `json:"armed"`
		Skipped []safeapply.ProbeResult `json:"skipped"`
	} `json:"probes"`
}

func (m *mgmt) safeApply(args ...string) (applyOutput, result) {
	m.t.Helper()
	r := m.cli("apply", append([]string{"-o", "json", "--candidate", m.bad, "--rollback-timer", "process"}, args...)...)
	var out applyOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		m.t.Fatalf("apply -o json: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if t := out.Transaction; t != nil && t.Timer != nil && strings.HasPrefix(*t.Timer, "process:") {
		// The timer is ours to stop if the test ends before it.
		var pid int
		fmt.Sscanf(*t.Timer, "process:%d", &pid)
		m.t.Cleanup(func() { killTimer(pid, t.ID) })
	}
	return out, r
}

// killTimer stops a timer process still waiting when its test ends,
// checking it is the one (its command line names the transaction).
func killTimer(pid int, id string) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && strings.Contains(string(cmdline), id) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// routed says whether the file's route to the client is in place (not the
// blackhole).
func (m *mgmt) routed() bool {
	out := nettest.IP(m.t, m.host, "route", "show", "10.66.0.0/24")
	return strings.Contains(out, "via 10.77.0.2")
}

func (m *mgmt) fileIs(want string) bool {
	data, err := os.ReadFile(m.conf)
	return err == nil && string(data) == want
}

// foreign renders someone else's objects in the managed namespace.
func (m *mgmt) foreign() string {
	t := m.t
	return strings.Join([]string{
		nettest.IP(t, m.host, "-j", "route", "show", "table", "all", "proto", "static"),
		nettest.IP(t, m.host, "-j", "rule", "show"),
		nettest.IP(t, m.host, "-j", "link", "show", "dev", "fx0"),
		nettest.IP(t, m.host, "-j", "link", "show", "dev", "fx1"),
		nettest.IP(t, m.host, "-j", "addr", "show", "dev", "fx0"),
		nettest.InNS(t, m.host, "nft", "-j", "list", "table", "inet", "foreign"),
	}, "\n")
}

// inNS runs f on a thread in namespace ns.
func inNS(t *testing.T, ns string, f func() error) (err error) {
	t.Helper()
	nettest.Within(t, ns, func() { err = f() })
	return err
}

// serve accepts and closes connections on addr inside ns until the test ends.
func serve(t *testing.T, ns, addr string) {
	var ln net.Listener
	if err := inNS(t, ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// session opens a management connection from the client to the server.
func (m *mgmt) session(timeout time.Duration) error {
	return inNS(m.t, m.client, func() error {
		d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(clientIP)}}
		c, err := d.Dial("tcp", serverAddr)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// sessionWithin opens management sessions until one connects, for at most
// d: a path just set up may drop the first SYN (the veth's carrier not yet
// up), whose retransmission comes a second later, beyond one dial's wait
// on a loaded machine.
func (m *mgmt) sessionWithin(d time.Duration) error {
	limit := time.Now().Add(d)
	for {
		err := m.session(500 * time.Millisecond)
		if err == nil || time.Now().After(limit) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRestored waits until the kernel's route, the file and a new session
// are back, and returns when that was.
func (m *mgmt) waitRestored(limit time.Time) (time.Time, error) {
	for {
		if m.routed() && m.fileIs(m.good) && m.session(200*time.Millisecond) == nil {
			return time.Now(), nil
		}
		if time.Now().After(limit) {
			return time.Time{}, fmt.Errorf("not restored by %s: routed %v, file restored %v", limit.Format("15:04:05.000"), m.routed(), m.fileIs(m.good))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUnconfirmedRollsBackAtTheDeadline(t *testing.T) {
	m := newMgmt(t)
	serve(t, m.host, serverAddr)
	if err := m.sessionWithin(5 * time.Second); err != nil {
		t.Fatalf("no management session before the change: %v", err)
	}
	before := m.foreign()
	out, r := m.safeApply("--confirm-within", "3s")
	if r.code != 0 || out.Transaction == nil || out.Transaction.State != string(safeapply.Pending) {
		t.Fatalf("apply --confirm-within: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	deadline := out.Transaction.Deadline
	if m.routed() || !m.fileIs(mgmtConf(m.client, true)) {
		t.Fatal("the change was not applied")
	}
	if err := m.session(300 * time.Millisecond); err == nil {
		t.Fatal("the session still connects through the blackhole: the test proves nothing")
	}
	if r := m.cli("apply"); r.code == 0 || !strings.Contains(r.stderr, "netreconcile confirm") {
		t.Errorf("a plain apply while pending: exit %d\n%s", r.code, r.stderr)
	}
	back, err := m.waitRestored(deadline.Add(rollbackBound))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored (kernel, file, session) %s after the deadline", back.Sub(deadline).Round(time.Millisecond))
	if after := m.foreign(); after != before {
		t.Errorf("foreign objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The rollback records its end after it verified the kernel, which
	// may be a moment after the route is back.
	st := m.status()
	for end := time.Now().Add(rollbackBound); st.Transaction != nil && time.Now().Before(end); st = m.status() {
		time.Sleep(50 * time.Millisecond)
	}
	if st.Transaction != nil || st.LastTransaction == nil || st.LastTransaction.Cause == nil || *st.LastTransaction.Cause != string(safeapply.CauseTimeout) || st.Counts.RolledBack[safeapply.CauseTimeout] != 1 {
		t.Errorf("status after the rollback: %+v", st)
	}
}

type statusOutput struct {
	Transaction     *safeapply.TxnReport `json:"transaction"`
	LastTransaction *safeapply.TxnReport `json:"last_transaction"`
	Counts          safeapply.Counts     `json:"counts"`
}

func (m *mgmt) status() statusOutput {
	m.t.Helper()
	r := m.cli("status", "-o", "json")
	var st statusOutput
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		m.t.Fatalf("status -o json: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return st
}

func TestConfirmedStays(t *testing.T) {
	m := newMgmt(t)
	before := m.foreign()
	out, r := m.safeApply("--confirm-within", "3s")
	if r.code != 0 || out.Transaction == nil {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if st := m.status(); st.Transaction == nil || st.Transaction.ID != out.Transaction.ID || st.Transaction.SecondsLeft <= 0 {
		t.Errorf("status while pending: %+v", st.Transaction)
	}
	// From another session, by id.
	c := m.cli("confirm", "-o", "json", out.Transaction.ID)
	if c.code != 0 || !strings.Contains(c.stdout, `"state": "confirmed"`) {
		t.Fatalf("confirm: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	time.Sleep(time.Until(out.Transaction.Deadline.Add(time.Second)))
	if m.routed() || !m.fileIs(mgmtConf(m.client, true)) {
		t.Error("the confirmed change was rolled back")
	}
	if after := m.foreign(); after != before {
		t.Errorf("foreign objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if r := m.cli("apply"); r.code != 0 {
		t.Errorf("a plain apply after confirm: exit %d\n%s", r.code, r.stderr)
	}
}

func TestProbeRollsBackAtOnce(t *testing.T) {
	m := newMgmt(t)
	serve(t, m.client, clientIP+":"+probePort)
	before := m.foreign()
	start := time.Now()
	// Nothing listens on port 1: that probe fails before the apply (a
	// reset, at once) and is skipped.
	out, r := m.safeApply("--confirm-within", "30s", "--probe", "tcp:"+clientIP+":"+probePort, "--probe", "tcp:"+clientIP+":1")
	took := time.Since(start)
	if r.code != 1 || out.Rollback == nil || out.Rollback.Cause != safeapply.CauseProbe {
		t.Fatalf("apply with a probe that fails after it: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out.Probes == nil || len(out.Probes.Armed) != 1 || len(out.Probes.Skipped) != 1 || out.Probes.Skipped[0].Probe != "tcp:"+clientIP+":1" {
		t.Errorf("probes: %+v", out.Probes)
	}
	if !m.routed() || !m.fileIs(m.good) {
		t.Fatal("not rolled back when apply returned")
	}
	// From the transaction's record (before the first kernel write) to
	// the end of the rollback: apply, verify, probe, rollback, verify.
	tx := out.Transaction
	if tx == nil || tx.Ended == nil {
		t.Fatalf("transaction: %+v", tx)
	}
	window := tx.Ended.Sub(tx.Started)
	t.Logf("rolled back by the probe %s after the transaction began (the command took %s)", window.Round(time.Millisecond), took.Round(time.Millisecond))
	// At once, not at the deadline: well inside the 30 s window.
	if window >= 15*time.Second {
		t.Errorf("rollback by probe came %s after the apply began: that is the deadline's, not the probe's", window)
	}
	if after := m.foreign(); after != before {
		t.Errorf("foreign objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// daemon runs netreconcile run on the managed namespace.
type daemon struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
}

func (d *daemon) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.Write(b)
}

func (d *daemon) text() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

func (m *mgmt) startDaemon() *daemon {
	m.t.Helper()
	return m.startDaemonCmd(exec.Command(binary, m.args("run", "--log-level", "debug")...))
}

// startDaemonReadOnlyConf starts the daemon in a mount namespace of its own
// where the configuration's directory is read-only, as the packaged
// service sees /etc/netreconcile (its user cannot write it, and
// ProtectSystem=strict): a rollback by the daemon cannot write the main file
// back, and pins. Root's commands write it as before.
func (m *mgmt) startDaemonReadOnlyConf() *daemon {
	m.t.Helper()
	nettest.RequireTool(m.t, "unshare")
	etc := filepath.Dir(m.conf)
	args := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c",
		`d=$1; shift; mount --bind "$d" "$d" && mount -o remount,bind,ro "$d" && exec "$@"`, "sh", etc, binary},
		m.args("run", "--log-level", "debug")...)
	return m.startDaemonCmd(exec.Command("unshare", args...))
}

func (m *mgmt) startDaemonCmd(cmd *exec.Cmd) *daemon {
	m.t.Helper()
	d := &daemon{done: make(chan struct{})}
	d.cmd = cmd
	d.cmd.Env = m.env()
	d.cmd.Stdout, d.cmd.Stderr = d, d
	if err := d.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	m.t.Cleanup(func() {
		d.kill()
		if m.t.Failed() {
			m.t.Logf("daemon log:\n%s", d.text())
		}
	})
	return d
}

func (d *daemon) kill() {
	select {
	case <-d.done:
	default:
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

func (d *daemon) waitLog(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(d.text(), s) {
			return
		}
	}
	t.Fatalf("the daemon did not log %q within %s:\n%s", s, timeout, d.text())
}

func TestDaemonKilledDuringTheWindowRollsBackAtTheDeadline(t *testing.T) {
	m := newMgmt(t)
	serve(t, m.host, serverAddr)
	before := m.foreign()
	d := m.startDaemon()
	d.waitLog(t, "converged; ready", rollbackBound)
	// The daemon alone (no fallback timer beside it): the daemon started
	// again is what rolls back.
	r := m.cli("apply", "-o", "json", "--candidate", m.bad, "--confirm-within", "3s", "--rollback-timer", "daemon")
	var out applyOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.Transaction == nil {
		t.Fatalf("apply: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if out.Transaction.Timer == nil || !strings.HasPrefix(*out.Transaction.Timer, "daemon:") {
		t.Fatalf("the deadline is not held by the daemon: %v", out.Transaction.Timer)
	}
	deadline := out.Transaction.Deadline
	time.Sleep(500 * time.Millisecond)
	d.kill()
	if m.routed() {
		t.Fatal("rolled back before the deadline")
	}
	d2 := m.startDaemon()
	back, err := m.waitRestored(deadline.Add(rollbackBound))
	if err != nil {
		t.Fatalf("%v\ndaemon log:\n%s", err, d2.text())
	}
	t.Logf("daemon SIGKILLed and started again: restored %s after the deadline", back.Sub(deadline).Round(time.Millisecond))
	if back.Before(deadline) {
		t.Errorf("rolled back %s before the deadline", deadline.Sub(back))
	}
	if after := m.foreign(); after != before {
		t.Errorf("foreign objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	d2.waitLog(t, "safe-apply transaction rolled back", rollbackBound)
}

func TestAnotherBootRollsBackBeforeTheFirstConverge(t *testing.T) {
	m := newMgmt(t)
	out, r := m.safeApply("--confirm-within", "10m")
	if r.code != 0 || out.Transaction == nil {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The host goes down: the timer with it, the namespaces rebuilt
	// empty, the state directory kept, a new boot id.
	var pid int
	fmt.Sscanf(*out.Transaction.Timer, "process:%d", &pid)
	killTimer(pid, out.Transaction.ID)
	nettest.Exec(t, "ip", "netns", "del", m.host)
	nettest.Exec(t, "ip", "netns", "del", m.client)
	nettest.Exec(t, "ip", "netns", "add", m.host)
	nettest.Exec(t, "ip", "netns", "add", m.client)
	m.setupNamespaces()
	before := m.foreign()
	m.setBootID("22222222-2222-2222-2222-222222222222")

	d := m.startDaemon()
	d.waitLog(t, "converged; ready", rollbackBound)
	log := d.text()
	rolled := strings.Index(log, "safe-apply transaction rolled back")
	loaded := strings.Index(log, "configuration loaded")
	if rolled < 0 || loaded < 0 || rolled > loaded || !strings.Contains(log, "cause=reboot") {
		t.Fatalf("not rolled back before the first converge:\n%s", log)
	}
	if !m.fileIs(m.good) {
		t.Error("file not restored")
	}
	m.setupClient()
	serve(t, m.host, serverAddr)
	if !m.routed() || m.sessionWithin(5*time.Second) != nil {
		t.Errorf("the management path is not back: routed %v", m.routed())
	}
	if after := m.foreign(); after != before {
		t.Errorf("foreign objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// The probes on the real kernel, each seen passing and failing: the
// gateway answers ARP or not, the SSH client's route changes, a TCP
// listener is reachable or not.
func TestProbesOnTheKernel(t *testing.T) {
	m := newMgmt(t)
	ctx := t.Context()
	serve(t, m.client, clientIP+":"+probePort)
	nettest.IP(t, m.host, "route", "add", "default", "via", "10.77.0.2", "proto", "static")
	env := safeapply.ProbeEnv{Netns: "/run/netns/" + m.host, Getenv: func(k string) string {
		if k == "SSH_CONNECTION" {
			return clientIP + " 50000 10.77.0.1 22"
		}
		return ""
	}}
	probe := func(spec string) safeapply.Probe {
		p, err := safeapply.ParseProbe(spec, env)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gw, ssh, tcp := probe("gateway"), probe("ssh"), probe("tcp:"+clientIP+":"+probePort)
	for _, p := range []safeapply.Probe{gw, ssh, tcp} {
		if err := p.Check(ctx); err != nil {
			t.Errorf("%s before: %v", p, err)
		}
	}
	if err := probe("tcp:" + clientIP + ":1").Check(ctx); err == nil {
		t.Error("tcp probe to a closed port passed")
	}
	// The client's route moves to another link and next hop: the
	// session's path changed.
	nettest.IP(t, m.host, "route", "replace", "10.66.0.0/24", "via", "10.55.0.2", "proto", "static")
	if err := ssh.Check(ctx); err == nil {
		t.Error("ssh probe passed after the client's route changed")
	}
	// A gateway that does not answer ARP.
	nettest.IP(t, m.host, "route", "replace", "default", "via", "10.77.0.9", "dev", "mg0", "onlink", "proto", "static")
	start := time.Now()
	if err := gw.Check(ctx); err == nil {
		t.Error("gateway probe passed for a next hop nobody answers for")
	} else {
		t.Logf("gateway probe failed in %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if _, err := safeapply.ParseProbe("tcp:nohost", env); err == nil {
		t.Error("tcp:nohost accepted")
	}
	noSSH := safeapply.ProbeEnv{Netns: env.Netns, Getenv: func(string) string { return "" }}
	if p, _ := safeapply.ParseProbe("ssh", noSSH); p.Check(ctx) == nil {
		t.Error("ssh probe passed without $SSH_CONNECTION")
	}
}

// The gateway probe of an IPv6 default route: a neighbour solicitation
// that the next hop answers, or not.
func TestGatewayProbeIPv6(t *testing.T) {
	nettest.RequireRoot(t)
	host, router := nettest.NewNetNSPrefixed(t, "sa-g6h"), nettest.NewNetNSPrefixed(t, "sa-g6r")
	for _, ns := range []string{host, router} {
		// No duplicate address detection: the addresses are usable at once.
		nettest.InNS(t, ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
	}
	nettest.IP(t, host, "link", "add", "g6a", "type", "veth", "peer", "name", "g6b", "netns", router)
	nettest.IP(t, host, "addr", "add", "fd77::1/64", "dev", "g6a", "nodad")
	nettest.IP(t, router, "addr", "add", "fd77::2/64", "dev", "g6b", "nodad")
	nettest.IP(t, host, "link", "set", "g6a", "up")
	nettest.IP(t, router, "link", "set", "g6b", "up")
	env := safeapply.ProbeEnv{Netns: "/run/netns/" + host, Getenv: func(string) string { return "" }}
	gw, err := safeapply.ParseProbe("gateway", env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := gw.Check(ctx); err == nil {
		t.Error("gateway probe passed without a default route")
	}
	for _, via := range []string{"fd77::2", "fe80::" + linkLocalSuffix(t, router, "g6b")} {
		nettest.IP(t, host, "-6", "route", "replace", "default", "via", via, "dev", "g6a", "proto", "static")
		if err := gw.Check(ctx); err != nil {
			t.Errorf("gateway probe via %s, which answers: %v", via, err)
		}
	}
	nettest.IP(t, host, "-6", "route", "replace", "default", "via", "fd77::9", "dev", "g6a", "proto", "static")
	start := time.Now()
	if err := gw.Check(ctx); err == nil {
		t.Error("gateway probe passed for an IPv6 next hop nobody answers for")
	} else {
		t.Logf("gateway probe failed in %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// linkLocalSuffix is the part after fe80:: of link's link-local address.
func linkLocalSuffix(t *testing.T, ns, link string) string {
	t.Helper()
	out := nettest.IP(t, ns, "-6", "-o", "addr", "show", "dev", link, "scope", "link")
	f := strings.Fields(out)
	for i, w := range f {
		if w == "inet6" && i+1 < len(f) {
			return strings.TrimPrefix(strings.Split(f[i+1], "/")[0], "fe80::")
		}
	}
	t.Fatalf("no link-local address on %s: %s", link, out)
	return ""
}

// rollbackBound is how long after its deadline these tests wait for a
// rollback, and for a timer to exit after its transaction ended: what they
// check is that it happens with no command run, not how fast (a loaded
// machine is slow; the walk's latencies are in its log).
const rollbackBound = time.Minute

// killTimers stops every timer process still waiting for transaction id
// when a test ends.
func killTimers(id string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			killTimer(pid, "\x00"+id)
		}
	}
}

// timerWaits says whether a timer process waits for transaction id.
func timerWaits(id string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte("\x00--due\x00")) && bytes.Contains(b, []byte("\x00"+id)) {
			return true
		}
	}
	return false
}

// The daemon holds the deadline and is gone for good during the window
// (systemctl stop, a crash past its restart limit, a daemon run by hand):
// a timer of the command's own rolls back at the deadline all the same.
// Transaction walk (test/txwalk), shrunk: begin --confirm-within with the
// daemon running, daemon-stop SIGKILL, deadline: the transaction stayed
// pending until some command happened to run.
func TestTxWalkFindingDaemonGoneDuringTheWindow(t *testing.T) {
	m := newMgmt(t)
	serve(t, m.host, serverAddr)
	d := m.startDaemon()
	d.waitLog(t, "converged; ready", rollbackBound)
	r := m.cli("apply", "-o", "json", "--candidate", m.bad, "--confirm-within", "2s")
	var out applyOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.Transaction == nil {
		t.Fatalf("apply: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	id := out.Transaction.ID
	t.Cleanup(func() { killTimers(id) })
	if out.Transaction.Timer == nil || !strings.HasPrefix(*out.Transaction.Timer, "daemon:") {
		t.Fatalf("the deadline is not held by the daemon: %v", out.Transaction.Timer)
	}
	// After the daemon's pass on the candidate file (the apply wrote the
	// kernel already).
	time.Sleep(300 * time.Millisecond)
	d.kill()
	if m.routed() {
		t.Fatal("rolled back before the deadline")
	}
	back, err := m.waitRestored(out.Transaction.Deadline.Add(rollbackBound))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the daemon SIGKILLed and not started again: restored %s after the deadline", back.Sub(out.Transaction.Deadline).Round(time.Millisecond))
	// The rollback records its end after it put the kernel and the files
	// back.
	for end := time.Now().Add(rollbackBound); ; time.Sleep(50 * time.Millisecond) {
		f, err := os.ReadFile(filepath.Join(m.state, "netns", m.host, safeapply.FileName))
		if err == nil && strings.Contains(string(f), `"cause":"timeout"`) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("not recorded as rolled back at the deadline: %v\n%s", err, f)
		}
	}
	for end := time.Now().Add(rollbackBound); timerWaits(id); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the timer outlives its transaction")
		}
	}
}

// --netns /proc/PID/ns/net names a namespace by a process, which may exit
// before the deadline: the timer reaches the namespace all the same (by
// its name when it has one, else by a descriptor it holds). Transaction
// walk (test/txwalk), shrunk: begin --confirm-within with --netns
// /proc/PID/ns/net, holder-exit, deadline: the timer's rollback --due
// could not open the namespace and the transaction stayed pending.
func TestTxWalkFindingProcNetnsHolderExits(t *testing.T) {
	for _, named := range []bool{true, false} {
		t.Run(map[bool]string{true: "named", false: "unnamed"}[named], func(t *testing.T) {
			m := newMgmt(t)
			serve(t, m.host, serverAddr)
			// The holder: a process in the managed namespace; for the
			// unnamed case, in a mount namespace where the name is gone,
			// as a container's namespace is.
			argv := []string{"ip", "netns", "exec", m.host, "sleep", "1000"}
			if !named {
				// ip netns exec gives it a mount namespace of its own.
				argv = []string{"ip", "netns", "exec", m.host, "sh", "-c", `umount -l "/run/netns/$0" && exec sleep 1000`, m.host}
			}
			holder := exec.Command(argv[0], argv[1:]...)
			holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := holder.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); _ = holder.Wait() })
			pid := holder.Process.Pid
			want, err := os.Stat("/run/netns/" + m.host)
			if err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				// In the namespace, and past the umount: sleep runs.
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				if fi, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && os.SameFile(fi, want) && string(comm) == "sleep\n" {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the holder did not enter the namespace")
				}
			}
			// The command runs where the holder's mount namespace is: it
			// sees the namespace without a name then.
			cmd := []string{binary, "apply", "--netns", fmt.Sprintf("/proc/%d/ns/net", pid), "-c", m.conf, "--state-dir", m.state,
				"--allow-insecure-config", "-o", "json", "--candidate", m.bad, "--confirm-within", "1s", "--rollback-timer", "process"}
			if !named {
				cmd = append([]string{"nsenter", "--mount", "--target", strconv.Itoa(pid), "--"}, cmd...)
			}
			c := exec.Command(cmd[0], cmd[1:]...)
			c.Env = m.env()
			stdout, err := c.Output()
			var out applyOutput
			if jerr := json.Unmarshal(stdout, &out); err != nil || jerr != nil || out.Transaction == nil {
				t.Fatalf("apply: %v %v\n%s", err, jerr, stdout)
			}
			id := out.Transaction.ID
			t.Cleanup(func() { killTimers(id) })
			// The namespace stays reachable by the test by its name.
			_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
			_ = holder.Wait()
			if _, err := m.waitRestored(out.Transaction.Deadline.Add(rollbackBound)); err != nil {
				files, _ := filepath.Glob(filepath.Join(m.state, "netns", "*", safeapply.FileName))
				for _, p := range files {
					data, _ := os.ReadFile(p)
					t.Logf("%s:\n%s", p, data)
				}
				t.Fatalf("%v (a timer waits: %v)", err, timerWaits(id))
			}
			for end := time.Now().Add(rollbackBound); timerWaits(id); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("the timer outlives its transaction")
				}
			}
		})
	}
}

// A namespace without a name, given as /proc/PID/ns/net, keeps its state
// (and the transaction) under netns/nsfs-DEV-INO; named during the window
// (ip netns attach), it is netns/NAME to whoever looks again. The process
// timer looked again at the deadline, found no transaction in that
// directory and exited: the candidate stayed installed and applied, the
// transaction pending for good. The timer keeps the state directory it
// found at its start.
func TestTxWalkFinding122NamespaceNamedDuringTheWindow(t *testing.T) {
	nettest.RequireRoot(t)
	pid := unnamedNetns(t)
	f := newTxFixture(t, fmt.Sprintf("/proc/%d/ns/net", pid))
	out := f.begin("1s")
	name := fmt.Sprintf("sa-n-%d", os.Getpid())
	if b, err := exec.Command("ip", "netns", "attach", name, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("ip netns attach: %v\n%s", err, b)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	f.waitRolledBack(out, func() (bool, string) {
		return exec.Command("ip", "-n", name, "link", "show", "rb1").Run() != nil, ""
	})
}

// txGood and txNext are the main file and the candidate of a transaction
// fixture: the candidate adds the bridge rb1.
const (
	txGood = "version: 1\nlinks:\n  rb0: {kind: bridge}\n"
	txNext = "version: 1\nlinks:\n  rb0: {kind: bridge}\n  rb1: {kind: bridge}\n"
)

// txFixture is a main file holding txGood, a candidate holding txNext and
// a state directory, in a directory of the test's, and the namespace the
// commands run in (a name or a /proc/PID/ns/net path).
type txFixture struct {
	t                        *testing.T
	conf, cand, state, netns string
}

func newTxFixture(t *testing.T, netns string) *txFixture {
	t.Helper()
	dir := t.TempDir()
	f := &txFixture{t: t, conf: filepath.Join(dir, "nr.yaml"), cand: filepath.Join(dir, "cand.yaml"), state: filepath.Join(dir, "state"), netns: netns}
	for p, c := range map[string]string{f.conf: txGood, f.cand: txNext} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// run runs netreconcile over the fixture and returns its standard output;
// a failure fails the test.
func (f *txFixture) run(args ...string) []byte {
	f.t.Helper()
	out, err := exec.Command(binary, append(args, "--netns", f.netns, "-c", f.conf, "--state-dir", f.state, "--allow-insecure-config")...).Output()
	if err != nil {
		f.t.Fatalf("netreconcile %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// begin applies the main file, then the candidate with a process timer
// and the deadline within; the timer is killed when the test ends.
func (f *txFixture) begin(within string) applyOutput {
	f.t.Helper()
	f.run("apply", "-q")
	var out applyOutput
	if err := json.Unmarshal(f.run("apply", "-o", "json", "--candidate", f.cand, "--confirm-within", within, "--rollback-timer", "process"), &out); err != nil || out.Transaction == nil {
		f.t.Fatalf("apply --confirm-within: %v", err)
	}
	id := out.Transaction.ID
	f.t.Cleanup(func() { killTimers(id) })
	return out
}

// waitRolledBack waits, up to rollbackBound past the deadline, for the main
// file to hold txGood again and rolled to say the kernel (or the record)
// is back (with what to show when not); then for no timer to wait.
func (f *txFixture) waitRolledBack(out applyOutput, rolled func() (bool, string)) {
	f.t.Helper()
	id := out.Transaction.ID
	for end := out.Transaction.Deadline.Add(rollbackBound); ; time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(f.conf)
		ok, more := rolled()
		if string(data) == txGood && ok {
			break
		}
		if time.Now().After(end) {
			f.t.Fatalf("not rolled back %s after the deadline (a timer waits: %v); the main file holds:\n%s%s", rollbackBound, timerWaits(id), data, more)
		}
	}
	for end := time.Now().Add(rollbackBound); timerWaits(id); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			f.t.Fatal("the timer outlives its transaction")
		}
	}
}

// unnamedNetns starts a process in a network namespace of its own, which no
// name refers to, and returns its pid: the namespace is /proc/PID/ns/net
// until the test ends.
func unnamedNetns(t *testing.T) int {
	t.Helper()
	holder := exec.Command("unshare", "--net", "sleep", "1000")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	pid := holder.Process.Pid
	own, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if fi, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && !os.SameFile(fi, own) && string(comm) == "sleep\n" {
			return pid
		}
		if time.Now().After(end) {
			t.Fatal("the holder did not enter a namespace of its own")
		}
	}
}

// The process timer identified the namespace when it started, after the
// apply that started it had recorded the transaction: on a loaded machine
// the namespace could be named (ip netns attach) before the timer got to
// look, and the timer then looked in netns/NAME for a transaction recorded
// in netns/nsfs-…, found none and exited; the candidate stayed installed
// and the transaction pending (make test's packaged-host lane, at load 5).
// The apply hands the timer the namespace's identity as it found it. The
// test plays the late start: it stops the timer the apply started, names
// the namespace, and starts the timer's command line again.
func TestTxWalkFinding164NamespaceNamedBeforeTheTimerLooked(t *testing.T) {
	nettest.RequireRoot(t)
	pid := unnamedNetns(t)
	nsPath := fmt.Sprintf("/proc/%d/ns/net", pid)
	f := newTxFixture(t, nsPath)
	id := f.begin("4s").Transaction.ID
	var timer []string
	for _, e := range mustReadDir(t, "/proc") {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte("\x00--due\x00")) && bytes.Contains(b, []byte("\x00"+id)) {
			timer = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		}
	}
	if timer == nil {
		t.Fatal("no timer process waits for the transaction")
	}
	killTimers(id)
	for end := time.Now().Add(rollbackBound); timerWaits(id); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the timer did not die")
		}
	}
	name := fmt.Sprintf("sa-l-%d", os.Getpid())
	if b, err := exec.Command("ip", "netns", "attach", name, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("ip netns attach: %v\n%s", err, b)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	// The timer as the apply started it, starting only now: descriptor 3
	// its gate (no gate variable: it does not wait), 4 the namespace.
	nsFile, err := os.Open(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nsFile.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	late := exec.Command(binary, timer[1:]...)
	late.ExtraFiles = []*os.File{devnull, nsFile}
	late.Dir = "/"
	if b, err := late.CombinedOutput(); err != nil {
		t.Fatalf("the timer: %v\n%s", err, b)
	}
	data, _ := os.ReadFile(f.conf)
	if string(data) != txGood {
		t.Errorf("the timer exited with the main file holding the candidate:\n%s", data)
	}
	if exec.Command("ip", "-n", name, "link", "show", "rb1").Run() == nil {
		t.Error("the timer exited with the candidate's link in the kernel")
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

// A namespace deleted during the window (ip netns del) took its kernel
// state with it; the timer, which could no longer open it, retried every
// second for ever: the candidate stayed installed (a namespace made again
// under the name, or the daemon, would apply it), the transaction pending,
// the timer alive. It writes the files back, and ends the transaction
// saying the namespace is gone.
func TestTxWalkFinding128NamespaceDeletedDuringTheWindow(t *testing.T) {
	nettest.RequireRoot(t)
	ns := fmt.Sprintf("sa-gone-%d", os.Getpid())
	if b, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, b)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	f := newTxFixture(t, ns)
	out := f.begin("1s")
	if b, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v\n%s", err, b)
	}
	record := filepath.Join(f.state, "netns", ns, safeapply.FileName)
	f.waitRolledBack(out, func() (bool, string) {
		r, _ := os.ReadFile(record)
		return strings.Contains(string(r), "the namespace is gone") && !strings.Contains(string(r), `"pending"`), "the record:\n" + string(r)
	})
}

// Under ip netns exec (no --netns), the namespace is the command's own,
// which is not the service manager's: a systemd timer would run
// "rollback --due" in the service manager's namespace, with the same state
// directory, and plan the restore point there. Where systemd is the
// service manager, --rollback-timer auto arranged one all the same. A
// process timer, which stays in the namespace, holds the deadline instead.
// Played in a mount namespace of the test's own where /run/systemd/system
// exists and systemd-run is a stand-in that accepts the timer.
func TestTxWalkFinding129ExecFormTimerStaysInTheNamespace(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "unshare")
	ns := nettest.NewNetNSPrefixed(t, "sa-ex")
	f := newTxFixture(t, ns)
	dir, conf, cand, state := t.TempDir(), f.conf, f.cand, f.state
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "systemd-run"), []byte("#!/bin/sh\necho \"$@\" >>\"$(dirname \"$0\")/systemd-run.args\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `set -e
mount --make-rprivate /
mkdir -p "$D/oldrun"
mount --rbind /run "$D/oldrun"
mount -t tmpfs tmpfs /run
mkdir -p /run/netns /run/systemd/system
mount --rbind "$D/oldrun/netns" /run/netns
export PATH="$D/bin:$PATH"
ip netns exec "$NS" "$BIN" apply -q -c "$C" --state-dir "$S" --allow-insecure-config
exec ip netns exec "$NS" "$BIN" apply -o json --confirm-within 1s --candidate "$CAND" -c "$C" --state-dir "$S" --allow-insecure-config`
	c := exec.Command("unshare", "--mount", "sh", "-c", script)
	c.Env = append(os.Environ(), "D="+dir, "NS="+ns, "BIN="+binary, "C="+conf, "S="+state, "CAND="+cand)
	stdout, err := c.Output()
	var out applyOutput
	if jerr := json.Unmarshal(stdout, &out); err != nil || jerr != nil || out.Transaction == nil || out.Transaction.Timer == nil {
		t.Fatalf("apply --confirm-within under ip netns exec: %v %v\n%s", err, jerr, stdout)
	}
	id := out.Transaction.ID
	t.Cleanup(func() { killTimers(id) })
	if holder := *out.Transaction.Timer; !strings.HasPrefix(holder, "process:") {
		t.Fatalf("the deadline is held by %s, which runs in the service manager's namespace", holder)
	}
	f.waitRolledBack(out, func() (bool, string) {
		return exec.Command("ip", "-n", ns, "link", "show", "rb1").Run() != nil, ""
	})
}

// A --candidate whose rule nft refuses (found when the rules are compiled,
// after the parse) is reported at the candidate's own position, as the
// parse's errors are: it named the main file, at the candidate's line
// (finding 124, nft's errors; seen in a transaction walk soak).
func TestTxWalkFinding124NftErrorsNameTheCandidate(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNSPrefixed(t, "sa-nft")
	dir := t.TempDir()
	conf, cand, state := filepath.Join(dir, "nr.yaml"), filepath.Join(dir, "cand.yaml"), filepath.Join(dir, "state")
	writeFile(t, conf, "version: 1\nlinks:\n  rb0: {kind: bridge}\n")
	writeFile(t, cand, "version: 1\nnftables:\n  inet t1:\n    chains:\n      c: {type: filter, hook: input, priority: 0, rules: [\"tcp dport 22 bogus\"]}\n")
	common := []string{"--netns", ns, "-c", conf, "--state-dir", state, "--allow-insecure-config"}
	if out, err := exec.Command(binary, append([]string{"apply", "-q"}, common...)...).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	out, err := exec.Command(binary, append([]string{"apply", "--confirm-within", "60s", "--candidate", cand}, common...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), cand+":5:") || strings.Contains(string(out), conf+":") {
		t.Errorf("apply --candidate with a rule nft refuses: %v\n%s\nwant the error at %s:5:…", err, out, cand)
	}
	if data, _ := os.ReadFile(conf); !strings.Contains(string(data), "rb0") {
		t.Error("the refused candidate was installed")
	}
}

// The packaged service's daemon cannot write the main file back when it
// rolls back at the deadline: it pins the confirmed configuration, and the
// kernel stays rolled back. The guest's systemd checks (the daemon
// restarted during the window, a --candidate root installed) saw the daemon
// apply the rejected candidate again right after its own rollback and never
// pin it. Here the daemon sees its configuration directory read-only.
func TestTxWalkFinding125DaemonThatCannotWriteBackPinsAfterItsRollback(t *testing.T) {
	m := newMgmt(t)
	// No safe-apply command ran on the namespace before: the daemon's
	// first converged pass makes the record (newMgmt's plain apply made it).
	if err := os.Remove(filepath.Join(m.state, "netns", m.host, safeapply.FileName)); err != nil {
		t.Fatal(err)
	}
	d := m.startDaemonReadOnlyConf()
	d.waitLog(t, "converged; ready", rollbackBound)
	r := m.cli("apply", "-o", "json", "--candidate", m.bad, "--confirm-within", "4s", "--rollback-timer", "daemon")
	var out applyOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.Transaction == nil {
		t.Fatalf("apply: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if !m.fileIs(mgmtConf(m.client, true)) || m.routed() {
		t.Fatal("the candidate is not installed and applied")
	}
	// Started again during the window, as systemctl restart does.
	d.kill()
	d = m.startDaemonReadOnlyConf()
	d.waitLog(t, "converged; ready", rollbackBound)
	d.waitLog(t, "safe-apply transaction rolled back", rollbackBound)
	d.waitLog(t, "enforcing the confirmed configuration", rollbackBound)
	if !m.fileIs(mgmtConf(m.client, true)) {
		t.Fatal("the daemon wrote the read-only main file back")
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !m.routed() {
			t.Fatalf("after the rollback the daemon applied the rejected candidate again:\n%s", d.text())
		}
	}
	f, err := os.ReadFile(filepath.Join(m.state, "netns", m.host, safeapply.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var rec safeapply.File
	if err := json.Unmarshal(f, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Confirmed == nil || len(rec.Confirmed.Files) == 0 || string(rec.Confirmed.Files[0].Data) != m.good {
		t.Errorf("the confirmed configuration is not the restore point after the rollback")
	}
}

// An edit the daemon applied during the window is part of what runs once
// the transaction is confirmed, and of the next restore point: the daemon
// records its configuration in force after the confirm. It tried once,
// while the transaction was pending, and never again: the confirm recorded
// what the transaction's apply made, and the next transaction's rollback
// took the edit (a fragment added in the window) out of the files and the
// kernel, though it had run, confirmed, since.
func TestTxWalkFinding125DaemonRecordsAnEditOfTheWindowAfterTheConfirm(t *testing.T) {
	m := newMgmt(t)
	d := m.startDaemon()
	d.waitLog(t, "converged; ready", rollbackBound)
	cand := filepath.Join(m.dir, "cand.yaml")
	writeFile(t, cand, m.good+"  - {to: 10.52.0.0/24, type: blackhole}\n")
	r := m.cli("apply", "-o", "json", "--candidate", cand, "--confirm-within", "60s", "--rollback-timer", "daemon")
	var out applyOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.Transaction == nil {
		t.Fatalf("apply: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	frag := filepath.Join(filepath.Dir(m.conf), "conf.d", "extra.yaml")
	if err := os.MkdirAll(filepath.Dir(frag), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, frag, "version: 1\nroutes:\n  - {to: 10.51.0.0/24, type: blackhole}\n")
	edited := func() bool {
		return strings.Contains(nettest.IP(t, m.host, "route", "show", "10.51.0.0/24"), "blackhole")
	}
	for end := time.Now().Add(rollbackBound); !edited(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the daemon did not apply the fragment added in the window")
		}
	}
	if r := m.cli("confirm", out.Transaction.ID); r.code != 0 {
		t.Fatalf("confirm: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for end := time.Now().Add(rollbackBound); ; time.Sleep(50 * time.Millisecond) {
		f, err := os.ReadFile(filepath.Join(m.state, "netns", m.host, safeapply.FileName))
		if err == nil && strings.Contains(string(f), `extra.yaml"`) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the confirmed configuration does not hold the fragment the daemon applied in the window: %v", err)
		}
	}
	r = m.cli("apply", "-o", "json", "--candidate", m.bad, "--confirm-within", "60s", "--rollback-timer", "daemon")
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := m.cli("rollback"); r.code != 0 {
		t.Fatalf("rollback: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(frag); err != nil || !edited() {
		t.Errorf("the rollback took out the fragment confirmed with the last transaction: %v", err)
	}
}
