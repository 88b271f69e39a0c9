package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 12 finding 13: a configuration that someone other than root or the
// caller could change is refused with a clear error, unless
// --allow-insecure-config; the check covers the main file, the directories
// above it, the drop-in directory and each drop-in.
func TestInsecureConfigRefused(t *testing.T) {
	base := t.TempDir()
	etc := filepath.Join(base, "etc")
	confd := filepath.Join(etc, "conf.d")
	if err := os.MkdirAll(confd, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(etc, "nr.yaml")
	drop := filepath.Join(confd, "10-a.yaml")
	for _, p := range []string{conf, drop} {
		if err := os.WriteFile(p, []byte("version: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chmod := func(p string, mode uint32) {
		t.Helper()
		if err := syscall.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	type step struct {
		name  string
		setup func()
		want  string
	}
	steps := []step{
		{"main file writable by others", func() { chmod(conf, 0o666) }, "config file " + conf + " is writable by group or others (mode 0666)"},
		{"main file writable by group", func() { chmod(conf, 0o664) }, "config file " + conf + " is writable by group or others (mode 0664)"},
		{"directory above writable by group", func() { chmod(conf, 0o644); chmod(etc, 0o775) }, "directory " + etc + " (above config file " + conf + ") is writable by group or others (mode 0775)"},
		{"drop-in directory writable by others", func() { chmod(etc, 0o755); chmod(confd, 0o777) }, "drop-in directory " + confd + " is writable by group or others"},
		{"drop-in writable by others", func() { chmod(confd, 0o755); chmod(drop, 0o646) }, "drop-in " + drop + " is writable by group or others (mode 0646)"},
	}
	if os.Geteuid() == 0 {
		steps = append(steps, step{"drop-in owned by another user", func() {
			chmod(drop, 0o644)
			if err := os.Chown(drop, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "drop-in " + drop + " is owned by uid 65534, not by root or by the caller"})
	}
	for _, s := range steps {
		s.setup()
		code, _, errOut := runCLI("validate", "-c", conf)
		if code != ExitError || !strings.Contains(errOut, "insecure configuration: "+s.want) || !strings.Contains(errOut, "--allow-insecure-config") {
			t.Errorf("%s: exit %d, want 1 with %q\n%s", s.name, code, s.want, errOut)
		}
		if code, _, errOut := runCLI("validate", "-c", conf, "--allow-insecure-config"); code != ExitOK {
			t.Errorf("%s with --allow-insecure-config: exit %d\n%s", s.name, code, errOut)
		}
		if code, _, errOut := runCLI("ipam", "list", "-c", conf, "--allow-insecure-config", "--state-dir", filepath.Join(base, "state")); code != ExitOK {
			t.Errorf("%s: ipam list with --allow-insecure-config: exit %d\n%s", s.name, code, errOut)
		}
	}
	// A sticky directory writable by all above the configuration is fine (as /tmp).
	_ = os.Chown(drop, 0, 0)
	chmod(drop, 0o644)
	chmod(base, 0o1777)
	if code, _, errOut := runCLI("validate", "-c", conf); code != ExitOK {
		t.Errorf("under a sticky directory: exit %d\n%s", code, errOut)
	}
}

// Issue 12 finding 12 at the command line: a key typed where it does not
// belong never reaches standard error, whichever command reports it.
func TestKeyNeverPrinted(t *testing.T) {
	const key = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
	dir := t.TempDir()
	conf := filepath.Join(dir, "nr.yaml")
	src := "version: 1\npools:\n  p:\n    subnets: [10.2.0.0/30]\n    block-size-bits: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard:\n      private-key-file: \"" + key + " \"\n      listen-port: \"" + key + "\"\n      fwmark: \"" + key + "\"\n"
	if err := os.WriteFile(conf, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", "-c", conf},
		{"diff", "-c", conf, "--state-dir", filepath.Join(dir, "state")},
		{"ipam", "allocate", "--owner", key + " x", "-c", filepath.Join(dir, "none.yaml")},
		{"apply", "--bogus=" + key},
		{key},
	} {
		code, out, errOut := runCLI(args...)
		if code == ExitOK || strings.Contains(errOut+out, key[:16]) || strings.Contains(errOut+out, key[20:36]) {
			t.Errorf("%v: exit %d, output shows the key:\n%s%s", args[0], code, out, errOut)
		}
	}
}

// apply --candidate FILE makes FILE the main file: it is trusted as the
// main file is, and refused when another user owns it or could write it
// (found by the adversarial review: a candidate in /tmp that a local user
// made was installed as root's main file).
func TestInsecureCandidateRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cand := filepath.Join(dir, "new.yaml")
	if err := os.WriteFile(cand, []byte("version: 1\nlinks: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		setup func() error
	}{
		{"owned by another user", func() error { return os.Chown(cand, 12345, 12345) }},
		{"writable by others", func() error {
			if err := os.Chown(cand, 0, 0); err != nil {
				return err
			}
			return os.Chmod(cand, 0o666)
		}},
	} {
		if err := tt.setup(); err != nil {
			t.Fatal(err)
		}
		args := []string{"apply", "-c", conf, "--state-dir", filepath.Join(dir, "state"), "--confirm-within", "1m", "--candidate", cand}
		code, out, errOut := runCLI(args...)
		if code == ExitOK || !strings.Contains(errOut, "insecure configuration") || !strings.Contains(errOut, cand) {
			t.Errorf("%s: exit %d\n%s%s", tt.name, code, out, errOut)
		}
		if got, _ := os.ReadFile(conf); string(got) != "version: 1\n" {
			t.Fatalf("%s: the main file changed: %q", tt.name, got)
		}
	}
	// The refusal comes before the state directory, the kernel or a timer
	// is touched: an apply with the override would go on in this process's
	// namespace, so it is left to TestInsecureConfigRefused's main file.
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Error("the refused apply made the state directory")
	}
}
