package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestRootRunsAsServiceUser: root on a host whose state directory belongs
// to the service's user runs every command as that user, with the unit's
// capabilities, instead of refusing the directory; apply --candidate
// installs the main file (which that user cannot write) through root's
// process, which reads the candidate itself (that user cannot read it),
// and a rollback writes it back the same way. A state directory of any
// other user is still refused. The service user here is nobody: the binary
// is built with cli.serviceUser set to it.
func TestRootRunsAsServiceUser(t *testing.T) {
	nettest.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "netreconcile")
	if out, err := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/netreconcile/netreconcile/internal/cli.serviceUser=nobody",
		"github.com/netreconcile/netreconcile/cmd/netreconcile").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ns := nettest.NewNetNSPrefixed(t, "runas")
	base := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The service user reaches what the unit lets it read.
	for _, d := range []string{base, filepath.Dir(bin), filepath.Dir(base)} {
		must(os.Chmod(d, 0o755))
	}
	etc, state := filepath.Join(base, "etc"), filepath.Join(base, "state")
	must(os.MkdirAll(etc, 0o755))
	must(os.Mkdir(state, 0o700))
	must(os.Chown(state, 65534, 65534))
	main := filepath.Join(etc, "netreconcile.yaml")
	good := "version: 1\nlinks:\n  rb0: {kind: bridge}\n"
	// As the package installs it: root's, readable by the service's
	// group.
	must(os.WriteFile(main, []byte(good), 0o640))
	must(os.Chown(main, 0, 65534))
	cand := filepath.Join(base, "new.yaml")
	next := "version: 1\nlinks:\n  rb0: {kind: bridge}\n  rb1: {kind: bridge}\n"
	must(os.WriteFile(cand, []byte(next), 0o600))

	run := func(want int, args ...string) string {
		t.Helper()
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Fatalf("netreconcile %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
		return string(out)
	}
	common := []string{"--state-dir", state, "-c", main}
	run(0, append([]string{"apply"}, common...)...)
	run(0, append([]string{"diff"}, common...)...)
	nettest.IP(t, ns, "link", "show", "rb0")
	owned := func(p string) {
		t.Helper()
		fi, err := os.Stat(p)
		must(err)
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 {
			t.Errorf("%s is owned by uid %d, want the service user's 65534", p, st.Uid)
		}
	}
	ents, err := os.ReadDir(state)
	must(err)
	if len(ents) == 0 {
		t.Fatal("apply wrote nothing in the state directory")
	}
	for _, e := range ents {
		owned(filepath.Join(state, e.Name()))
	}

	// The candidate: installed by root's process, mode and owner kept.
	out := run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", cand, "--rollback-timer", "process"}, common...)...)
	if got, _ := os.ReadFile(main); string(got) != next {
		t.Fatalf("main file after apply --candidate:\n%s\nwant the candidate (apply printed:\n%s)", got, out)
	}
	fi, err := os.Stat(main)
	must(err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 65534 || fi.Mode().Perm() != 0o640 {
		t.Errorf("installed main file: uid %d gid %d mode %v, want 0:65534 0640 as before", st.Uid, st.Gid, fi.Mode().Perm())
	}
	nettest.IP(t, ns, "link", "show", "rb1")
	copies, _ := filepath.Glob(filepath.Join(etc, ".netreconcile.yaml.before-*"))
	if len(copies) != 1 {
		t.Fatalf("root's copies of the main file %v, want one", copies)
	}
	if fi, err := os.Stat(copies[0]); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("root's copy %s: %v %v, want root's 0600", copies[0], fi, err)
	}

	// The rollback writes the main file back through root's process.
	run(0, append([]string{"rollback"}, common...)...)
	if got, _ := os.ReadFile(main); string(got) != good {
		t.Fatalf("main file after rollback:\n%s\nwant the restore point", got)
	}
	if err := exec.Command("ip", "-n", ns, "link", "show", "rb1").Run(); err == nil {
		t.Error("rb1 is still there after the rollback")
	}
	rejected, _ := filepath.Glob(filepath.Join(etc, ".netreconcile.yaml.rejected-*"))
	if len(rejected) != 1 {
		t.Errorf("rejected copies %v, want one", rejected)
	}
	run(0, append([]string{"diff"}, common...)...)

	if _, err := os.Stat(copies[0]); err == nil {
		t.Errorf("root's copy %s is still there after the rollback", copies[0])
	}

	// Another namespace takes CAP_SYS_ADMIN, which the unit does not give:
	// refused as before.
	if out := run(1, "diff", "--netns", ns, "--state-dir", state, "-c", main); !strings.Contains(out, "insecure state directory") {
		t.Errorf("--netns with the service user's state directory: %s", out)
	}

	// Anyone else's state directory is still refused.
	other := filepath.Join(base, "other")
	must(os.Mkdir(other, 0o700))
	must(os.Chown(other, 12345, 12345))
	if out := run(1, "diff", "--state-dir", other, "-c", main); !strings.Contains(out, "insecure state directory") {
		t.Errorf("a state directory of uid 12345: %s", out)
	}
}
