package daemon

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Secrets live in files of their own (key files, systemd credentials) that
// the configuration only names, so the configuration's identity is the hash
// of its YAML and of its secrets: a rotated key file
// is a changed configuration, applied on the next wake-up or reload, and
// drift repair then writes the current key, never the one read at start.
//
// Whether to parse again is decided without opening the secret files: their
// stat (device, inode, size, times, owner, mode, through symlinks and of the
// link itself) changes with every write, rename or chmod, and a stat never
// blocks on a FIFO planted there nor reads a secret for nothing. Whether the
// new parse changed anything is decided by the secrets' values.

// secretPaths lists the files the state's secrets are read from, sorted.
func secretPaths(st *model.State) []string {
	if st == nil {
		return nil
	}
	var paths []string
	for _, l := range st.Links {
		w := l.WireGuard
		if w == nil {
			continue
		}
		if w.PrivateKeyFile != "" {
			paths = append(paths, w.PrivateKeyFile)
		}
		if w.PrivateKeyCredential != "" {
			paths = append(paths, filepath.Join(os.Getenv(desired.CredentialsDirEnv), w.PrivateKeyCredential))
		}
		for _, p := range w.Peers {
			if p.PresharedKeyFile != "" {
				paths = append(paths, p.PresharedKeyFile)
			}
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// secretStamp identifies the current version of every file in paths.
func secretStamp(paths []string) [sha256.Size]byte {
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00", p)
		statInto(h, os.Lstat, p)
		statInto(h, os.Stat, p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func statInto(h hash.Hash, stat func(string) (os.FileInfo, error), p string) {
	fi, err := stat(p)
	if err != nil {
		// Only whether it failed: a vanished file and a fixed one differ.
		fmt.Fprintf(h, "error\x00")
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		fmt.Fprintf(h, "%d %v %v\x00", fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
		return
	}
	fmt.Fprintf(h, "%d %d %o %d %d %d %d.%d %d.%d\x00", st.Dev, st.Ino, st.Mode, st.Uid, st.Gid, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}

// secretDigest identifies the secrets' values. It is kept in memory only,
// next to the keys themselves, and never logged.
func secretDigest(st *model.State) [sha256.Size]byte {
	h := sha256.New()
	if st != nil {
		for _, name := range st.SortedLinkNames() {
			w := st.Links[name].WireGuard
			if w == nil {
				continue
			}
			k := w.PrivateKey.Bytes()
			fmt.Fprintf(h, "%s\x00", name)
			h.Write(k[:])
			for _, p := range w.Peers {
				psk := p.PresharedKey.Bytes()
				h.Write(p.PublicKey[:])
				h.Write(psk[:])
			}
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
