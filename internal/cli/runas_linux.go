package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/redact"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// Root on a host with the packaged service.
//
// The packaged unit runs as the user netreconcile, which owns the state
// directory; root refuses a state directory another user could change
// (package statedir), so `sudo netreconcile diff` would fail there. Instead,
// root runs the command again as that user, with the capabilities the unit
// gives it (CAP_NET_ADMIN, CAP_NET_RAW): nothing that user could not do as
// the service. Only for that user, and only on the caller's own namespace:
// entering another (--netns) takes CAP_SYS_ADMIN, which the unit does not
// give, so root refuses the directory there as before. The command does not
// inherit root's terminal (its own session, its output copied through
// pipes), its descriptors or its environment beyond a short list, and is not
// dumpable: the service user's other processes cannot read or drive it.
//
// That user cannot write /etc/netreconcile, where apply --candidate
// installs the main file and a rollback writes it back: root's process
// stays, and writes the main file for it when asked (MainWriter, over two
// pipes). It trusts the service user with nothing it writes there: it
// installs only the candidate it read itself, keeps its own copy of what
// the file held before (.NAME.before-ID, root's, 0600) with its own record
// of the transaction, and a rollback puts back that copy, with the file's
// own mode and owner, only as that record allows, or nothing
// (rootrecord_linux.go). It writes no other path than the main file its own
// command line names and root's files beside it.

// serviceUser is the packaged unit's user (packaging/sysusers.conf); a
// variable for tests.
var serviceUser = "netreconcile"

// Environment of a command that root started as the service user.
const (
	runAsEnv       = "NETRECONCILE_RUN_AS"       // set: do not look again
	candidateFDEnv = "NETRECONCILE_CANDIDATE_FD" // --candidate's content, read by root
	mainWriterEnv  = "NETRECONCILE_MAIN_WRITER"  // "W,R": requests out, answers in
	planInFDEnv    = "NETRECONCILE_PLAN_IN_FD"   // apply --plan FILE, opened by root
	planOutFDEnv   = "NETRECONCILE_PLAN_OUT_FD"  // diff --out FILE: root's new file beside it
)

// runAsUser is whom root runs a command as.
type runAsUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
}

// serviceUserFor returns the service user when root runs a command that
// opens the state directory and that directory belongs to that user; nil
// otherwise. The daemon (run) is left out: under a unit of root's, its
// readiness would come from another process than the one systemd started.
func serviceUserFor(args []string, getenv func(string) string) *runAsUser {
	if os.Geteuid() != 0 || getenv(runAsEnv) != "" || len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "apply", "diff", "show", "status", "confirm", "rollback", "ipam":
	default:
		return nil
	}
	if hasFlag(args[1:], "netns") {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(flagValue(args[1:], "state-dir", DefaultStateDir), &st); err != nil || st.Uid == 0 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10))
	if err != nil || u.Username != serviceUser {
		return nil
	}
	ru := &runAsUser{name: u.Username, uid: st.Uid}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil
	}
	ru.gid = uint32(gid)
	ids, _ := u.GroupIds()
	for _, id := range ids {
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			ru.groups = append(ru.groups, uint32(n))
		}
	}
	return ru
}

// flagValue finds a flag's value in a command line as package flag reads
// it (-name v, --name v, -name=v, --name=v), the last one winning.
func flagValue(args []string, name, def string) string {
	v := def
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		k, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || k != name {
			continue
		}
		if hasVal {
			v = val
		} else if i+1 < len(args) {
			v = args[i+1]
			i++
		}
	}
	return v
}

// hasFlag reports whether a command line gives a flag at all.
func hasFlag(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		k, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, n := range names {
			if strings.HasPrefix(a, "-") && k == n {
				return true
			}
		}
	}
	return false
}

// boolFlag reports whether a command line sets a boolean flag as package
// flag reads it (-name, --name, -name=BOOL), the last one winning.
func boolFlag(args []string, name string) bool {
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		k, v, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || k != name {
			continue
		}
		on = true
		if hasVal {
			on, _ = strconv.ParseBool(v)
		}
	}
	return on
}

// runAsServiceUser runs the command again as the service user when
// serviceUserFor says so, and returns its exit code; ok is false when this
// process should run the command itself.
func runAsServiceUser(ctx context.Context, env *Env, args []string) (code int, ok bool) {
	// In the child: take root's descriptors before anything is started.
	handedByRoot()
	ru := serviceUserFor(args, env.Getenv)
	if ru == nil {
		return 0, false
	}
	fail := func(err error) (int, bool) {
		// env's streams are the raw ones, which the command's output is
		// copied to (it makes its own inert): this message is made
		// inert here.
		fmt.Fprintf(env.Stderr, "netreconcile %s: run as %s, the owner of the state directory: %s\n", args[0], ru.name, inert.String(redact.Error(err).Error()))
		return ExitError, true
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	// Through pipes, never root's terminal (no TIOCSTI into root's shell);
	// no standard input: no command reads one.
	cmd.Stdout, cmd.Stderr = writerOnly{env.Stdout}, writerOnly{env.Stderr}
	cmd.Env = childEnv(os.Environ(), ru.name)
	// Root's own descriptors that are not close-on-exec (a shell's
	// redirections) stay with root.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(fmt.Errorf("close root's descriptors on exec: %w", err))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: ru.uid, Gid: ru.gid, Groups: ru.groups},
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW},
		Setsid:      true,
	}
	var w *rootMainWriter
	if args[0] == "apply" || args[0] == "confirm" || args[0] == "rollback" {
		main, err := filepath.Abs(flagValue(args[1:], "config", flagValue(args[1:], "c", DefaultConfig)))
		if err != nil {
			return fail(err)
		}
		w = &rootMainWriter{main: main, cmd: args[0], began: time.Now(), installed: map[string]bool{}, allowInsecure: boolFlag(args[1:], "allow-insecure-config")}
		if v := flagValue(args[1:], "confirm-within", ""); v != "" {
			// As package flag parses it for the command.
			w.window, _ = time.ParseDuration(v)
		}
		if c := flagValue(args[1:], "candidate", ""); args[0] == "apply" && c != "" {
			// Read here, as root: the service user may not be able to
			// read it, and what is installed is what was applied. It
			// becomes the main file: trusted as the main file is.
			if !boolFlag(args[1:], "allow-insecure-config") {
				if err := desired.CheckTrustedFile(c, "candidate"); err != nil {
					return fail(fmt.Errorf("--candidate: %w", err))
				}
			}
			if w.candidate, err = desired.ReadFile(c); err != nil {
				return fail(fmt.Errorf("--candidate: %w", err))
			}
		}
		if err := w.start(cmd); err != nil {
			return fail(err)
		}
	}
	// A saved plan's file is root's to open, like --candidate: the
	// service user may not be able to read or write where root names.
	pf, err := handPlanFiles(cmd, args)
	if err != nil {
		w.abort()
		return fail(err)
	}
	if err := cmd.Start(); err != nil {
		w.abort()
		pf.finish(false)
		return fail(err)
	}
	w.serve()
	pf.started()
	err = cmd.Wait()
	w.wait()
	pf.finish(err == nil || exitCode(err) == ExitChanges)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if st, ok := exit.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			fmt.Fprintf(env.Stderr, "netreconcile %s: the command, run as %s, was killed by %s\n", args[0], ru.name, st.Signal())
			return 128 + int(st.Signal()), true
		}
		return exit.ExitCode(), true
	}
	if err != nil {
		return fail(err)
	}
	return ExitOK, true
}

// planFiles are the saved plan's files root opened for the child: the
// plan apply --plan reads, the file diff --out writes (a new file beside
// the destination, renamed over it once the child succeeded).
type planFiles struct {
	in, out *os.File
	dest    string
}

func handPlanFiles(cmd *exec.Cmd, args []string) (*planFiles, error) {
	pf := &planFiles{}
	give := func(f *os.File, env string) {
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		cmd.Env = append(cmd.Env, env+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	}
	if p := flagValue(args[1:], "plan", ""); args[0] == "apply" && p != "" {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("--plan: %w", err)
		}
		pf.in = f
		give(f, planInFDEnv)
	}
	if p := flagValue(args[1:], "out", ""); args[0] == "diff" && p != "" {
		f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
		if err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
		pf.out, pf.dest = f, p
		give(f, planOutFDEnv)
	}
	return pf, nil
}

// started closes root's copy of what it read; the written file stays
// open for finish.
func (pf *planFiles) started() {
	if pf.in != nil {
		pf.in.Close()
	}
}

// finish puts the written plan in place when the child succeeded and wrote
// one, and removes it otherwise.
func (pf *planFiles) finish(ok bool) {
	pf.started()
	if pf.out == nil {
		return
	}
	fi, err := pf.out.Stat()
	pf.out.Close()
	if ok && err == nil && fi.Size() > 0 {
		if err := os.Rename(pf.out.Name(), pf.dest); err == nil {
			return
		}
	}
	os.Remove(pf.out.Name())
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// writerOnly hides the *os.File behind a writer, so that exec copies
// through a pipe instead of handing the file (a terminal) to the child.
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// childEnv is the environment of the command run as the service user:
// what locates programs and formats text, what the probes read
// (SSH_CONNECTION), the test overrides (NETRECONCILE_*), and no more of
// root's.
func childEnv(env []string, user string) []string {
	keep := func(k string) bool {
		switch k {
		case "PATH", "LANG", "TZ", "TERM", "NO_COLOR", "SSH_CONNECTION", "SSH_CLIENT":
			return true
		}
		return strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "NETRECONCILE_") && k != runAsEnv && k != mainWriterEnv && k != candidateFDEnv &&
			k != planInFDEnv && k != planOutFDEnv
	}
	out := []string{"HOME=/", "USER=" + user, "LOGNAME=" + user, runAsEnv + "=" + user}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); keep(k) {
			out = append(out, kv)
		}
	}
	return out
}

// writerRequest is one request of the child to root's process.
type writerRequest struct {
	Op   string `json:"op"` // install or restore
	Path string `json:"path"`
	ID   string `json:"id"`
}

// writerAnswer is root's answer: empty Error for done.
type writerAnswer struct {
	Error string `json:"error,omitempty"`
}

// rootMainWriter is root's side: it writes the main file on request.
type rootMainWriter struct {
	main      string
	candidate []byte
	// allowInsecure is the command line's --allow-insecure-config: what
	// root writes through the main file's link is held to the
	// configuration's trust rule otherwise.
	allowInsecure bool
	// cmd is root's command (apply, confirm, rollback); window its
	// --confirm-within and began when root started it: root's deadline
	// is began+window, never later than the one the command records.
	cmd    string
	window time.Duration
	began  time.Time
	clock  func() time.Time
	// installed are the transactions this process installed a candidate
	// for: an apply that fails rolls back at once.
	installed map[string]bool
	// The parent's ends (requests in, answers out) and the child's.
	reqR, ansW, reqW, ansR, candR, candW *os.File
	done                                 sync.WaitGroup
}

// start makes the pipes and gives the child its ends.
func (w *rootMainWriter) start(cmd *exec.Cmd) error {
	var err error
	if w.reqR, w.reqW, err = os.Pipe(); err != nil {
		return err
	}
	if w.ansR, w.ansW, err = os.Pipe(); err != nil {
		return err
	}
	cmd.ExtraFiles = []*os.File{w.reqW, w.ansR}
	cmd.Env = append(cmd.Env, mainWriterEnv+"=3,4")
	if w.candidate != nil {
		if w.candR, w.candW, err = os.Pipe(); err != nil {
			return err
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, w.candR)
		cmd.Env = append(cmd.Env, candidateFDEnv+"=5")
	}
	return nil
}

func (w *rootMainWriter) abort() {
	if w == nil {
		return
	}
	for _, f := range []*os.File{w.reqR, w.ansW, w.reqW, w.ansR, w.candR, w.candW} {
		if f != nil {
			f.Close()
		}
	}
}

// serve closes the child's ends here, feeds the candidate and answers
// requests until the child is gone.
func (w *rootMainWriter) serve() {
	if w == nil {
		return
	}
	w.reqW.Close()
	w.ansR.Close()
	if w.candW != nil {
		w.candR.Close()
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			_, _ = w.candW.Write(w.candidate)
			w.candW.Close()
		}()
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		defer w.reqR.Close()
		defer w.ansW.Close()
		sc := bufio.NewScanner(w.reqR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var req writerRequest
			ans := writerAnswer{}
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				ans.Error = err.Error()
			} else if err := w.do(&req); err != nil {
				ans.Error = err.Error()
			}
			b, _ := json.Marshal(ans)
			if _, err := w.ansW.Write(append(b, '\n')); err != nil {
				return
			}
		}
	}()
}

func (w *rootMainWriter) wait() {
	if w != nil {
		w.done.Wait()
	}
}

// do carries out one request: only on the main file this command line
// names, only the candidate read here, and back only root's own copy, as
// root's own record allows (rootrecord_linux.go).
func (w *rootMainWriter) do(req *writerRequest) error {
	if req.Path != w.main {
		return fmt.Errorf("root writes only the main file %s, not %s", w.main, req.Path)
	}
	// The id names root's copies beside the file: a transaction's id,
	// never a path.
	if err := safeapply.ValidID(req.ID); err != nil {
		return err
	}
	switch req.Op {
	case "install":
		return w.install(req.ID)
	case "restore":
		return w.restore(req.ID)
	case "confirmed":
		return w.confirmed(req.ID)
	}
	return fmt.Errorf("unknown request %q", req.Op)
}

// childMainWriter is the child's side (safeapply.MainWriter).
type childMainWriter struct {
	mu  sync.Mutex
	out *os.File
	in  *bufio.Reader
}

func (c *childMainWriter) Install(path, id string) error {
	return c.ask(writerRequest{Op: "install", Path: path, ID: id})
}

func (c *childMainWriter) Restore(f *safeapply.FileCopy, id string) error {
	return c.ask(writerRequest{Op: "restore", Path: f.Path, ID: id})
}

func (c *childMainWriter) Confirmed(path, id string) error {
	return c.ask(writerRequest{Op: "confirmed", Path: path, ID: id})
}

func (c *childMainWriter) ask(req writerRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("ask root's process to %s %s: %w", req.Op, req.Path, err)
	}
	line, err := c.in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("ask root's process to %s %s: %w", req.Op, req.Path, err)
	}
	var ans writerAnswer
	if err := json.Unmarshal(line, &ans); err != nil {
		return fmt.Errorf("ask root's process to %s %s: %w", req.Op, req.Path, err)
	}
	if ans.Error != "" {
		return fmt.Errorf("root's process could not %s %s: %s", req.Op, req.Path, ans.Error)
	}
	return nil
}

// fromRoot is what root's process handed this one: its main file writer
// and the candidate's content. Read once, and taken out of the
// environment, so that what this process starts (a rollback timer) does
// not take descriptors it was not given for its own.
var fromRoot = struct {
	once            sync.Once
	writer          safeapply.MainWriter
	candidate       *os.File
	planIn, planOut *os.File
}{}

// handedPlanIn is apply --plan's file as root opened it, nil when this
// process opens it itself.
func handedPlanIn() *os.File { handedByRoot(); return fromRoot.planIn }

// handedPlanOut is the file root made for diff --out, nil when this
// process writes the file itself.
func handedPlanOut() *os.File { handedByRoot(); return fromRoot.planOut }

func handedByRoot() (safeapply.MainWriter, *os.File) {
	fromRoot.once.Do(func() {
		if os.Getenv(runAsEnv) == "" || os.Geteuid() == 0 {
			// Not a command root started as the service user.
			return
		}
		// Nothing of the service user's may read or drive this process
		// (ptrace, /proc/PID/mem, /proc/PID/fd): it holds root's pipes.
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		if v, ok := os.LookupEnv(mainWriterEnv); ok {
			os.Unsetenv(mainWriterEnv)
			wfd, rfd, _ := strings.Cut(v, ",")
			wn, err1 := strconv.Atoi(wfd)
			rn, err2 := strconv.Atoi(rfd)
			if err1 == nil && err2 == nil {
				// Not inherited by what this process starts (a
				// rollback timer would keep root's process waiting
				// for its end of the pipe until the deadline).
				syscall.CloseOnExec(wn)
				syscall.CloseOnExec(rn)
				fromRoot.writer = &childMainWriter{out: os.NewFile(uintptr(wn), "main-writer-requests"), in: bufio.NewReader(os.NewFile(uintptr(rn), "main-writer-answers"))}
			}
		}
		for _, f := range []struct {
			env  string
			dst  **os.File
			name string
		}{{candidateFDEnv, &fromRoot.candidate, "candidate"}, {planInFDEnv, &fromRoot.planIn, "plan"}, {planOutFDEnv, &fromRoot.planOut, "plan-out"}} {
			if v, ok := os.LookupEnv(f.env); ok {
				os.Unsetenv(f.env)
				if n, err := strconv.Atoi(v); err == nil {
					syscall.CloseOnExec(n)
					*f.dst = os.NewFile(uintptr(n), f.name)
				}
			}
		}
	})
	return fromRoot.writer, fromRoot.candidate
}
