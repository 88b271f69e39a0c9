//go:build !linux

package nftcompile

import "os"

// identify has no change time or inode to read here: the size and the
// modification time only.
func identify(path string) (binaryID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return binaryID{}, err
	}
	return binaryID{Path: path, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, nil
}
