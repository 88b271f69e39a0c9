package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// ConfigFiles returns a source that wakes the loop when anything changes in
// the main file's directory or in the drop-in directory.
//
// It watches directories, not files: editors that save by writing a new file
// and renaming it over the old one, and Ansible's atomic moves, replace the
// inode a file watch would follow. A drop-in directory that does not exist
// yet is watched from its parent and picked up once created.
func ConfigFiles(mainFile, dropIn string) Source {
	return SourceFunc{"configuration files", func(ctx context.Context, wake func()) error {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("watch configuration: %w", err)
		}
		defer w.Close()
		mainDir := filepath.Clean(filepath.Dir(mainFile))
		if err := w.Add(mainDir); err != nil {
			return fmt.Errorf("watch configuration directory %s: %w", mainDir, err)
		}
		dropIn = filepath.Clean(dropIn)
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
		// The directories may have changed before the watches were in place.
		wake()
		for {
			select {
			case <-ctx.Done():
				return nil
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
				// file: it may be a symlink whose target is swapped.
				if dir := filepath.Dir(name); dir == mainDir || dir == dropIn || name == dropIn {
					wake()
				}
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
	}}
}
