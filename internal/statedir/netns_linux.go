package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// soNetnsCookie is SO_NETNS_COOKIE (Linux 5.14, asm-generic value, which
// x86 and arm64 use); golang.org/x/sys does not name it yet.
const soNetnsCookie = 71

// Netns identifies the network namespace a run works on.
type Netns struct {
	// Key is the namespace's subdirectory of the state directory, one per
	// namespace whichever way --netns names it (two keys for one namespace
	// would mean two writer locks and two ledgers, and each writer would
	// take the other's objects for foreign):
	//   - netns/NAME for a namespace ip-netns(8) names, however it is given
	//     (NAME, /run/netns/NAME, or a path such as /proc/PID/ns/net to the
	//     same nsfs inode); with several names, the first in byte order;
	//   - "" (the state directory itself) without --netns, and for a path to
	//     the caller's own namespace that has no name;
	//   - netns/nsfs-DEV-INO for any other namespace: the base name of a
	//     path such as /proc/PID/ns/net says nothing about which namespace
	//     it is.
	// Named namespaces keep the key they always had.
	Key string
	// Dev and Ino are the namespace's nsfs identity, from fstat of the
	// opened namespace: unique among living namespaces.
	Dev, Ino uint64
	// Cookie is the kernel's netns cookie: never reused while the system
	// runs, unlike an nsfs inode. The ledger is bound to it, so that a
	// namespace deleted and made again under the same name (or an inode
	// number reused) does not inherit the records of the dead one.
	Cookie uint64
}

// IdentifyNetns opens the namespace at path ("" for the caller's own) and
// returns its identity.
func IdentifyNetns(path string) (Netns, error) {
	var id Netns
	open := path
	if path == "" {
		open = "/proc/thread-self/ns/net"
	} else if !strings.ContainsRune(path, '/') {
		open = filepath.Join(runNetns, path)
	}
	h, err := netns.GetFromPath(open)
	if err != nil {
		return id, fmt.Errorf("open network namespace %s: %w", open, err)
	}
	defer h.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(h), &st); err != nil {
		return id, fmt.Errorf("network namespace %s: %w", open, err)
	}
	id.Dev, id.Ino = st.Dev, st.Ino
	own := netns.None()
	if path != "" {
		own = h
	}
	if id.Cookie, err = cookie(own); err != nil {
		return id, fmt.Errorf("network namespace %s: %w", open, err)
	}
	if path == "" {
		return id, nil
	}
	name, err := runNetnsName(id.Dev, id.Ino)
	if err != nil {
		return id, err
	}
	if name == "" && filepath.Dir(filepath.Clean(open)) == "/run/netns" {
		// Named, though the directory listing missed it (a name added
		// while we read): the name it was given is its name.
		name = filepath.Base(open)
	}
	if name != "" {
		id.Key = "netns/" + name
		return id, nil
	}
	var self unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &self); err != nil {
		return id, fmt.Errorf("own network namespace: %w", err)
	}
	if self.Dev == id.Dev && self.Ino == id.Ino {
		return id, nil
	}
	id.Key = fmt.Sprintf("netns/nsfs-%d-%d", id.Dev, id.Ino)
	return id, nil
}

// runNetns is where ip-netns(8) keeps its names: bind mounts of nsfs files.
const runNetns = "/run/netns"

// runNetnsName returns the first name (in byte order) under /run/netns of
// the namespace with nsfs identity dev, ino, or "" if it has none.
func runNetnsName(dev, ino uint64) (string, error) {
	entries, err := os.ReadDir(runNetns)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("list network namespace names: %w", err)
	}
	// ReadDir sorts by name: the first match is the canonical name.
	for _, e := range entries {
		var st unix.Stat_t
		// A name whose namespace cannot be stat'ed (being deleted, or a
		// leftover file after a failed ip netns add) names nothing.
		if err := unix.Stat(filepath.Join(runNetns, e.Name()), &st); err != nil {
			continue
		}
		if st.Dev == dev && st.Ino == ino {
			return e.Name(), nil
		}
	}
	return "", nil
}

// cookie reads the namespace's cookie from a socket made inside it; a
// closed handle means the caller's own namespace, entered without setns
// (which needs CAP_SYS_ADMIN, which the packaged service does not have).
func cookie(h netns.NsHandle) (uint64, error) {
	if !h.IsOpen() {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		return sockCookie(fd)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return 0, err
	}
	defer orig.Close()
	if err := netns.Set(h); err != nil {
		return 0, fmt.Errorf("enter: %w", err)
	}
	fd, serr := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err := netns.Set(orig); err != nil {
		// A thread stuck in the wrong namespace must not be reused:
		// leaving it locked makes the runtime discard it.
		runtime.LockOSThread()
		if serr == nil {
			unix.Close(fd)
		}
		return 0, fmt.Errorf("leave: %w", err)
	}
	if serr != nil {
		return 0, fmt.Errorf("socket: %w", serr)
	}
	defer unix.Close(fd)
	return sockCookie(fd)
}

func sockCookie(fd int) (uint64, error) {
	var v uint64
	l := uint32(unsafe.Sizeof(v))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, soNetnsCookie,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	if errno == unix.ENOPROTOOPT {
		// Before Linux 5.14: no cookie. The ledger is then not bound to
		// one (0), and a namespace made again under a recorded name relies
		// on the records of vanished objects being forgotten.
		return 0, nil
	}
	if errno != 0 {
		return 0, fmt.Errorf("SO_NETNS_COOKIE: %w", errno)
	}
	return v, nil
}

// Pin is the namespace's identity as one argument: a process started to act
// on this namespace later (a rollback timer) is handed it, so that it opens
// the subdirectory its starter used even if the namespace gained a name in
// between, which would give it another key (ParsePin, and a caller that
// takes Key when the identity it finds is the same).
func (n Netns) Pin() string {
	return fmt.Sprintf("%d:%d:%d:%s", n.Cookie, n.Dev, n.Ino, n.Key)
}

// ParsePin reads what Pin wrote. The key must be one IdentifyNetns gives:
// "" or netns/ and one path component.
func ParsePin(s string) (Netns, error) {
	var n Netns
	parts := strings.SplitN(s, ":", 4)
	if len(parts) != 4 {
		return n, fmt.Errorf("namespace pin %q: want COOKIE:DEV:INO:KEY", s)
	}
	for i, p := range []*uint64{&n.Cookie, &n.Dev, &n.Ino} {
		v, err := strconv.ParseUint(parts[i], 10, 64)
		if err != nil {
			return n, fmt.Errorf("namespace pin %q: %w", s, err)
		}
		*p = v
	}
	n.Key = parts[3]
	if n.Key != "" {
		name, ok := strings.CutPrefix(n.Key, "netns/")
		if !ok || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
			return n, fmt.Errorf("namespace pin %q: bad state subdirectory %q", s, n.Key)
		}
	}
	return n, nil
}
