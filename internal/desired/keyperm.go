package desired

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The permission policy for key files and credentials. What matters is who can use the key, judged on the opened descriptor:
//
//   - the owner is root or the caller (the service's user);
//   - nobody but the owner can write it;
//   - nobody but the owner and the service can read it: no bit for others;
//     group read only when the file's group is the service's own group (its
//     effective gid, and never root's group); ACL entries (read from the
//     descriptor's system.posix_acl_access) may grant read to the service's
//     user or group and to nobody else.
//
// So mode 0600/0400 pass as before; so do a key file 0640 root:netreconcile
// for a service running as group netreconcile, and a systemd credential
// handed to a non-root User= (mode 0400 plus an ACL entry user:SERVICE:r,
// which stat shows as 0440 because the group bits then hold the ACL mask).

// KeyAccess is what the policy judges: the fstat of the opened key file and
// its access ACL (nil when it has none).
type KeyAccess struct {
	UID, GID uint32
	Mode     uint32 // st_mode; only the permission bits are judged
	ACL      []byte // the raw system.posix_acl_access value
}

// Caller is the process that will use the key: the service.
type Caller struct{ UID, GID uint32 }

// POSIX ACL xattr layout (linux/posix_acl_xattr.h): a version, then entries
// of tag, permissions and id.
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclRead     = 4
	aclWrite    = 2
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

func parseACL(b []byte) ([]aclEntry, error) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != aclVersion {
		return nil, errors.New("unreadable POSIX ACL")
	}
	var es []aclEntry
	for b = b[4:]; len(b) > 0; b = b[8:] {
		es = append(es, aclEntry{binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]), binary.LittleEndian.Uint32(b[4:])})
	}
	return es, nil
}

// CheckKeyAccess applies the policy; path only names the file in errors,
// which never quote its content.
func CheckKeyAccess(path string, a KeyAccess, c Caller) error {
	if a.UID != 0 && a.UID != c.UID {
		return fmt.Errorf("key file %s is owned by uid %d; it must belong to root or to the user netreconcile runs as (uid %d)", path, a.UID, c.UID)
	}
	perm := a.Mode & 0o777
	if perm&0o007 != 0 {
		return fmt.Errorf("key file %s is accessible by others (mode %04o); chmod 600 it", path, perm)
	}
	// The service's own group, never root's: a root service takes no
	// group read (its group is no narrower than root itself).
	serviceGroup := func(gid uint32) bool { return c.UID != 0 && gid == c.GID && gid != 0 }
	if a.ACL == nil {
		if perm&0o020 != 0 {
			return fmt.Errorf("key file %s is writable by its group (mode %04o); chmod 600 it", path, perm)
		}
		if perm&0o070 != 0 && !serviceGroup(a.GID) {
			return fmt.Errorf("key file %s is readable by group %d, which is not the service's own group (mode %04o); chmod 600 it, or give it the service's group", path, a.GID, perm)
		}
		return nil
	}
	es, err := parseACL(a.ACL)
	if err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	// With an ACL, the group bits of the mode are the mask: every named
	// entry and the owning group get at most what it allows.
	mask := uint16(7)
	for _, e := range es {
		if e.tag == aclMask {
			mask = e.perm
		}
	}
	for _, e := range es {
		eff := e.perm & mask
		switch e.tag {
		case aclUserObj, aclMask:
		case aclOther:
			if e.perm != 0 {
				return fmt.Errorf("key file %s is accessible by others (ACL); chmod 600 it", path)
			}
		case aclUser:
			if eff&aclWrite != 0 || (eff != 0 && e.id != c.UID) {
				return fmt.Errorf("key file %s: its ACL grants uid %d access; only read by the service's user (uid %d) is accepted", path, e.id, c.UID)
			}
		case aclGroupObj, aclGroup:
			gid := e.id
			if e.tag == aclGroupObj {
				gid = a.GID
			}
			if eff&aclWrite != 0 || (eff != 0 && !serviceGroup(gid)) {
				return fmt.Errorf("key file %s: its ACL grants group %d access; only read by the service's own group is accepted", path, gid)
			}
		default:
			return fmt.Errorf("key file %s: unknown ACL entry %#x", path, e.tag)
		}
	}
	return nil
}
