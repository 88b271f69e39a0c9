package daemon

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// loadConfig reads the files on every pass (a few small reads) and parses
// them only when their content changed. An invalid configuration leaves the
// last good one in force.
//
// A configuration in the middle of a change is not read (docs/daemon.md,
// "Writing configuration files"): while a file is being written in place,
// or while the drop-in directory that gave the configuration in force some
// of its fragments is missing (a deploy swapping directories), the last
// good configuration stays, and the files are read again when the writes
// stop or the directory is back (both wake the loop).
func (d *Daemon) loadConfig() {
	// Checked on every pass like the content: a drop-in made writable by
	// others later is refused (the last good configuration stays in force).
	if !d.opts.AllowInsecureConfig {
		if err := desired.CheckTrusted(d.opts.Config, d.opts.DropIn); err != nil {
			d.configFailed(err, [sha256.Size]byte{})
			return
		}
	}
	if d.cfg != nil {
		for _, s := range d.opts.Sources {
			if st, ok := s.(settler); ok && st.unsettled(time.Now()) > 0 {
				return
			}
		}
	}
	srcs, dropInPresent, err := desired.ReadSourcesDir(d.opts.Config, d.opts.DropIn)
	if err != nil {
		d.configFailed(err, [sha256.Size]byte{})
		return
	}
	if !dropInPresent && d.cfg != nil && len(d.cfg.Files) > 1 {
		if !d.dropInGone {
			d.log.Warn("drop-in directory missing; enforcing the last good configuration until it is back (to remove every fragment, empty the directory first)", "dir", d.opts.DropIn)
		}
		d.dropInGone = true
		return
	}
	d.dropInGone = false
	pinned := false
	if d.opts.Pin != nil {
		out, by, err := d.opts.Pin(srcs)
		if err != nil {
			d.log.Warn("read the safe-apply record; the files are enforced as they are", "error", err)
		}
		if by != d.pinnedBy {
			if by != "" {
				d.log.Warn("the configuration files hold what a safe-apply rollback rejected and could not write back; enforcing the confirmed configuration until they change", "transaction", by)
			} else if d.pinnedBy != "" {
				d.log.Info("the configuration files changed since the rollback; enforcing them", "transaction", d.pinnedBy)
			}
			d.pinnedBy = by
		}
		srcs, pinned = out, by != ""
	}
	// The side files the last parse named are read on every pass too:
	// their content decides whether to parse again like the YAML's. A
	// pinned configuration holds its own.
	marks := []desired.Source(nil)
	if !pinned {
		var given []desired.Source
		given, marks = d.readSides()
		srcs = append(srcs, given...)
	}
	h := hashSources(append(srcs, marks...))
	force := d.forceParse
	d.forceParse = false
	// Stamped before the parse: a key file written during it shows as a
	// change on the next pass.
	var oldPaths []string
	if d.cfg != nil {
		oldPaths = secretPaths(d.cfg.State)
	}
	stamp := secretStamp(oldPaths)
	if !force && d.cfg != nil && h == d.cfgHash && stamp == d.secrets {
		if d.configOK() {
			// Put back as it was (an edit undone, a mode fixed, a
			// side file back): enforced all along, now valid again.
			d.log.Info("configuration valid again; the same as the one enforced", "files", len(d.cfg.Files), "objects", d.cfg.State.Objects())
		}
		return
	}
	if !force && h == d.badHash {
		return
	}
	// The last read is dropped before the parse rather than held through
	// it (memory): the pass after a new configuration reads
	// everything anyway (rereadKinds), and one after a file that fails to
	// parse, or a reload that changed nothing, pays a full read.
	d.eng.forgetRead()
	var named, sideMarks []desired.Source
	var namedPaths []string
	cfg, err := desired.ParseWith(srcs, desired.Options{
		AllowInsecure: d.opts.AllowInsecureConfig,
		Named: func(src desired.Source, err error) {
			namedPaths = append(namedPaths, src.Name)
			if err != nil {
				sideMarks = append(sideMarks, sideUnreadable(src.Name))
			} else {
				named = append(named, src)
			}
		},
	})
	if !pinned {
		// What the next pass reads: the side files this parse named,
		// watched like the configuration's own (files.go). The hash is
		// of what this parse read, so that a side file changed during
		// the parse shows as a change on the next pass.
		d.setSides(namedPaths)
		h = hashSources(append(append(yamlOnly(srcs), named...), sideMarks...))
	}
	if err != nil {
		d.configFailed(err, h)
		return
	}
	if paths := secretPaths(cfg.State); !slices.Equal(paths, oldPaths) {
		stamp = secretStamp(paths)
	}
	digest := secretDigest(cfg.State)
	if d.cfg != nil && h == d.cfgHash && digest == d.secretsDigest {
		d.secrets = stamp
		switch {
		case d.configOK():
			d.log.Info("configuration valid again; the same as the one enforced", "files", len(cfg.Files), "objects", cfg.State.Objects())
		case force:
			d.log.Info("configuration reloaded; unchanged")
		}
		return
	}
	first := d.cfg == nil
	if !first && h == d.cfgHash {
		// Which key changed is not said: only that one did.
		d.log.Info("secret files changed")
	}
	d.cfg, d.cfgHash, d.badHash = cfg, h, [sha256.Size]byte{}
	if d.opts.Converged != nil {
		d.cfgSrcs = append(yamlOnly(srcs), cfg.Sides...)
	}
	d.secrets, d.secretsDigest = stamp, digest
	d.secretDirs.set(secretPaths(cfg.State))
	d.gen++
	// A new configuration deserves a fresh attempt at everything.
	d.bo.reset()
	again := d.configOK()
	msg := "configuration changed"
	switch {
	case first:
		msg = "configuration loaded"
	case again:
		// After an invalid one: the error is not the log's last word.
		msg = "configuration valid again; changed"
	}
	d.log.Info(msg, "files", len(cfg.Files), "objects", cfg.State.Objects())
	d.setMemoryLimit()
}

// configOK records that the configuration read is valid, and reports
// whether the one read before was not (the log then says so).
// The bad file's hash is forgotten: the same bad edit made again is read
// and reported again.
func (d *Daemon) configOK() (again bool) {
	again = d.cfgErr != nil
	d.cfgErr, d.badHash = nil, [sha256.Size]byte{}
	d.m.configOK.Set(1)
	return again
}

func (d *Daemon) configFailed(err error, h [sha256.Size]byte) {
	isNew := d.cfgErr == nil || d.cfgErr.Error() != err.Error()
	d.cfgErr, d.badHash = err, h
	d.m.configOK.Set(0)
	if !isNew {
		return
	}
	d.m.errors.WithLabelValues("config").Inc()
	if d.cfg != nil {
		d.log.Error("invalid configuration; enforcing the last good one", "error", err)
	}
}

func hashSources(srcs []desired.Source) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range srcs {
		side := ""
		if s.Side {
			side = "side"
		}
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", s.Name, side, len(s.Data))
		h.Write(s.Data)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// readSides reads the side files the last parse named, as the loader reads
// them (desired.ReadSide: trusted, a regular file, bounded): given, the
// loader takes them from the sources. One that cannot be read now is left
// for the loader to read and report, and marks the hash instead.
func (d *Daemon) readSides() (given, marks []desired.Source) {
	for _, p := range d.sides {
		data, err := desired.ReadSide(p, desired.Options{AllowInsecure: d.opts.AllowInsecureConfig})
		if err != nil {
			marks = append(marks, sideUnreadable(p))
			continue
		}
		given = append(given, desired.Source{Name: p, Data: data, Side: true})
	}
	return given, marks
}

// sideUnreadable stands in a hash for a side file that could not be read.
func sideUnreadable(path string) desired.Source {
	return desired.Source{Name: path + "\x00unreadable", Side: true}
}

// setSides records the side files the configuration names and has the
// configuration watch follow them.
func (d *Daemon) setSides(paths []string) {
	d.sides = paths
	for _, s := range d.opts.Sources {
		if w, ok := s.(sideWatcher); ok {
			w.watchSides(paths)
		}
	}
}

func yamlOnly(srcs []desired.Source) []desired.Source {
	var out []desired.Source
	for _, s := range srcs {
		if !s.Side {
			out = append(out, s)
		}
	}
	return out
}
