package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ConfigFiles returns a source that wakes the loop when anything changes in
// the main file's directory or in the drop-in directory.
//
// It watches directories, not files: editors that save by writing a new file
// and renaming it over the old one, and Ansible's atomic moves, replace the
// inode a file watch would follow. A drop-in directory that does not exist
// yet is watched from its parent and picked up once created.
//
// A file written in place (a write event on its name) is "settling": the
// source wakes the loop only once no write was seen for SettleDelay, and the
// daemon keeps the configuration in force while any file settles, so that a
// half-written file is never read as a declaration.
//
// The side files the configuration names (routes-files, elements-file) are
// watched the same way, in their own directories, once the daemon has
// parsed the configuration and tells the source which they are
// (watchSides): there only their own names count.
func ConfigFiles(mainFile, dropIn string) Source {
	return &configFiles{mainFile: mainFile, dropIn: dropIn, settle: SettleDelay, written: map[string]time.Time{},
		sides: map[string]bool{}, sidesChanged: make(chan struct{}, 1)}
}

// sideWatcher is implemented by sources that watch the side files the
// configuration names: the daemon tells them after each parse.
type sideWatcher interface {
	watchSides(paths []string)
}

// SettleDelay is how long a configuration file written in place must have
// seen no write before the daemon reads it (docs/daemon.md, "Writing
// configuration files"). A writer that writes a file in several calls (a
// shell redirection, a copy) leaves it readable half-written; one second
// covers such writers unless they stall, and costs only in-place writes: a
// file moved into place (Ansible, most editors, install) is read at once.
const SettleDelay = time.Second

// configFiles is the ConfigFiles source.
type configFiles struct {
	mainFile, dropIn string
	settle           time.Duration

	mu      sync.Mutex
	written map[string]time.Time // the last in-place write seen, by path
	// sides are the side files (clean paths); sidesChanged tells Run to
	// watch their directories.
	sides        map[string]bool
	sidesChanged chan struct{}
}

func (c *configFiles) watchSides(paths []string) {
	want := map[string]bool{}
	for _, p := range paths {
		want[filepath.Clean(p)] = true
	}
	c.mu.Lock()
	same := len(want) == len(c.sides)
	for p := range want {
		same = same && c.sides[p]
	}
	c.sides = want
	c.mu.Unlock()
	if !same {
		select {
		case c.sidesChanged <- struct{}{}:
		default:
		}
	}
}

func (c *configFiles) isSide(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sides[name]
}

// sideDirs returns the directories of the side files.
func (c *configFiles) sideDirs() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dirs := map[string]bool{}
	for p := range c.sides {
		dirs[filepath.Dir(p)] = true
	}
	return dirs
}

// settler is implemented by sources that know a configuration file is being
// written; the daemon keeps the configuration in force meanwhile.
type settler interface {
	unsettled(now time.Time) time.Duration
}

func (c *configFiles) Name() string { return "configuration files" }

// unsettled returns how long until no watched file has been written in place
// for the settle delay: 0 when none is being written.
func (c *configFiles) unsettled(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var wait time.Duration
	for name, at := range c.written {
		left := at.Add(c.settle).Sub(now)
		if left <= 0 {
			delete(c.written, name)
			continue
		}
		wait = max(wait, left)
	}
	return wait
}

// sawWrite records an event and reports whether it was a write in place. A
// file created, moved into place or removed is whole at once: its name is
// no longer settling (an in-place writer's next write marks it again).
func (c *configFiles) sawWrite(name string, ev fsnotify.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Has(fsnotify.Write) {
		c.written[name] = time.Now()
		return true
	}
	delete(c.written, name)
	return false
}

// isSource reports whether a path is the main file, a fragment or a side
// file: writes to other files (an editor's swap file, a temporary file
// before its rename) hold nothing back.
func (c *configFiles) isSource(name string) bool {
	if name == filepath.Clean(c.mainFile) || c.isSide(name) {
		return true
	}
	base := filepath.Base(name)
	return filepath.Dir(name) == filepath.Clean(c.dropIn) && !strings.HasPrefix(base, ".") &&
		(strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"))
}

func (c *configFiles) Run(ctx context.Context, wake func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch configuration: %w", err)
	}
	defer w.Close()
	mainDir := filepath.Clean(filepath.Dir(c.mainFile))
	if err := w.Add(mainDir); err != nil {
		return fmt.Errorf("watch configuration directory %s: %w", mainDir, err)
	}
	dropIn := filepath.Clean(c.dropIn)
	watchDropIn := func() error {
		if dropIn == "." || dropIn == mainDir {
			return nil
		}
		err := w.Add(dropIn)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := watchDropIn(); err != nil {
		return fmt.Errorf("watch drop-in directory %s: %w", dropIn, err)
	}
	if parent := filepath.Dir(dropIn); dropIn != "." && parent != mainDir {
		// Only to see the drop-in directory appear; best effort.
		_ = w.Add(parent)
	}
	// The side files' directories, beside the main and drop-in ones. One
	// that cannot be watched (missing) is left to the periodic resync.
	sideDirs := map[string]bool{}
	watchSides := func() {
		want := c.sideDirs()
		added := false
		for d := range want {
			if !sideDirs[d] && d != mainDir && d != dropIn && w.Add(d) == nil {
				sideDirs[d], added = true, true
			}
		}
		for d := range sideDirs {
			if !want[d] {
				_ = w.Remove(d)
				delete(sideDirs, d)
			}
		}
		if added {
			// A side file may have changed since the parse that named
			// it, before its directory was watched.
			wake()
		}
	}
	settled := time.NewTimer(time.Hour)
	settled.Stop()
	defer settled.Stop()
	// The directories may have changed before the watches were in place.
	wake()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.sidesChanged:
			watchSides()
		case <-settled.C:
			wake()
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("configuration watch closed")
			}
			name := filepath.Clean(ev.Name)
			if name == dropIn && ev.Has(fsnotify.Create) {
				if err := watchDropIn(); err != nil {
					return fmt.Errorf("watch drop-in directory %s: %w", dropIn, err)
				}
			}
			// Anything in the main directory counts, not only the main
			// file: it may be a symlink whose target is swapped. In a
			// side file's directory, only the side files do.
			if dir := filepath.Dir(name); dir != mainDir && dir != dropIn && name != dropIn && !c.isSide(name) {
				continue
			}
			if c.isSource(name) && c.sawWrite(name, ev) {
				// Written in place: wake once the writes stop.
				settled.Reset(c.settle)
				continue
			}
			wake()
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("configuration watch closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				wake()
				continue
			}
			return fmt.Errorf("watch configuration: %w", err)
		}
	}
}
