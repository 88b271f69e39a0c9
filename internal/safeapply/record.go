// Package safeapply is commit-confirmed for netreconcile: an apply that
// rolls itself back unless it is confirmed in time (docs/safe-apply.md).
//
// A transaction lives in one file of the namespace's state directory,
// transaction.json (mode 0600), rewritten atomically and only by a holder
// of the namespace's writer lock. It holds the pending transaction, the last
// one that ended, the last confirmed configuration (the restore point of the
// next transaction) and the counts of how transactions ended. Whoever finds
// a pending transaction due (the daemon, a timer, any writer command) rolls
// it back: the deadline is in the file, not in a process, so no lost signal
// or killed process can lose it.
package safeapply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// FileName is the transaction file in the namespace's state directory.
const FileName = "transaction.json"

// maxFileSize bounds what is read back: two copies of the configuration
// (restore point and applied), with 100k routes about 2 × 6 MB, side files
// (desired.MaxSideBytes, 64 MiB) in base64 up to 2 × 86 MB more. A third,
// the daemon's converged configuration, is there only while files edited
// in a window differ from the applied ones.
const maxFileSize = 256 << 20

// formatVersion is the version of transaction.json's layout.
const formatVersion = 1

// State of a transaction.
type State string

const (
	Pending    State = "pending"
	Confirmed  State = "confirmed"
	RolledBack State = "rolled-back"
)

// Cause says why a transaction was rolled back; it is the label of the
// rolled-back metric.
type Cause string

const (
	CauseTimeout Cause = "timeout" // the deadline passed unconfirmed
	CauseManual  Cause = "manual"  // netreconcile rollback
	CauseProbe   Cause = "probe"   // an armed probe failed after the apply
	CauseVerify  Cause = "verify"  // the kernel did not match after the apply
	CauseApply   Cause = "apply"   // an operation of the apply failed
	CauseReboot  Cause = "reboot"  // found pending after a reboot (another boot id)
)

// Causes lists every cause, for metrics that exist from the start.
var Causes = []Cause{CauseTimeout, CauseManual, CauseProbe, CauseVerify, CauseApply, CauseReboot}

// FileCopy is one configuration file as it was read: its content, mode and
// owner, so a rollback writes back the same file. Content is what the user
// wrote; keys are referenced by path there (desired refuses inline keys),
// so no key material is copied.
type FileCopy struct {
	Path string      `json:"path"`
	Mode fs.FileMode `json:"mode"`
	UID  int         `json:"uid"`
	GID  int         `json:"gid"`
	// Link is the target of a symlink at Path (a drop-in linked into a
	// deploy's tree): a rollback puts the link back, Data is what it
	// pointed to then.
	Link string `json:"link,omitempty"`
	Data []byte `json:"data"`
	// Side marks a side file the configuration names (routes-files,
	// elements-file): written back by a rollback like the others.
	Side bool `json:"side,omitempty"`
}

// Snapshot is a whole configuration: the main file, every drop-in, and the
// side files they name.
type Snapshot struct {
	Main   string `json:"main"`
	DropIn string `json:"drop_in,omitempty"`
	// Files lists the main file first, then the drop-ins in name order,
	// then the side files in the order the configuration names them.
	Files []FileCopy `json:"files"`
	// Hash identifies the content (names and data) of Files.
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
	// By says who recorded it: apply, confirm, run (the daemon) or
	// rollback.
	By string `json:"by"`
}

// hashFiles identifies a list of files by their names and contents.
func hashFiles(files []FileCopy) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", f.Path, len(f.Data), f.Link)
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Txn is one transaction.
type Txn struct {
	ID       string    `json:"id"`
	State    State     `json:"state"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	// Window is the last --confirm-within given.
	Window Duration `json:"window"`
	// BootID is /proc/sys/kernel/random/boot_id when the transaction
	// began: a transaction found pending under another one survived a
	// reboot, and is rolled back before anything else.
	BootID string `json:"boot_id"`
	// Netns names the namespace as the command line gave it ("" for the
	// caller's own), for messages and for the timers' command lines.
	Netns string `json:"netns,omitempty"`
	// Restore is the configuration a rollback writes back: the last
	// confirmed one when the transaction began. A later apply with
	// --confirm-within extends the deadline and keeps it.
	Restore *Snapshot `json:"restore"`
	// Applied is the configuration the last apply of the transaction
	// made; confirm records it as the confirmed one, unless Converged is
	// set.
	Applied *Snapshot `json:"applied"`
	// Converged is the configuration the daemon converged in the window
	// after the last apply, when it is not Applied: files edited in the
	// window, which the daemon applied. That is what runs, so a confirm
	// records it as the confirmed one; a rollback drops it. The daemon
	// records it in the pass that converged it (Recorder): whatever
	// begins after the confirm takes it as its restore point, however
	// soon.
	Converged *Snapshot `json:"converged,omitempty"`
	// Before is the state the kernel was read in before the first apply,
	// the objects netreconcile owned, rendered as configuration (the
	// "show" form, which holds no key), and Plan the operations of each
	// apply (created, changed with their old and new values, deleted).
	// A rollback does not replay them: it plans from the kernel as it is
	// to the restored files. They are kept to tell what happened.
	Before string            `json:"before"`
	Plans  []json.RawMessage `json:"plans"`
	// Probes are the probes armed (passing before the apply).
	Probes []string `json:"probes,omitempty"`
	// Timer says what holds the deadline: "daemon:PID", "systemd:UNIT"
	// or "process:PID"; Fallback, beside a daemon, the timer of its own
	// that rolls back if the daemon is gone by then.
	Timer    string `json:"timer,omitempty"`
	Fallback string `json:"fallback,omitempty"`
	// Extended counts the applies that extended the deadline.
	Extended int `json:"extended,omitempty"`
	// RollingBack is the cause of a rollback that began (and Detail its
	// detail): it is recorded before the rollback writes anything. A
	// rollback interrupted (its process killed) leaves the transaction
	// pending with the restore point's files written back in part, which
	// a confirm would then record as the candidate; whoever finds it
	// next finishes the rollback instead, as for a stale one.
	RollingBack Cause `json:"rolling_back,omitempty"`
	// Applying says the apply that began or extended the transaction
	// has not completed: it is recorded with the transaction, before the
	// candidate is installed and the kernel written, and cleared once the
	// apply, its verification and the probes passed. Only the apply's own
	// process, which holds the writer lock throughout, ever sees it set
	// while that apply runs; whoever else finds it under the lock finds an
	// apply that was killed part-way, with the candidate installed or not
	// and the kernel anywhere between, which a confirm would record as the
	// candidate: it rolls the transaction back instead, as for a stale one.
	Applying bool `json:"applying,omitempty"`

	// Set when the transaction ends.
	Ended  time.Time `json:"ended,omitzero"`
	Cause  Cause     `json:"cause,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// Duration is a time.Duration written as "30s" in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Counts count how transactions ended, for the metrics: kept in the file,
// so they do not depend on which process ended a transaction.
type Counts struct {
	Confirmed  uint64           `json:"confirmed"`
	RolledBack map[Cause]uint64 `json:"rolled_back"`
}

// File is transaction.json.
type File struct {
	Version   int       `json:"version"`
	Pending   *Txn      `json:"pending,omitempty"`
	Last      *Txn      `json:"last,omitempty"`
	Confirmed *Snapshot `json:"confirmed,omitempty"`
	// Rejected is set by a rollback that could not write the files back
	// (pin.go): while the files hold exactly what was rolled back, the
	// confirmed configuration is enforced instead.
	Rejected *Rejected `json:"rejected,omitempty"`
	Counts   Counts    `json:"counts"`
}

// Rejected names the configuration a rollback could not take off the disk.
type Rejected struct {
	// ID is the transaction rolled back; Hash is SourcesHash of the files
	// as they were then, side files included: Sides are the side files
	// those named, in order.
	ID    string   `json:"id"`
	Hash  string   `json:"hash"`
	Sides []string `json:"sides,omitempty"`
	// Error is why the files could not be written back.
	Error string `json:"error"`
}

// Load reads the namespace's transaction file; a missing one is empty.
func Load(dir *statedir.Dir) (*File, error) {
	f := &File{Version: formatVersion}
	if dir == nil {
		return f, nil
	}
	data, err := dir.ReadFile(FileName, maxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read transaction: %w", err)
	}
	f, err = Decode(data)
	if err != nil {
		return nil, fmt.Errorf("read transaction %s: %w; nothing of it is used: move it away after checking the configuration files", filepath.Join(dir.Path(), FileName), err)
	}
	return f, nil
}

// Decode reads transaction.json's content and checks every field (check.go):
// an error for anything else, never a file used in part. The error quotes
// nothing of the content.
func Decode(data []byte) (*File, error) {
	f := &File{}
	if err := json.Unmarshal(data, f); err != nil {
		// Never %w the JSON error: it quotes the offending byte.
		return nil, errors.New("not the JSON this netreconcile writes")
	}
	if f.Version != formatVersion {
		return nil, fmt.Errorf("version %d, this netreconcile reads %d", f.Version, formatVersion)
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// Encode is the content Save writes.
func (f *File) Encode() ([]byte, error) {
	f.Version = formatVersion
	return json.Marshal(f)
}

// Save writes the file atomically with mode 0600: it holds copies of the
// configuration, which may be readable by root only.
func (f *File) Save(dir *statedir.Dir) error {
	data, err := f.Encode()
	if err != nil {
		return fmt.Errorf("encode transaction: %w", err)
	}
	if err := dir.WriteFile(FileName, data, 0o600); err != nil {
		return fmt.Errorf("save transaction: %w", err)
	}
	return nil
}

// end moves the pending transaction to Last with its outcome and counts it.
// Last keeps no file copies: they matter only while a rollback may come.
func (f *File) end(state State, cause Cause, detail string, now time.Time) *Txn {
	t := f.Pending
	f.Pending = nil
	// The detail quotes errors, which may quote a kernel object's name
	// (any bytes but '/' and blanks): cleaned, so that the file is never
	// refused on load for what it recorded, and made one line, as messages
	// show it.
	t.State, t.Cause, t.Detail, t.Ended = state, cause, statedir.CleanText(detail, maxTextLen, false), now
	t.RollingBack, t.Applying = "", false
	if state == Confirmed {
		f.Counts.Confirmed++
	} else {
		if f.Counts.RolledBack == nil {
			f.Counts.RolledBack = map[Cause]uint64{}
		}
		f.Counts.RolledBack[cause]++
	}
	last := *t
	last.Restore, last.Applied, last.Converged, last.Before, last.Plans = nil, nil, nil, "", nil
	f.Last = &last
	return t
}
