package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Root's record of its own transaction.
//
// The command root started as the service user reads the state directory,
// which that user owns: every transaction id, deadline and restore point it
// finds there may be forged. So root's process decides from what it knows
// itself. When it installs a candidate it keeps, beside the main file, in
// the directory only root writes, its copy of the file from before
// (.NAME.before-ID) and a record (.NAME.root-transaction): the
// transaction's id, the digests of that copy and of the candidate, and the
// deadline and boot id as root saw them. It writes the file back only for
// the transaction it recorded, only while the file holds exactly the
// candidate it installed, and only when the transaction is due by its own
// record (its deadline passed, another boot), was rolled back by root's own
// `netreconcile rollback`, or failed within the apply that installed it.
// A confirm run by root drops both files, as does the write back; an
// install for another transaction is refused while root's is open and the
// file still holds its candidate, and replaces a record that is due or
// whose file changed. What the service user writes can then make root
// write back nothing but root's own copy, at root's own deadline, over
// root's own candidate: what a transaction root began promises anyway.

// rootRecordVersion is the version of the record's layout.
const rootRecordVersion = 1

// maxRootRecord bounds the record's read: a few hundred bytes.
const maxRootRecord = 64 << 10

// rootRecord is .NAME.root-transaction.
type rootRecord struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	Main    string `json:"main"`
	// BeforeSHA256 is the digest of root's copy of the file from before
	// the transaction; InstalledSHA256 of the candidate it installed last.
	BeforeSHA256    string    `json:"before_sha256"`
	InstalledSHA256 string    `json:"installed_sha256"`
	Deadline        time.Time `json:"deadline"`
	BootID          string    `json:"boot_id"`
}

func recordPath(main string) string {
	return filepath.Join(filepath.Dir(main), "."+filepath.Base(main)+".root-transaction")
}

func beforePath(main, id string) string {
	return filepath.Join(filepath.Dir(main), "."+filepath.Base(main)+".before-"+id)
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readRecord reads root's record of main: nil when there is none.
func readRecord(main string) (*rootRecord, error) {
	p := recordPath(main)
	data, err := readRootFile(p, maxRootRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r rootRecord
	if err := dec.Decode(&r); err != nil || r.Version != rootRecordVersion || r.Main != main ||
		safeapply.ValidID(r.ID) != nil || len(r.BeforeSHA256) != 64 || len(r.InstalledSHA256) != 64 {
		return nil, fmt.Errorf("root's transaction record %s is damaged: check the main file, then remove the record", p)
	}
	return &r, nil
}

func writeRecord(r *rootRecord) error {
	r.Version = rootRecordVersion
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeRootFile(recordPath(r.Main), append(data, '\n'))
}

// dropRecord removes root's record and every copy it keeps of main.
func dropRecord(main string) error {
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(main), "."+filepath.Base(main)+".before-*"))
	var errs []error
	for _, p := range old {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(recordPath(main)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// due reports whether root's own record says the transaction is due: its
// deadline passed, or it began in another boot.
func (w *rootMainWriter) due(r *rootRecord) bool {
	if boot, err := safeapply.BootID(os.Getenv); err == nil && boot != r.BootID {
		return true
	}
	return !w.now().Before(r.Deadline)
}

func (w *rootMainWriter) now() time.Time {
	if w.clock != nil {
		return w.clock()
	}
	return time.Now()
}

// install installs the candidate root read for transaction id.
func (w *rootMainWriter) install(id string) error {
	if w.candidate == nil {
		return errors.New("no --candidate was read by root")
	}
	if w.window <= 0 {
		return errors.New("root's command line gives no --confirm-within")
	}
	cur, err := safeapply.ReadFileCopy(w.main)
	if err != nil {
		return err
	}
	rec, err := readRecord(w.main)
	if err != nil {
		return err
	}
	holdsOurs := rec != nil && digest(cur.Data) == rec.InstalledSHA256
	switch {
	case rec != nil && rec.ID == id && holdsOurs && !w.due(rec) && w.copyHolds(rec) == nil:
		// An extension: the copy from before the transaction stays
		// its restore point.
	case rec != nil && holdsOurs && !w.due(rec):
		return fmt.Errorf("root's transaction %s on %s is open until %s: confirm it or roll it back (as root) before another one begins",
			rec.ID, w.main, rec.Deadline.UTC().Format(time.RFC3339))
	default:
		// A new transaction, or root's last one is over by its own
		// record (due, or the file changed since): the file as it is
		// now is the restore point.
		if err := dropRecord(w.main); err != nil {
			return fmt.Errorf("remove root's copies of %s: %w", w.main, err)
		}
		if err := writeRootFile(beforePath(w.main, id), cur.Data); err != nil {
			return fmt.Errorf("keep a copy of the main file: %w", err)
		}
		boot, err := safeapply.BootID(os.Getenv)
		if err != nil {
			return err
		}
		rec = &rootRecord{ID: id, Main: w.main, BeforeSHA256: digest(cur.Data), BootID: boot}
	}
	// Recorded before the file changes: a crash in between leaves a
	// record whose candidate the file does not hold, which is never
	// written back over.
	rec.InstalledSHA256 = digest(w.candidate)
	rec.Deadline = w.began.Add(w.window).UTC()
	if err := writeRecord(rec); err != nil {
		return fmt.Errorf("record the transaction beside the main file: %w", err)
	}
	if err := safeapply.InstallMain(w.main, w.candidate); err != nil {
		return err
	}
	w.installed[id] = true
	return nil
}

// copyHolds checks root's copy against the record.
func (w *rootMainWriter) copyHolds(rec *rootRecord) error {
	data, err := readRootFile(beforePath(w.main, rec.ID), desired.MaxFileSize)
	if err != nil {
		return err
	}
	if digest(data) != rec.BeforeSHA256 {
		return fmt.Errorf("root's copy of %s from before transaction %s does not hold what root recorded", w.main, rec.ID)
	}
	return nil
}

// restore writes root's copy back for transaction id, when root's own
// record allows it (see above).
func (w *rootMainWriter) restore(id string) error {
	rec, err := readRecord(w.main)
	if err != nil {
		return err
	}
	if rec == nil || rec.ID != id {
		return fmt.Errorf("root keeps no record of a transaction %s on %s (it installed no --candidate for it, or the transaction ended): the file is left as it is", id, w.main)
	}
	// Root's own rollback, or the apply that installed it: the
	// transaction ends here whatever comes of the write.
	ending := w.cmd == "rollback" || w.installed[id]
	if !ending && !w.due(rec) {
		return fmt.Errorf("root's transaction %s on %s is not due before %s: the file is left as it is (roll it back with netreconcile rollback)",
			id, w.main, rec.Deadline.UTC().Format(time.RFC3339))
	}
	err = w.writeBack(rec)
	if ending || err == nil {
		err = errors.Join(err, dropRecord(w.main))
	}
	return err
}

func (w *rootMainWriter) writeBack(rec *rootRecord) error {
	cur, err := safeapply.ReadFileCopy(w.main)
	if err != nil {
		return err
	}
	if digest(cur.Data) != rec.InstalledSHA256 {
		return fmt.Errorf("%s no longer holds the candidate root installed for transaction %s: it is left as it is", w.main, rec.ID)
	}
	if err := w.copyHolds(rec); err != nil {
		return err
	}
	data, err := readRootFile(beforePath(w.main, rec.ID), desired.MaxFileSize)
	if err != nil {
		return err
	}
	// Through the main file's link if it is one, as the install wrote it.
	_, err = safeapply.RestoreFile(&safeapply.FileCopy{Path: w.main, Link: cur.Link, Mode: cur.Mode, UID: cur.UID, GID: cur.GID, Data: data}, rec.ID, w.allowInsecure)
	return err
}

// confirmed drops root's record of transaction id, which root's own
// confirm ended.
func (w *rootMainWriter) confirmed(id string) error {
	if w.cmd != "confirm" {
		return fmt.Errorf("root's command is %s, not confirm", w.cmd)
	}
	rec, err := readRecord(w.main)
	if err != nil || rec == nil || rec.ID != id {
		return err
	}
	return dropRecord(w.main)
}

// writeRootFile writes one of root's files beside the main file, mode
// 0600, as the state directory writes its files (statedir: no symlink
// followed, replaced atomically, synced), in a directory only root may
// change.
func writeRootFile(p string, data []byte) error {
	d, err := statedir.Open(filepath.Dir(p), false)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(filepath.Base(p), data, 0o600)
}

// readRootFile reads one of root's files, at most max bytes, refusing
// anything but root's own regular file that nobody else may read.
func readRootFile(p string, max int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.Mode().IsRegular() || st.Uid != 0 || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is not root's own file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, max)
	}
	return data, nil
}
