package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

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
}

// TestRootMainWriterRefuses: root's process writes what the service user
// asks only into the main file, with that file's own mode and owner, and
// keeps the replaced copy only under a transaction id, never a path.
func TestRootMainWriterRefuses(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "netreconcile.yaml")
	if err := os.WriteFile(main, []byte("version: 1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	w := &rootMainWriter{main: main}
	file := func(p string) *safeapply.FileCopy {
		return &safeapply.FileCopy{Path: p, Mode: 0o4777, UID: 65534, GID: 65534, Data: []byte("\x7fELF")}
	}
	for _, req := range []writerRequest{
		{Op: "restore", Path: main, File: file(main), ID: "../../x"},
		{Op: "restore", Path: main, File: file(main), ID: ""},
		{Op: "restore", Path: filepath.Join(dir, "other"), File: file(filepath.Join(dir, "other")), ID: "20261124T011546Z-2e1077"},
		{Op: "install", Path: main},
	} {
		if err := w.do(&req); err == nil {
			t.Errorf("%s %s id %q: done, want refused", req.Op, req.Path, req.ID)
		}
	}
	if got, _ := os.ReadFile(main); string(got) != "version: 1\n" {
		t.Fatalf("the main file was written by a refused request: %q", got)
	}
	if err := w.do(&writerRequest{Op: "restore", Path: main, File: file(main), ID: "20261124T011546Z-2e1077"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(main)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode() != 0o640 || int(st.Uid) != os.Geteuid() {
		t.Errorf("restored main file: mode %v uid %d, want the file's own 0640 and uid %d", fi.Mode(), st.Uid, os.Geteuid())
	}
	if _, err := os.Stat(filepath.Join(dir, ".netreconcile.yaml.rejected-20261124T011546Z-2e1077")); err != nil {
		t.Errorf("the replaced copy: %v", err)
	}
}
