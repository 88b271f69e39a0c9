package safeapply

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// ReadSnapshot copies the configuration: the main file and the drop-ins the
// loader reads (desired.ReadSourcesDir: *.yaml and *.yml, not hidden, in
// name order). A missing drop-in directory has no files. The side files
// they name join when the snapshot is parsed (Snapshot.Parse): only the
// loader knows which they are.
func ReadSnapshot(mainFile, dropIn string, now time.Time, by string) (*Snapshot, error) {
	mainAbs, err := filepath.Abs(mainFile)
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", mainFile, err)
	}
	s := &Snapshot{Main: mainAbs, At: now.UTC(), By: by}
	m, err := readCopy(mainAbs)
	if err != nil {
		return nil, err
	}
	s.Files = append(s.Files, *m)
	if dropIn != "" {
		if s.DropIn, err = filepath.Abs(dropIn); err != nil {
			return nil, fmt.Errorf("drop-in directory %s: %w", dropIn, err)
		}
		names, err := dropInNames(s.DropIn)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			c, err := readCopy(filepath.Join(s.DropIn, n))
			if err != nil {
				return nil, err
			}
			s.Files = append(s.Files, *c)
		}
	}
	s.Hash = hashFiles(s.Files)
	return s, nil
}

// SnapshotOf is ReadSnapshot for sources already read (the daemon's
// configuration in force): their content as it was read, with the mode,
// owner and link of each file as they are now.
func SnapshotOf(mainFile, dropIn string, srcs []desired.Source, now time.Time, by string) (*Snapshot, error) {
	s := &Snapshot{At: now.UTC(), By: by}
	var err error
	if s.Main, err = filepath.Abs(mainFile); err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", mainFile, err)
	}
	if dropIn != "" {
		if s.DropIn, err = filepath.Abs(dropIn); err != nil {
			return nil, fmt.Errorf("drop-in directory %s: %w", dropIn, err)
		}
	}
	for _, src := range srcs {
		p, err := filepath.Abs(src.Name)
		if err != nil {
			return nil, fmt.Errorf("configuration file %s: %w", src.Name, err)
		}
		// The content is the one read: only the mode, owner and link
		// are taken from the file as it is now.
		c, err := statCopy(p)
		if err != nil {
			return nil, err
		}
		c.Data, c.Side = src.Data, src.Side
		s.Files = append(s.Files, *c)
	}
	if len(s.Files) == 0 {
		return nil, fmt.Errorf("configuration %s: no files", mainFile)
	}
	s.Hash = hashFiles(s.Files)
	return s, nil
}

// WithMain returns a copy of s whose main file holds data instead (the
// --candidate file about to be installed, through the main file's link if
// it is one), without side files: those the candidate names join when it
// is parsed.
func (s *Snapshot) WithMain(data []byte, now time.Time, by string) *Snapshot {
	c := *s
	c.Files = nil
	for _, f := range s.Files {
		if !f.Side {
			c.Files = append(c.Files, f)
		}
	}
	c.Files[0].Data = data
	c.At, c.By = now.UTC(), by
	c.Hash = hashFiles(c.Files)
	return &c
}

// Parse loads the snapshot's configuration and records in it the side
// files the configuration names, as the loader read them: those the
// snapshot holds already are taken from it (a restore point is what it
// was), the others from the disk, with their mode and owner as they are
// now. A side file that cannot be read is not recorded; the configuration
// is then invalid, and the error says why.
func (s *Snapshot) Parse(allowInsecure bool) (*desired.Config, error) {
	held := map[string]FileCopy{}
	var files []FileCopy
	for _, f := range s.Files {
		if f.Side {
			held[f.Path] = f
		} else {
			files = append(files, f)
		}
	}
	var statErr error
	cfg, err := desired.ParseWith(s.Sources(), desired.Options{
		AllowInsecure: allowInsecure,
		Named: func(src desired.Source, err error) {
			if err != nil {
				return
			}
			c, ok := held[src.Name]
			if !ok {
				cur, err := sideCopy(src)
				if err != nil {
					statErr = errors.Join(statErr, err)
					return
				}
				c = *cur
			}
			files = append(files, c)
		},
	})
	s.Files = files
	s.Hash = hashFiles(s.Files)
	if err == nil && statErr != nil {
		return nil, statErr
	}
	return cfg, err
}

// sideCopy is a side file as the loader read it, with its mode, owner and
// link as they are now.
func sideCopy(src desired.Source) (*FileCopy, error) {
	p, err := filepath.Abs(src.Name)
	if err != nil {
		return nil, fmt.Errorf("side file %s: %w", src.Name, err)
	}
	c, err := statCopy(p)
	if err != nil {
		return nil, err
	}
	c.Data, c.Side = src.Data, true
	return c, nil
}

// sameModes says whether two snapshots of the same files (the same Hash)
// give each file the same mode and owner: the hash covers names, links and
// contents only, and a file made private since it was recorded must not
// be given its old mode back by a rollback.
func sameModes(a, b *Snapshot) bool {
	if len(a.Files) != len(b.Files) {
		return false
	}
	for i := range a.Files {
		x, y := &a.Files[i], &b.Files[i]
		if x.Mode != y.Mode || x.UID != y.UID || x.GID != y.GID {
			return false
		}
	}
	return true
}

// withModesOf is the restore point s with the mode and owner each of its
// files has in cur (the files as a transaction begins) where cur holds the
// same path, link and content: a file chmod'ed or chown'ed since it was
// confirmed is given back as it was when the transaction began, not as it
// was recorded (a rollback would widen a mode the user narrowed). The
// configuration is the same; only who may read it differs.
func (s *Snapshot) withModesOf(cur *Snapshot) *Snapshot {
	now := map[string]*FileCopy{}
	for i := range cur.Files {
		now[cur.Files[i].Path] = &cur.Files[i]
	}
	var out *Snapshot
	for i := range s.Files {
		f, c := &s.Files[i], now[s.Files[i].Path]
		if c == nil || c.Link != f.Link || string(c.Data) != string(f.Data) || (c.Mode == f.Mode && c.UID == f.UID && c.GID == f.GID) {
			continue
		}
		if out == nil {
			cp := *s
			cp.Files = slices.Clone(s.Files)
			out = &cp
		}
		out.Files[i].Mode, out.Files[i].UID, out.Files[i].GID = c.Mode, c.UID, c.GID
	}
	if out == nil {
		return s
	}
	return out
}

// sidePaths lists the snapshot's side files.
func (s *Snapshot) sidePaths() []string {
	var out []string
	for _, f := range s.Files {
		if f.Side {
			out = append(out, f.Path)
		}
	}
	return out
}

// dropInNames lists the fragments the loader reads, in its order.
func dropInNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read drop-in directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		if isFragment(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func isFragment(n string) bool {
	return !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml"))
}

func readCopy(p string) (*FileCopy, error) {
	c, err := statCopy(p)
	if err != nil {
		return nil, err
	}
	if c.Data, err = desired.ReadFile(p); err != nil {
		return nil, fmt.Errorf("read configuration %s: %w", p, err)
	}
	return c, nil
}

// statCopy is a file's mode, owner and link, without its content.
func statCopy(p string) (*FileCopy, error) {
	c := &FileCopy{Path: p}
	lfi, err := os.Lstat(p)
	if err != nil {
		return nil, fmt.Errorf("read configuration %s: %w", p, err)
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		if c.Link, err = os.Readlink(p); err != nil {
			return nil, fmt.Errorf("read configuration %s: %w", p, err)
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read configuration %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read configuration %s: not a regular file", p)
	}
	c.Mode = fi.Mode().Perm()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		c.UID, c.GID = int(st.Uid), int(st.Gid)
	}
	return c, nil
}

// RejectedName is where a rollback keeps a file it replaced or took away:
// hidden (the loader skips names starting with a dot), beside the file,
// named after the transaction, so that the change that was rolled back can
// be read and fixed.
func RejectedName(path, id string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".rejected-"+id)
}

// restoreFiles writes the snapshot's files back. Each file is replaced
// atomically (a temporary file made with O_EXCL|O_NOFOLLOW in the same
// directory, fsync, rename, fsync of the directory), so a crash leaves the
// old or the restored content and the daemon never reads a half-written
// file. A file whose content, mode, owner and kind already match is left
// alone. A fragment that is in the drop-in directory now but was not then
// is moved aside (RejectedName), as is the old content of every replaced
// file. trust checks a file written through a link (nil: none). It returns
// the paths it changed.
func restoreFiles(s *Snapshot, id string, trust func(string) error) ([]string, error) {
	var changed []string
	keep := map[string]bool{}
	for i := range s.Files {
		f := &s.Files[i]
		keep[f.Path] = true
		did, err := restoreFile(f, id, trust)
		if err != nil {
			return changed, err
		}
		if did {
			changed = append(changed, f.Path)
		}
	}
	if s.DropIn != "" {
		names, err := dropInNames(s.DropIn)
		if err != nil {
			return changed, err
		}
		moved := false
		for _, n := range names {
			p := filepath.Join(s.DropIn, n)
			if keep[p] {
				continue
			}
			if err := os.Rename(p, RejectedName(p, id)); err != nil {
				return changed, fmt.Errorf("move aside drop-in %s, added after the restore point: %w", p, err)
			}
			changed, moved = append(changed, p), true
		}
		if moved {
			if err := syncDir(s.DropIn); err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// ReadFileCopy reads a file's content, mode and owner: for a MainWriter.
func ReadFileCopy(path string) (*FileCopy, error) { return readCopy(path) }

// RestoreFile writes one file of a snapshot back, as restoreFiles does:
// for a MainWriter. What it writes through a link is held to the
// configuration's trust rule (desired.CheckTrustedFile) unless
// allowInsecure.
func RestoreFile(f *FileCopy, id string, allowInsecure bool) (bool, error) {
	return restoreFile(f, id, trustFor(allowInsecure))
}

// trustFor is the check of a file written through a link.
func trustFor(allowInsecure bool) func(string) error {
	if allowInsecure {
		return nil
	}
	return func(p string) error { return desired.CheckTrustedFile(p, "configuration file") }
}

// InstallMain replaces the content of the main file at path with data
// atomically, keeping its mode and owner, and its link if it is one: for a
// MainWriter.
func InstallMain(path string, data []byte) error {
	cur, err := readCopy(path)
	if err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return installMain(&Snapshot{Main: path, Files: []FileCopy{*cur}}, data)
}

// restoreFile makes f.Path what f recorded: a regular file with f's
// content, mode and owner; or, when f.Path was a symlink (a fragment, a
// side file or the main file linked into a deploy's tree), that link again,
// with f's content, mode and owner in the file it points to. The file a
// link reaches is part of the configuration as much as the link: the
// loader reads it, and a rollback that put the link back over changed
// content would leave the daemon applying what was rolled back. What is
// replaced is kept under RejectedName(f.Path, id): the old link itself, or
// a copy of the content it reached.
func restoreFile(f *FileCopy, id string, trust func(string) error) (bool, error) {
	cur, err := readCopy(f.Path)
	if err == nil && cur.Link == f.Link && string(cur.Data) == string(f.Data) && cur.Mode == f.Mode && cur.UID == f.UID && cur.GID == f.GID {
		return false, nil
	}
	if f.Link == "" {
		return true, replaceFile(f.Path, id, func(tmp string) error { return writeNew(tmp, f) })
	}
	relinked := false
	if err != nil || cur.Link != f.Link {
		if err := replaceFile(f.Path, id, func(tmp string) error { return os.Symlink(f.Link, tmp) }); err != nil {
			return false, err
		}
		relinked = true
	}
	target, err := linkTarget(f.Path)
	if err != nil {
		return relinked, fmt.Errorf("restore %s: %w", f.Path, err)
	}
	if tc, err := readCopy(target); err == nil && string(tc.Data) == string(f.Data) && tc.Mode == f.Mode && tc.UID == f.UID && tc.GID == f.GID {
		return relinked, nil
	}
	if trust != nil {
		if err := trust(target); err != nil {
			return relinked, fmt.Errorf("restore %s through its link: %w", f.Path, err)
		}
	}
	if !relinked && cur != nil {
		// The link stays: keep the content it reached.
		old := *cur
		_ = os.Remove(RejectedName(f.Path, id))
		if err := writeNew(RejectedName(f.Path, id), &old); err != nil {
			return false, fmt.Errorf("keep the rolled-back %s: %w", f.Path, err)
		}
	}
	if err := replaceFile(target, "", func(tmp string) error { return writeNew(tmp, f) }); err != nil {
		return true, fmt.Errorf("restore %s through its link: %w", f.Path, err)
	}
	return true, nil
}

// replaceFile puts what make creates at a temporary name in p's directory
// in place of p, atomically, and syncs the directory. With an id, what p
// was is kept under RejectedName(p, id) (a hard link of the same inode; a
// symlink is kept as the link).
func replaceFile(p, id string, make func(tmp string) error) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("restore %s: %w", p, err)
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("restore %s: %w", p, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(p)+".restore-"+hex.EncodeToString(rnd[:]))
	if err := make(tmp); err != nil {
		return fmt.Errorf("restore %s: %w", p, err)
	}
	if _, err := os.Lstat(p); err == nil && id != "" {
		_ = os.Remove(RejectedName(p, id))
		if err := os.Link(p, RejectedName(p, id)); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("keep the rolled-back %s: %w", p, err)
		}
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("restore %s: %w", p, err)
	}
	return syncDir(dir)
}

// linkTarget is the file the symlink at p reaches, following further links
// (each relative to its own directory); the last one may not exist yet.
func linkTarget(p string) (string, error) {
	cur := p
	for i := 0; i < 40; i++ {
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) && cur != p {
			return cur, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return cur, nil
		}
		to, err := os.Readlink(cur)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(cur), to)
		}
		cur = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", p)
}

// writeNew creates p (never following or reusing an entry) with f's
// content, mode and owner, and syncs it.
func writeNew(p string, f *FileCopy) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(f.Mode.Perm()))
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(fd), p)
	err = file.Chmod(f.Mode.Perm())
	if err == nil && (f.UID != os.Geteuid() || f.GID != os.Getegid()) {
		err = file.Chown(f.UID, f.GID)
	}
	if err == nil {
		_, err = file.Write(f.Data)
	}
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(p)
	}
	return err
}

// installMain replaces the main file's content with data atomically,
// keeping its mode and owner (the --candidate file); a main file linked
// into a deploy's tree stays that link, and the file it points to takes
// the content: the link is the deploy's layout, which a candidate does not
// change.
func installMain(s *Snapshot, data []byte) error {
	f := s.Files[0]
	f.Data = data
	p := f.Path
	if f.Link != "" {
		var err error
		if p, err = linkTarget(f.Path); err != nil {
			return fmt.Errorf("install %s: %w", f.Path, err)
		}
	}
	if err := replaceFile(p, "", func(tmp string) error { return writeNew(tmp, &f) }); err != nil {
		return fmt.Errorf("install %s: %w", f.Path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
