package nftcompile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// nobody is the uid and gid root's compile child runs as, seen from outside
// its user namespace: nft reads the rules' text, and whatever it opens it
// opens as nobody.
const nobody = 65534

// A way to start the child in a network namespace of its own.
type nsWay struct {
	name  string
	attrs func() *syscall.SysProcAttr
}

// ways lists the ways to make the child's namespace, best first.
//   - A user namespace with a network namespace: unprivileged where user
//     namespaces are allowed (Debian's default; not where
//     kernel.unprivileged_userns_clone or user.max_user_namespaces is 0,
//     nor for a service whose RestrictNamespaces= omits user). Root maps
//     the child to nobody, which caps what the child can read.
//   - For root, a network namespace alone (CAP_SYS_ADMIN), where user
//     namespaces are not allowed.
func ways() []nsWay {
	uid, gid := os.Geteuid(), os.Getegid()
	userns := func() *syscall.SysProcAttr {
		a := &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		}
		if uid == 0 {
			a.UidMappings[0].HostID, a.GidMappings[0].HostID = nobody, nobody
			a.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
		}
		return a
	}
	out := []nsWay{{"a user and network namespace", userns}}
	if uid == 0 {
		out = append(out, nsWay{"a network namespace", func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
		}})
	}
	return out
}

var (
	wayMu sync.Mutex
	// wayFound is the index in ways() of the way that worked, -1 before.
	wayFound = -1
)

// ErrNoNamespace says the child could not be given a namespace of its own.
var ErrNoNamespace = errors.New("cannot make a network namespace to compile nftables rules in")

// run starts the child in a namespace of its own and returns its answer.
//
// A process that made itself non-dumpable (root's command run as the
// service user, guarding root's pipes) cannot map a user namespace's ids:
// its children's /proc files, uid_map among them, are root's until they
// exec, and it writes them as the service user. Such a process hands the
// request to a relay, a plain child of the same binary that exec made
// dumpable again and that holds none of root's descriptors, which starts
// the compile child in its turn.
func run(ctx context.Context, in *helperIn) (*helperOut, error) {
	req, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 {
			return relay(ctx, req)
		}
	}
	// Root runs a request of one script without the child: nft alone
	// (runDirect). Checks and parts take the child, whose namespace lives
	// across the runs of nft.
	direct := os.Geteuid() == 0 && len(in.Checks) == 0 && len(in.Scripts) == 1
	wayMu.Lock()
	first := wayFound
	wayMu.Unlock()
	ws := ways()
	var tried []string
	for i := range ws {
		if first >= 0 && i != first {
			continue
		}
		var ho *helperOut
		var started bool
		var err error
		if direct {
			ho, started, err = runDirect(ctx, in, i, ws[i])
		} else {
			ho, started, err = runChild(ctx, req, ws[i])
		}
		if !started {
			tried = append(tried, fmt.Sprintf("%s: %v", ws[i].name, err))
			continue
		}
		wayMu.Lock()
		wayFound = i
		wayMu.Unlock()
		return ho, err
	}
	return nil, fmt.Errorf("%w (tried %s; as root this takes CAP_SYS_ADMIN, otherwise user namespaces: see docs/config.md)", ErrNoNamespace, strings.Join(tried, "; "))
}

// runChild runs a request through the compile child, started the way w;
// started says whether it started.
func runChild(ctx context.Context, req []byte, w nsWay) (out *helperOut, started bool, err error) {
	var stdout, errb bytes.Buffer
	cmd := helperCommand(ctx, w.attrs(), bytes.NewReader(req), &stdout, &errb)
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	werr := cmd.Wait()
	var ho helperOut
	if jerr := json.Unmarshal(stdout.Bytes(), &ho); jerr != nil {
		if werr == nil {
			werr = jerr
		}
		return nil, true, fmt.Errorf("compile nftables rules: the compiling process failed: %w: %s", werr, strings.TrimSpace(errb.String()))
	}
	if ho.Error != "" {
		return nil, true, fmt.Errorf("compile nftables rules: %s", ho.Error)
	}
	return &ho, true, nil
}

// runDirect runs a request of one script without the compile child, for
// root: nft itself is started in the namespace the way w makes, and waits
// for its script on its standard input while root holds the namespace open
// by nft's namespace file, checks it is a fresh one, makes the links there
// and hands nft the script; once nft has exited, root dumps what it made
// there, as the child would. One program started instead of two (the
// child, a Go program, then nft): this is the path of a change of a few
// rules. An nft Prestart started the same way is taken instead of a new
// one. started says whether nft started.
func runDirect(ctx context.Context, in *helperIn, way int, w nsWay) (out *helperOut, started bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, true, fmt.Errorf("compile nftables rules: %w", err)
	}
	d := takeSpare(ctx, in.Nft, way)
	if d == nil {
		if d, started, err = startDirect(ctx, in.Nft, w); err != nil {
			return nil, started, err
		}
	}
	out, err = d.finish(ctx, in)
	return out, true, err
}

// directNft is nft started alone in a namespace of its own (runDirect),
// waiting for its script on its standard input, with the namespace checked
// fresh and a connection to it open.
type directNft struct {
	prog string
	cmd  *exec.Cmd
	pw   *os.File
	errb *bytes.Buffer
	ns   *os.File
	conn *nftwire.Conn
}

// startDirect starts nft (prog) the way w and checks its namespace; the
// context ends nft while it starts (Prestart's: never). started says
// whether nft started; the error of one that did is a compile's.
func startDirect(ctx context.Context, prog string, w nsWay) (d *directNft, started bool, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, true, fmt.Errorf("compile nftables rules: %w", err)
	}
	cmd := nftCommand(ctx, prog)
	cmd.SysProcAttr = w.attrs()
	cmd.Stdin = pr
	d = &directNft{prog: prog, cmd: cmd, pw: pw, errb: &bytes.Buffer{}}
	cmd.Stderr = d.errb
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		if isNotExist(err) {
			return nil, true, fmt.Errorf("%w (%s: not found)", ErrNoNft, prog)
		}
		return nil, false, err
	}
	fail := func(err error) (*directNft, bool, error) {
		d.close()
		return nil, true, fmt.Errorf("compile nftables rules: %w", err)
	}
	d.ns, err = os.Open(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
	if err != nil {
		// nft exited before it read a line (it could not start): what
		// it said says why.
		_ = cmd.Process.Kill()
		werr := cmd.Wait()
		pw.Close()
		return nil, true, fmt.Errorf("compile nftables rules: open nft's network namespace: %w (nft: %v: %s)", err, werr, strings.TrimSpace(d.errb.String()))
	}
	// Only ever a namespace of nft's own: nft -f there writes tables.
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(int(d.ns.Fd()), &theirs); err != nil {
		return fail(fmt.Errorf("stat nft's network namespace: %w", err))
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil {
		return fail(fmt.Errorf("stat our network namespace: %w", err))
	}
	if theirs.Ino == ours.Ino && theirs.Dev == ours.Dev {
		return fail(errors.New("nft runs in our own network namespace: refusing to give it the script"))
	}
	if d.conn, err = nftwire.Dial(int(d.ns.Fd())); err != nil {
		return fail(err)
	}
	if err := checkFresh(d.conn); err != nil {
		return fail(err)
	}
	return d, true, nil
}

// close ends nft, unless finish waited for it, and releases what it held.
func (d *directNft) close() {
	if d.cmd != nil {
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
		d.cmd = nil
	}
	d.pw.Close()
	if d.conn != nil {
		d.conn.Close()
	}
	if d.ns != nil {
		d.ns.Close()
	}
}

// finish makes the request's links in nft's namespace, hands nft the
// script, and once nft has exited dumps what it made. The context ends nft.
func (d *directNft) finish(ctx context.Context, in *helperIn) (*helperOut, error) {
	defer d.close()
	fail := func(err error) (*helperOut, error) {
		return nil, fmt.Errorf("compile nftables rules: %w", err)
	}
	cmd := d.cmd
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	if len(in.Links) > 0 {
		h, err := netlink.NewHandleAt(netns.NsHandle(d.ns.Fd()), unix.NETLINK_ROUTE)
		if err != nil {
			return fail(fmt.Errorf("open a route socket in nft's network namespace: %w", err))
		}
		defer h.Close()
		for _, l := range in.Links {
			if err := addLink(h.LinkAdd, l); err != nil {
				return fail(err)
			}
		}
	}
	// nft may die before it reads it all: its exit says why.
	_, _ = io.WriteString(d.pw, in.Scripts[0])
	d.pw.Close()
	d.cmd = nil
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		// Killed for the compile's timeout, or the command's end: no
		// answer of nft's.
		return fail(err)
	}
	said, err := nftSaid(in.Nft, werr, d.errb)
	if err != nil {
		return nil, err
	}
	if said != "" {
		return &helperOut{Refused: true, Failed: 0, Stderr: said}, nil
	}
	dumps, err := dumpTables(d.conn, in.Tables)
	if err != nil {
		return fail(err)
	}
	return &helperOut{Dumps: dumps}, nil
}

// spareNft is an nft Prestart starts before a compile needs it.
type spareNft struct {
	prog string
	// done is closed when the start is over: then way is the index in
	// ways() nft was started with, and d nil if it did not start.
	done chan struct{}
	way  int
	d    *directNft
}

var (
	spareMu sync.Mutex
	spare   *spareNft
	// ending counts the spares being ended in the background (endLater),
	// which Settle waits for.
	ending sync.WaitGroup
)

// endLater ends s once its start is over, without waiting for it.
func endLater(s *spareNft) {
	ending.Add(1)
	go func() {
		defer ending.Done()
		<-s.done
		if s.d != nil {
			s.d.close()
		}
	}()
}

// Prestart starts nft as root's compile of one script runs it (runDirect),
// in the background, to wait for a script there: a one-shot command that
// expects to compile rules calls it before it reads the kernel, so that
// nft's start (its namespace, its libraries) overlaps that read instead of
// following it. The next such compile with the same program takes it; one
// that needs the compile child, or none, leaves it to DropSpare. It does
// nothing but for root, and while one is started.
func (n *Nft) Prestart() {
	prog := n.path()
	if os.Geteuid() != 0 || !filepath.IsAbs(prog) {
		return
	}
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 {
		return
	}
	spareMu.Lock()
	defer spareMu.Unlock()
	if spare != nil {
		return
	}
	s := &spareNft{prog: prog, done: make(chan struct{})}
	spare = s
	go func() {
		defer close(s.done)
		wayMu.Lock()
		first := wayFound
		wayMu.Unlock()
		for i, w := range ways() {
			if first >= 0 && i != first {
				continue
			}
			// Errors are left to the compile, which starts its own nft
			// and says why that one failed.
			d, started, err := startDirect(context.Background(), prog, w)
			if !started {
				continue
			}
			if err == nil {
				s.way, s.d = i, d
			}
			return
		}
	}()
}

// DropSpare ends the nft Prestart started, if no compile took it.
func (n *Nft) DropSpare() {
	spareMu.Lock()
	s := spare
	spare = nil
	spareMu.Unlock()
	if s != nil {
		endLater(s)
	}
}

// Settle ends the nft Prestart started, if no compile took it, and waits
// until every such nft is gone: a command calls it before it returns, so
// that no start of nft (whose child, between its fork and its exec, holds
// a copy of every open file, the state directory's among them) and no nft
// outlives the command.
func (n *Nft) Settle() {
	n.DropSpare()
	ending.Wait()
}

// takeSpare returns the nft Prestart started, once started, when it runs
// prog the way way; nil when there is none (one of another program, or
// started another way, is ended).
func takeSpare(ctx context.Context, prog string, way int) *directNft {
	spareMu.Lock()
	s := spare
	if s == nil || s.prog != prog {
		spareMu.Unlock()
		return nil
	}
	spare = nil
	spareMu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		endLater(s)
		return nil
	}
	if s.d != nil && s.way != way {
		// Kept for the way it was started: the compile tries that one
		// next, after this one fails to start.
		spareMu.Lock()
		if spare == nil {
			spare, s = s, nil
		}
		spareMu.Unlock()
		if s != nil {
			s.d.close()
		}
		return nil
	}
	return s.d
}

// relay runs the request through a relay child (see run).
func relay(ctx context.Context, req []byte) (*helperOut, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{relayName}
	cmd.Env = []string{"LC_ALL=C"}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	werr := cmd.Run()
	var ho helperOut
	if jerr := json.Unmarshal(out.Bytes(), &ho); jerr != nil {
		if werr == nil {
			werr = jerr
		}
		return nil, fmt.Errorf("compile nftables rules: the relay process failed: %w: %s", werr, strings.TrimSpace(errb.String()))
	}
	if ho.Error != "" {
		return nil, errors.New(ho.Error)
	}
	return &ho, nil
}

func helperCommand(ctx context.Context, attrs *syscall.SysProcAttr, stdin *bytes.Reader, stdout, stderr *bytes.Buffer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{helperName}
	cmd.Env = []string{"LC_ALL=C"}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = attrs
	return cmd
}
