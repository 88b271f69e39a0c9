package safeapply

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// A rollback may be unable to write the configuration files back: the
// packaged service runs as the user netreconcile, which reads
// /etc/netreconcile but cannot write it. The kernel is rolled back all the
// same, and the configuration the rollback rejected would be applied again
// by the daemon's next pass. So the rollback records what it rejected
// (File.Rejected), and while the files hold exactly that content, the
// daemon and apply enforce the confirmed configuration instead: the pin.
// Any edit of the files (their content differs) lifts it, as does the next
// rollback or confirm that writes the file.

// SourcesHash identifies a configuration by its files' absolute names and
// contents, as the loader reads them.
func SourcesHash(srcs []desired.Source) string {
	h := sha256.New()
	for _, s := range srcs {
		name, err := filepath.Abs(s.Name)
		if err != nil {
			name = s.Name
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(s.Data))
		h.Write(s.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Pin replaces a rejected configuration by the confirmed one. It reads
// transaction.json again only when the file changed (statedir.FileStamp),
// so the daemon pays one fstatat per pass.
type Pin struct {
	Dir *statedir.Dir
	// file, when set, gives transaction.json as already read (nil when
	// it changed since): Host.Pin.
	file func() *File

	mu        sync.Mutex
	stamp     statedir.FileStamp
	rejected  *Rejected
	confirmed *Snapshot
}

// Sources returns the sources to enforce: srcs, or the confirmed
// configuration's when srcs are what a rollback rejected. pinned says
// which, with the transaction's id. srcs are compared by their YAML files
// and the side files the rejected configuration named, read again here:
// the caller knows the side files of what it parsed last, which is the
// confirmed configuration while the pin holds.
func (p *Pin) Sources(srcs []desired.Source) (out []desired.Source, pinnedBy string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stamp, err := p.Dir.Stamp(FileName)
	if err != nil {
		return srcs, "", err
	}
	if stamp != p.stamp {
		var f *File
		if p.file != nil {
			f = p.file()
		}
		if f == nil {
			if f, err = Load(p.Dir); err != nil {
				return srcs, "", err
			}
		}
		p.stamp, p.rejected, p.confirmed = stamp, f.Rejected, f.Confirmed
		// The confirmed snapshot holds every file's content (5.6 MB
		// for 100k routes): kept only while a rejection can use it.
		if p.rejected == nil {
			p.confirmed = nil
		}
	}
	if p.rejected == nil || p.confirmed == nil || SourcesHash(withSides(srcs, p.rejected.Sides)) != p.rejected.Hash {
		return srcs, "", nil
	}
	return p.confirmed.Sources(), p.rejected.ID, nil
}

// withSides is the YAML files of srcs and the side files at paths, as
// they are on the disk now (one that cannot be read is left out: the
// hash then differs from one made when it could). The paths come from
// transaction.json, in the state directory: each is read as the loader
// reads a side file (a regular file, opened without waiting, bounded),
// and no more than the side files of one configuration hold together.
func withSides(srcs []desired.Source, paths []string) []desired.Source {
	var out []desired.Source
	for _, s := range srcs {
		if !s.Side {
			out = append(out, s)
		}
	}
	total := 0
	for _, p := range paths {
		data, err := desired.ReadSide(p, desired.Options{AllowInsecure: true})
		if err != nil {
			continue
		}
		if total += len(data); total > desired.MaxSideBytes {
			break
		}
		out = append(out, desired.Source{Name: p, Data: data, Side: true})
	}
	return out
}
