// Package nettest holds helpers for tests that need a real kernel: a fresh
// network namespace per test, `ip` and `nft` run inside it, and the
// netreconcile command line run in-process against it.
//
// Privileged tests skip when not run as root, unless the environment sets
// NETRECONCILE_REQUIRE_PRIVILEGED=1 (make test and CI do), which turns the
// skip into a failure: a privileged test that silently did not run proves
// nothing. They also skip under -short (make check), even as root: the fast
// loop touches no namespace and runs no ip or nft.
package nettest

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// RequireEnv is the variable that makes privileged tests mandatory.
const RequireEnv = "NETRECONCILE_REQUIRE_PRIVILEGED"

// RequireRoot skips (or, when required, fails) a test that is not root, and
// skips every privileged test under -short.
func RequireRoot(t testing.TB) {
	t.Helper()
	SkipIfShort(t)
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("this test needs root and %s=1 requires it to run", RequireEnv)
	}
	t.Skip("needs root (a fresh network namespace); run as root or with sudo")
}

// SkipIfShort skips a privileged test under -short (make check). -short
// with NETRECONCILE_REQUIRE_PRIVILEGED=1 is a contradiction and fails: the
// run that must prove the privileged tests (make test) cannot drop them.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("-short skips privileged tests, but %s=1 requires them to run", RequireEnv)
	}
	t.Skip("privileged: skipped under -short (make check); make test runs it")
}

// RequireTool skips (or fails) when a program the test drives is missing.
func RequireTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s is not installed; make test-deps installs it", name)
	}
	t.Skipf("%s is not installed; make test-deps installs it", name)
}

var seq atomic.Uint64

// nsPrefix starts the names NewNetNS gives (NETTEST_NETNS_PREFIX, default
// nrt): jobs sharing a machine keep to names of their own.
var nsPrefix = cmp.Or(os.Getenv("NETTEST_NETNS_PREFIX"), "nrt")

// NewNetNS creates a fresh named network namespace, deleted when the test ends.
func NewNetNS(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	RequireTool(t, "ip")
	name := fmt.Sprintf("%s-%d-%d", nsPrefix, os.Getpid(), seq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// IP runs `ip -n NS ARGS...` and returns its output; a failure fails the test.
func IP(t testing.TB, ns string, args ...string) string {
	t.Helper()
	return Exec(t, "ip", append([]string{"-n", ns}, args...)...)
}

// InNS runs a program inside the namespace (`ip netns exec`).
func InNS(t testing.TB, ns string, prog string, args ...string) string {
	t.Helper()
	return Exec(t, "ip", append([]string{"netns", "exec", ns, prog}, args...)...)
}

// Exec runs a program and returns its standard output; a failure fails the test.
func Exec(t testing.TB, prog string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", prog, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// Result is the outcome of a command line run.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// CLI runs the netreconcile command line in-process.
func CLI(t testing.TB, args ...string) Result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb, Getenv: os.Getenv}, args)
	return Result{code, out.String(), errb.String()}
}

// WriteFile writes a file in the test's temporary directory and returns its path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := dir + "/" + name
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ExecErr runs a program and returns its error with its output, for cleanups
// that must not fail a finished test.
func ExecErr(prog string, args ...string) error {
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, out)
	}
	return nil
}

// NewNetNSPrefixed is NewNetNS with a name starting with prefix, for tests
// whose namespaces must be told apart from other jobs' on a shared machine.
func NewNetNSPrefixed(t testing.TB, prefix string) string {
	t.Helper()
	RequireRoot(t)
	RequireTool(t, "ip")
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// Build builds the netreconcile command into dir and returns its path, for
// tests that run it as a process of its own (a daemon to SIGKILL, a timer
// that outlives its command, two writers at once). It is built as `make
// build` and the package build it (static, no cgo): the tests, and the
// benchmarks that measure its memory, run the binary that ships (built
// with cgo, it also mapped libc and the dynamic loader).
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "netreconcile")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/netreconcile/netreconcile/cmd/netreconcile")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build netreconcile: %w\n%s", err, out)
	}
	return bin, nil
}

// BuildT is Build into the test's temporary directory; it fails the test
// when the build fails.
func BuildT(t testing.TB) string {
	t.Helper()
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// MainWithBinary is a TestMain for a package whose tests run the command as
// a process: it builds it once into a temporary directory, sets *bin, runs
// the tests and exits. Under -short, where those privileged tests skip, it
// builds nothing.
func MainWithBinary(m *testing.M, bin *string) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "netreconcile-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// OpenLedger opens the ownership ledger file at path the way the command
// does: its directory checked as a state directory, the file named
// ledger.FileName, the namespace's cookie not checked.
func OpenLedger(path string) (*ledger.Ledger, error) {
	if filepath.Base(path) != ledger.FileName {
		return nil, fmt.Errorf("ownership ledger %s: the file must be named %s", path, ledger.FileName)
	}
	dir, err := statedir.Open(filepath.Dir(path), true)
	if err != nil {
		return nil, err
	}
	return ledger.OpenIn(dir, 0)
}
