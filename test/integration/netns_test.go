package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// helperEnv makes TestMain-less re-execution of this test binary run one
// command line inside another process's namespace (see TestEmptyNetnsHelper).
const helperEnv = "NETRECONCILE_TEST_HELPER_ARGS"

// TestEmptyNetnsHelper is not a test: run by TestEmptyNetnsRefused inside a
// fresh namespace (ip netns exec), it runs the command line given in
// helperEnv in-process and prints its exit code and output.
func TestEmptyNetnsHelper(t *testing.T) {
	args := os.Getenv(helperEnv)
	if args == "" {
		t.Skip("helper process only")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatal(err)
	}
	r := nettest.CLI(t, argv...)
	os.Stdout.WriteString("exit " + strconv.Itoa(r.Code) + "\n" + r.Stdout + r.Stderr)
}

// An empty --netns (a script's unset variable) is an error, never the caller's
// own namespace. The command runs inside a fresh namespace, so that without
// the check it writes there and not to the host.
func TestEmptyNetnsRefused(t *testing.T) {
	ns := nettest.NewNetNS(t)
	state, dir := t.TempDir(), t.TempDir()
	f := nettest.WriteFile(t, dir, "a.yaml", "version: 1\nlinks:\n  nrempty0: {kind: bridge}\n")
	for _, args := range [][]string{
		{"apply", "-c", f, "--state-dir", state, "--netns", ""},
		{"apply", "-c", f, "--state-dir", state, "--netns="},
		{"ipam", "list", "-c", f, "--state-dir", state, "--netns", ""},
	} {
		cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestEmptyNetnsHelper$", "-test.v")
		argv, _ := json.Marshal(args)
		cmd.Env = append(os.Environ(), helperEnv+"="+string(argv))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("helper %q: %v\n%s", args, err, out.String())
		}
		if got := out.String(); !strings.Contains(got, "exit 1\n") || !strings.Contains(got, "--netns is empty") {
			t.Errorf("%q: want exit 1 naming the empty --netns, got\n%s", args, got)
		}
		if l := nettest.IP(t, ns, "-o", "link", "show"); strings.Contains(l, "nrempty0") {
			t.Fatalf("%q wrote to the namespace it ran in:\n%s", args, l)
		}
	}
}

// anonNS starts a process in a new namespace that has no name and returns
// its /proc/PID/ns/net path.
func anonNS(t *testing.T) string {
	t.Helper()
	nettest.RequireRoot(t)
	cmd := exec.Command("unshare", "--net", "sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	self, _ := os.Readlink("/proc/self/ns/net")
	p := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/net"
	for {
		// unshare enters the new namespace, then execs sleep.
		l, err := os.Readlink(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if l != self {
			return p
		}
		time.Sleep(time.Millisecond)
	}
}

// Issue 12 finding 3, the other way round: one namespace named by its name
// and by a /proc/PID/ns/net path is one namespace, with one writer lock and
// one ledger. A table made through one form is ours through the other, and
// a writer through the path waits for the lock taken through the name.
func TestNetnsNameAndPathShareState(t *testing.T) {
	nettest.RequireTool(t, "nft")
	nettest.RequireTool(t, "flock")
	ns := nettest.NewNetNS(t)
	path := nsProc(t, ns)
	state, dir := t.TempDir(), t.TempDir()
	table := nettest.WriteFile(t, dir, "t.yaml", "version: 1\nnftables:\n  inet ours:\n    chains:\n      c: {rules: [counter]}\n")
	empty := nettest.WriteFile(t, dir, "empty.yaml", "version: 1\n")
	if r := nettest.CLI(t, "apply", "-c", table, "--netns", ns, "--state-dir", state); r.Code != 0 {
		t.Fatalf("apply by name: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// The lock taken through the name holds off a writer through the path.
	lock := filepath.Join(state, "netns", ns, "writer.lock")
	holder := holdLock(t, lock)
	for exec.Command("flock", "-n", lock, "true").Run() == nil {
		time.Sleep(time.Millisecond)
	}
	r := nettest.CLI(t, "apply", "-c", empty, "--netns", path, "--state-dir", state, "--lock-timeout", "300ms")
	holder()
	if r.Code != 1 || !strings.Contains(r.Stderr, "waiting up to 300ms for the lock") {
		t.Errorf("apply by path while the name's lock is held: exit %d, want it to wait for that lock\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := nettest.InNS(t, ns, "nft", "list", "tables"); !strings.Contains(out, "table inet ours") {
		t.Fatalf("the table was deleted while the lock was held:\n%s", out)
	}
	// The ledger written through the name is read through the path.
	r = nettest.CLI(t, "apply", "-c", empty, "--netns", path, "--state-dir", state)
	if r.Code != 0 || !strings.Contains(r.Stdout, "- nft table inet ours") {
		t.Errorf("empty file applied by path: exit %d, want our table deleted\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if dirs, _ := filepath.Glob(filepath.Join(state, "netns", "*")); len(dirs) != 1 || filepath.Base(dirs[0]) != ns {
		t.Errorf("state directories %v, want only netns/%s", dirs, ns)
	}
}

// holdLock holds the flock on path in another process, as another writer
// would, and returns the function that releases it. flock(1) and its sleep
// (which inherits the locked descriptor) are one process group, killed
// together: killing flock alone leaves the lock with an orphaned sleep.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command("flock", path, "sleep", "3600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(release)
	return release
}
