package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/netreconcile/netreconcile/internal/engine"
)

// newLoadEnv is a daemon over a main file and a drop-in directory, for the
// reload rule alone: loadConfig is called directly, the engine never runs.
func newLoadEnv(t *testing.T, src Source) (*Daemon, string, string) {
	t.Helper()
	dir := t.TempDir()
	main := filepath.Join(dir, "netreconcile.yaml")
	dropIn := filepath.Join(dir, "conf.d")
	writeFile(t, main, "version: 1\nlinks:\n  br0: {kind: bridge}\n")
	if err := os.Mkdir(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dropIn, "10-a.yaml"), "version: 1\nlinks:\n  br1: {kind: bridge}\n")
	opts := Options{Config: main, DropIn: dropIn, Engine: &engine.Engine{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Notifier: nopNotifier{}}
	if src != nil {
		opts.Sources = []Source{src}
	}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	d.loadConfig()
	if d.cfg == nil || len(d.cfg.State.Links) != 2 {
		t.Fatalf("first load: %v", d.cfgErr)
	}
	return d, main, dropIn
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func links(d *Daemon) int { return len(d.cfg.State.Links) }

// A drop-in directory swapped by a deploy (gone for a moment) kept nothing
// of its fragments: the daemon deleted their objects and made them again.
func TestDropInDirectoryGoneKeepsLastGood(t *testing.T) {
	d, _, dropIn := newLoadEnv(t, nil)
	if err := os.Rename(dropIn, dropIn+".old"); err != nil {
		t.Fatal(err)
	}
	d.loadConfig()
	if links(d) != 2 || !d.dropInGone {
		t.Fatalf("after the directory vanished: %d links, waiting %v; want the last good 2, waiting", links(d), d.dropInGone)
	}
	// Back, with a changed fragment: read at once.
	if err := os.Mkdir(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dropIn, "10-a.yaml"), "version: 1\nlinks:\n  br1: {kind: bridge}\n  br2: {kind: bridge}\n")
	d.loadConfig()
	if links(d) != 3 || d.dropInGone {
		t.Fatalf("after the directory came back: %d links, want 3", links(d))
	}
	// Emptied, then removed: the fragments' objects go.
	if err := os.Remove(filepath.Join(dropIn, "10-a.yaml")); err != nil {
		t.Fatal(err)
	}
	d.loadConfig()
	if err := os.Remove(dropIn); err != nil {
		t.Fatal(err)
	}
	d.loadConfig()
	if links(d) != 1 {
		t.Fatalf("after emptying and removing the directory: %d links, want 1", links(d))
	}
}

// An empty or cut fragment (caught in the middle of its write) became a
// declaration of nothing.
func TestHalfWrittenFragmentKeepsLastGood(t *testing.T) {
	d, _, dropIn := newLoadEnv(t, nil)
	for _, half := range []string{"", "links:\n  br1: {kind: bri"} {
		writeFile(t, filepath.Join(dropIn, "10-a.yaml"), half)
		d.loadConfig()
		if links(d) != 2 || d.cfgErr == nil {
			t.Fatalf("fragment %q: %d links, error %v; want the last good 2 and an error", half, links(d), d.cfgErr)
		}
	}
}

// A fragment written in place is not read while writes to it are seen;
// one moved into place is read at once.
func TestSettlingFragmentKeepsLastGood(t *testing.T) {
	cf := ConfigFiles("", "").(*configFiles)
	d, main, dropIn := newLoadEnv(t, cf)
	cf.mainFile, cf.dropIn = main, dropIn
	frag := filepath.Join(dropIn, "10-a.yaml")
	// A write in progress: the first lines of a longer fragment.
	writeFile(t, frag, "version: 1\nlinks:\n  br1: {kind: bridge}\n")
	if !cf.isSource(frag) || !cf.sawWrite(frag, fsnotify.Event{Name: frag, Op: fsnotify.Write}) {
		t.Fatal("a write to a fragment is not tracked")
	}
	writeFile(t, frag, "version: 1\n")
	d.loadConfig()
	if links(d) != 2 {
		t.Fatalf("while settling: %d links, want the last good 2", links(d))
	}
	if w := cf.unsettled(time.Now().Add(SettleDelay)); w != 0 {
		t.Errorf("still settling %v after the delay", w)
	}
	// Moved into place: whole at once.
	cf.sawWrite(frag, fsnotify.Event{Name: frag, Op: fsnotify.Create})
	d.loadConfig()
	if links(d) != 1 {
		t.Fatalf("after the move: %d links, want 1", links(d))
	}
	// Writes to other files (swap files, temporaries) hold nothing back.
	for _, other := range []string{filepath.Join(dropIn, ".10-a.yaml.swp"), filepath.Join(dropIn, "10-a.yaml.tmp"), filepath.Join(filepath.Dir(main), "notes.txt")} {
		if cf.isSource(other) {
			t.Errorf("%s taken for a configuration file", other)
		}
	}
}
