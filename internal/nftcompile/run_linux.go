package nftcompile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
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
	wayMu.Lock()
	first := wayFound
	wayMu.Unlock()
	ws := ways()
	var tried []string
	for i := range ws {
		if first >= 0 && i != first {
			continue
		}
		var out, errb bytes.Buffer
		cmd := helperCommand(ctx, ws[i].attrs(), bytes.NewReader(req), &out, &errb)
		if err := cmd.Start(); err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", ws[i].name, err))
			continue
		}
		wayMu.Lock()
		wayFound = i
		wayMu.Unlock()
		werr := cmd.Wait()
		var ho helperOut
		if jerr := json.Unmarshal(out.Bytes(), &ho); jerr != nil {
			if werr == nil {
				werr = jerr
			}
			return nil, fmt.Errorf("compile nftables rules: the compiling process failed: %w: %s", werr, strings.TrimSpace(errb.String()))
		}
		if ho.Error != "" {
			return nil, fmt.Errorf("compile nftables rules: %s", ho.Error)
		}
		return &ho, nil
	}
	return nil, fmt.Errorf("%w (tried %s; as root this takes CAP_SYS_ADMIN, otherwise user namespaces: see docs/config.md)", ErrNoNamespace, strings.Join(tried, "; "))
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
