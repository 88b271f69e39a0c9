package ipam

import (
	"context"
	"path/filepath"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// lock takes the exclusive flock of a pool's lock file at path (see statedir.Dir.Lock); the
// returned function releases it.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	d, err := statedir.Open(filepath.Dir(path), false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Lock(ctx, filepath.Base(path), statedir.LockOptions{})
}
