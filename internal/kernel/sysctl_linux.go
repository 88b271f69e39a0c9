package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
	"golang.org/x/sys/unix"
)

// procSys is where the kernel shows its parameters. The files under net/
// belong to the network namespace of the thread that looks a name up
// (net_ctl_header_lookup uses current's namespace), not to the mount nor
// to a directory descriptor opened earlier: so every read and write enters
// the kernel's namespace (InNamespace), where it opens the file.
const procSys = "/proc/sys"

// maxSysctlSize bounds a read: a parameter's value is a line; the largest
// under net/ are lists of a few hundred bytes.
const maxSysctlSize = 64 << 10

// Sysctls reads keys inside the kernel's namespace, in one switch of the
// thread for them all.
func (k *Netlink) Sysctls(keys []string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	buf := make([]byte, maxSysctlSize)
	err := k.InNamespace(func() error {
		for _, key := range keys {
			v, err := readSysctl(key, buf)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			out[key] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func readSysctl(key string, buf []byte) (string, error) {
	path, err := sysctlFile(key)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", key, err)
	}
	defer f.Close()
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return "", fmt.Errorf("read sysctl %s: %w", key, err)
	}
	return strings.TrimRight(string(buf[:n]), "\n"), nil
}

// sysctlFile is key's file. A key is split on dots, and each part is one
// name: no part is empty or "/" or "//", which model.SysctlPath (it swaps
// '.' and '/') turns into "." and "..", so no key leaves /proc/sys/net.
func sysctlFile(key string) (string, error) {
	if !strings.HasPrefix(key, "net.") {
		return "", fmt.Errorf("sysctl %s: only keys under net. are read or written", key)
	}
	if !model.ValidSysctlKey(key) {
		return "", fmt.Errorf("sysctl %s: not a key (%s)", key, model.SysctlKeyRule)
	}
	return filepath.Join(procSys, model.SysctlPath(key)), nil
}

// SetSysctl writes key inside the kernel's namespace, the value and a
// newline in one write, as sysctl(8) does (the kernel parses one write).
func (k *Netlink) SetSysctl(key, value string) error {
	path, err := sysctlFile(key)
	if err != nil {
		return err
	}
	err = k.InNamespace(func() error {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fd := int(f.Fd())
		return writeSysctl(key, value, func(b []byte) (int, error) { return unix.Write(fd, b) }, func() (string, error) {
			return readSysctl(key, make([]byte, maxSysctlSize))
		})
	})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("set sysctl %s: %w", key, ErrNotFound)
	}
	if err != nil {
		shown := value
		if model.SysctlSecret(key) {
			shown = model.SecretShown
		}
		return fmt.Errorf("set sysctl %s = %s: %w", key, shown, err)
	}
	k.wrote()
	return nil
}

// writeSysctl makes the one write(2) of a parameter's value and newline,
// and judges a short count by what the kernel then holds. The kernel
// parses the whole buffer of a write, but some handlers return their own
// result instead of the bytes they took: net.ipv6.conf.*.
// ignore_routes_with_linkdown returns 1 on Debian 12's 6.1, whatever it
// took. A writer that sends the rest (Go's File.Write, stdio) then writes
// a lone newline, which the kernel refuses with EINVAL after it has set
// the value: so the rest is never sent. The value counts as written when
// the kernel reads it back (the newline needs no write of its own).
func writeSysctl(key, value string, write func([]byte) (int, error), read func() (string, error)) error {
	b := []byte(value + "\n")
	n, err := write(b)
	if err != nil {
		return fmt.Errorf("write /proc/sys/%s: %w", model.SysctlPath(key), err)
	}
	if n == len(b) {
		return nil
	}
	got, err := read()
	if err != nil {
		return fmt.Errorf("the kernel took %d of %d bytes; read back: %w", n, len(b), err)
	}
	if model.NormalizeSysctl(got) != model.NormalizeSysctl(value) {
		if model.SysctlSecret(key) {
			return fmt.Errorf("the kernel took %d of %d bytes and holds another value", n, len(b))
		}
		return fmt.Errorf("the kernel took %d of %d bytes and holds %q", n, len(b), got)
	}
	return nil
}
