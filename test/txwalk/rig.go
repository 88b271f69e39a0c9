package txwalk

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/test/walk"
)

// Forms of --netns a walk uses for every command, the daemon and, through
// the command lines they make, the timers.
const (
	formName    = "name"         // --netns NAME
	formRunPath = "run-path"     // --netns /run/netns/NAME
	formProc    = "proc"         // --netns /proc/PID/ns/net, PID a process in the named namespace; it may exit
	formProcAno = "proc-unnamed" // the same, the namespace without a name as the commands see it
	formExec    = "exec"         // ip netns exec NAME netreconcile …: no --netns
)

// Mode is what a walk runs as: root, or root on a host whose state
// directory belongs to the packaged service's user (the commands then run
// as that user, root's process writing the main file); and the --netns form.
type Mode struct {
	Service bool
	Form    string
}

func (m Mode) String() string {
	who := "root"
	if m.Service {
		who = "service-user"
	}
	return who + "/" + m.Form
}

// rig is one walk's host: a fresh namespace with foreign objects, the
// configuration's directories, the state directory, the daemon when it
// runs, the processes that hold the namespace for the /proc forms.
type rig struct {
	opts   *Options
	mode   Mode
	ns     string // the namespace's name, as the oracle reaches it
	peerNS string
	base   string
	state  string
	boot   string // the boot id file (NETRECONCILE_TEST_BOOT_ID_FILE)
	bootN  int
	l      *layout
	// holders are processes in the namespace, for the /proc forms: the
	// first is the PID the command lines name; one that exits is replaced.
	holders []*exec.Cmd
	// daemon is the running daemon, nil when none; daemonN counts them
	// for their log files.
	daemon  *exec.Cmd
	dlog    string
	daemonN int
	dwait   chan error
	// paused: the daemon is stopped (SIGSTOP) between two passes, and
	// resumedAt is when it was last continued.
	paused    bool
	resumedAt time.Time
	// status is the daemon's last STATUS= (sd_notify).
	notify   *net.UnixConn
	statusMu sync.Mutex
	status   string
	// linkSeq numbers the deploy tree's link targets.
	linkSeq int
}

func newRig(opts *Options, mode Mode, peerNS string, lay Layout) (*rig, error) {
	rg := &rig{opts: opts, mode: mode, base: opts.Dir}
	rg.ns = fmt.Sprintf("%s-%d-%d", walk.NSPrefix, os.Getpid(), seq())
	rg.peerNS = peerNS
	_ = exec.Command("ip", "netns", "del", rg.peerNS).Run()
	for _, ns := range []string{rg.ns, rg.peerNS} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			rg.close()
			return nil, fmt.Errorf("ip netns add %s: %v: %s", ns, err, out)
		}
	}
	for _, d := range []string{rg.base, filepath.Dir(rg.base)} {
		// The service user reaches what the unit lets it read.
		if err := os.Chmod(d, 0o755); err != nil {
			rg.close()
			return nil, err
		}
	}
	gid := 0
	if mode.Service {
		gid = opts.User.GID
	}
	rg.l = lay.at(rg.base, gid)
	for _, d := range []string{rg.l.etc, rg.l.confD, rg.l.side, rg.l.deploy} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			rg.close()
			return nil, err
		}
	}
	rg.state = filepath.Join(rg.base, "state")
	if err := os.Mkdir(rg.state, 0o700); err != nil {
		rg.close()
		return nil, err
	}
	if mode.Service {
		if err := os.Chown(rg.state, opts.User.UID, opts.User.GID); err != nil {
			rg.close()
			return nil, err
		}
	}
	rg.boot = filepath.Join(rg.base, "boot_id")
	if err := rg.reboot(); err != nil {
		rg.close()
		return nil, err
	}
	if mode.Form == formProc || mode.Form == formProcAno {
		for i := 0; i < 2; i++ {
			if err := rg.addHolder(); err != nil {
				rg.close()
				return nil, err
			}
		}
	}
	if err := rg.listenNotify(); err != nil {
		rg.close()
		return nil, err
	}
	return rg, nil
}

var seqN struct {
	sync.Mutex
	n int
}

func seq() int {
	seqN.Lock()
	defer seqN.Unlock()
	seqN.n++
	return seqN.n
}

// reboot gives the host a new boot id, as a reboot would (with the
// namespace and the state directory kept).
func (r *rig) reboot() error {
	r.bootN++
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", os.Getpid(), r.bootN)
	return os.WriteFile(r.boot, []byte(id+"\n"), 0o644)
}

// addHolder starts a process that holds the namespace.
func (r *rig) addHolder() error {
	cmd := exec.Command("ip", "netns", "exec", r.ns, "sleep", "1000000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	// ip netns exec execs sleep: the pid is the holder's once it runs
	// in the namespace.
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, err1 := os.Stat(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
		b, err2 := os.Stat("/run/netns/" + r.ns)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("holder of %s did not enter it: %v %v", r.ns, err1, err2)
		}
		time.Sleep(5 * time.Millisecond)
	}
	go func() { _ = cmd.Wait() }()
	r.holders = append(r.holders, cmd)
	return nil
}

// holderExit ends the process the command lines name, and starts another.
func (r *rig) holderExit() error {
	if len(r.holders) == 0 {
		return nil
	}
	h := r.holders[0]
	r.holders = r.holders[1:]
	_ = syscall.Kill(h.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", h.Process.Pid)); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r.addHolder()
}

// netnsArgs are the --netns options of the walk's form.
func (r *rig) netnsArgs() []string {
	switch r.mode.Form {
	case formName:
		return []string{"--netns", r.ns}
	case formRunPath:
		return []string{"--netns", "/run/netns/" + r.ns}
	case formProc, formProcAno:
		return []string{"--netns", fmt.Sprintf("/proc/%d/ns/net", r.holders[0].Process.Pid)}
	}
	return nil
}

// argv is the command line that runs netreconcile cmd args as the walk's
// mode says: as root (with --netns, or in the namespace by ip netns exec),
// or as root on the service user's state directory, in the namespace and in
// a mount namespace where that user exists.
func (r *rig) argv(cmd string, args ...string) []string {
	a := append([]string{r.opts.Bin, cmd}, args...)
	a = append(a, "--state-dir", r.state, "-c", r.l.main)
	a = append(a, r.netnsArgs()...)
	if r.mode.Form == formExec {
		a = append([]string{"ip", "netns", "exec", r.ns}, a...)
	}
	if r.mode.Form == formProcAno {
		// The commands see the namespace without its name (the state
		// directory's key is then its nsfs identity); the oracle reaches
		// it by the name, in the walk's own mount namespace.
		a = append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
			`umount -l "/run/netns/$1" && shift && exec "$@"`, "sh", r.ns}, a...)
	}
	if r.mode.Service {
		a = r.opts.User.Wrap(a...)
	}
	return a
}

func (r *rig) env() []string {
	return append(os.Environ(), safeapply.BootIDFileEnv+"="+r.boot)
}

// result is what a command did.
type result struct {
	code           int
	stdout, stderr string
	killed         bool
	took           time.Duration
}

func (res result) String() string {
	s := fmt.Sprintf("exit %d", res.code)
	if res.killed {
		s = "SIGKILLed"
	}
	return fmt.Sprintf("%s after %s\n%s%s", s, res.took.Round(time.Millisecond), indent(res.stdout), indent(res.stderr))
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    | " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    | ") + "\n"
}

// commandTimeout bounds a command: one that takes longer hangs.
const commandTimeout = 3 * time.Minute

// run runs a command; with kill > 0 it is SIGKILLed after that long if it
// still runs. killWhat says which process (service mode): root's, the
// service user's child, or both.
func (r *rig) run(kill time.Duration, killWhat string, cmd string, args ...string) (result, error) {
	argv := r.argv(cmd, args...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = r.env()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := c.Start(); err != nil {
		return result{}, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	killed, child := false, 0
	timeout := time.NewTimer(commandTimeout)
	defer timeout.Stop()
	var killC <-chan time.Time
	if kill > 0 {
		t := time.NewTimer(kill)
		defer t.Stop()
		killC = t.C
	}
	for wait := true; wait; {
		select {
		case err = <-done:
			wait = false
		case <-killC:
			killed, child = r.kill(c.Process.Pid, killWhat)
			killC = nil
		case <-timeout.C:
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
			return result{}, fmt.Errorf("netreconcile %s: still running after %s\n%s%s", cmd, commandTimeout, out.String(), errb.String())
		}
	}
	if child > 0 {
		// The service user's command outlives root's process (a
		// session of its own): the step ends when it does.
		for i := 0; procAlive(child) && i < int(commandTimeout/(10*time.Millisecond)); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if procAlive(child) {
			return result{}, fmt.Errorf("netreconcile %s: the service user's command %d still runs %s after root's was killed", cmd, child, commandTimeout)
		}
	}
	res := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.code = 128 + int(st.Signal())
			res.killed = killed
		}
	case err != nil:
		return res, err
	}
	if killed && !res.killed && killWhat != "root" {
		// The service user's child was killed, root's process saw it.
		res.killed = true
	}
	return res, nil
}

// kill SIGKILLs the command started as pid (its wrappers exec it in the
// same process): root's process, the service user's child, or both. It
// returns the child, which the step waits for when it lives on.
func (r *rig) kill(pid int, what string) (bool, int) {
	child := 0
	if r.mode.Service {
		child = childOf(pid, r.opts.Bin)
	}
	killed := false
	if child > 0 && what != "root" {
		killed = syscall.Kill(child, syscall.SIGKILL) == nil
	}
	if what != "child" {
		killed = syscall.Kill(pid, syscall.SIGKILL) == nil || killed
	}
	return killed, child
}

// childOf finds the process pid started running bin.
func childOf(pid int, bin string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if exe, _ := os.Readlink("/proc/" + e.Name() + "/exe"); exe == bin {
				return p
			}
		}
	}
	return 0
}

// timerProcs lists the rollback timers of this walk's state directory:
// processes running "rollback --due", by pid, with the transaction they
// wait for.
func (r *rig) timerProcs() map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte("\x00rollback\x00--due\x00")) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		for i, a := range args {
			if a == "--state-dir" && i+1 < len(args) && args[i+1] == r.state {
				out[pid] = args[len(args)-1]
			}
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(stat), ") Z ") {
			delete(out, pid)
		}
	}
	return out
}

// listenNotify is the daemon's NOTIFY_SOCKET: its STATUS= says which
// transaction it holds a timer for.
func (r *rig) listenNotify() error {
	p := filepath.Join(r.base, "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		return err
	}
	if err := os.Chmod(p, 0o777); err != nil {
		c.Close()
		return err
	}
	r.notify = c
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := c.ReadFromUnix(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if s, ok := strings.CutPrefix(line, "STATUS="); ok {
					r.statusMu.Lock()
					r.status = s
					r.statusMu.Unlock()
				}
			}
		}
	}()
	return nil
}

func (r *rig) daemonStatus() string {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	return r.status
}

// startDaemon starts netreconcile run as the walk's mode runs the service:
// as root, or as the service user with the unit's capabilities.
func (r *rig) startDaemon() error {
	if r.daemon != nil {
		return nil
	}
	r.daemonN++
	r.dlog = filepath.Join(r.base, fmt.Sprintf("daemon-%d.log", r.daemonN))
	logf, err := os.Create(r.dlog)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"run", "--resync-interval", "20s", "--log-level", "debug"}
	var argv []string
	if r.mode.Service {
		// As the packaged unit runs it: the service user, CAP_NET_ADMIN
		// and CAP_NET_RAW, in the namespace (no --netns).
		a := append([]string{r.opts.Bin}, args...)
		a = append(a, "--state-dir", r.state, "-c", r.l.main)
		argv = append([]string{"ip", "netns", "exec", r.ns, "setpriv",
			"--reuid", strconv.Itoa(r.opts.User.UID), "--regid", strconv.Itoa(r.opts.User.GID), "--clear-groups",
			"--inh-caps", "+net_admin,+net_raw", "--ambient-caps", "+net_admin,+net_raw"}, a...)
	} else {
		argv = r.argv(args[0], args[1:]...)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(r.env(), "NOTIFY_SOCKET="+filepath.Join(r.base, "notify.sock"))
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return err
	}
	r.daemon = c
	r.dwait = make(chan error, 1)
	go func(ch chan error) { ch <- c.Wait() }(r.dwait)
	// Ready once it started its loop (it rolled back what was due before).
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(r.dlog)
		if bytes.Contains(data, []byte("starting")) {
			return nil
		}
		select {
		case err := <-r.dwait:
			r.daemon = nil
			return fmt.Errorf("the daemon exited at start: %v\n%s", err, data)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the daemon did not start in 60 s:\n%s", data)
		}
	}
}

// writerLock is the namespace's writer lock file in its state directory,
// which the daemon holds for each pass (internal/cli).
const writerLock = "writer.lock"

// pauseDaemon stops the daemon between two of its passes: its process
// group is sent SIGSTOP while the walk holds the namespace's writer lock,
// which a pass holds from its start to its end, so that a paused daemon
// never holds it (the commands would wait for it). Its next pass comes
// when it is continued: the walk plays commands that run before it.
func (r *rig) pauseDaemon() error {
	if r.daemon == nil || r.paused {
		return nil
	}
	dir, err := r.stateDir()
	if err != nil {
		return err
	}
	// Opened, never made: the daemon made it on its first pass, with the
	// owner a service user needs.
	fd, err := syscall.Open(filepath.Join(dir, writerLock), syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err == nil {
		defer syscall.Close(fd)
		for limit := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				break
			}
			if err != syscall.EWOULDBLOCK || time.Now().After(limit) {
				return fmt.Errorf("take the writer lock to pause the daemon: %v", err)
			}
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	if err := syscall.Kill(-r.daemon.Process.Pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause the daemon: %v", err)
	}
	r.paused = true
	return nil
}

// resumeDaemon continues a paused daemon.
func (r *rig) resumeDaemon() error {
	if r.daemon == nil || !r.paused {
		return nil
	}
	r.paused, r.resumedAt = false, time.Now()
	return syscall.Kill(-r.daemon.Process.Pid, syscall.SIGCONT)
}

// stopDaemon stops the daemon with sig and waits for it.
func (r *rig) stopDaemon(sig syscall.Signal) error {
	if r.daemon == nil {
		return nil
	}
	pid := r.daemon.Process.Pid
	_ = syscall.Kill(pid, sig)
	if r.paused {
		// A stopped process acts on SIGTERM once continued.
		_ = syscall.Kill(-pid, syscall.SIGCONT)
		r.paused = false
	}
	select {
	case <-r.dwait:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-r.dwait
		r.daemon = nil
		return fmt.Errorf("the daemon did not stop on %s in 30 s", sig)
	}
	r.daemon = nil
	r.statusMu.Lock()
	r.status = ""
	r.statusMu.Unlock()
	return nil
}

// daemonLog is the running daemon's log, its last lines.
func (r *rig) daemonLog() string {
	if r.dlog == "" {
		return ""
	}
	data, _ := os.ReadFile(r.dlog)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// close tears the host down: the daemon, every timer of the state
// directory, the holders, the namespaces.
func (r *rig) close() {
	_ = r.stopDaemon(syscall.SIGKILL)
	for pid := range r.timerProcs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, h := range r.holders {
		_ = syscall.Kill(h.Process.Pid, syscall.SIGKILL)
	}
	if r.notify != nil {
		r.notify.Close()
	}
	if r.ns != "" {
		stopProcesses(r.ns)
		_ = exec.Command("ip", "netns", "del", r.ns).Run()
	}
	if r.peerNS != "" {
		_ = exec.Command("ip", "netns", "del", r.peerNS).Run()
	}
}

// stopProcesses ends what is left in the namespace.
func stopProcesses(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// stateDir is the namespace's state directory as the commands key it.
func (r *rig) stateDir() (string, error) {
	switch r.mode.Form {
	case formExec:
		return r.state, nil
	case formProcAno:
		var st syscall.Stat_t
		if err := syscall.Stat("/run/netns/"+r.ns, &st); err != nil {
			return "", err
		}
		return filepath.Join(r.state, "netns", fmt.Sprintf("nsfs-%d-%d", st.Dev, st.Ino)), nil
	}
	return filepath.Join(r.state, "netns", r.ns), nil
}
