package desired

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The ACL is read from the descriptor of a real file: here the one systemd
// gives a credential for a non-root User= (0400 plus user:SERVICE:r).
func TestKeyAccessOfReadsTheACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cred")
	if err := os.WriteFile(path, []byte("x\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	const svc = 4242
	credACL := acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclUser, aclRead, svc}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, aclRead, 0}, [3]uint32{aclOther, 0, 0})
	if err := unix.Setxattr(path, "system.posix_acl_access", credACL, 0); err != nil {
		t.Skipf("this file system takes no POSIX ACL: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := KeyAccessOf(f)
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode&0o777 != 0o440 || a.ACL == nil {
		t.Fatalf("mode %04o, ACL %v: want 0440 with an ACL", a.Mode&0o777, a.ACL != nil)
	}
	if err := CheckKeyAccess(path, a, Caller{UID: svc, GID: svc}); err != nil {
		t.Errorf("the service's credential refused: %v", err)
	}
	if err := CheckKeyAccess(path, a, Caller{UID: svc + 1, GID: svc + 1}); err == nil {
		t.Error("a credential readable by another user accepted")
	}
}
