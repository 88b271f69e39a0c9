package statedir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The caller's own namespace is identified without setns: the packaged
// service has CAP_NET_ADMIN but not CAP_SYS_ADMIN. Run here as an
// unprivileged user (when root), which has neither.
func TestIdentifyOwnNetnsUnprivileged(t *testing.T) {
	id, err := IdentifyNetns("")
	if err != nil {
		t.Fatal(err)
	}
	if id.Key != "" || id.Cookie == 0 || id.Ino == 0 {
		t.Errorf("own namespace: %+v", id)
	}
	// The child as nobody needs root; -short (make check) leaves it out.
	if os.Geteuid() != 0 || testing.Short() || os.Getenv("STATEDIR_CHILD") != "" {
		return
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", bin, "-test.run=^TestIdentifyOwnNetnsUnprivileged$", "-test.v")
	cmd.Env = append(os.Environ(), "STATEDIR_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
}

// Files are never opened through a symlink, and temporary files never
// reuse a planted name.
func TestNoFollow(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"f", "l"} {
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.ReadFile("f", 100); err == nil || !strings.Contains(err.Error(), "symlink, which is not followed") {
		t.Errorf("read through a symlink: %v", err)
	}
	if _, err := d.Lock(t.Context(), "l", LockOptions{RecordPID: true}); err == nil {
		t.Errorf("lock through a symlink succeeded")
	}
	if err := d.WriteFile("f", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Errorf("the symlink's target was written: %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "f")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("f after WriteFile: %v %v", fi, err)
	}
	if _, err := d.Sub("l", false); err == nil {
		t.Errorf("a symlink opened as a subdirectory")
	}
}

// A pin comes back as it was written, and a key IdentifyNetns would not
// give (a path out of the state directory among them) is refused.
func TestPinRoundTripsAndRefusesOtherKeys(t *testing.T) {
	for _, n := range []Netns{{Key: "netns/nsfs-4-4026532281", Dev: 4, Ino: 4026532281, Cookie: 77}, {Key: "netns/a:b", Cookie: 1}, {}} {
		got, err := ParsePin(n.Pin())
		if err != nil || got != n {
			t.Errorf("ParsePin(%q) = %+v, %v; want %+v", n.Pin(), got, err, n)
		}
	}
	for _, bad := range []string{"", "1:2:3", "x:2:3:netns/a", "1:2:3:netns/", "1:2:3:netns/..", "1:2:3:netns/a/b", "1:2:3:../etc", "1:2:3:/etc", "1:2:3:other/a", "1:2:-3:netns/a"} {
		if n, err := ParsePin(bad); err == nil {
			t.Errorf("ParsePin(%q) = %+v, want an error", bad, n)
		}
	}
}

// A staged file is nowhere to be seen until Commit puts it in place of the
// old one (through a symlink planted at the name, never into its target),
// with WriteFile's mode; Discard leaves the directory as it was, and so
// does a process that never commits (the file has no name meanwhile).
func TestStageCommitDiscard(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	entries := func() []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	if err := d.WriteFile("f", []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := d.Stage("f", []byte("new"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(); len(got) != 1 {
		t.Errorf("staged, the directory holds %v", got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "f")); string(data) != "old" {
		t.Errorf("f before Commit: %q", data)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Discard()
	if data, _ := os.ReadFile(filepath.Join(dir, "f")); string(data) != "new" {
		t.Errorf("f after Commit: %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "f")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("f after Commit: %v %v", fi, err)
	}
	if got := entries(); len(got) != 1 {
		t.Errorf("committed, the directory holds %v", got)
	}
	s, err = d.Stage("f", []byte("dropped"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s.Discard()
	if data, _ := os.ReadFile(filepath.Join(dir, "f")); string(data) != "new" || len(entries()) != 1 {
		t.Errorf("after Discard: f %q, entries %v", data, entries())
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if s, err = d.Stage("l", []byte("over"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Errorf("the symlink's target was written: %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "l")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
		t.Errorf("l after Commit: %v %v", fi, err)
	}
}

// The daemon takes the lock on every pass: a lock file that holds the
// holder's pid already is not written again (on ext4 with discard, cutting
// it to empty waited for the disk in a pass that was to repair a route),
// and one that holds another's is written over, whatever was there.
func TestLockRewritesNoPIDItHolds(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := filepath.Join(dir, "l")
	if err := os.WriteFile(p, []byte("4194304999\nleft by another writer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(os.Getpid()) + "\n"
	lock := func() {
		t.Helper()
		unlock, err := d.Lock(t.Context(), "l", LockOptions{RecordPID: true})
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		if data, err := os.ReadFile(p); err != nil || string(data) != want {
			t.Fatalf("lock file holds %q (%v), want %q", data, err, want)
		}
	}
	lock()
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	lock()
	if fi, err := os.Stat(p); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("lock file holding our pid was written again: modified %v (%v)", fi.ModTime(), err)
	}
}
