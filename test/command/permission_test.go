package command

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// nobody is the uid the commands below run as: no capability at all.
const nobody = 65534

// A command that lacks a privilege says which (issue 32: "netlink receive:
// operation not permitted" named neither root nor CAP_NET_ADMIN).
func TestPermissionErrorsNameWhatIsMissing(t *testing.T) {
	nettest.RequireRoot(t)
	ns := nettest.NewNetNS(t)
	// Owned by nobody, under a directory everyone may enter (t.TempDir's
	// is root's alone): the binary, the configuration and a state
	// directory the unprivileged command may use.
	dir, err := os.MkdirTemp("", "nrperm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "netreconcile")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "state")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\nlinks:\n  br0: {kind: bridge}\nnftables:\n  inet nrperm:\n    chains:\n      c: {type: filter, hook: input, priority: 0, policy: accept}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(conf, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var errb bytes.Buffer
		c.Stderr = &errb
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, errb.String()
	}
	state := filepath.Join(dir, "state")
	for _, c := range []struct {
		args []string
		want string
	}{
		// Reading nftables needs CAP_NET_ADMIN, in the caller's own
		// namespace too.
		{[]string{"diff", "-c", conf, "--state-dir", state}, "this needs root, or CAP_NET_ADMIN (to read and change the network), which this process lacks"},
		// Entering another namespace needs CAP_SYS_ADMIN as well.
		{[]string{"diff", "-c", conf, "--state-dir", state, "--netns", ns}, "CAP_SYS_ADMIN (to enter the --netns namespace)"},
		// A state directory it may not create.
		{[]string{"apply", "-c", conf, "--state-dir", "/root/nr-state"}, "permission denied (run as root, or choose a --state-dir or --config this user may use)"},
	} {
		code, stderr := run(c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d\n%s\nwant exit 1 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
