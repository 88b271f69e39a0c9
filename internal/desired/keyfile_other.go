//go:build !unix

package desired

import "os"

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

func isSymlinkErr(error) bool { return false }
