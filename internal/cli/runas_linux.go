package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// Root on a host with the packaged service.
//
// The packaged unit runs as the user netreconcile, which owns the state
// directory; root refuses a state directory another user could change
// (package statedir), so `sudo netreconcile diff` would fail there. Instead,
// root runs the command again as that user, with the unit's capabilities:
// what the service itself may do, no more (the documented setpriv line,
// done for the user). Only for that user: a directory of anyone else's is
// still refused, since running as its owner would hand that user root's
// command.
//
// That user cannot write /etc/netreconcile, where apply --candidate
// installs the main file and a rollback writes it back: root's process
// stays, and writes the main file for it when asked (MainWriter, over two
// pipes). It installs only the candidate it read itself, and writes only
// the main file that its own command line names.

// serviceUser is the packaged unit's user (packaging/sysusers.conf); a
// variable for tests.
var serviceUser = "netreconcile"

// Environment of a command that root started as the service user.
const (
	runAsEnv       = "NETRECONCILE_RUN_AS"       // set: do not look again
	candidateFDEnv = "NETRECONCILE_CANDIDATE_FD" // --candidate's content, read by root
	mainWriterEnv  = "NETRECONCILE_MAIN_WRITER"  // "W,R": requests out, answers in
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
		fmt.Fprintf(env.Stderr, "netreconcile %s: run as %s, the owner of the state directory: %v\n", args[0], ru.name, err)
		return ExitError, true
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.Stdout, env.Stderr
	cmd.Env = append(os.Environ(), runAsEnv+"="+ru.name)
	caps := []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW}
	if flagValue(args[1:], "netns", "") != "" {
		// Entering another namespace (setns) takes CAP_SYS_ADMIN.
		caps = append(caps, unix.CAP_SYS_ADMIN)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: ru.uid, Gid: ru.gid, Groups: ru.groups},
		AmbientCaps: caps,
	}
	var w *rootMainWriter
	if args[0] == "apply" || args[0] == "confirm" || args[0] == "rollback" {
		main, err := filepath.Abs(flagValue(args[1:], "config", flagValue(args[1:], "c", DefaultConfig)))
		if err != nil {
			return fail(err)
		}
		w = &rootMainWriter{main: main}
		if c := flagValue(args[1:], "candidate", ""); args[0] == "apply" && c != "" {
			// Read here, as root: the service user may not be able to
			// read it, and what is installed is what was applied.
			if w.candidate, err = os.ReadFile(c); err != nil {
				return fail(fmt.Errorf("--candidate: %w", err))
			}
		}
		if err := w.start(cmd); err != nil {
			return fail(err)
		}
	}
	if err := cmd.Start(); err != nil {
		w.abort()
		return fail(err)
	}
	w.serve()
	err = cmd.Wait()
	w.wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		return exit.ExitCode(), true
	}
	if err != nil {
		return fail(err)
	}
	return ExitOK, true
}

// writerRequest is one request of the child to root's process.
type writerRequest struct {
	Op   string              `json:"op"` // install or restore
	Path string              `json:"path"`
	File *safeapply.FileCopy `json:"file,omitempty"`
	ID   string              `json:"id,omitempty"`
}

// writerAnswer is root's answer: empty Error for done.
type writerAnswer struct {
	Error string `json:"error,omitempty"`
}

// rootMainWriter is root's side: it writes the main file on request.
type rootMainWriter struct {
	main      string
	candidate []byte
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
// names, only the candidate read here, never a symlink.
func (w *rootMainWriter) do(req *writerRequest) error {
	if req.Path != w.main {
		return fmt.Errorf("root writes only the main file %s, not %s", w.main, req.Path)
	}
	switch req.Op {
	case "install":
		if w.candidate == nil {
			return errors.New("no --candidate was read by root")
		}
		return safeapply.InstallMain(w.main, w.candidate)
	case "restore":
		if req.File == nil || req.File.Path != w.main || req.File.Link != "" {
			return fmt.Errorf("root restores only the main file %s, as a regular file", w.main)
		}
		// The id names the copy kept beside the file: a transaction's id,
		// never a path.
		if !validTxnID(req.ID) {
			return fmt.Errorf("not a transaction id: %q", req.ID)
		}
		// Only the content comes from the service user: the mode and
		// the owner stay the file's (a mode or owner of the request
		// would let that user have root write an executable, setuid
		// file of its choosing).
		cur, err := safeapply.ReadFileCopy(w.main)
		if err != nil {
			return err
		}
		_, err = safeapply.RestoreFile(&safeapply.FileCopy{Path: w.main, Mode: cur.Mode, UID: cur.UID, GID: cur.GID, Data: req.File.Data}, req.ID)
		return err
	}
	return fmt.Errorf("unknown request %q", req.Op)
}

// validTxnID: a transaction id as safeapply makes them
// (20261124T011546Z-2e1077): letters, digits and dashes.
func validTxnID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// childMainWriter is the child's side (safeapply.MainWriter).
type childMainWriter struct {
	mu  sync.Mutex
	out *os.File
	in  *bufio.Reader
}

func (c *childMainWriter) Install(path string) error {
	return c.ask(writerRequest{Op: "install", Path: path})
}

func (c *childMainWriter) Restore(f *safeapply.FileCopy, id string) error {
	return c.ask(writerRequest{Op: "restore", Path: f.Path, File: f, ID: id})
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
	once      sync.Once
	writer    safeapply.MainWriter
	candidate *os.File
}{}

func handedByRoot() (safeapply.MainWriter, *os.File) {
	fromRoot.once.Do(func() {
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
		if v, ok := os.LookupEnv(candidateFDEnv); ok {
			os.Unsetenv(candidateFDEnv)
			if n, err := strconv.Atoi(v); err == nil {
				syscall.CloseOnExec(n)
				fromRoot.candidate = os.NewFile(uintptr(n), "candidate")
			}
		}
	})
	return fromRoot.writer, fromRoot.candidate
}
