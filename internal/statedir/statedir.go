// Package statedir opens netreconcile's state directory safely for a
// process that may run as root in a directory another user could write.
//
// Every file is opened relative to a directory descriptor with O_NOFOLLOW,
// so a symlink planted in the directory is never followed; temporary files
// get O_EXCL and unpredictable names, so one cannot be pre-created; and a
// directory (or a parent of it) that a user other than root or the caller
// could change is refused before anything is read or written, as sshd does
// for its keys (secure_filename).
package statedir

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/redact"
)

// ErrInsecure: a state directory, or a parent of it, can be changed by a user
// other than root and the caller.
var ErrInsecure = errors.New("insecure state directory")

// Dir is an open, checked directory.
type Dir struct {
	f    *os.File
	path string
}

// Path is the directory's path, for messages.
func (d *Dir) Path() string { return d.path }

// Close releases the directory descriptor.
func (d *Dir) Close() error { return d.f.Close() }

func (d *Dir) fd() int { return int(d.f.Fd()) }

// Open checks and opens the directory at path. With create, a missing
// directory is made with mode 0700 (its missing parents too). The directory
// must be owned by root or the caller and writable by nobody else; each
// parent must be owned by root or the caller and writable by nobody else
// unless it has the sticky bit (like /tmp), where nobody else can rename or
// delete what the owner made.
//
// Why the parents: whoever can write a parent can rename the state directory
// away and put one of their own in its place.
func Open(path string, create bool) (*Dir, error) {
	// The state directory's path is in many messages: a name this
	// program prints itself, never a value to judge (package redact).
	redact.Own(path)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	redact.Own(abs)
	if create {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, fmt.Errorf("create state directory: %w", err)
		}
	}
	// Symlinks in the path are resolved once and every component of the
	// result is checked: a link is only as trusted as the directory holding
	// it, and that directory is checked too.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	parts := strings.Split(strings.TrimPrefix(real, "/"), "/")
	cur := "/"
	for i := 0; i <= len(parts); i++ {
		if i > 0 {
			if parts[i-1] == "" {
				continue
			}
			cur = filepath.Join(cur, parts[i-1])
		}
		var st unix.Stat_t
		if err := unix.Lstat(cur, &st); err != nil {
			return nil, fmt.Errorf("state directory: %s: %w", cur, err)
		}
		if i < len(parts) {
			if err := checkParent(cur, &st); err != nil {
				return nil, err
			}
		}
	}
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), real)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	if err := checkDir(path, &st); err != nil {
		f.Close()
		return nil, err
	}
	return &Dir{f: f, path: path}, nil
}

// Sub opens the subdirectory name (slash-separated, no "..") component by
// component with O_NOFOLLOW, making missing ones with mode 0700 if create,
// and checks each as Open checks the state directory. A missing one without
// create is fs.ErrNotExist.
func (d *Dir) Sub(name string, create bool) (*Dir, error) {
	cur := d
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." {
			return nil, fmt.Errorf("state directory %s: bad subdirectory name %q", d.path, name)
		}
		if create {
			if err := unix.Mkdirat(cur.fd(), c, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, fmt.Errorf("create %s: %w", filepath.Join(cur.path, c), err)
			}
		}
		next, err := cur.openSub(c)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	if cur == d {
		return nil, fmt.Errorf("state directory %s: empty subdirectory name", d.path)
	}
	return cur, nil
}

func (d *Dir) openSub(c string) (*Dir, error) {
	p := filepath.Join(d.path, c)
	fd, err := unix.Openat(d.fd(), c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("%w: %s is not a directory (a symlink is not followed)", ErrInsecure, p)
		}
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := checkDir(p, &st); err != nil {
		f.Close()
		return nil, err
	}
	return &Dir{f: f, path: p}, nil
}

// Exists reports whether the directory holds an entry name (not followed).
func (d *Dir) Exists(name string) (bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(d.path, name), err)
	}
	return true, nil
}

// FileStamp tells a file rewritten since it was stamped: a file written
// with WriteFile is a new inode, and a rewrite within one tick of the
// coarse clock that keeps the size still shows in the inode.
type FileStamp struct {
	Mtime, Size int64
	Ino         uint64
}

// Stamp returns the stamp of the entry name (not followed), for a cache
// to tell a rewritten file; a missing one's is zero.
func (d *Dir) Stamp(name string) (FileStamp, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return FileStamp{}, nil
	}
	if err != nil {
		return FileStamp{}, fmt.Errorf("%s: %w", filepath.Join(d.path, name), err)
	}
	return FileStamp{Mtime: st.Mtim.Nano(), Size: st.Size, Ino: st.Ino}, nil
}

func trusted(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

func ownerErr(path string, uid uint32) error {
	return fmt.Errorf("%w: %s is owned by uid %d, not by root or by the caller (uid %d): "+
		"another user could make this process overwrite or delete any file it can write; "+
		"run as the directory's owner (the service's user), or give a --state-dir of your own",
		ErrInsecure, path, uid, os.Geteuid())
}

func checkParent(path string, st *unix.Stat_t) error {
	if !trusted(st.Uid) {
		return ownerErr(path, st.Uid)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o) without the sticky bit: chmod go-w it",
			ErrInsecure, path, st.Mode&0o7777)
	}
	return nil
}

func checkDir(path string, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%w: %s is not a directory", ErrInsecure, path)
	}
	if !trusted(st.Uid) {
		return ownerErr(path, st.Uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o): chmod go-w it",
			ErrInsecure, path, st.Mode&0o7777)
	}
	return nil
}

// ReadFile reads the regular file name, at most max bytes. A missing file is
// fs.ErrNotExist; a symlink, a FIFO or another non-regular file is an error
// that quotes nothing of its content. O_NONBLOCK: opening a FIFO must not
// wait for a writer.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	f, err := d.openNoFollow(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadRegular(f, f.Name(), max)
}

// openNoFollow opens name in the directory for reading, refusing a symlink
// and never waiting on a FIFO (O_NONBLOCK). A missing file is
// fs.ErrNotExist.
func (d *Dir) openNoFollow(name string) (*os.File, error) {
	p := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
		}
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("read %s: %w: it is a symlink, which is not followed", p, ErrInsecure)
		}
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// ReadTrusted is ReadFile for a file whose content this process trusts (a
// cache it acts on): the file must also be owned by root or the caller and
// writable by nobody else, or it is ErrInsecure, unread. The directory's
// checks keep others from planting a file; these, from editing one left
// writable.
func (d *Dir) ReadTrusted(name string, max int64) ([]byte, error) {
	f, err := d.openNoFollow(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := f.Name()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if !trusted(st.Uid) {
		return nil, fmt.Errorf("read %s: %w: owned by uid %d, not by root or the caller", p, ErrInsecure, st.Uid)
	}
	if st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("read %s: %w: writable by group or others (mode %04o)", p, ErrInsecure, st.Mode&0o7777)
	}
	return ReadRegular(f, p, max)
}

// ReadRegular reads an open file that must be a regular file, at most max
// bytes; more is an error. Its content is never quoted.
func ReadRegular(f *os.File, path string, max int64) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	// Refused by its size before it is read: a file another user made
	// large (sparse, costing them nothing) costs this process nothing
	// either. One that grows while it is read stops at max+1.
	if st.Size > max {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, max)
	}
	// Read into a buffer of the file's size: io.ReadAll grows from 512
	// bytes, copying, and a state file is read by every command.
	buf := bytes.NewBuffer(make([]byte, 0, st.Size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	data := buf.Bytes()
	if int64(len(data)) > max {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, max)
	}
	return data, nil
}

// WriteFile replaces name with data so that a crash at any moment leaves the
// old or the new content: a temporary file with an unpredictable name made
// with O_EXCL|O_NOFOLLOW (a planted file or symlink makes it fail, never
// followed), fsync, rename over name, fsync of the directory. The file gets
// mode perm whatever the umask.
func (d *Dir) WriteFile(name string, data []byte, perm uint32) error {
	p := filepath.Join(d.path, name)
	tmp, err := tempName(name)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	fd, err := unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = f.Chmod(os.FileMode(perm))
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd(), tmp, d.fd(), name)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", p, err)
	}
	return nil
}

// Remove deletes the entry name (never followed); a missing one is no error.
func (d *Dir) Remove(name string) error {
	err := unix.Unlinkat(d.fd(), name, 0)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// Sync flushes the directory's entries.
func (d *Dir) Sync() error { return d.f.Sync() }

// LockOptions say how Lock waits.
type LockOptions struct {
	// RecordPID writes the holder's pid into the lock file, so that a
	// waiter can say whom it waits for.
	RecordPID bool
	// Waiting is called once, with the holder's recorded pid (0 if
	// unknown), when the lock is taken by someone else.
	Waiting func(pid int)
	// NoWait returns at once, with an error wrapping ErrLocked, when
	// someone else holds the lock: a probe for a live holder (the daemon).
	NoWait bool
}

// ErrLocked: the lock is held by someone else (LockOptions.NoWait).
var ErrLocked = errors.New("held by another process")

// LockedBy returns the pid an ErrLocked error names (0 if unknown).
func LockedBy(err error) int {
	var l *lockedError
	if errors.As(err, &l) {
		return l.pid
	}
	return 0
}

type lockedError struct {
	path string
	pid  int
}

func (e *lockedError) Error() string {
	if e.pid > 0 {
		return fmt.Sprintf("lock %s: held by pid %d", e.path, e.pid)
	}
	return fmt.Sprintf("lock %s: %v", e.path, ErrLocked)
}

func (e *lockedError) Unwrap() error { return ErrLocked }

// Lock takes an exclusive flock on the file name (made with mode 0600,
// never followed), waiting until ctx is done. The lock belongs to the open
// file, so it also excludes other goroutines of this process, and the kernel
// drops it when the holder dies, even by SIGKILL. The returned function
// releases it.
func (d *Dir) Lock(ctx context.Context, name string, opts LockOptions) (unlock func(), err error) {
	p := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd(), name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EROFS) {
		// A read-only state directory still excludes other writers: flock
		// needs no write access. What then needs recording fails on its
		// own, and what needs none (repairing a route) goes on.
		fd, err = unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		opts.RecordPID = false
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("lock %s: %w: it is a symlink, which is not followed", p, ErrInsecure)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w: not a regular file", p, ErrInsecure)
	}
	got := func() (func(), error) {
		if opts.RecordPID {
			recordPID(f)
		}
		return func() { f.Close() }, nil
	}
	err = flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return got()
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	// The holder's pid, when it recorded one (RecordPID).
	var buf [32]byte
	n, _ := f.ReadAt(buf[:], 0)
	holder, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if opts.NoWait {
		f.Close()
		return nil, &lockedError{p, holder}
	}
	if opts.Waiting != nil {
		opts.Waiting(holder)
	}
	// flock(2) cannot be interrupted on demand: wait in a goroutine, and if
	// ctx ends first, leave it to close the file (dropping the lock) once it
	// gets the lock.
	done := make(chan error, 1)
	go func() { done <- flock(fd, unix.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		return got()
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		if holder > 0 {
			return nil, fmt.Errorf("lock %s, held by pid %d: %w", p, holder, context.Cause(ctx))
		}
		return nil, fmt.Errorf("lock %s: %w", p, context.Cause(ctx))
	}
}

// recordPID writes this process's pid into the held lock file, best effort:
// the pid only makes a waiter's message better. A file that holds it
// already (the daemon takes the lock on every pass) is left alone, and one
// that holds another is written over before it is cut, never cut to empty
// first: freeing the file's block makes ext4 mounted with discard wait for
// the disk's discard, tens of milliseconds on a busy disk, which a pass
// spent before it could repair anything.
func recordPID(f *os.File) {
	want := []byte(strconv.Itoa(os.Getpid()) + "\n")
	var buf [32]byte
	n, _ := f.ReadAt(buf[:], 0)
	if bytes.Equal(buf[:n], want) {
		return
	}
	if _, err := f.WriteAt(want, 0); err == nil {
		_ = f.Truncate(int64(len(want)))
	}
}

// flock retries on EINTR: the Go runtime's preemption signals interrupt a
// blocked flock.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// Staged is a file WriteFile would write, written and flushed ahead of the
// moment it is to replace the one in place (Commit), or dropped (Discard):
// a command stages its record while it works, and the flush, the slow part
// of a write on a disk, overlaps that work instead of following it.
type Staged struct {
	d    *Dir
	name string
	data []byte
	perm uint32
	f    *os.File // the staged content; nil once committed or discarded
	// tmp is the file's temporary name, "" while it has none: an unnamed
	// file (O_TMPFILE) leaves nothing behind when the process dies first.
	tmp string
}

// Stage writes data for name as WriteFile would, and flushes it, without
// putting it in place.
func (d *Dir) Stage(name string, data []byte, perm uint32) (*Staged, error) {
	p := filepath.Join(d.path, name)
	s := &Staged{d: d, name: name, data: data, perm: perm}
	fd, err := openUnnamed(d.fd(), perm)
	if err != nil {
		s.tmp, err = tempName(name)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
		fd, err = unix.Openat(d.fd(), s.tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
	}
	s.f = os.NewFile(uintptr(fd), name)
	err = s.f.Chmod(os.FileMode(perm))
	if err == nil {
		_, err = s.f.Write(data)
	}
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		s.Discard()
		return nil, fmt.Errorf("write %s: %w", p, err)
	}
	return s, nil
}

// Commit puts the staged file in place of name, as WriteFile does. When an
// unnamed file cannot be given a name (no /proc), the content is written
// again by WriteFile.
func (s *Staged) Commit() error {
	if s.f == nil {
		return fmt.Errorf("write %s: nothing staged", filepath.Join(s.d.path, s.name))
	}
	d, f := s.d, s.f
	s.f = nil
	defer f.Close()
	if s.tmp == "" {
		tmp, err := tempName(s.name)
		if err == nil {
			// linkat cannot replace name: the file gets a temporary
			// name first, then takes name's place by rename.
			err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), d.fd(), tmp, unix.AT_SYMLINK_FOLLOW)
		}
		if err != nil {
			return d.WriteFile(s.name, s.data, s.perm)
		}
		s.tmp = tmp
	}
	p := filepath.Join(d.path, s.name)
	if err := unix.Renameat(d.fd(), s.tmp, d.fd(), s.name); err != nil {
		_ = unix.Unlinkat(d.fd(), s.tmp, 0)
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", p, err)
	}
	return nil
}

// Discard drops what Stage wrote; after Commit it does nothing.
func (s *Staged) Discard() {
	if s == nil || s.f == nil {
		return
	}
	if s.tmp != "" {
		_ = unix.Unlinkat(s.d.fd(), s.tmp, 0)
	}
	s.f.Close()
	s.f = nil
}

// tempName is a fresh temporary name for name, unpredictable, as
// WriteFile's.
func tempName(name string) (string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return "." + name + ".tmp-" + hex.EncodeToString(rnd[:]), nil
}
