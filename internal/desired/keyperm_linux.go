package desired

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// KeyAccessOf reads what CheckKeyAccess judges from an open descriptor:
// its fstat and its access ACL, so that the file judged is the file read.
func KeyAccessOf(f *os.File) (KeyAccess, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return KeyAccess{}, fmt.Errorf("stat key file: %w", err)
	}
	a := KeyAccess{UID: st.Uid, GID: st.Gid, Mode: st.Mode}
	buf := make([]byte, 4+8*32)
	n, err := unix.Fgetxattr(int(f.Fd()), "system.posix_acl_access", buf)
	switch {
	case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP):
		// No ACL, or a file system without them (systemd then chowns
		// credentials instead).
	case errors.Is(err, unix.ERANGE):
		return KeyAccess{}, errors.New("key file: ACL with too many entries")
	case err != nil:
		return KeyAccess{}, fmt.Errorf("read key file ACL: %w", err)
	default:
		a.ACL = buf[:n]
	}
	return a, nil
}

// CurrentCaller is this process's effective user and group.
func CurrentCaller() Caller { return Caller{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())} }
