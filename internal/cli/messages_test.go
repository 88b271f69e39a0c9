package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// Usage errors exit 64 with the error and one line that says where the
// options are, never the whole help (issue 32: a mistyped flag printed
// about 100 lines, `help nosuch` the general help with exit 0).
func TestUsageErrorsAreShort(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, "netreconcile: unknown command \"nosuch\"; run 'netreconcile help' for the list\n"},
		{[]string{"help", "nosuch"}, "netreconcile help: no command \"nosuch\"; run 'netreconcile help' for the list\n"},
		{[]string{"help", "diff", "nosuch"}, "netreconcile help: no command \"diff nosuch\"; run 'netreconcile help' for the list\n"},
		{[]string{"diff", "--bogus"}, "netreconcile diff: flag provided but not defined: -bogus\nRun 'netreconcile help diff' for its options.\n"},
		{[]string{"apply", "extra"}, "netreconcile apply: unexpected argument \"extra\"\nRun 'netreconcile help apply' for its options.\n"},
		{[]string{"show", "-o", "yaml"}, "netreconcile show: --output must be text or json, not \"yaml\"\nRun 'netreconcile help show' for its options.\n"},
		{[]string{"version", "-o", "xml"}, "netreconcile version: --output must be text or json, not \"xml\"\nRun 'netreconcile help version' for its options.\n"},
		{[]string{"confirm", "a", "b"}, "netreconcile confirm: unexpected argument \"b\"\nRun 'netreconcile help confirm' for its options.\n"},
		{[]string{"run", "--log-format", "xml"}, "netreconcile run: --log-format (-o) must be text or json, not \"xml\"\nRun 'netreconcile help run' for its options.\n"},
		{[]string{"ipam", "allocate", "--nope"}, "netreconcile ipam allocate: flag provided but not defined: -nope\nRun 'netreconcile help ipam allocate' for its options.\n"},
	} {
		code, out, errs := runCLI(tc.args...)
		if code != ExitUsage || out != "" || errs != tc.want {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant exit 64 and %q", strings.Join(tc.args, " "), code, out, errs, tc.want)
		}
	}
}

// Every command has its help, on standard output with exit 0, and every
// command but help takes -o. wireguard and completion print what a shell
// or a file takes, a key or a script, and no document: a key in JSON would
// be redacted as every string of a document is.
func TestEveryCommandHasHelpAndOutput(t *testing.T) {
	rawOutput := map[string]bool{"wireguard": true, "completion": true}
	for _, c := range commands() {
		for _, args := range [][]string{{"help", c.name}, {c.name, "--help"}} {
			code, out, errs := runCLI(args...)
			if code != ExitOK || errs != "" || !strings.HasPrefix(out, "Usage: netreconcile "+c.name) {
				t.Errorf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
			}
		}
		if c.name != "ipam" && !rawOutput[c.name] && !strings.Contains(c.usage, "-o, --output FORMAT") && !strings.Contains(c.usage, "-o FORMAT") {
			t.Errorf("help %s names no -o", c.name)
		}
	}
	for _, sc := range ipamCommands() {
		if code, out, _ := runCLI("help", "ipam", sc.name); code != ExitOK || !strings.HasPrefix(out, "Usage: netreconcile ipam "+sc.name) ||
			!strings.Contains(out, "-o, --output FORMAT") {
			t.Errorf("help ipam %s: exit %d\n%s", sc.name, code, out)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, errs := runCLI("version")
	if code != ExitOK || errs != "" || !strings.HasPrefix(out, "netreconcile dev (commit unknown, go") {
		t.Errorf("version: exit %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI("--version", "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"schema_version": 1`) || !strings.Contains(out, `"commit": "unknown"`) {
		t.Errorf("version -o json: exit %d %s", code, out)
	}
}

// A refused permission says what is missing; another error is left alone.
func TestExplainPermission(t *testing.T) {
	env := &Env{}
	plain := errors.New("read kernel state: netlink receive: invalid argument")
	if got := env.explain(plain); got != plain {
		t.Errorf("another error changed: %v", got)
	}
	path := fmt.Errorf("create state directory: %w", &fs.PathError{Op: "mkdir", Path: "/var/lib/netreconcile", Err: syscall.EACCES})
	if got := env.explain(path).Error(); !strings.HasSuffix(got, "permission denied (run as root, or choose a --state-dir or --config this user may use)") {
		t.Errorf("path: %s", got)
	}
	kernel := fmt.Errorf("read nftables: netlink receive: %w", syscall.EPERM)
	got := env.explain(kernel)
	if !errors.Is(got, syscall.EPERM) {
		t.Errorf("the hint hides the error: %v", got)
	}
	env.netns = true
	want := missingCaps(true)
	if len(want) == 0 {
		if got.Error() != kernel.Error() {
			t.Errorf("with every capability, a hint: %v", got)
		}
		return
	}
	if msg := env.explain(kernel).Error(); !strings.Contains(msg, "this needs root, or CAP_NET_ADMIN") || !strings.Contains(msg, "CAP_SYS_ADMIN") {
		t.Errorf("kernel: %s", msg)
	}
}
