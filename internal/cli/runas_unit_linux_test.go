package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// TestFlagValue: the state directory, the main file and the candidate are
// found in a command line as package flag reads them.
func TestFlagValue(t *testing.T) {
	args := []string{"--state-dir", "/a", "-c=/etc/x.yaml", "--candidate", "/tmp/n.yaml", "-state-dir=/b", "--", "--state-dir", "/c"}
	if got := flagValue(args, "state-dir", DefaultStateDir); got != "/b" {
		t.Errorf("state-dir %q, want /b", got)
	}
	if got := flagValue(args, "c", DefaultConfig); got != "/etc/x.yaml" {
		t.Errorf("c %q", got)
	}
	if got := flagValue(args, "config", DefaultConfig); got != DefaultConfig {
		t.Errorf("config %q", got)
	}
	if got := flagValue(args, "netns", ""); got != "" {
		t.Errorf("netns %q", got)
	}
	if !hasFlag(args, "candidate") || hasFlag(args, "netns") {
		t.Error("hasFlag")
	}
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"--allow-insecure-config"}, true},
		{[]string{"-allow-insecure-config=true", "x"}, true},
		{[]string{"--allow-insecure-config=false"}, false},
		{[]string{"--allow-insecure-config", "--allow-insecure-config=0"}, false},
		{[]string{"--", "--allow-insecure-config"}, false},
		{nil, false},
	} {
		if got := boolFlag(tt.args, "allow-insecure-config"); got != tt.want {
			t.Errorf("boolFlag(%q) = %v", tt.args, got)
		}
	}
}

// TestRootMainWriter: root's process writes only the main file its command
// line names, installs only the candidate it read, and puts back only its
// own copy of what the file held before the transaction, with the file's
// mode and owner; a transaction id is never a path. What the service user
// sends (its state directory holds the restore point) is never written.
func TestRootMainWriter(t *testing.T) {
	requireRootFiles(t)
	dir := t.TempDir()
	main := filepath.Join(dir, "netreconcile.yaml")
	if err := os.WriteFile(main, []byte("version: 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	const id = "20261124T011546Z-2e1077"
	w := newTestWriter(main, "apply", nil)
	for _, req := range []writerRequest{
		{Op: "install", Path: main, ID: id}, // no candidate read
		{Op: "restore", Path: main, ID: id}, // no copy kept
		{Op: "restore", Path: main, ID: "../../x"},
		{Op: "install", Path: main, ID: ""},
		{Op: "install", Path: main, ID: "-rf"},
		{Op: "restore", Path: filepath.Join(dir, "other"), ID: id},
	} {
		if err := w.do(&req); err == nil {
			t.Errorf("%s %s id %q: done, want refused", req.Op, req.Path, req.ID)
		}
	}
	if got, _ := os.ReadFile(main); string(got) != "version: 1\n" {
		t.Fatalf("the main file was written by a refused request: %q", got)
	}
	w.candidate = []byte("version: 1\nlinks: {}\n")
	if err := w.do(&writerRequest{Op: "install", Path: main, ID: id}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(main); string(got) != string(w.candidate) {
		t.Fatalf("installed: %q", got)
	}
	before := filepath.Join(dir, ".netreconcile.yaml.before-"+id)
	for _, p := range []string{before, filepath.Join(dir, ".netreconcile.yaml.root-transaction")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("root's file %s: %v %v", p, fi, err)
		}
	}
	// A copy that is not root's own is not trusted.
	if err := os.Chmod(before, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.do(&writerRequest{Op: "restore", Path: main, ID: id}); err == nil {
		t.Error("restored from a copy others can read")
	}
	if got, _ := os.ReadFile(main); string(got) != string(w.candidate) {
		t.Fatalf("written back from a copy others can read: %q", got)
	}
	// The refusal ended the transaction (the apply that installed it
	// rolls back): start it again.
	if err := os.WriteFile(main, []byte("version: 1\n"), 0o604); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(main, 0o604); err != nil {
		t.Fatal(err)
	}
	w = newTestWriter(main, "apply", []byte("version: 1\nlinks: {}\n"))
	if err := w.do(&writerRequest{Op: "install", Path: main, ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := w.do(&writerRequest{Op: "restore", Path: main, ID: id}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(main)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(main)
	if st := fi.Sys().(*syscall.Stat_t); string(got) != "version: 1\n" || fi.Mode() != 0o604 || int(st.Uid) != os.Geteuid() {
		t.Errorf("restored main file %q mode %v uid %d, want the copy with the file's own mode 0604", got, fi.Mode(), st.Uid)
	}
	if _, err := os.Stat(filepath.Join(dir, ".netreconcile.yaml.rejected-"+id)); err != nil {
		t.Errorf("the replaced copy: %v", err)
	}
	for _, p := range []string{before, filepath.Join(dir, ".netreconcile.yaml.root-transaction")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("root's %s is still there after the restore", p)
		}
	}
}

// TestRootWritesBackOnlyItsOwnOpenTransaction: what root's process does on
// the requests of a command whose state directory is forged. It writes the
// file back only for the transaction it recorded, while the file holds
// the candidate it installed, and when that transaction is due by its own
// record, rolled back by root's own command, or failed in the apply that
// installed it; a confirm by root ends it for good.
func TestRootWritesBackOnlyItsOwnOpenTransaction(t *testing.T) {
	requireRootFiles(t)
	const (
		a, b, c = "version: 1\n", "version: 1\nlinks: {}\n", "version: 1\nroutes: []\n"
		id      = "20261124T011546Z-2e1077"
		other   = "20261124T011546Z-aaaaaa"
	)
	type step struct {
		cmd, op, id string
		advance     time.Duration // the clock, before the request
		candidate   string
		ok          bool
		file        string // the main file after it
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"a forged early rollback of root's open transaction, by another command", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "apply", op: "restore", id: id, ok: false, file: b},
			{cmd: "confirm", op: "restore", id: id, ok: false, file: b},
		}},
		{"root's own rollback", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "rollback", op: "restore", id: id, ok: true, file: a},
			{cmd: "rollback", op: "restore", id: id, ok: false, file: a},
		}},
		{"due by root's own deadline", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "apply", op: "restore", id: id, advance: time.Minute, ok: true, file: a},
		}},
		{"confirmed by root, then a forged due transaction of the same id", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "confirm", op: "confirmed", id: id, ok: true, file: b},
			{cmd: "apply", op: "restore", id: id, advance: time.Hour, ok: false, file: b},
			{cmd: "rollback", op: "restore", id: id, ok: false, file: b},
		}},
		{"confirmed by root, then a forged pending transaction of the same id extended", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "confirm", op: "confirmed", id: id, ok: true, file: b},
			{cmd: "apply", op: "install", id: id, candidate: c, ok: true, file: c},
			{cmd: "rollback", op: "restore", id: id, ok: true, file: b},
		}},
		{"a real extension keeps the first copy", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "apply", op: "install", id: id, candidate: c, ok: true, file: c},
			{cmd: "rollback", op: "restore", id: id, ok: true, file: a},
		}},
		{"another transaction while root's is open", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "apply", op: "install", id: other, candidate: c, ok: false, file: b},
			{cmd: "rollback", op: "restore", id: other, ok: false, file: b},
			{cmd: "rollback", op: "restore", id: id, ok: true, file: a},
		}},
		{"another transaction once root's is due: the file as it is is the restore point", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "apply", op: "install", id: other, advance: time.Minute, candidate: c, ok: true, file: c},
			{cmd: "apply", op: "restore", id: id, advance: time.Hour, ok: false, file: c},
			{cmd: "rollback", op: "restore", id: other, ok: true, file: b},
		}},
		{"confirmed is only root's confirm", []step{
			{cmd: "apply", op: "install", id: id, candidate: b, ok: true, file: b},
			{cmd: "rollback", op: "confirmed", id: id, ok: false, file: b},
			{cmd: "rollback", op: "restore", id: id, ok: true, file: a},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			main := filepath.Join(dir, "netreconcile.yaml")
			if err := os.WriteFile(main, []byte(a), 0o640); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 11, 24, 1, 15, 46, 0, time.UTC)
			for i, s := range tt.steps {
				now = now.Add(s.advance)
				w := newTestWriter(main, s.cmd, []byte(s.candidate))
				at := now
				w.began, w.clock = at, func() time.Time { return at }
				err := w.do(&writerRequest{Op: s.op, Path: main, ID: s.id})
				if (err == nil) != s.ok {
					t.Fatalf("step %d (%s: %s %s): error %v, want ok %v", i, s.cmd, s.op, s.id, err, s.ok)
				}
				if got, _ := os.ReadFile(main); string(got) != s.file {
					t.Fatalf("step %d (%s: %s %s): the main file holds %q, want %q", i, s.cmd, s.op, s.id, got, s.file)
				}
			}
		})
	}

	// Another boot makes root's transaction due, whatever its deadline.
	dir := t.TempDir()
	main := filepath.Join(dir, "netreconcile.yaml")
	if err := os.WriteFile(main, []byte(a), 0o640); err != nil {
		t.Fatal(err)
	}
	boot := filepath.Join(dir, "boot_id")
	if err := os.WriteFile(boot, []byte("boot-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(safeapply.BootIDFileEnv, boot)
	w := newTestWriter(main, "apply", []byte(b))
	if err := w.do(&writerRequest{Op: "install", Path: main, ID: id}); err != nil {
		t.Fatal(err)
	}
	w = newTestWriter(main, "apply", nil)
	if err := w.do(&writerRequest{Op: "restore", Path: main, ID: id}); err == nil {
		t.Fatal("restored in the same boot before the deadline")
	}
	if err := os.WriteFile(boot, []byte("boot-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.do(&writerRequest{Op: "restore", Path: main, ID: id}); err != nil {
		t.Fatalf("after a reboot: %v", err)
	}
	if got, _ := os.ReadFile(main); string(got) != a {
		t.Fatalf("after a reboot the main file holds %q", got)
	}

	// A file changed since root installed it is never written over.
	w = newTestWriter(main, "apply", []byte(b))
	if err := w.do(&writerRequest{Op: "install", Path: main, ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte(c), 0o640); err != nil {
		t.Fatal(err)
	}
	w = newTestWriter(main, "rollback", nil)
	if err := w.do(&writerRequest{Op: "restore", Path: main, ID: id}); err == nil {
		t.Fatal("wrote back over a file changed since the install")
	}
	if got, _ := os.ReadFile(main); string(got) != c {
		t.Fatalf("the changed file now holds %q", got)
	}
}

func newTestWriter(main, cmd string, candidate []byte) *rootMainWriter {
	if len(candidate) == 0 {
		candidate = nil
	}
	return &rootMainWriter{main: main, cmd: cmd, candidate: candidate, window: 30 * time.Second, began: time.Now(), installed: map[string]bool{}}
}

// requireRootFiles: root's writer trusts only root's own files.
func requireRootFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root's writer trusts only files owned by root: run as root")
	}
}
