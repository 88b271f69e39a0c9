package safeapply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
	"github.com/netreconcile/netreconcile/internal/render"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Host is one namespace as a transaction sees it. The caller holds the
// namespace's writer lock for as long as it uses the Host: every change to
// transaction.json, the configuration files and the kernel is made under it,
// so two actors (the daemon's timer, a detached timer, confirm from another
// session) never both end one transaction.
type Host struct {
	// Dir is the namespace's state directory.
	Dir    *statedir.Dir
	Engine *engine.Engine
	// Netns is the namespace as the command line names it ("" for the
	// caller's own), recorded in the transaction.
	Netns string
	// AllowInsecureConfig skips desired.CheckTrusted on the files a
	// rollback writes back (--allow-insecure-config).
	AllowInsecureConfig bool
	// Getenv reads the environment (the boot id's test override).
	Getenv func(string) string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Timer arranges what rolls back at the deadline when no process is
	// left (timer.go); nil arranges nothing (unit tests).
	Timer func(t *Txn) (*Arranged, error)
	// Options are the command line options that name this namespace and
	// state directory (" --netns lab"), for the commands messages suggest.
	Options string
	// MainWriter writes the main file where this process cannot: nil
	// but in a command that root started as the packaged service's user
	// (cli, runas), whose root process does the write.
	MainWriter MainWriter

	// kept is transaction.json as RefusePending read it, and keptStamp
	// the file's stamp then: a plain apply reads its pin and records its
	// confirmed configuration from it (Pin, RecordConfirmed) instead of
	// decoding the file twice more, as long as the stamp shows nobody
	// rewrote it. The file holds copies of the configuration: 12 MB and
	// 40 ms of decoding for 100k routes.
	kept      *File
	keptStamp statedir.FileStamp
}

// keptFile is the file RefusePending read, when transaction.json is still
// that file; nil otherwise.
func (h *Host) keptFile() *File {
	if h.kept == nil {
		return nil
	}
	if st, err := h.Dir.Stamp(FileName); err != nil || st != h.keptStamp {
		h.kept = nil
	}
	return h.kept
}

// loadFile is keptFile, or transaction.json read again when it changed.
func (h *Host) loadFile() (*File, error) {
	if f := h.keptFile(); f != nil {
		return f, nil
	}
	return Load(h.Dir)
}

// LastConfirmed says whether s holds the files transaction.json records as
// the confirmed configuration, as RefusePending read it: a hint only (the
// service user writes the file), for what to prepare, never for what to
// skip.
func (h *Host) LastConfirmed(s *Snapshot) bool {
	f := h.keptFile()
	return f != nil && f.Confirmed != nil && f.Confirmed.Hash == s.Hash
}

// Pin returns the pin of the namespace's configuration (pin.go), reading
// transaction.json from what RefusePending read when it is unchanged.
func (h *Host) Pin() *Pin { return &Pin{Dir: h.Dir, file: h.keptFile} }

// MainWriter writes the main configuration file for a process that cannot
// write its directory (the packaged service's user cannot write
// /etc/netreconcile), in a process that can.
type MainWriter interface {
	// Install replaces the main file at path with the --candidate that
	// the writer read itself, as installMain does, for transaction id.
	Install(path, id string) error
	// Restore writes the main file f.Path back as it was before
	// transaction id installed its candidate (the writer's own copy, not
	// f's content), keeping what it replaces under RejectedName(f.Path,
	// id).
	Restore(f *FileCopy, id string) error
	// Confirmed says transaction id was confirmed: the writer drops its
	// copy of the main file from before it.
	Confirmed(path, id string) error
}

// mainWriter is h.MainWriter where this process cannot write the main
// file's directory, else nil.
func (h *Host) mainWriter(main string) MainWriter {
	if h.MainWriter == nil || unix.Access(filepath.Dir(main), unix.W_OK) == nil {
		return nil
	}
	return h.MainWriter
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// ErrPending: a plain apply was asked for while a transaction is pending.
var ErrPending = errors.New("a safe-apply transaction is pending")

// ErrNamespaceGone: a rollback found the transaction's namespace gone (a
// Host without an Engine): it writes the files back, and the kernel state
// went with the namespace.
var ErrNamespaceGone = errors.New("the namespace is gone: nothing of the kernel to roll back")

// ErrNoPending: confirm or rollback found no pending transaction.
var ErrNoPending = errors.New("no safe-apply transaction is pending")

// errNoRestorePoint: the first apply --confirm-within of a namespace, with
// the change already in the files, has nothing known-good to go back to.
var errNoRestorePoint = errors.New("no confirmed configuration is recorded for this namespace yet " +
	"(a plain apply, a confirm or the daemon's converged pass records one), and the files on disk may already hold the change: " +
	"there is nothing known to be good to roll back to. Run a plain \"netreconcile apply\" once on a known-good configuration, " +
	"or give the change with --candidate FILE, which keeps the files on disk as the restore point")

// newID makes a transaction id: its start time, readable in a listing, and
// random bits, so that two hosts' ids never meet in one Ansible run's logs.
func newID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// stale says why a pending transaction must be rolled back now, before
// anything else: it was begun before a reboot (another boot id: the timer
// died with the boot), or its deadline passed (no timer ran it: none was
// left, or the host was down). "" when it may wait.
func (h *Host) stale(t *Txn) Cause {
	if t.RollingBack != "" {
		// A rollback began and was interrupted: it is finished, never
		// undone.
		return t.RollingBack
	}
	if boot, err := BootID(h.getenv()); err == nil && boot != t.BootID {
		return CauseReboot
	}
	if !h.now().Before(t.Deadline) {
		return CauseTimeout
	}
	return ""
}

func (h *Host) getenv() func(string) string {
	if h.Getenv != nil {
		return h.Getenv
	}
	return func(string) string { return "" }
}

// Sources turns a snapshot into the loader's input (desired.Parse), side
// files included.
func (s *Snapshot) Sources() []desired.Source {
	out := make([]desired.Source, len(s.Files))
	for i, f := range s.Files {
		out[i] = desired.Source{Name: f.Path, Data: f.Data, Side: f.Side}
	}
	return out
}

// verifyDelays are the waits before each read of Verify after the first:
// what the kernel finishes on its own after a write (a link's carrier and
// operstate, IPv6 duplicate address detection, a userspace WireGuard
// device's configuration) settles well within the 1.55 s they add up to;
// a plan still not empty then is a real difference.
var verifyDelays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

// VerifyError: the kernel did not match the configuration after an apply.
type VerifyError struct {
	Plan *diff.Plan
	Err  error // the last read's error or conflicts, if any
}

func (e *VerifyError) Error() string {
	msg := "verify: the kernel does not match the configuration after the apply"
	if e.Plan != nil && !e.Plan.Empty() {
		ops := append(append([]diff.Op(nil), e.Plan.Ops...), e.Plan.Pending...)
		msg += fmt.Sprintf(": %d operations still planned (first: %s %s %s)", len(ops), ops[0].Action, ops[0].Kind, ops[0].ID)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *VerifyError) Unwrap() error { return e.Err }

// Verify reads the kernel again and requires an empty plan towards st,
// with short bounded retries for what settles asynchronously. A conflict
// (someone else's object in the way of the file's) fails it: the file's
// object is not there. The elements-from sets are judged by the peers that
// were up when the apply planned (engine.FreezePeers): a handshake completed
// since changes the next plan, not whether this apply took.
func Verify(ctx context.Context, e *engine.Engine, st *model.State) error {
	defer e.FreezePeers()()
	var last *VerifyError
	for i := 0; ; i++ {
		plan, _, err := e.PlanDesired(ctx, st, true)
		if plan != nil && plan.Empty() && err == nil {
			return nil
		}
		last = &VerifyError{Plan: plan, Err: err}
		if i == len(verifyDelays) {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(verifyDelays[i]):
		}
	}
}

// Outcome is what making the kernel match a configuration did.
type Outcome struct {
	Plan *diff.Plan
	// Done are the operations made; Err says what failed (operations,
	// conflicts, the ledger), Verify whether the kernel matched after.
	Done   []*diff.Op
	Err    error
	Verify error
}

// Converge plans towards st, applies and verifies. An error means no plan
// could be made (the kernel could not be read): nothing was changed.
func Converge(ctx context.Context, e *engine.Engine, st *model.State) (*Outcome, error) {
	plan, _, conflicts := e.PlanDesired(ctx, st, false)
	if plan == nil {
		return nil, conflicts
	}
	return apply(ctx, e, st, plan, conflicts), nil
}

func apply(ctx context.Context, e *engine.Engine, st *model.State, plan *diff.Plan, conflicts error) *Outcome {
	o := &Outcome{Plan: plan}
	if !plan.Empty() {
		res, err := e.Apply(ctx, plan)
		o.Done = res.Done
		o.Err = errors.Join(conflicts, res.Err(), err)
	} else {
		o.Err = errors.Join(conflicts, e.SaveLedger())
	}
	// A failed apply is known not to match: no need to wait for it. An
	// empty plan was made from a read after which nothing was written:
	// that read is the verification.
	if o.Err == nil && !plan.Empty() {
		o.Verify = Verify(ctx, e, st)
	}
	return o
}

// interrupted ends the detail of a rollback finished after its process was
// killed.
const interrupted = "; interrupted, and finished by the next actor"

// interruptedApply is the detail of the rollback of a transaction whose
// apply did not complete (Txn.Applying).
const interruptedApply = "the apply that began or extended it did not complete (its process was killed, or the host went down): " +
	"the candidate and the kernel were left part-way"

// Pending returns the pending transaction, rolling it back first when it is
// stale (a reboot, a passed deadline) or its apply was interrupted. rolled
// is that rollback's result. The caller holds the writer lock: an apply
// under way holds it too, so a transaction found applying here is one whose
// apply was killed.
func (h *Host) Pending(ctx context.Context) (f *File, rolled *RollbackResult, err error) {
	f, err = Load(h.Dir)
	if err != nil {
		return nil, nil, err
	}
	if f.Pending == nil {
		return f, nil, nil
	}
	cause, detail := h.stale(f.Pending), "the deadline passed unconfirmed"
	switch {
	case f.Pending.RollingBack != "":
		detail = f.Pending.Detail
		if !strings.HasSuffix(detail, interrupted) {
			detail += interrupted
		}
	case f.Pending.Applying:
		// Never confirmable: the candidate may not be (all) installed,
		// and the kernel is anywhere between the two configurations.
		cause, detail = CauseApply, interruptedApply
	case cause == CauseReboot:
		detail = "begun before a reboot (another boot id)"
	case cause == "":
		return f, nil, nil
	}
	rolled, err = h.rollback(ctx, f, cause, detail)
	return f, rolled, err
}

// rolledNow says why a transaction a command found was rolled back before
// anything else: for its messages.
func rolledNow(t *Txn) string {
	if strings.HasPrefix(t.Detail, interruptedApply) {
		return "its apply was interrupted (" + t.Detail + ")"
	}
	return "it was due (" + t.Detail + ")"
}

// RefusePending is the check of a plain apply: it fails with ErrPending,
// saying what to do, while a transaction is pending. A stale one is rolled
// back first, and the apply is refused too: the files it would apply are
// the ones the rollback just wrote back, which the user did not ask for.
func (h *Host) RefusePending(ctx context.Context) (*RollbackResult, error) {
	var stamp statedir.FileStamp
	var serr error
	if h.Dir != nil {
		stamp, serr = h.Dir.Stamp(FileName)
	}
	f, rolled, err := h.Pending(ctx)
	if err != nil {
		return nil, err
	}
	if h.Dir != nil && serr == nil && rolled == nil && f.Pending == nil {
		h.kept, h.keptStamp = f, stamp
	}
	if rolled != nil {
		return rolled, fmt.Errorf("transaction %s has been rolled back now: %s; nothing else was applied: check the files and run the command again", rolled.Txn.ID, rolledNow(rolled.Txn))
	}
	if t := f.Pending; t != nil {
		return nil, fmt.Errorf("%w: %s rolls back at %s (in %s) unless confirmed; "+
			"confirm it with \"netreconcile confirm%s %s\", roll it back with \"netreconcile rollback%s %s\", "+
			"or apply inside it with \"netreconcile apply%s --confirm-within DURATION\" (the deadline moves, the restore point stays)",
			ErrPending, inert.String(t.ID), t.Deadline.UTC().Format(time.RFC3339), t.Deadline.Sub(h.now()).Round(time.Second), h.Options, IDArg(t.ID), h.Options, IDArg(t.ID), h.Options)
	}
	return nil, nil
}

// IDArg is a transaction id as the last argument of a command line the user
// is told to run: quoted for the shell (package inert), after "--" when it
// starts with "-", which would read as an option. The id comes from the
// state directory, which the service user writes.
func IDArg(id string) string {
	if strings.HasPrefix(id, "-") {
		return "-- " + inert.Quote(id)
	}
	return inert.Quote(id)
}

// RecordConfirmed records s as the last confirmed configuration, the
// restore point of the next transaction, unless s is already recorded.
// While a transaction is pending (its own restore point stands) it records
// nothing and returns ErrPending (the daemon's Recorder then records its
// configuration in the transaction). by says who confirms: apply (a plain
// apply that converged and verified) or run (the daemon's converged pass).
func (h *Host) RecordConfirmed(s *Snapshot) error {
	f, err := h.loadFile()
	if err != nil {
		return err
	}
	return h.recordConfirmedIn(f, s)
}

// recordConfirmedIn is RecordConfirmed on f, transaction.json as read.
func (h *Host) recordConfirmedIn(f *File, s *Snapshot) error {
	if f.Pending != nil {
		return ErrPending
	}
	if f.Confirmed != nil && f.Confirmed.Hash == s.Hash && sameModes(f.Confirmed, s) {
		return nil
	}
	h.kept = nil
	f.Confirmed = s
	return f.Save(h.Dir)
}

// StagedRecord is transaction.json as RecordConfirmed would write it for a
// snapshot, staged (statedir.Staged) while the command applies it.
type StagedRecord struct {
	kept *File
	snap *Snapshot
	hash string        // the snapshot's Hash when staged
	done chan struct{} // closed once staged (or failed to)
	s    *statedir.Staged
}

// StageConfirmed starts writing, in the background, what RecordConfirmed(s)
// will write, from transaction.json as RefusePending read it: a plain apply
// stages it after the parse, so that the flush to the disk overlaps the
// apply. nil when RecordConfirmed would write nothing, or the file is not
// the one RefusePending read.
func (h *Host) StageConfirmed(s *Snapshot) *StagedRecord {
	if h.Dir == nil {
		return nil
	}
	f := h.keptFile()
	if f == nil || f.Pending != nil || f.Confirmed != nil && f.Confirmed.Hash == s.Hash && sameModes(f.Confirmed, s) {
		return nil
	}
	r := &StagedRecord{kept: f, snap: s, hash: s.Hash, done: make(chan struct{})}
	rec := *f
	rec.Confirmed = s
	go func() {
		defer close(r.done)
		if data, err := rec.Encode(); err == nil {
			// A failure leaves it to RecordConfirmed, which says why.
			r.s, _ = h.Dir.Stage(FileName, data, 0o600)
		}
	}()
	return r
}

// Discard drops what StageConfirmed staged, unless RecordConfirmedStaged
// put it in place.
func (r *StagedRecord) Discard() {
	if r == nil {
		return
	}
	<-r.done
	r.s.Discard()
}

// RecordConfirmedStaged is RecordConfirmed(s) that puts in place what
// StageConfirmed(s) staged (r, nil for none), when transaction.json is
// still the file it was staged from; otherwise it writes it as
// RecordConfirmed does.
func (h *Host) RecordConfirmedStaged(s *Snapshot, r *StagedRecord) error {
	if r == nil {
		return h.RecordConfirmed(s)
	}
	<-r.done
	if r.s == nil || r.snap != s || r.hash != s.Hash || h.keptFile() != r.kept {
		r.s.Discard()
		return h.RecordConfirmed(s)
	}
	h.kept = nil
	if err := r.s.Commit(); err != nil {
		return fmt.Errorf("save transaction: %w", err)
	}
	return nil
}

// Recorder records the daemon's converged configurations: as the last
// confirmed one, or, while a transaction is pending, in the transaction
// (Txn.Converged), which a confirm records as confirmed and a rollback
// drops. It is recorded in the pass that converged it, under the
// namespace's lock, so the record never waits for a later pass: a
// transaction confirmed and another begun before the daemon's next pass
// still finds what ran confirmed as its restore point, whatever that one's
// end. The daemon offers each configuration once, after the first pass
// that converged it.
type Recorder struct {
	Dir *statedir.Dir
}

// Record records the configuration snapshot makes.
func (r *Recorder) Record(snapshot func() (*Snapshot, error)) error {
	s, err := snapshot()
	if err != nil {
		return err
	}
	h := &Host{Dir: r.Dir}
	f, err := h.loadFile()
	if err != nil {
		return err
	}
	if f.Pending == nil {
		return h.recordConfirmedIn(f, s)
	}
	t := f.Pending
	if t.RollingBack != "" || t.Applying {
		// It can only end rolled back (an apply found applying under
		// the lock was killed): nothing of the window is kept.
		return nil
	}
	inForce := t.Applied
	if t.Converged != nil {
		inForce = t.Converged
	}
	if inForce.Hash == s.Hash && sameModes(inForce, s) {
		return nil
	}
	if t.Applied.Hash == s.Hash && sameModes(t.Applied, s) {
		// An edit of the window undone: what runs is the apply's again.
		t.Converged = nil
	} else {
		t.Converged = s
	}
	if err := f.Save(h.Dir); err != nil {
		return fmt.Errorf("record the configuration converged in the window of %s: %w", t.ID, err)
	}
	return nil
}

// Confirm makes the pending transaction permanent: its applied files become
// the confirmed configuration. id "" confirms whichever is pending. A
// transaction found stale is rolled back instead, and that is an error.
func (h *Host) Confirm(ctx context.Context, id string) (*Txn, *RollbackResult, error) {
	f, rolled, err := h.Pending(ctx)
	if err != nil {
		return nil, rolled, err
	}
	if rolled != nil {
		return nil, rolled, fmt.Errorf("transaction %s can no longer be confirmed: %s, and it has been rolled back now", rolled.Txn.ID, rolledNow(rolled.Txn))
	}
	if err := matchPending(f, id); err != nil {
		return nil, nil, err
	}
	now := h.now()
	// What runs: the last apply's configuration, or the files edited in
	// the window that the daemon converged since.
	inForce := f.Pending.Applied
	if f.Pending.Converged != nil {
		inForce = f.Pending.Converged
	}
	applied := *inForce
	applied.At, applied.By = now.UTC(), "confirm"
	f.Confirmed, f.Rejected = &applied, nil
	t := f.end(Confirmed, "", "", now)
	if err := f.Save(h.Dir); err != nil {
		return nil, nil, fmt.Errorf("confirm %s: %w", t.ID, err)
	}
	stopTimer(t)
	// The process that installed the candidate keeps a copy of the file
	// from before: with the transaction ended, it must never be written
	// back.
	if w := h.mainWriter(applied.Main); w != nil {
		if err := w.Confirmed(applied.Main, t.ID); err != nil {
			return f.Last, nil, fmt.Errorf("transaction %s is confirmed, but %w", t.ID, err)
		}
	}
	return f.Last, nil, nil
}

func matchPending(f *File, id string) error {
	if f.Pending == nil {
		if f.Last != nil && (id == "" || id == f.Last.ID) {
			return fmt.Errorf("%w (the last one, %s, was %s at %s)", ErrNoPending, f.Last.ID, f.Last.State, f.Last.Ended.UTC().Format(time.RFC3339))
		}
		return ErrNoPending
	}
	if id != "" && id != f.Pending.ID {
		return fmt.Errorf("%w with id %s: the pending one is %s", ErrNoPending, id, f.Pending.ID)
	}
	return nil
}

// Rollback rolls the pending transaction back now (netreconcile rollback);
// id "" is whichever is pending.
func (h *Host) Rollback(ctx context.Context, id string, cause Cause, detail string) (*RollbackResult, error) {
	f, rolled, err := h.Pending(ctx)
	if err != nil || rolled != nil {
		return rolled, err
	}
	if err := matchPending(f, id); err != nil {
		return nil, err
	}
	return h.rollback(ctx, f, cause, detail)
}

// Due rolls back the pending transaction when it is stale (its deadline
// passed, or it began before a reboot) and returns the deadline of the one
// still pending (zero when none). The daemon and the timers call it; it is
// harmless to call it at any time, from any number of actors.
func (h *Host) Due(ctx context.Context) (rolled *RollbackResult, next time.Time, err error) {
	f, rolled, err := h.Pending(ctx)
	if err != nil || rolled != nil {
		return rolled, time.Time{}, err
	}
	if f.Pending != nil {
		next = f.Pending.Deadline
	}
	return nil, next, nil
}

// RollbackResult is what a rollback did.
type RollbackResult struct {
	Txn *Txn
	// Files are the configuration files written back or moved aside.
	Files []string
	// Outcome is the convergence to the restored configuration (nil when
	// it could not be parsed or the kernel not read: Err says why).
	Outcome *Outcome
	Err     error
}

// rollback writes the restore point's files back and then makes the kernel
// match them by a plan from the kernel as it is now (not a replay of what
// the transaction did): what the transaction created is deleted, what it
// changed is changed back, what it deleted is created again, and objects
// that are not netreconcile's are left alone as in every plan. The kernel
// is planned from the restore point's content, not from the files read
// back, so a file that could not be written still leaves the kernel right.
//
// The transaction ends rolled back even when some step failed: the files
// (or, failing those, the next apply) bring the rest, and a transaction
// kept pending would be retried by every actor forever. Detail says what
// failed.
func (h *Host) rollback(ctx context.Context, f *File, cause Cause, detail string) (*RollbackResult, error) {
	t := f.Pending
	r := &RollbackResult{}
	// Recorded before the first write: from here on the transaction can
	// only end rolled back (Pending finishes what a kill interrupted).
	t.RollingBack, t.Detail = cause, statedir.CleanText(detail, maxTextLen, false)
	if err := f.Save(h.Dir); err != nil {
		return nil, fmt.Errorf("record the rollback of %s: %w", t.ID, err)
	}
	var errs []error
	if !h.AllowInsecureConfig {
		err := desired.CheckTrusted(t.Restore.Main, t.Restore.DropIn)
		for _, p := range t.Restore.sidePaths() {
			if err == nil {
				err = desired.CheckTrustedSide(p)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("files not restored: %w", err))
		}
	}
	restore := t.Restore
	if w := h.mainWriter(t.Restore.Main); len(errs) == 0 && w != nil && len(t.Restore.Files) > 0 {
		// The main file by the process that can write it, which keeps
		// it with its own mode and owner; restoreFiles does the rest.
		if err := w.Restore(&t.Restore.Files[0], t.ID); err != nil {
			errs = append(errs, fmt.Errorf("restore files: %w", err))
		} else if err := holds(&t.Restore.Files[0]); err != nil {
			// Root's copy is the file as it was when root installed a
			// candidate, which is the restore point's only when the
			// file was not edited since the last confirm (an extension
			// with --candidate of a transaction begun without one, an
			// edit in the window): the files are then pinned.
			errs = append(errs, fmt.Errorf("restore files: root's process wrote back its copy of the main file from before its candidate, which is not the restore point's: %w", err))
		} else {
			rest := *t.Restore
			rest.Files = rest.Files[1:]
			restore = &rest
		}
	}
	if len(errs) == 0 {
		files, err := restoreFiles(restore, t.ID, trustFor(h.AllowInsecureConfig))
		if restore != t.Restore {
			files = append([]string{t.Restore.Main}, files...)
		}
		r.Files = files
		if err != nil {
			errs = append(errs, fmt.Errorf("restore files: %w", err))
		}
	}
	// Files that could not be written back are pinned (pin.go): while
	// they hold what is rolled back now, the confirmed configuration is
	// enforced instead, so the daemon's next pass does not apply them
	// again.
	f.Rejected = nil
	if len(errs) > 0 {
		if cur, err := ReadSnapshot(t.Restore.Main, t.Restore.DropIn, h.now(), "rollback"); err == nil {
			// Parsed for the side files the rejected files name: the
			// pin holds while those are unchanged too. Only hashed,
			// never applied: read whoever may write them.
			_, _ = cur.Parse(true)
			f.Rejected = &Rejected{ID: t.ID, Hash: SourcesHash(cur.Sources()), Sides: cur.sidePaths(), Error: statedir.CleanText(errs[0].Error(), maxTextLen, false)}
			if f.Confirmed == nil {
				// The first transaction of a namespace that never
				// had a confirmed configuration took the files on
				// disk as its restore point: the pin enforces it,
				// and it is what runs from now on.
				f.Confirmed = t.Restore
			}
		}
	}
	// The restore point holds its side files: none is read from the disk.
	cfg, err := desired.ParseWith(t.Restore.Sources(), desired.Options{AllowInsecure: h.AllowInsecureConfig})
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("the restore point's configuration no longer loads: %w", err))
	case h.Engine == nil:
		errs = append(errs, ErrNamespaceGone)
	default:
		o, err := Converge(ctx, h.Engine, cfg.State)
		r.Outcome = o
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read the kernel: %w", err))
		case o.Err != nil:
			errs = append(errs, o.Err)
		case o.Verify != nil:
			errs = append(errs, o.Verify)
		}
	}
	r.Err = errors.Join(errs...)
	if r.Err != nil {
		detail += "; rollback incomplete: " + r.Err.Error()
	}
	f.end(RolledBack, cause, detail, h.now())
	r.Txn = f.Last
	if err := f.Save(h.Dir); err != nil {
		return r, fmt.Errorf("record the rollback of %s: %w", t.ID, err)
	}
	stopTimer(t)
	return r, nil
}

// holds checks that f.Path holds f's content (through its link if it is
// one), as written back by another process.
func holds(f *FileCopy) error {
	cur, err := readCopy(f.Path)
	if err != nil {
		return err
	}
	if cur.Link != f.Link || string(cur.Data) != string(f.Data) {
		return fmt.Errorf("%s holds other content", f.Path)
	}
	return nil
}

// BeginRequest is an apply --confirm-within.
type BeginRequest struct {
	// Main and DropIn are the configuration's paths.
	Main, DropIn string
	// Candidate, when not nil, is installed as the main file once the
	// transaction is recorded (--candidate): the daemon, which applies
	// every edit of the files at once, never sees it before.
	Candidate []byte
	// CandidateName is the --candidate file as given, which the
	// configuration's errors name: it is parsed as the main file.
	CandidateName string
	Window        time.Duration
	Probes        []Probe
	// Check, when set, judges the configuration to apply before anything
	// else (apply --plan, --max-disruption, --strict, on a dry run), and
	// CheckPlan the plan the apply runs, before the transaction is
	// recorded: an error from either refuses the apply, and nothing is
	// changed.
	Check     func(ctx context.Context, applied *Snapshot, cfg *desired.Config) error
	CheckPlan func(plan *diff.Plan, applied *Snapshot, cfg *desired.Config, conflicts error) error
}

// named makes the positions err gives in the main file name the
// --candidate as given (desired.RenameFile), nft's refusals of its rules
// included: the candidate is parsed and compiled under the main file's
// name.
func (req *BeginRequest) named(err error, main string) error {
	if err == nil || req.Candidate == nil || req.CandidateName == "" {
		return err
	}
	desired.RenameFile(err, main, req.CandidateName)
	var es nftcompile.Errors
	if errors.As(err, &es) {
		for i := range es {
			if f, _, _ := es[i].Place(); f == main {
				es[i].Pos = req.CandidateName + strings.TrimPrefix(es[i].Pos, main)
			}
		}
	}
	return err
}

// BeginResult is what apply --confirm-within did.
type BeginResult struct {
	Txn *Txn
	// Extended: a pending transaction's deadline was moved.
	Extended bool
	Outcome  *Outcome
	Armed    []string
	Skipped  []ProbeResult
	// After are the armed probes' results after the apply; on a rollback
	// by a probe, Again are their results after the rollback.
	After, Again []ProbeResult
	// Rollback is set when the apply was rolled back at once (a failed
	// operation, verify or probe).
	Rollback *RollbackResult
	Warnings []string
}

// Begin applies the configuration inside a transaction: recorded, with its
// timer arranged, before the first kernel write. See docs/safe-apply.md for
// the order of the steps and why.
func (h *Host) Begin(ctx context.Context, req BeginRequest) (*BeginResult, error) {
	f, rolled, err := h.Pending(ctx)
	if err != nil {
		return nil, err
	}
	if rolled != nil {
		return &BeginResult{Rollback: rolled}, fmt.Errorf("transaction %s has been rolled back now: %s; nothing else was applied: check the files and run the command again", rolled.Txn.ID, rolledNow(rolled.Txn))
	}
	now := h.now()
	// What the file records must pass Load's checks (check.go).
	if h.Netns != "" {
		if err := CheckNetns(h.Netns); err != nil {
			return nil, fmt.Errorf("a transaction records the namespace, and this name cannot be: %w", err)
		}
	}
	if len(req.Probes) > maxProbes {
		return nil, fmt.Errorf("--probe: more than %d", maxProbes)
	}
	if req.Window <= 0 || req.Window > maxWindow {
		return nil, fmt.Errorf("--confirm-within: %s is not between 0 and %s", req.Window, maxWindow)
	}
	if !h.AllowInsecureConfig {
		if err := desired.CheckTrusted(req.Main, req.DropIn); err != nil {
			return nil, err
		}
	}
	cur, err := ReadSnapshot(req.Main, req.DropIn, now, "apply")
	if err != nil {
		return nil, err
	}
	applied := cur
	if req.Candidate != nil {
		// Found out now rather than after the transaction is recorded:
		// the packaged service's user cannot write /etc/netreconcile.
		if dir := filepath.Dir(cur.Main); unix.Access(dir, unix.W_OK) != nil && h.MainWriter == nil {
			return nil, fmt.Errorf("--candidate: cannot install the file: %s is not writable by uid %d (nothing was changed)", dir, os.Geteuid())
		}
		applied = cur.WithMain(req.Candidate, now, "apply")
	}
	// Nothing is written before the change is known to be valid: an
	// invalid candidate is never installed. The parse records the side
	// files in the snapshot.
	cfg, err := applied.Parse(h.AllowInsecureConfig)
	if err != nil {
		return nil, req.named(err, applied.Main)
	}
	if req.Check != nil {
		if err := req.Check(ctx, applied, cfg); err != nil {
			return nil, req.named(err, applied.Main)
		}
	}
	res := &BeginResult{Extended: f.Pending != nil}
	var restore *Snapshot
	switch {
	case res.Extended:
		restore = f.Pending.Restore
	case f.Confirmed != nil:
		restore = f.Confirmed.withModesOf(cur)
	case req.Candidate != nil:
		// The files on disk, with the side files they name: parsed
		// for those only, a restore point that does not load is
		// reported by the rollback that needs it.
		_, _ = cur.Parse(h.AllowInsecureConfig)
		restore = cur
	default:
		return nil, errNoRestorePoint
	}
	if req.Candidate != nil && !res.Extended && !sameMainFile(restore, cur) {
		// The candidate replaces the main file as it is; a rollback
		// puts back the restore point's. Were they different, a rollback
		// would lose the edit the candidate replaced (as root) or write
		// back a file that is not the restore point's (root's process,
		// for the service user, puts back only the file it replaced).
		return nil, fmt.Errorf("--candidate: the main file %s is not the one of the last confirmed configuration (recorded %s by %s): "+
			"it was edited since, and a rollback could not put back both that edit and the configuration known to be good. "+
			"Apply the edit first (inside a transaction: apply --confirm-within without --candidate), or put the confirmed file back; nothing was changed",
			cur.Main, restore.At.Format(time.RFC3339), restore.By)
	}
	if !res.Extended && restore.Hash == applied.Hash {
		res.Warnings = append(res.Warnings, "the restore point is this same configuration (recorded "+restore.At.Format(time.RFC3339)+" by "+restore.By+
			"): a rollback changes nothing. With the daemon running, a file edited in place is applied and confirmed at once; give the change with --candidate FILE instead")
	}

	// Probes are judged before anything changes: one that fails already
	// (a gateway that does not answer) would roll back every change.
	for _, p := range req.Probes {
		if err := p.Check(ctx); err != nil {
			res.Skipped = append(res.Skipped, ProbeResult{Probe: p.String(), Err: err.Error()})
			continue
		}
		res.Armed = append(res.Armed, p.String())
	}

	st, err := h.Engine.Actual(cfg.State.Protocol, false)
	if err != nil {
		return nil, fmt.Errorf("read kernel state: %w", err)
	}
	before, err := render.State(st.Owned())
	if err != nil {
		return nil, fmt.Errorf("record the kernel state: %w", err)
	}
	plan, _, conflicts := h.Engine.PlanDesired(ctx, cfg.State, false)
	if plan == nil {
		return nil, req.named(conflicts, applied.Main)
	}
	if req.CheckPlan != nil {
		if err := req.CheckPlan(plan, applied, cfg, conflicts); err != nil {
			return nil, req.named(err, applied.Main)
		}
	}
	planJSON, err := plan.JSON()
	if err != nil {
		return nil, err
	}

	prev := f.Pending
	t := &Txn{}
	if prev != nil {
		cp := *prev
		t = &cp
		t.Extended++
	} else {
		boot, err := BootID(h.getenv())
		if err != nil {
			return nil, err
		}
		// The kernel state as text holds names of the file (an alias)
		// as they are: cleaned as check requires.
		t.ID, t.Started, t.BootID, t.Netns, t.Restore, t.Before = newID(now), now.UTC(), boot, h.Netns, restore, statedir.CleanText(string(before), maxFileSize, true)
	}
	// The apply supersedes what the daemon converged in the window
	// before it (an edit it read from the files, or replaced by a
	// --candidate).
	t.State, t.Deadline, t.Window, t.Applied, t.Converged = Pending, now.Add(req.Window).UTC(), Duration(req.Window), applied, nil
	// Until this apply completed: a kill from the record on leaves the
	// candidate installed or not and the kernel anywhere, and whoever
	// finds the record next rolls it back (Pending) instead of letting a
	// confirm record what may not be in place.
	t.Applying = true
	t.Plans = append(append([]json.RawMessage(nil), t.Plans...), planJSON)
	t.Probes = nil
	for _, p := range res.Armed {
		t.Probes = append(t.Probes, statedir.CleanText(p, maxRecordLen, false))
	}
	f.Pending = t
	// The timer is arranged before the transaction is recorded, and the
	// record names it, in one write, before the first kernel write: a
	// crash from there on finds the transaction, and something to roll it
	// back at the deadline. A process timer waits for the record before it
	// reads the file (Arranged.Release): one started for a transaction
	// never recorded exits.
	release := func() {}
	if h.Timer != nil {
		a, err := h.Timer(t)
		switch {
		case err != nil && prev == nil:
			return nil, fmt.Errorf("arrange the rollback timer (nothing was changed): %w", err)
		case err != nil:
			// The earlier timers stay: each waits for the deadline in the file.
			res.Warnings = append(res.Warnings, "no new timer: "+err.Error()+"; the earlier one waits for the new deadline")
		default:
			t.Timer, t.Fallback = a.Holder, a.Fallback
			if a.Release != nil {
				release = a.Release
			}
			if a.Warning != nil {
				res.Warnings = append(res.Warnings, a.Warning.Error())
			}
		}
	}
	err = f.Save(h.Dir)
	release()
	if err != nil {
		if prev == nil {
			stopTimer(t)
			return nil, fmt.Errorf("record the transaction (nothing was changed): %w", err)
		}
		return nil, fmt.Errorf("record the transaction's extension (nothing was changed): %w", err)
	}
	res.Txn = t
	if req.Candidate != nil {
		install := func() error { return installMain(cur, req.Candidate) }
		if w := h.mainWriter(cur.Main); w != nil {
			install = func() error { return w.Install(cur.Main, t.ID) }
		}
		if err := install(); err != nil {
			rb, rerr := h.rollback(ctx, f, CauseApply, err.Error())
			res.Rollback = rb
			return res, errors.Join(err, rerr)
		}
	}

	res.Outcome = apply(ctx, h.Engine, cfg.State, plan, conflicts)
	cause, detail := Cause(""), ""
	switch {
	case res.Outcome.Err != nil:
		cause, detail = CauseApply, res.Outcome.Err.Error()
	case res.Outcome.Verify != nil:
		cause, detail = CauseVerify, res.Outcome.Verify.Error()
	default:
		for _, p := range req.Probes {
			if !contains(res.Armed, p.String()) {
				continue
			}
			r := ProbeResult{Probe: p.String(), OK: true}
			if err := p.Check(ctx); err != nil {
				r.OK, r.Err = false, err.Error()
				if cause == "" {
					cause, detail = CauseProbe, "probe "+p.String()+" failed after the apply: "+err.Error()
				}
			}
			res.After = append(res.After, r)
		}
	}
	if cause == "" {
		// Complete: from here a confirm records what is in place.
		t.Applying = false
		err := f.Save(h.Dir)
		if err == nil {
			return res, nil
		}
		// The record on disk still says applying, which nobody may
		// confirm: ended here rather than by the next actor.
		cause, detail = CauseApply, fmt.Sprintf("record that the apply of %s completed: %v", t.ID, err)
	}
	rb, err := h.rollback(ctx, f, cause, detail)
	res.Rollback = rb
	if cause == CauseProbe {
		for _, p := range req.Probes {
			if contains(res.Armed, p.String()) {
				r := ProbeResult{Probe: p.String(), OK: true}
				if err := p.Check(ctx); err != nil {
					r.OK, r.Err = false, err.Error()
				}
				res.Again = append(res.Again, r)
			}
		}
	}
	if err != nil {
		return res, err
	}
	return res, fmt.Errorf("rolled back at once (%s): %s", cause, detail)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sameMainFile says whether two snapshots hold the same main file: the same
// path, link and content.
func sameMainFile(a, b *Snapshot) bool {
	if len(a.Files) == 0 || len(b.Files) == 0 {
		return false
	}
	x, y := a.Files[0], b.Files[0]
	return x.Path == y.Path && x.Link == y.Link && string(x.Data) == string(y.Data)
}
