package desired

import (
	"encoding/binary"
	"strings"
	"testing"
)

// acl encodes a POSIX ACL xattr value: entries of tag, perm, id.
func acl(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// Finding 8 of issue 12: what a key file's owner, mode and ACL allow.
func TestCheckKeyAccess(t *testing.T) {
	const svc, svcGroup, other, otherGroup = 990, 990, 1000, 1000
	service := Caller{UID: svc, GID: svcGroup}
	root := Caller{}
	// systemd's credential for User=netreconcile: 0400 + user:svc:r, mask r.
	credACL := acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclUser, aclRead, svc}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, aclRead, 0}, [3]uint32{aclOther, 0, 0})
	for _, tc := range []struct {
		name   string
		a      KeyAccess
		c      Caller
		refuse string // "" to accept
	}{
		{"0600 root, root service", KeyAccess{Mode: 0o100600}, root, ""},
		{"0400 owned by the service", KeyAccess{UID: svc, GID: svcGroup, Mode: 0o100400}, service, ""},
		{"systemd credential for a non-root User=", KeyAccess{Mode: 0o100440, ACL: credACL}, service, ""},
		{"0640 root:service group", KeyAccess{GID: svcGroup, Mode: 0o100640}, service, ""},
		{"0640 root:root, root service", KeyAccess{Mode: 0o100640}, root, "readable by group 0"},
		{"0640 root:other group", KeyAccess{GID: otherGroup, Mode: 0o100640}, service, "readable by group 1000"},
		{"0660 root:service group", KeyAccess{GID: svcGroup, Mode: 0o100660}, service, "writable by its group"},
		{"0644", KeyAccess{Mode: 0o100644}, root, "accessible by others"},
		{"0604", KeyAccess{Mode: 0o100604}, service, "accessible by others"},
		{"owned by another user", KeyAccess{UID: other, Mode: 0o100600}, service, "owned by uid 1000"},
		{"owned by the service, root reads it", KeyAccess{UID: svc, Mode: 0o100600}, root, "owned by uid 990"},
		{"credential ACL naming another user", KeyAccess{Mode: 0o100440, ACL: acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclUser, aclRead, other}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, aclRead, 0}, [3]uint32{aclOther, 0, 0})}, service, "grants uid 1000"},
		{"ACL granting the service write", KeyAccess{Mode: 0o100460, ACL: acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclUser, aclRead | aclWrite, svc}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, aclRead | aclWrite, 0}, [3]uint32{aclOther, 0, 0})}, service, "grants uid 990"},
		{"ACL entry masked out", KeyAccess{Mode: 0o100400, ACL: acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclUser, aclRead, other}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclMask, 0, 0}, [3]uint32{aclOther, 0, 0})}, service, ""},
		{"ACL naming another group", KeyAccess{Mode: 0o100440, ACL: acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclGroup, aclRead, otherGroup}, [3]uint32{aclMask, aclRead, 0}, [3]uint32{aclOther, 0, 0})}, service, "grants group 1000"},
		{"ACL other read", KeyAccess{Mode: 0o100404, ACL: acl([3]uint32{aclUserObj, aclRead, 0}, [3]uint32{aclGroupObj, 0, 0}, [3]uint32{aclOther, aclRead, 0})}, service, "accessible by others"},
		{"broken ACL", KeyAccess{Mode: 0o100400, ACL: []byte{1, 2, 3}}, service, "unreadable POSIX ACL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKeyAccess("k", tc.a, tc.c)
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refuse != "" && err == nil:
				t.Errorf("accepted, want refused with %q", tc.refuse)
			case tc.refuse != "" && !strings.Contains(err.Error(), tc.refuse):
				t.Errorf("error %q, want it to contain %q", err, tc.refuse)
			}
		})
	}
}
