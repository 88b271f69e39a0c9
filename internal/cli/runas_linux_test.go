package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// serviceRig is a host with the packaged service's layout: a state
// directory owned by the service's user (a throwaway one, see
// nettest.ServiceUser), the main file root's and readable by that user's
// group, and the binary built with cli.serviceUser set to that user.
type serviceRig struct {
	t                *testing.T
	user             *nettest.ServiceUser
	bin, ns          string
	base, etc, state string
	main             string
}

func newServiceRig(t *testing.T, u *nettest.ServiceUser, bin string) *serviceRig {
	t.Helper()
	r := &serviceRig{t: t, user: u, bin: bin, ns: nettest.NewNetNSPrefixed(t, "runas"), base: t.TempDir()}
	// The service user reaches what the unit lets it read.
	for _, d := range []string{r.base, filepath.Dir(r.base)} {
		r.must(os.Chmod(d, 0o755))
	}
	r.etc, r.state = filepath.Join(r.base, "etc"), filepath.Join(r.base, "state")
	r.must(os.MkdirAll(r.etc, 0o755))
	r.must(os.Mkdir(r.state, 0o700))
	r.must(os.Chown(r.state, u.UID, u.GID))
	r.main = filepath.Join(r.etc, "netreconcile.yaml")
	return r
}

func (r *serviceRig) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// writeMain writes the main file as the package installs it: root's,
// readable by the service's group.
func (r *serviceRig) writeMain(content string) {
	r.t.Helper()
	r.must(os.WriteFile(r.main, []byte(content), 0o640))
	r.must(os.Chown(r.main, 0, r.user.GID))
}

func (r *serviceRig) mainHolds() string {
	r.t.Helper()
	b, err := os.ReadFile(r.main)
	r.must(err)
	return string(b)
}

func (r *serviceRig) candidate(name, content string) string {
	r.t.Helper()
	p := filepath.Join(r.base, name)
	r.must(os.WriteFile(p, []byte(content), 0o600))
	return p
}

// run runs the command as root, in the namespace, and wants its exit code.
func (r *serviceRig) run(want int, args ...string) string {
	r.t.Helper()
	argv := r.user.Wrap(append([]string{"ip", "netns", "exec", r.ns, r.bin}, args...)...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	if code != want {
		r.t.Fatalf("netreconcile %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return string(out)
}

func (r *serviceRig) common() []string { return []string{"--state-dir", r.state, "-c", r.main} }

// asServiceUser runs a shell command as the service's user, with input on
// its standard input: the user's own process writing its own state.
func (r *serviceRig) asServiceUser(input []byte, script string, args ...string) {
	r.t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Stdin = bytes.NewReader(input)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(r.user.UID), Gid: uint32(r.user.GID)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("as the service user: %s: %v\n%s", script, err, out)
	}
}

// transaction reads the state directory's transaction.json, as a map to
// forge from.
func (r *serviceRig) transaction() map[string]any {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.state, safeapply.FileName))
	r.must(err)
	var f map[string]any
	r.must(json.Unmarshal(data, &f))
	return f
}

// forge writes transaction.json as the service user.
func (r *serviceRig) forge(f map[string]any) {
	r.t.Helper()
	data, err := json.Marshal(f)
	r.must(err)
	p := filepath.Join(r.state, safeapply.FileName)
	r.asServiceUser(data, `cat > "$1.forged" && mv "$1.forged" "$1"`, p)
}

// forgedPending is the pending transaction the service user writes after
// root confirmed transaction last: the same id, the confirmed
// configuration as its restore point, the deadline given.
func forgedPending(f map[string]any, deadline time.Time) map[string]any {
	last := f["last"].(map[string]any)
	conf := f["confirmed"]
	p := map[string]any{
		"id": last["id"], "state": "pending", "started": last["started"], "deadline": deadline.UTC().Format(time.RFC3339Nano),
		"window": "1m0s", "boot_id": last["boot_id"], "restore": conf, "applied": conf, "before": "", "plans": []any{},
	}
	f["pending"] = p
	return f
}

func (r *serviceRig) rootFiles() []string {
	r.t.Helper()
	var out []string
	for _, pat := range []string{".netreconcile.yaml.before-*", ".netreconcile.yaml.root-transaction"} {
		m, _ := filepath.Glob(filepath.Join(r.etc, pat))
		out = append(out, m...)
	}
	return out
}

// TestRootRunsAsServiceUser: root on a host whose state directory belongs
// to the service's user runs every command as that user, with the unit's
// capabilities, instead of refusing the directory; apply --candidate
// installs the main file (which that user cannot write) through root's
// process, which reads the candidate itself (that user cannot read it),
// and a rollback writes it back the same way. A state directory of any
// other user is still refused. And what that user writes in its state
// directory never makes root write a file back that root did not install
// in a transaction still open by root's own record, nor reaches root's
// terminal. The service user is a throwaway one (nettest.ServiceUser): the
// binary is built with cli.serviceUser set to it.
// serviceBinary builds the command with cli.serviceUser set to u, where u
// can run it.
func serviceBinary(t *testing.T, u *nettest.ServiceUser) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "netreconcile")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/netreconcile/netreconcile/internal/cli.serviceUser="+u.Name,
		"github.com/netreconcile/netreconcile/cmd/netreconcile")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(bin))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestRootRunsAsServiceUser(t *testing.T) {
	nettest.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds the command")
	}
	u := nettest.NewServiceUser(t)
	bin := serviceBinary(t, u)
	const (
		good = "version: 1\nlinks:\n  rb0: {kind: bridge}\n"
		next = "version: 1\nlinks:\n  rb0: {kind: bridge}\n  rb1: {kind: bridge}\n"
		more = "version: 1\nlinks:\n  rb0: {kind: bridge}\n  rb2: {kind: bridge}\n"
	)

	t.Run("runs", func(t *testing.T) {
		r := newServiceRig(t, u, bin)
		r.writeMain(good)
		cand := r.candidate("new.yaml", next)
		r.run(0, append([]string{"apply"}, r.common()...)...)
		r.run(0, append([]string{"diff"}, r.common()...)...)
		nettest.IP(t, r.ns, "link", "show", "rb0")
		owned := func(p string) {
			t.Helper()
			fi, err := os.Stat(p)
			r.must(err)
			if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.UID {
				t.Errorf("%s is owned by uid %d, want the service user's %d", p, st.Uid, u.UID)
			}
		}
		ents, err := os.ReadDir(r.state)
		r.must(err)
		if len(ents) == 0 {
			t.Fatal("apply wrote nothing in the state directory")
		}
		for _, e := range ents {
			owned(filepath.Join(r.state, e.Name()))
		}

		// The candidate: installed by root's process, mode and owner kept.
		out := r.run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", cand, "--rollback-timer", "process"}, r.common()...)...)
		if got := r.mainHolds(); got != next {
			t.Fatalf("main file after apply --candidate:\n%s\nwant the candidate (apply printed:\n%s)", got, out)
		}
		fi, err := os.Stat(r.main)
		r.must(err)
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || int(st.Gid) != u.GID || fi.Mode().Perm() != 0o640 {
			t.Errorf("installed main file: uid %d gid %d mode %v, want 0:%d 0640 as before", st.Uid, st.Gid, fi.Mode().Perm(), u.GID)
		}
		nettest.IP(t, r.ns, "link", "show", "rb1")
		files := r.rootFiles()
		if len(files) != 2 {
			t.Fatalf("root's files beside the main file %v, want its copy and its record", files)
		}
		for _, p := range files {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
				t.Errorf("root's %s: %v %v, want root's 0600", p, fi, err)
			}
		}

		// The rollback writes the main file back through root's process.
		r.run(0, append([]string{"rollback"}, r.common()...)...)
		if got := r.mainHolds(); got != good {
			t.Fatalf("main file after rollback:\n%s\nwant the restore point", got)
		}
		if err := exec.Command("ip", "-n", r.ns, "link", "show", "rb1").Run(); err == nil {
			t.Error("rb1 is still there after the rollback")
		}
		rejected, _ := filepath.Glob(filepath.Join(r.etc, ".netreconcile.yaml.rejected-*"))
		if len(rejected) != 1 {
			t.Errorf("rejected copies %v, want one", rejected)
		}
		r.run(0, append([]string{"diff"}, r.common()...)...)
		if files := r.rootFiles(); len(files) != 0 {
			t.Errorf("root's files %v are still there after the rollback", files)
		}

		// Another namespace takes CAP_SYS_ADMIN, which the unit does not give:
		// refused as before.
		if out := r.run(1, "diff", "--netns", r.ns, "--state-dir", r.state, "-c", r.main); !strings.Contains(out, "insecure state directory") {
			t.Errorf("--netns with the service user's state directory: %s", out)
		}

		// Anyone else's state directory is still refused.
		other := filepath.Join(r.base, "other")
		r.must(os.Mkdir(other, 0o700))
		r.must(os.Chown(other, 12345, 12345))
		if out := r.run(1, "diff", "--state-dir", other, "-c", r.main); !strings.Contains(out, "insecure state directory") {
			t.Errorf("a state directory of uid 12345: %s", out)
		}
	})

	// A saved plan where only root may read and write: root's process
	// makes the --out file and opens the --plan file for the service
	// user's command.
	t.Run("saved plan", func(t *testing.T) {
		r := newServiceRig(t, u, bin)
		r.writeMain(good)
		r.run(0, append([]string{"apply"}, r.common()...)...)
		private := filepath.Join(r.base, "private")
		r.must(os.Mkdir(private, 0o700))
		planFile := filepath.Join(private, "change.plan")
		r.writeMain(next)
		r.run(2, append([]string{"diff", "--out", planFile}, r.common()...)...)
		if fi, err := os.Stat(planFile); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Fatalf("the saved plan: %v %v, want root's, 0600", fi, err)
		}
		if left, _ := filepath.Glob(filepath.Join(private, ".change.plan.*")); len(left) != 0 {
			t.Errorf("root's temporary plan files left: %v", left)
		}
		r.run(0, append([]string{"apply", "--plan", planFile}, r.common()...)...)
		nettest.IP(t, r.ns, "link", "show", "rb1")
		r.run(3, append([]string{"apply", "--plan", planFile}, r.common()...)...)
	})

	// Issue 29: after root confirmed a transaction, the service user
	// writes a pending one with that id and a passed deadline. Root's
	// next plain apply takes it as due and rolls it back: it must not
	// write the superseded file over the confirmed one.
	t.Run("forged due transaction after confirm", func(t *testing.T) {
		r := newServiceRig(t, u, bin)
		r.writeMain(good)
		r.run(0, append([]string{"apply"}, r.common()...)...)
		r.run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", r.candidate("new.yaml", next), "--rollback-timer", "process"}, r.common()...)...)
		r.run(0, append([]string{"confirm"}, r.common()...)...)
		if files := r.rootFiles(); len(files) != 0 {
			t.Errorf("root's files %v are still there after root's confirm", files)
		}
		r.forge(forgedPending(r.transaction(), time.Now().Add(-time.Minute)))
		out := r.run(1, append([]string{"apply"}, r.common()...)...)
		if got := r.mainHolds(); got != next {
			t.Fatalf("the forged due transaction made root write the superseded file back:\n%s\n(apply printed:\n%s)", got, out)
		}
		if !strings.Contains(out, "root keeps no record") {
			t.Errorf("apply does not say why the file was left:\n%s", out)
		}
	})

	// Issue 29, the variant: a forged pending transaction with a future
	// deadline, which root's next apply --confirm-within --candidate
	// takes as an extension: the restore point must be the file as root
	// found it (the confirmed one), not the superseded copy.
	t.Run("forged extension after confirm", func(t *testing.T) {
		r := newServiceRig(t, u, bin)
		r.writeMain(good)
		r.run(0, append([]string{"apply"}, r.common()...)...)
		r.run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", r.candidate("new.yaml", next), "--rollback-timer", "process"}, r.common()...)...)
		r.run(0, append([]string{"confirm"}, r.common()...)...)
		r.forge(forgedPending(r.transaction(), time.Now().Add(time.Hour)))
		r.run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", r.candidate("more.yaml", more), "--rollback-timer", "process"}, r.common()...)...)
		if got := r.mainHolds(); got != more {
			t.Fatalf("main file after the second candidate:\n%s", got)
		}
		out := r.run(0, append([]string{"rollback"}, r.common()...)...)
		if got := r.mainHolds(); got != next {
			t.Fatalf("the rollback of the forged extension wrote back:\n%s\nwant the confirmed file (rollback printed:\n%s)", got, out)
		}
	})

	// Issue 29: a transaction id of shell syntax and terminal escapes,
	// written by the service user, is refused on load: root's status and
	// apply print neither it nor a command to run that holds it.
	t.Run("forged id", func(t *testing.T) {
		r := newServiceRig(t, u, bin)
		r.writeMain(good)
		r.run(0, append([]string{"apply"}, r.common()...)...)
		r.run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", r.candidate("new.yaml", next), "--rollback-timer", "process"}, r.common()...)...)
		f := r.transaction()
		const evil = "x$(touch /tmp/pwned)\x1b]2;owned\x07\x1b[2J"
		f["pending"].(map[string]any)["id"] = evil
		r.forge(f)
		for _, args := range [][]string{{"status"}, {"apply"}, {"confirm"}, {"status", "-o", "json"}} {
			out := r.run(1, append(args, r.common()...)...)
			if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "touch /tmp/pwned") {
				t.Errorf("%s printed the forged id: %q", args, out)
			}
			if !strings.Contains(out, "pending.id") {
				t.Errorf("%s does not name the field it refused: %q", args, out)
			}
		}
		if got := r.mainHolds(); got != next {
			t.Fatalf("the main file changed: %q", got)
		}
	})
}

// Root's process writes back its own copy of the main file, taken when it
// installed a candidate: the restore point's only when the file was not
// edited since the last confirm. A transaction begun without --candidate
// over an edited main file and extended with one had root write back the
// edit, which was never confirmed, and the rollback said it restored the
// file: the kernel rolled back, the files not, and nothing pinned, so the
// daemon's next pass or a plain apply applied the edit. The rollback now
// checks what root wrote back, and pins the files when it is not the
// restore point's.
func TestTxWalkFinding121ExtensionWithCandidateOverAnEditIsPinned(t *testing.T) {
	nettest.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds the command")
	}
	u := nettest.NewServiceUser(t)
	r := newServiceRig(t, u, serviceBinary(t, u))
	const (
		good = "version: 1\nlinks:\n  rb0: {kind: bridge}\n"
		edit = "version: 1\nlinks:\n  rb0: {kind: bridge}\n  rb1: {kind: bridge}\n"
		next = "version: 1\nlinks:\n  rb0: {kind: bridge}\n  rb2: {kind: bridge}\n"
	)
	r.writeMain(good)
	r.run(0, append([]string{"apply"}, r.common()...)...)
	r.writeMain(edit)
	r.run(0, append([]string{"apply", "--confirm-within", "60s", "--rollback-timer", "process"}, r.common()...)...)
	cand := r.candidate("next.yaml", next)
	r.run(0, append([]string{"apply", "--confirm-within", "60s", "--candidate", cand, "--rollback-timer", "process"}, r.common()...)...)
	out := r.run(1, append([]string{"rollback"}, r.common()...)...)
	if !strings.Contains(out, "not the restore point's") {
		t.Errorf("rollback:\n%s\nwant it to say the main file is not the restore point's", out)
	}
	if got := r.mainHolds(); got != good && got != edit {
		t.Fatalf("main file after the rollback:\n%s", got)
	}
	for _, l := range []string{"rb1", "rb2"} {
		if err := exec.Command("ip", "-n", r.ns, "link", "show", l).Run(); err == nil {
			t.Errorf("%s is there after the rollback", l)
		}
	}
	// The edit root wrote back is pinned: a plain apply refuses it, and
	// the kernel keeps the confirmed configuration.
	if r.mainHolds() == edit {
		if out := r.run(1, append([]string{"apply"}, r.common()...)...); !strings.Contains(out, "could not write back") {
			t.Errorf("a plain apply of the edit root wrote back:\n%s", out)
		}
		if err := exec.Command("ip", "-n", r.ns, "link", "show", "rb1").Run(); err == nil {
			t.Error("a plain apply after the rollback applied the edit that was never confirmed")
		}
	}
}
