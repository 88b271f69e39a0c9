package safeapply

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// transaction.json is in the namespace's state directory, which the
// packaged service's user owns: when root runs a command there, the file
// is that user's input. Load checks every field before anything is used
// (check), and a file that fails is refused whole, naming the field and
// quoting nothing: an id made of shell syntax and terminal escapes must
// reach neither root's terminal nor a command line it prints, a timer's
// unit name never a systemctl option, a file copy never a path outside the
// configuration. What it says about the main file root installed is never
// taken on its word (cli's root writer keeps its own record).

// Bounds of the fields' lengths: far above what netreconcile writes.
const (
	maxIDLen     = 64
	maxNameLen   = 1024
	maxTextLen   = 64 << 10 // a detail, an error
	maxProbes    = 64
	maxFiles     = 1 << 16
	maxExtended  = 1 << 20
	maxWindow    = 100 * 365 * 24 * time.Hour
	maxRecordLen = 1 << 20 // a file's symlink target, a probe
)

// ValidID checks a transaction id: letters, digits and dashes, not starting
// with a dash, at most 64 bytes. newID makes 20261124T011546Z-2e1077.
func ValidID(id string) error {
	return statedir.CheckToken("transaction id", id, maxIDLen, "-")
}

// check validates a file just read.
func (f *File) check() error {
	if f.Pending != nil {
		if err := f.Pending.check("pending", true); err != nil {
			return err
		}
	}
	if f.Last != nil {
		if err := f.Last.check("last", false); err != nil {
			return err
		}
	}
	if f.Confirmed != nil {
		if err := f.Confirmed.check("confirmed"); err != nil {
			return err
		}
	}
	if r := f.Rejected; r != nil {
		if err := statedir.CheckToken("rejected.id", r.ID, maxIDLen, "-"); err != nil {
			return err
		}
		if err := checkHash("rejected.hash", r.Hash); err != nil {
			return err
		}
		if err := statedir.CheckText("rejected.error", r.Error, maxTextLen, false); err != nil {
			return err
		}
		// The pin reads these paths again (withSides) at every pass.
		if len(r.Sides) > maxFiles {
			return fmt.Errorf("rejected.sides: more than %d", maxFiles)
		}
		for i, p := range r.Sides {
			if err := statedir.CheckPath(fmt.Sprintf("rejected.sides[%d]", i), p); err != nil {
				return err
			}
		}
	}
	for c := range f.Counts.RolledBack {
		if !knownCause(c) {
			return fmt.Errorf("counts.rolled_back: a cause that is not one of %v", Causes)
		}
	}
	return nil
}

func knownCause(c Cause) bool {
	for _, k := range Causes {
		if c == k {
			return true
		}
	}
	return false
}

func (t *Txn) check(field string, pending bool) error {
	if err := statedir.CheckToken(field+".id", t.ID, maxIDLen, "-"); err != nil {
		return err
	}
	switch {
	case pending && t.State != Pending:
		return fmt.Errorf("%s.state: not %q", field, Pending)
	case !pending && t.State != Confirmed && t.State != RolledBack:
		return fmt.Errorf("%s.state: neither %q nor %q", field, Confirmed, RolledBack)
	}
	if t.Deadline.IsZero() || t.Started.IsZero() {
		return fmt.Errorf("%s: no start or deadline", field)
	}
	if t.Window < 0 || time.Duration(t.Window) > maxWindow {
		return fmt.Errorf("%s.window: out of range", field)
	}
	if t.Extended < 0 || t.Extended > maxExtended {
		return fmt.Errorf("%s.extended: out of range", field)
	}
	if t.BootID != "" {
		if err := statedir.CheckToken(field+".boot_id", t.BootID, maxIDLen, "-"); err != nil {
			return err
		}
	}
	if t.Netns != "" {
		if err := CheckNetns(t.Netns); err != nil {
			return fmt.Errorf("%s.netns: %w", field, err)
		}
	}
	if err := checkTimer(field+".timer", t.Timer, t.ID); err != nil {
		return err
	}
	if err := checkTimer(field+".fallback", t.Fallback, t.ID); err != nil {
		return err
	}
	if strings.HasPrefix(t.Fallback, "daemon:") {
		return fmt.Errorf("%s.fallback: the daemon is no fallback of its own", field)
	}
	if len(t.Probes) > maxProbes {
		return fmt.Errorf("%s.probes: more than %d", field, maxProbes)
	}
	for i, p := range t.Probes {
		if err := statedir.CheckText(fmt.Sprintf("%s.probes[%d]", field, i), p, maxRecordLen, false); err != nil {
			return err
		}
	}
	if err := statedir.CheckText(field+".before", t.Before, maxFileSize, true); err != nil {
		return err
	}
	// One line: messages show it ("was due (DETAIL)"), and a forged
	// one must not add lines of its own to root's terminal.
	if err := statedir.CheckText(field+".detail", t.Detail, maxTextLen, false); err != nil {
		return err
	}
	if t.Cause != "" && !knownCause(t.Cause) {
		return fmt.Errorf("%s.cause: not one of %v", field, Causes)
	}
	if t.RollingBack != "" && (!pending || !knownCause(t.RollingBack)) {
		return fmt.Errorf("%s.rolling_back: not one of %v on a pending transaction", field, Causes)
	}
	if pending {
		if t.Restore == nil || t.Applied == nil {
			return fmt.Errorf("%s: no restore point or applied configuration", field)
		}
		if t.Cause != "" || !t.Ended.IsZero() {
			return fmt.Errorf("%s: pending, but ended", field)
		}
	} else if t.Ended.IsZero() {
		return fmt.Errorf("%s: ended, but no end time", field)
	}
	if t.Restore != nil {
		if err := t.Restore.check(field + ".restore"); err != nil {
			return err
		}
	}
	if t.Applied != nil {
		// An extension may apply another main file (-c) than the one
		// the restore point holds.
		if err := t.Applied.check(field + ".applied"); err != nil {
			return err
		}
	}
	if t.Converged != nil {
		if !pending {
			return fmt.Errorf("%s.converged: on an ended transaction", field)
		}
		if err := t.Converged.check(field + ".converged"); err != nil {
			return err
		}
	}
	return nil
}

// CheckNetns checks a namespace as a command line names it (--netns): a
// name of `ip netns`, or a path such as /proc/PID/ns/net.
func CheckNetns(ns string) error {
	if strings.HasPrefix(ns, "/") {
		return statedir.CheckPath("netns", ns)
	}
	return statedir.CheckToken("netns", ns, 255, "._-@:+")
}

// checkTimer checks what holds a transaction's deadline: "daemon:PID",
// "process:PID" or "systemd:UNIT" with the unit name Arrange gives (which
// stopTimer passes to systemctl).
func checkTimer(field, timer, id string) error {
	if timer == "" {
		return nil
	}
	kind, ref, _ := strings.Cut(timer, ":")
	switch kind {
	case "daemon", "process":
		if n, err := strconv.Atoi(ref); err == nil && n >= 0 && strconv.Itoa(n) == ref {
			return nil
		}
	case "systemd":
		if n, ok := strings.CutPrefix(ref, timerUnitPrefix+id+"-"); ok {
			if k, err := strconv.Atoi(n); err == nil && k >= 0 && strconv.Itoa(k) == n {
				return nil
			}
		}
	}
	return fmt.Errorf("%s: neither daemon:PID, process:PID nor systemd:%sID-N", field, timerUnitPrefix)
}

func checkHash(field, h string) error {
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("%s: not a SHA-256 in hex", field)
	}
	return nil
}

// bys are who records a snapshot.
var bys = map[string]bool{"apply": true, "confirm": true, "run": true, "rollback": true}

func (s *Snapshot) check(field string) error {
	if err := statedir.CheckPath(field+".main", s.Main); err != nil {
		return err
	}
	if s.DropIn != "" {
		if err := statedir.CheckPath(field+".drop_in", s.DropIn); err != nil {
			return err
		}
	}
	if !bys[s.By] {
		return fmt.Errorf("%s.by: not apply, confirm, run or rollback", field)
	}
	if len(s.Files) == 0 || len(s.Files) > maxFiles {
		return fmt.Errorf("%s.files: none, or more than %d", field, maxFiles)
	}
	// The files are the main file, then fragments of the drop-in
	// directory in name order, then the side files the configuration
	// names, each once: never another path, which a rollback would
	// write (side files are checked again, as configuration, before one
	// is written back).
	sides, sideBytes := map[string]bool{}, 0
	for i := range s.Files {
		c := &s.Files[i]
		name := fmt.Sprintf("%s.files[%d]", field, i)
		if err := statedir.CheckPath(name+".path", c.Path); err != nil {
			return err
		}
		switch {
		case i == 0 && (c.Path != s.Main || c.Side):
			return fmt.Errorf("%s.path: not the main file", name)
		case c.Side && sides[c.Path]:
			return fmt.Errorf("%s.path: a side file given twice", name)
		case c.Side:
			sides[c.Path] = true
			if sideBytes += len(c.Data); sideBytes > desired.MaxSideBytes {
				return fmt.Errorf("%s.data: the side files hold more than %d bytes", name, desired.MaxSideBytes)
			}
		case i > 0 && len(sides) > 0:
			return fmt.Errorf("%s: a drop-in after a side file", name)
		case i > 0 && (s.DropIn == "" || filepath.Dir(c.Path) != s.DropIn || !isFragment(filepath.Base(c.Path))):
			return fmt.Errorf("%s.path: not a fragment of the drop-in directory", name)
		case i > 1 && c.Path <= s.Files[i-1].Path:
			return fmt.Errorf("%s.path: the fragments are not in name order", name)
		}
		if c.Mode&^0o777 != 0 {
			return fmt.Errorf("%s.mode: more than permission bits", name)
		}
		if c.UID < 0 || c.GID < 0 || c.UID >= 1<<32-1 || c.GID >= 1<<32-1 {
			return fmt.Errorf("%s: uid or gid out of range", name)
		}
		if c.Link != "" {
			if err := statedir.CheckText(name+".link", c.Link, 4096, false); err != nil {
				return err
			}
		}
		if !c.Side && len(c.Data) > desired.MaxFileSize {
			return fmt.Errorf("%s.data: larger than %d bytes", name, desired.MaxFileSize)
		}
	}
	if err := checkHash(field+".hash", s.Hash); err != nil {
		return err
	}
	// The hash covers the names and contents: a file changed by hand
	// since it was recorded is not taken for the one recorded.
	if hashFiles(s.Files) != s.Hash {
		return fmt.Errorf("%s.hash: does not match the files", field)
	}
	return nil
}
