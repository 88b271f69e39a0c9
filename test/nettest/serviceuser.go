package nettest

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// ServiceUser is a throwaway user for a test that needs the packaged
// service's user by name (root runs commands as the owner of the state
// directory only when it is that user): it exists only in the private
// mount namespace of the commands Wrap runs, where /etc/passwd and
// /etc/group are copies that add it. The machine's own files are never
// written, and a test is the same whether or not a user named
// netreconcile exists on the machine.
type ServiceUser struct {
	Name     string
	UID, GID int
	passwd   string
	group    string
}

// NewServiceUser makes a user with a uid and gid that no user or group of
// the machine has.
func NewServiceUser(t testing.TB) *ServiceUser {
	t.Helper()
	RequireRoot(t)
	RequireTool(t, "unshare")
	var id int
	for {
		var b [2]byte
		_, _ = rand.Read(b[:])
		id = 40000 + int(binary.BigEndian.Uint16(b[:]))%20000
		_, uerr := user.LookupId(strconv.Itoa(id))
		_, gerr := user.LookupGroupId(strconv.Itoa(id))
		if uerr != nil && gerr != nil {
			break
		}
	}
	u := &ServiceUser{Name: fmt.Sprintf("nrsvc%d", id), UID: id, GID: id}
	dir := t.TempDir()
	add := func(real, line, name string) string {
		t.Helper()
		data, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, append(data, line...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	u.passwd = add("/etc/passwd", fmt.Sprintf("%s:x:%d:%d:netreconcile test service user:/nonexistent:/usr/sbin/nologin\n", u.Name, u.UID, u.GID), "passwd")
	u.group = add("/etc/group", fmt.Sprintf("%s:x:%d:\n", u.Name, u.GID), "group")
	return u
}

// Wrap returns the command line that runs args in a private mount
// namespace where the user exists.
func (u *ServiceUser) Wrap(args ...string) []string {
	return append([]string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/group && shift 2 && exec "$@"`,
		"sh", u.passwd, u.group}, args...)
}
