package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, args)
	return code, out.String(), errb.String()
}

// TestIPAMCommand drives `netreconcile ipam` on a state directory without any kernel: the
// common options anywhere among the command's own, help, usage errors and exit codes.
func TestIPAMCommand(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\npools:\n  p:\n    subnets: [10.2.0.0/30]\n    block-size-bits: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	for _, tc := range []struct {
		args       []string
		code       int
		out, errIn string
	}{
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state, "--owner", "pid:1"}, 0, "10.2.0.0\n", ""},
		{[]string{"ipam", "--config=" + conf, "allocate", "--owner", "pid:2", "--state-dir=" + state}, 0, "10.2.0.1\n", ""},
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state, "--owner", "pid:1"}, 0, "10.2.0.0\n", ""},
		{[]string{"ipam", "release", "-c", conf, "--state-dir", state, "--owner", "pid:2"}, 0, "released 10.2.0.1\n", ""},
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state}, ExitUsage, "", "netreconcile ipam allocate: --owner is required"},
		{[]string{"ipam", "frob", "-c", conf, "--state-dir", state}, ExitUsage, "", `netreconcile ipam: unknown command "frob"`},
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state, "--owner", "pid:3", "--pool", "q"}, ExitError, "", `unknown pool "q"`},
		{[]string{"ipam", "list", "-c", filepath.Join(dir, "missing.yaml"), "--state-dir", state}, ExitError, "", "read config"},
		{[]string{"ipam", "-c"}, ExitUsage, "", "flag needs an argument: -c"},
		{[]string{"ipam"}, ExitUsage, "", "Usage: netreconcile ipam COMMAND"},
		{[]string{"help", "ipam"}, 0, "Usage: netreconcile ipam COMMAND", ""},
		{[]string{"ipam", "gc", "--help"}, 0, "usage: netreconcile ipam gc", ""},
	} {
		code, out, errs := runCLI(tc.args...)
		if code != tc.code || !strings.HasPrefix(out, tc.out) || !strings.Contains(errs, tc.errIn) || tc.out == "" && out != "" {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout %q, stderr with %q",
				strings.Join(tc.args, " "), code, out, errs, tc.code, tc.out, tc.errIn)
		}
	}
}
