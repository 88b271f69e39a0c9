//go:build !linux

package ipam

import (
	"context"
	"errors"
)

func lock(ctx context.Context, path string) (unlock func(), err error) {
	return nil, errors.ErrUnsupported
}
