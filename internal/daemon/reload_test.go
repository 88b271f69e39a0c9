package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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

// A side file the configuration names is read on every pass like the
// YAML: an edit is enforced, and a bad, missing, settling or untrusted one
// keeps the last good configuration.
func TestSideFileKeepsLastGood(t *testing.T) {
	cf := ConfigFiles("", "").(*configFiles)
	d, main, dropIn := newLoadEnv(t, cf)
	cf.mainFile, cf.dropIn = main, dropIn
	sideDir := t.TempDir()
	list := filepath.Join(sideDir, "block.txt")
	writeFile(t, list, "192.0.2.1\n192.0.2.2\n")
	writeFile(t, filepath.Join(dropIn, "20-set.yaml"), "version: 1\nnftables:\n  inet f:\n    sets:\n      s: {type: ipv4_addr, elements-file: "+list+"}\n")
	elems := func() int {
		if len(d.cfg.State.NFTables) == 0 {
			return -1
		}
		return len(d.cfg.State.NFTables[0].Sets[0].Elems)
	}
	check := func(step string, want int, wantErr bool) {
		t.Helper()
		d.loadConfig()
		if got := elems(); got != want || (d.cfgErr != nil) != wantErr {
			t.Fatalf("%s: %d elements, error %v; want %d, an error: %v", step, got, d.cfgErr, want, wantErr)
		}
	}
	check("first", 2, false)
	if !cf.isSide(list) || !cf.isSource(list) || !cf.sideDirs()[sideDir] {
		t.Fatalf("the side file is not watched: %v", cf.sides)
	}
	writeFile(t, list, "192.0.2.1\n192.0.2.2\n192.0.2.3\n")
	check("an edit", 3, false)
	writeFile(t, list, "192.0.2.1\n192.0.2.\n")
	check("a bad line", 3, true)
	writeFile(t, list, "192.0.2.1\n")
	// Written in place, and the writes not over: not read yet.
	cf.sawWrite(list, fsnotify.Event{Name: list, Op: fsnotify.Write})
	check("settling", 3, true)
	cf.sawWrite(list, fsnotify.Event{Name: list, Op: fsnotify.Create})
	check("settled", 1, false)
	if err := os.Chmod(list, 0o666); err != nil {
		t.Fatal(err)
	}
	check("writable by others", 1, true)
	if !strings.Contains(d.cfgErr.Error(), "insecure configuration: side file "+list) {
		t.Errorf("error %v", d.cfgErr)
	}
	if err := os.Remove(list); err != nil {
		t.Fatal(err)
	}
	check("gone", 1, true)
	writeFile(t, list, "192.0.2.9\n192.0.2.8\n")
	check("back", 2, false)
	// No longer named: no longer watched.
	writeFile(t, filepath.Join(dropIn, "20-set.yaml"), "version: 1\n")
	check("not named", -1, false)
	if cf.isSide(list) || len(d.sides) != 0 {
		t.Errorf("still watched: %v", d.sides)
	}
}

// The watch of the configuration follows the side files into their
// directory: a side file moved into place or written wakes the loop, other
// files there do not.
func TestConfigWatchFollowsSideFiles(t *testing.T) {
	dir, sideDir := t.TempDir(), t.TempDir()
	main := filepath.Join(dir, "netreconcile.yaml")
	writeFile(t, main, "version: 1\n")
	cf := ConfigFiles(main, filepath.Join(dir, "conf.d")).(*configFiles)
	cf.settle = 50 * time.Millisecond
	woke := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cf.Run(ctx, func() { woke <- struct{}{} }) }()
	waitWake := func(what string, want bool) {
		t.Helper()
		select {
		case <-woke:
			if !want {
				t.Fatalf("%s woke the loop", what)
			}
		case <-time.After(500 * time.Millisecond):
			if want {
				t.Fatalf("%s did not wake the loop", what)
			}
		}
	}
	waitWake("the start", true)
	list := filepath.Join(sideDir, "block.txt")
	cf.watchSides([]string{list})
	waitWake("watching a new directory", true)
	writeFile(t, filepath.Join(sideDir, "notes.txt"), "x")
	waitWake("another file beside the side file", false)
	writeFile(t, list+".tmp", "192.0.2.1\n")
	waitWake("a temporary file", false)
	if err := os.Rename(list+".tmp", list); err != nil {
		t.Fatal(err)
	}
	waitWake("the side file moved into place", true)
	f, err := os.OpenFile(list, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("192.0.2.2\n")
	_ = f.Close()
	waitWake("the side file written in place (once settled)", true)
	cf.watchSides(nil)
	time.Sleep(100 * time.Millisecond)
	for len(woke) > 0 {
		<-woke
	}
	writeFile(t, list, "192.0.2.3\n")
	waitWake("a side file no longer named", false)
}
