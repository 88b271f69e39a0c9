package ipam

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeDurable replaces path with data so that a crash at any moment leaves either the old or
// the new content, and the new content survives a power cut once it returns: write a temporary
// file in the same directory, fsync it, rename it over path, fsync the directory.
//
// The temporary file has a fixed name: writers hold the pool's lock, so there is never more than
// one, and a crashed writer's leftover is simply overwritten by the next one.
func writeDurable(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
