//go:build !linux

package desired

import (
	"fmt"
	"os"
	"syscall"
)

// KeyAccessOf reads the owner and mode only: ACLs are read on Linux.
func KeyAccessOf(f *os.File) (KeyAccess, error) {
	fi, err := f.Stat()
	if err != nil {
		return KeyAccess{}, fmt.Errorf("stat key file: %w", err)
	}
	a := KeyAccess{Mode: uint32(fi.Mode().Perm())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		a.UID, a.GID = st.Uid, st.Gid
	}
	return a, nil
}

// CurrentCaller is this process's effective user and group.
func CurrentCaller() Caller { return Caller{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())} }
