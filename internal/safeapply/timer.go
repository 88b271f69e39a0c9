package safeapply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// DaemonLock is the file the daemon (netreconcile run) holds an flock on for
// its whole life, in the namespace's state directory: a command that finds
// it held knows a daemon watches this namespace's transactions. The kernel
// drops the lock when the daemon dies, even by SIGKILL, so a dead daemon is
// never taken for a live one.
const DaemonLock = "daemon.lock"

// TimerMode says what holds a transaction's deadline once apply returns.
type TimerMode string

const (
	// TimerAuto: the daemon when one runs for the namespace, else a
	// systemd timer when systemd is the service manager, else a process.
	TimerAuto TimerMode = "auto"
	// TimerDaemon requires the daemon.
	TimerDaemon TimerMode = "daemon"
	// TimerSystemd: a transient timer unit (systemd-run) that runs
	// "netreconcile rollback --due ID" at the deadline, outside the
	// caller's session and the service's cgroup.
	TimerSystemd TimerMode = "systemd"
	// TimerProcess: a detached process (its own session, no terminal)
	// that sleeps until the deadline: "netreconcile rollback --due ID".
	TimerProcess TimerMode = "process"
)

// ParseTimerMode checks a --rollback-timer value.
func ParseTimerMode(s string) (TimerMode, error) {
	switch m := TimerMode(s); m {
	case TimerAuto, TimerDaemon, TimerSystemd, TimerProcess:
		return m, nil
	}
	return "", fmt.Errorf("--rollback-timer must be auto, daemon, systemd or process, not %q", s)
}

// Timer arranges what rolls a transaction back at its deadline.
//
// The daemon needs nothing handed over: it watches transaction.json (and
// reads it again on start and on every resync), so the file is the message
// and a missed notification costs nothing. The other timers run
// "netreconcile rollback --due ID", which sleeps until the deadline read
// from the file, again and again while it is extended, and exits when the
// transaction ended otherwise. Every actor takes the namespace's lock and
// re-reads the file before acting, so two of them never both roll back.
//
// With --rollback-timer auto a timer of its own (systemd, else a process)
// is arranged even when a daemon holds the deadline: a daemon stopped for
// good or killed during the window (systemctl stop, a crash past its
// restart limit, a daemon run by hand) would otherwise leave the
// transaction pending until some command happened to run.
type Timer struct {
	Mode TimerMode
	// Dir is the namespace's state directory, where the daemon's lock is.
	Dir *statedir.Dir
	// Program is the netreconcile binary; Args are the options the timer's
	// command line needs to find the same namespace and state directory
	// (--state-dir, --netns, …).
	Program string
	Args    []string
	// Netns, when set, is the namespace, handed to a process timer as
	// descriptor 4 (Args name it --netns /proc/self/fd/4): a namespace
	// without a name, given as /proc/PID/ns/net, whose process may be gone
	// by the deadline. A systemd timer cannot be handed one.
	Netns *os.File
	// Elsewhere: the namespace is the caller's own (no --netns, as
	// under ip netns exec), and not the service manager's. A systemd
	// timer runs in the service manager's namespace: its rollback would
	// plan the restore point there.
	Elsewhere bool
	// Now is the clock.
	Now func() time.Time
	// SystemdRun and Booted stand in for systemd-run and sd_booted(3) in
	// tests ("" and nil: the real ones).
	SystemdRun string
	Booted     func() bool
}

// Arranged is what holds a transaction's deadline.
type Arranged struct {
	// Holder is "daemon:PID", "systemd:UNIT" or "process:PID"; Fallback,
	// beside a daemon, the timer of its own that rolls back if the daemon
	// is gone by the deadline ("" when none).
	Holder, Fallback string
	// Release lets a process timer started for this transaction go on:
	// it waits until the transaction is recorded (Release), or the
	// process that started it is gone, before it reads the file, so that
	// one started for a transaction never recorded exits at once.
	Release func()
	// Warning says why no fallback could be arranged beside the daemon.
	Warning error
}

// TimerGateEnv names the descriptor a process timer waits on (Release).
const TimerGateEnv = "NETRECONCILE_TIMER_GATE"

// NetnsFD is the descriptor a process timer is handed the namespace on
// (Timer.Netns).
const NetnsFD = 4

// DaemonPID returns the pid of the daemon holding dir's DaemonLock, or 0
// when none does.
func DaemonPID(dir *statedir.Dir) int {
	unlock, err := dir.Lock(context.Background(), DaemonLock, statedir.LockOptions{NoWait: true})
	if err == nil {
		unlock()
		return 0
	}
	if errors.Is(err, statedir.ErrLocked) {
		if pid := statedir.LockedBy(err); pid > 0 {
			return pid
		}
		return -1
	}
	return 0
}

// systemdBooted reports whether systemd is the service manager
// (sd_booted(3)).
func systemdBooted() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// Arrange sets up what holds t's deadline. On an extension, a process
// timer still waiting for t is kept: it reads the moved deadline again.
func (tm *Timer) Arrange(t *Txn) (*Arranged, error) {
	a := &Arranged{Release: func() {}}
	daemon := 0
	if tm.Mode == TimerAuto || tm.Mode == TimerDaemon {
		daemon = DaemonPID(tm.Dir)
	}
	if tm.Mode == TimerDaemon {
		if daemon == 0 {
			return nil, errors.New("--rollback-timer daemon: no daemon (netreconcile run) holds this namespace's state directory")
		}
		a.Holder = "daemon:" + strconv.Itoa(max(daemon, 0))
		// A timer an earlier apply of t started still waits for it:
		// named as the fallback, it is stopped when t ends, instead of
		// living on unnamed until the deadline.
		for _, prev := range []string{t.Timer, t.Fallback} {
			if processWaits(prev, t.ID) || strings.HasPrefix(prev, "systemd:") {
				a.Fallback = prev
				break
			}
		}
		return a, nil
	}
	own := ""
	for _, prev := range []string{t.Timer, t.Fallback} {
		if processWaits(prev, t.ID) {
			own = prev
			break
		}
	}
	var err, warning error
	if own == "" {
		var release func()
		own, release, warning, err = tm.arrangeOwn(t)
		// A fallback that could not be started beside a daemon leaves the
		// daemon's arrangement standing, and it has nothing to release.
		if release != nil {
			a.Release = release
		}
	}
	a.Warning = warning
	if daemon != 0 {
		a.Holder, a.Fallback = "daemon:"+strconv.Itoa(max(daemon, 0)), own
		if err != nil {
			a.Warning = fmt.Errorf("no fallback timer beside the daemon: %w", err)
		}
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	a.Holder = own
	return a, nil
}

// arrangeOwn starts a systemd or a process timer for t. Where the mode was
// not asked for and systemd-run fails (no system bus for a user other than
// root, as when root's command runs as the service's user), a process
// timer holds the deadline, and the warning says why.
func (tm *Timer) arrangeOwn(t *Txn) (holder string, release func(), warning, err error) {
	mode := tm.Mode
	chosen := mode == TimerAuto || mode == TimerDaemon
	if chosen {
		mode = TimerProcess
		if tm.booted() && tm.Netns == nil && !tm.Elsewhere {
			mode = TimerSystemd
		}
	}
	if mode == TimerSystemd {
		holder, err := tm.arrangeSystemd(t)
		if err == nil || !chosen {
			return holder, func() {}, nil, err
		}
		warning = fmt.Errorf("%w; a process timer holds the deadline instead", err)
	}
	holder, release, err = tm.arrangeProcess(t)
	return holder, release, warning, err
}

func (tm *Timer) booted() bool {
	if tm.Booted != nil {
		return tm.Booted()
	}
	return systemdBooted()
}

// arrangeSystemd starts a transient systemd timer for t.
func (tm *Timer) arrangeSystemd(t *Txn) (string, error) {
	args := append(append([]string{"rollback", "--due"}, tm.Args...), t.ID)
	if tm.Netns != nil {
		return "", errors.New("--rollback-timer systemd: a namespace without a name, given as a /proc path, cannot be handed to a systemd timer: name it (ip netns attach NAME PID) or use --rollback-timer process")
	}
	if tm.Elsewhere {
		return "", errors.New("--rollback-timer systemd: this command runs in another network namespace than the service manager's (ip netns exec), where a systemd timer would roll back: give the namespace with --netns NAME, or use --rollback-timer process")
	}
	now := time.Now
	if tm.Now != nil {
		now = tm.Now
	}
	secs := int(math.Ceil(t.Deadline.Sub(now()).Seconds()))
	unit := fmt.Sprintf("%s%s-%d", timerUnitPrefix, t.ID, t.Extended)
	run := "systemd-run"
	if tm.SystemdRun != "" {
		run = tm.SystemdRun
	}
	cmd := exec.Command(run, append([]string{"--quiet", "--collect", "--unit", unit,
		"--description", "netreconcile: roll back transaction " + t.ID + " unless confirmed",
		"--on-active", strconv.Itoa(max(secs, 1)) + "s",
		// The default AccuracySec is a minute.
		"--timer-property", "AccuracySec=100ms",
		tm.Program}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("systemd-run: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return "systemd:" + unit, nil
}

// arrangeProcess starts a process timer for t: the program itself, in a
// session of its own, waiting for the deadline.
func (tm *Timer) arrangeProcess(t *Txn) (string, func(), error) {
	args := append(append([]string{"rollback", "--due"}, tm.Args...), t.ID)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return "", nil, fmt.Errorf("start the rollback timer: %w", err)
	}
	defer devnull.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return "", nil, fmt.Errorf("start the rollback timer: %w", err)
	}
	defer gateR.Close()
	cmd := exec.Command(tm.Program, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.ExtraFiles = []*os.File{gateR}
	if tm.Netns != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, tm.Netns)
	}
	cmd.Env = append(os.Environ(), TimerGateEnv+"=3")
	// Its own session: no terminal whose hangup would kill it, and out of
	// the caller's process group, which a shell or Ansible may kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		gateW.Close()
		return "", nil, fmt.Errorf("start the rollback timer: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return "process:" + strconv.Itoa(pid), func() { gateW.Close() }, nil
}

// WaitGate is the start of a process timer: it waits until the process
// that started it recorded the transaction (or is gone), so that the file
// it reads next tells whether there is one to wait for.
func WaitGate(getenv func(string) string) {
	v := getenv(TimerGateEnv)
	if v == "" {
		return
	}
	os.Unsetenv(TimerGateEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return
	}
	f := os.NewFile(uintptr(fd), "timer-gate")
	_, _ = io.Copy(io.Discard, f)
	f.Close()
}

// processWaits says whether timer is a process that still waits for
// transaction id (its pid may have been reused: its command line must name
// the transaction).
func processWaits(timer, id string) bool {
	kind, ref, _ := strings.Cut(timer, ":")
	pid, err := strconv.Atoi(ref)
	if kind != "process" || err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + ref + "/cmdline")
	return err == nil && strings.Contains(string(cmdline), "\x00--due\x00") && strings.Contains(string(cmdline), "\x00"+id)
}

// stopTimer ends a transaction's timers once it ended otherwise, best
// effort: a timer left running wakes at the deadline, finds the
// transaction ended and exits. A process is signalled only if its command
// line still names the transaction (its pid may have been reused); the
// systemd units of every apply of the transaction are stopped (an
// extension makes one more).
func stopTimer(t *Txn) {
	for _, timer := range []string{t.Timer, t.Fallback} {
		kind, ref, _ := strings.Cut(timer, ":")
		switch kind {
		case "systemd":
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			pattern := timerUnitPrefix + t.ID + "-*"
			_ = exec.CommandContext(ctx, "systemctl", "stop", "--no-block", pattern+".timer", pattern+".service").Run()
			cancel()
		case "process":
			if processWaits(timer, t.ID) {
				pid, _ := strconv.Atoi(ref)
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	}
}

// WaitDue is "rollback --due ID": it sleeps until the deadline of
// transaction id as the file says it now (an extension moves it), and at
// the deadline takes the lock (open) and rolls back what is due. It
// returns nil at once when id is no longer pending.
func WaitDue(ctx context.Context, dir *statedir.Dir, id string, open func(ctx context.Context) (*Host, func(), error)) (*RollbackResult, error) {
	for {
		// Stamped before the read: a change made during it is seen.
		stamp, serr := dir.Stamp(FileName)
		f, err := Load(dir)
		if err != nil {
			return nil, err
		}
		if f.Pending == nil || f.Pending.ID != id {
			return nil, nil
		}
		if deadline := f.Pending.Deadline; time.Until(deadline) > 0 {
			// Until the deadline, or until the file changes: an
			// extension with a shorter --confirm-within moves the
			// deadline nearer, and the transaction may end otherwise.
			// A stamp is one fstatat; the file is read again only when
			// it changed.
			for wait := time.Until(deadline); wait > 0; wait = time.Until(deadline) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(min(wait, recheckDue)):
				}
				if st, err := dir.Stamp(FileName); serr != nil || err != nil || st != stamp {
					break
				}
			}
			continue
		}
		h, closeFn, err := open(ctx)
		if err != nil {
			// A lock held past --lock-timeout, a kernel that cannot be
			// opened for now: this process is the deadline's only
			// keeper, so it tries again while the transaction is pending.
			select {
			case <-ctx.Done():
				return nil, errors.Join(err, ctx.Err())
			case <-time.After(retryDue):
			}
			continue
		}
		rolled, _, err := h.Due(ctx)
		closeFn()
		return rolled, err
	}
}

// timerUnitPrefix starts the name of a transaction's systemd timer unit:
// netreconcile-rollback-ID-N, N the extensions before it.
const timerUnitPrefix = "netreconcile-rollback-"

// retryDue is the wait of a timer that could not act at the deadline.
const retryDue = time.Second

// recheckDue is how often a timer waiting for a deadline looks whether
// transaction.json changed: the bound on how late it notices a deadline
// moved nearer.
const recheckDue = time.Second
