package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// secretDirs is the set of directories holding the enforced configuration's
// secret files, which the secret watch follows: a key file kept outside the
// configuration's directory (/etc/wireguard/wg0.key) is rotated by a write
// or a rename there, which the configuration watch does not see.
type secretDirs struct {
	mu      sync.Mutex
	dirs    []string
	changed chan struct{}
}

func newSecretDirs() *secretDirs { return &secretDirs{changed: make(chan struct{}, 1)} }

// set replaces the directories with those of paths.
func (s *secretDirs) set(paths []string) {
	var dirs []string
	for _, p := range paths {
		dirs = append(dirs, filepath.Clean(filepath.Dir(p)))
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	s.mu.Lock()
	same := slices.Equal(dirs, s.dirs)
	s.dirs = dirs
	s.mu.Unlock()
	if !same {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

func (s *secretDirs) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dirs)
}

// source wakes the loop on any change in a directory that holds one of
// the configuration's secret files. The pass then decides, by the files'
// stat and the keys' values, whether anything changed (secrets.go).
func (s *secretDirs) source() Source {
	return SourceFunc{"secret files", func(ctx context.Context, wake func()) error {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("watch secret files: %w", err)
		}
		defer w.Close()
		watched := map[string]bool{}
		resync := func() {
			want := map[string]bool{}
			for _, d := range s.get() {
				want[d] = true
				if !watched[d] {
					// A directory that cannot be watched (missing, not
					// readable) is left to reloads and the periodic resync.
					if w.Add(d) == nil {
						watched[d] = true
					}
				}
			}
			for d := range watched {
				if !want[d] {
					_ = w.Remove(d)
					delete(watched, d)
				}
			}
		}
		resync()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-s.changed:
				resync()
			case ev, ok := <-w.Events:
				if !ok {
					return errors.New("secret file watch closed")
				}
				if watched[filepath.Dir(filepath.Clean(ev.Name))] {
					wake()
				}
			case err, ok := <-w.Errors:
				if !ok {
					return errors.New("secret file watch closed")
				}
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					wake()
					continue
				}
				return fmt.Errorf("watch secret files: %w", err)
			}
		}
	}}
}
