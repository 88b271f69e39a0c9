//go:build unix

package desired

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// ErrInsecureConfig: a user other than root and the caller could change the
// configuration, and so the host's network.
var ErrInsecureConfig = errors.New("insecure configuration")

// CheckTrusted refuses a configuration that a user other than root or the
// caller could change, as sshd refuses such key files: whoever can write the
// main file, a drop-in, the drop-in directory or a directory above them
// owns the network netreconcile manages. Each file and directory must be
// owned by root or the caller and not writable by group or others; a
// directory above may be writable by others if it has the sticky bit (like
// /tmp: nobody else can rename or delete what the owner made there).
// Symlinks are resolved first and the real paths checked. A missing main
// file or drop-in directory is left to the reader to report.
//
// The command line's --allow-insecure-config skips this check.
func CheckTrusted(mainFile, dropIn string) error {
	if err := checkTrustedFile(mainFile, "config file"); err != nil {
		return err
	}
	if dropIn == "" {
		return nil
	}
	real, err := filepath.EvalSymlinks(dropIn)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop-in directory: %w", err)
	}
	if err := checkTrustedPath(real, "drop-in directory"); err != nil {
		return err
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return fmt.Errorf("read drop-in directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := checkTrustedFile(filepath.Join(real, n), "drop-in"); err != nil {
			return err
		}
	}
	return nil
}

// CheckTrustedSide is CheckTrusted for a side file (routes-files,
// elements-file): the loader checks those it reads itself, and safe apply
// those it writes back.
func CheckTrustedSide(path string) error { return checkTrustedFile(path, "side file") }

// CheckTrustedFile is CheckTrusted for one more file read as
// configuration: apply's --candidate, which becomes the main file.
func CheckTrustedFile(path, what string) error { return checkTrustedFile(path, what) }

func checkTrustedFile(path, what string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return checkTrustedPath(real, what)
}

// checkTrustedPath checks real (symlinks resolved) and every directory above it.
func checkTrustedPath(real, what string) error {
	cur := real
	for first := true; ; first = false {
		fi, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		name := what + " " + real
		if !first {
			name = "directory " + cur + " (above " + what + " " + real + ")"
		}
		if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%w: %s is owned by uid %d, not by root or by the caller (uid %d): that user could change the network; chown root it, or pass --allow-insecure-config",
				ErrInsecureConfig, name, st.Uid, os.Geteuid())
		}
		sticky := st.Mode&syscall.S_ISVTX != 0
		if st.Mode&0o022 != 0 && (first || !sticky) {
			return fmt.Errorf("%w: %s is writable by group or others (mode %04o): anyone who can write it owns the network; chmod go-w it, or pass --allow-insecure-config",
				ErrInsecureConfig, name, st.Mode&0o7777)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return nil
		}
		cur = parent
	}
}

// openNoWait opens a file for reading without waiting for a writer (a
// FIFO's open would block): the caller checks the descriptor.
func openNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
