package desired

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// loadAsEnv names the configuration TestLoadAsHelper loads, in a child
// process running as another user.
const loadAsEnv = "NETRECONCILE_TEST_LOAD_AS"

// TestLoadAsHelper is the child of TestServiceReadsItsCredential.
func TestLoadAsHelper(t *testing.T) {
	path := os.Getenv(loadAsEnv)
	if path == "" {
		t.Skip("a helper: TestServiceReadsItsCredential runs it")
	}
	if _, err := Load(path, ""); err != nil {
		t.Fatal(err)
	}
}

// Finding 8 of issue 12, end to end: a service running as a non-root user
// (here nobody, 65534) loads a configuration whose private key is a file as
// systemd hands over a credential: owned by root, mode 0400 plus an ACL
// entry for the service's user (stat shows 0440). The old check (no group
// or other bit) refused it; the same file with the ACL naming another user
// is refused.
func TestServiceReadsItsCredential(t *testing.T) {
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("needs root to run a child as another user; skipped under -short (make check)")
	}
	const nobody = 65534
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(dir, "wgkey")
	if err := os.WriteFile(key, []byte("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "netreconcile.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard:\n      private-key-file: wgkey\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The test binary, where nobody can run it (go test's own directory is
	// private to root).
	self := filepath.Join(dir, "desired.test")
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	load := func(uid uint32) error {
		t.Helper()
		a := acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclUser, aclRead, uid}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, aclRead, 0}, [3]uint32{aclOther, 0, 0})
		if err := unix.Setxattr(key, "system.posix_acl_access", a, 0); err != nil {
			t.Skipf("this file system takes no POSIX ACL: %v", err)
		}
		cmd := exec.Command(self, "-test.run=^TestLoadAsHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), loadAsEnv+"="+conf)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if err := load(nobody); err != nil {
		t.Errorf("the service's credential (0400 + user:nobody:r) refused:\n%v", err)
	}
	if err := load(nobody - 1); err == nil {
		t.Error("a credential readable by another user accepted")
	}
}
