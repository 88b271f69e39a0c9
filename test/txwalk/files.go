package txwalk

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Layout is how a walk lays its configuration out on the disk, drawn once
// per walk: the main file, or a symlink to it in a deploy tree; fragments
// and side files each a file or a link; their modes and groups; side files
// beside the main file or in a directory of their own, named by a path
// relative to the fragment or an absolute one.
type Layout struct {
	MainLink bool
	Link     map[string]bool // by fragment or side file name
	Mode     map[string]os.FileMode
	// OtherGroup: the file's group is 4242 (no user's), else root's or,
	// in service mode, the service user's.
	OtherGroup map[string]bool
	SideAbs    bool
	SideApart  bool
}

func drawLayout(r *rand.Rand, mode Mode) Layout {
	l := Layout{Link: map[string]bool{}, Mode: map[string]os.FileMode{}, OtherGroup: map[string]bool{}}
	l.MainLink = r.Intn(3) == 0
	l.SideAbs = r.Intn(2) == 0
	l.SideApart = r.Intn(3) == 0
	for _, n := range append(append([]string{"main"}, fragNames...), sideNames...) {
		if n != "main" {
			l.Link[n] = r.Intn(3) == 0
		}
		// Group-readable files; the service user reads them through
		// its group, or as others.
		modes := []os.FileMode{0o600, 0o640, 0o644}
		if mode.Service {
			modes = []os.FileMode{0o640, 0o644}
		}
		l.Mode[n] = modes[r.Intn(len(modes))]
		l.OtherGroup[n] = !mode.Service && r.Intn(3) == 0
	}
	return l
}

func (l Layout) String() string {
	var b strings.Builder
	if l.MainLink {
		b.WriteString("main file a symlink; ")
	}
	for _, n := range append(append([]string{"main"}, fragNames...), sideNames...) {
		fmt.Fprintf(&b, "%s %04o", n, l.Mode[n])
		if l.Link[n] {
			b.WriteString(" (link)")
		}
		if l.OtherGroup[n] {
			b.WriteString(" group 4242")
		}
		b.WriteString(", ")
	}
	if l.SideApart {
		b.WriteString("side files in a directory of their own, ")
	}
	if l.SideAbs {
		b.WriteString("named by absolute paths")
	} else {
		b.WriteString("named by relative paths")
	}
	return b.String()
}

// layout is a Layout at a place: the paths, and the groups.
type layout struct {
	Layout
	etc, main, confD, side, deploy string
	gid                            map[string]int
}

func (s Layout) at(base string, serviceGID int) *layout {
	l := &layout{Layout: s, gid: map[string]int{}}
	l.etc, l.deploy = filepath.Join(base, "etc"), filepath.Join(base, "deploy")
	l.main = filepath.Join(l.etc, "netreconcile.yaml")
	l.confD = filepath.Join(l.etc, "conf.d")
	l.side = filepath.Join(l.etc, "side")
	if s.SideApart {
		l.side = filepath.Join(base, "lists")
	}
	for n, other := range s.OtherGroup {
		l.gid[n] = serviceGID
		if other {
			l.gid[n] = 4242
		}
	}
	return l
}

// sideRef is how the side fragment names a side file.
func (l *layout) sideRef(name string) string {
	if l.SideAbs {
		return filepath.Join(l.side, name)
	}
	rel, _ := filepath.Rel(l.confD, filepath.Join(l.side, name))
	return rel
}

// render is a fragment's text as written here.
func (l *layout) render(s string) string {
	for _, n := range sideNames {
		s = strings.ReplaceAll(s, sideMark+n, l.sideRef(n))
	}
	return s
}

// path is where the configuration reads a file: "main", a fragment's name
// or a side file's name.
func (l *layout) path(name string) string {
	switch {
	case name == "main":
		return l.main
	case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"):
		return filepath.Join(l.confD, name)
	}
	return filepath.Join(l.side, name)
}

// fileState is one configuration file as the oracle sees it: where its link
// points (if it is one) and, through the link, the content, mode and owner.
type fileState struct {
	Link       string
	Data       string
	Mode       os.FileMode
	UID, GID   int
	Missing    bool
	NotRegular bool
}

func (s fileState) String() string {
	if s.Missing {
		return "missing"
	}
	link := ""
	if s.Link != "" {
		link = " -> " + s.Link
	}
	return fmt.Sprintf("%04o %d:%d%s %q", s.Mode, s.UID, s.GID, link, abbrev(s.Data))
}

func abbrev(s string) string {
	if len(s) > 160 {
		return s[:80] + "…" + s[len(s)-60:]
	}
	return s
}

// readState reads the state of the file at p.
func readState(p string) fileState {
	var s fileState
	lfi, err := os.Lstat(p)
	if err != nil {
		s.Missing = true
		return s
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		s.Link, _ = os.Readlink(p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		s.Data = "(dangling: " + err.Error() + ")"
		return s
	}
	if !fi.Mode().IsRegular() {
		s.NotRegular = true
		return s
	}
	s.Mode = fi.Mode().Perm()
	st := fi.Sys().(*syscall.Stat_t)
	s.UID, s.GID = int(st.Uid), int(st.Gid)
	data, err := os.ReadFile(p)
	if err != nil {
		s.Data = "(unreadable: " + err.Error() + ")"
	}
	s.Data = string(data)
	return s
}

// disk is the state of every configuration path the walk knows, by name
// ("main", fragment and side file names).
type disk map[string]fileState

func (l *layout) read() disk {
	d := disk{"main": readState(l.main)}
	for _, n := range fragNames {
		d[n] = readState(l.path(n))
	}
	for _, n := range sideNames {
		d[n] = readState(l.path(n))
	}
	return d
}

// strayFragments lists fragments in conf.d that the loader would read and
// that the walk never names.
func (l *layout) strayFragments() []string {
	ents, _ := os.ReadDir(l.confD)
	known := map[string]bool{}
	for _, n := range fragNames {
		known[n] = true
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) && !known[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// edit is how the walk changes a file: replaced atomically (an editor, a
// deploy tool), written in place, or, for a link, pointed at a new target.
type edit int

const (
	editAtomic edit = iota
	editInPlace
	editRepoint
)

// write writes version v to the disk as the layout says; how says how a
// file that changes is written. It returns the files' states.
func (l *layout) write(v *Version, how edit, seq *int) error {
	files := map[string]*string{"main": ptr(v.Main())}
	for _, n := range fragNames {
		if c, ok := v.Frags[n]; ok {
			files[n] = ptr(l.render(c))
		} else {
			files[n] = nil
		}
	}
	for _, n := range sideNames {
		if c, ok := v.Sides[n]; ok {
			files[n] = ptr(c)
		}
		// A side file the version does not name stays as it is.
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := l.writeOne(n, files[n], how, seq); err != nil {
			return err
		}
	}
	return nil
}

func ptr(s string) *string { return &s }

// writeOne makes the file name hold content (nil: no such file).
func (l *layout) writeOne(name string, content *string, how edit, seq *int) error {
	p := l.path(name)
	cur := readState(p)
	if content == nil {
		if cur.Missing {
			return nil
		}
		return os.Remove(p)
	}
	if !cur.Missing && !cur.NotRegular && cur.Data == *content && (cur.Link != "") == l.isLink(name) {
		return nil
	}
	mode, gid := l.Mode[name], l.gid[name]
	if !l.isLink(name) {
		if how == editInPlace && !cur.Missing && cur.Link == "" {
			return os.WriteFile(p, []byte(*content), mode)
		}
		return atomicWrite(p, *content, mode, gid)
	}
	// A link into the deploy tree.
	if cur.Link != "" && how != editRepoint {
		// The deploy's file changes under the link.
		target := cur.Link
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if how == editInPlace {
			return os.WriteFile(target, []byte(*content), mode)
		}
		return atomicWrite(target, *content, mode, gid)
	}
	*seq++
	target := filepath.Join(l.deploy, fmt.Sprintf("%s.%d", strings.TrimPrefix(name, "."), *seq))
	if err := atomicWrite(target, *content, mode, gid); err != nil {
		return err
	}
	ref := target
	if *seq%2 == 0 {
		// Relative links too, as a deploy tool makes them.
		ref, _ = filepath.Rel(filepath.Dir(p), target)
	}
	tmp := p + ".walk-" + rnd()
	if err := os.Symlink(ref, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (l *layout) isLink(name string) bool {
	if name == "main" {
		return l.MainLink
	}
	return l.Link[name]
}

func rnd() string {
	var b [6]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// atomicWrite replaces p with content, mode and group gid (owner root).
func atomicWrite(p, content string, mode os.FileMode, gid int) error {
	tmp := filepath.Join(filepath.Dir(p), ".walk-"+filepath.Base(p)+"-"+rnd())
	if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	if err := os.Chown(tmp, 0, gid); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// sameFile compares a file as found with a file as expected.
func sameFile(got, want fileState) bool {
	return got == want
}

// leftovers lists files a command left behind in the configuration's
// directories: temporary files of an install or restore.
func (l *layout) leftovers() []string {
	var out []string
	for _, d := range []string{l.etc, l.confD, l.side, l.deploy} {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if strings.Contains(n, ".install-") || strings.Contains(n, ".restore-") {
				out = append(out, filepath.Join(d, n))
			}
		}
	}
	return out
}
