package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
}

// TestRootMainWriter: root's process writes only the main file its command
// line names, installs only the candidate it read, and puts back only its
// own copy of what the file held before the transaction, with the file's
// mode and owner; a transaction id is never a path. What the service user
// sends (its state directory holds the restore point) is never written.
func TestRootMainWriter(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "netreconcile.yaml")
	if err := os.WriteFile(main, []byte("version: 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	const id = "20261124T011546Z-2e1077"
	w := &rootMainWriter{main: main}
	for _, req := range []writerRequest{
		{Op: "install", Path: main, ID: id}, // no candidate read
		{Op: "restore", Path: main, ID: id}, // no copy kept
		{Op: "restore", Path: main, ID: "../../x"},
		{Op: "install", Path: main, ID: ""},
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
	if fi, err := os.Stat(before); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("root's copy: %v %v", fi, err)
	}
	// A copy that is not root's own is not trusted.
	if err := os.Chmod(before, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.do(&writerRequest{Op: "restore", Path: main, ID: id}); err == nil {
		t.Error("restored from a copy others can read")
	}
	if err := os.Chmod(before, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(main, 0o604); err != nil {
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
	if _, err := os.Stat(before); err == nil {
		t.Error("root's copy is still there after the restore")
	}
}
