package txwalk

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/test/walk"
)

// cfg is a configuration as the files held it: the version, and the files'
// states (the names it constrains: the main file, every fragment, present
// or missing, and the side files the version names).
type cfg struct {
	v *Version
	d disk
}

func (c *cfg) String() string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("v%d", c.v.N)
}

// txnModel is what the walk expects of the pending transaction.
type txnModel struct {
	id      string
	restore *cfg
	// applied are the configurations its applies made, the begin's
	// first, then each extension's: transaction.json's extended counter
	// says which is the last one recorded.
	applied  []*cfg
	extended int
	deadline time.Time
	// edited: the files were edited since its last apply, so a confirm
	// leaves them as the edit made them.
	edited bool
	// inForce are the files edited in the window that the daemon was
	// seen to apply since the last apply (the kernel held them, and no
	// longer what was in force before): the pass that applied them
	// recorded them in the transaction, and a confirm records them.
	// unsure: the daemon may have applied files edited in the window
	// that the kernel cannot tell from what ran before.
	inForce *cfg
	unsure  bool
	// holderLost: every holder of the deadline went away as documented
	// (a reboot without a daemon): the next command rolls it back.
	holderLost bool
}

// model is what the walk expects of the host.
type model struct {
	// alts are the states the files may be in (one of them); empty:
	// not known (a rollback killed half way).
	alts []*cfg
	// kernel are the versions the kernel may hold when no daemon runs;
	// empty: not known (an apply killed half way, a hand edit).
	kernel []*Version
	// confirmed are the configurations transaction.json's confirmed may
	// be (a nil entry: none yet); observing it narrows them to one.
	confirmed []*cfg
	txn       *txnModel
	// pinned is the configuration the pin enforces while the files hold
	// what a rollback could not write back (service mode).
	pinned   *cfg
	pinnedAt []*cfg
	ended    map[string]bool
}

// runner runs one sequence on one rig.
type runner struct {
	opts *Options
	rig  *rig
	seq  *Sequence
	i    int
	st   stats
	m    model
	// attempt is the configuration a begin step is applying; attemptOf
	// makes it from what the walk knows of the files, again when a timer
	// rolled the pending transaction back under the step (the begin then
	// applies the restored files).
	attempt   *cfg
	attemptOf func() *cfg
	// raced: a rollback wrote the files while an edit did (editRaced,
	// "files"), or planned the kernel while a hand edit changed it
	// ("kernel"): what it leaves there is not the restore point's alone.
	raced string
	// The oracle's baselines: foreign objects, lo's addresses, sysctls.
	foreign string
	lo      []string
	sysctl0 map[string]string
	handN   int
	// anyKill: a command was killed in this run (temporary files may be
	// left).
	anyKill bool
	// heldConfirm: a transaction was confirmed while the daemon was
	// paused, and it has not passed since.
	heldConfirm bool
}

// foreignTables are the nftables tables of the walk's names that are not
// the walk's: the one test/walk's foreign plan makes for adoption.
var foreignTables = map[string]bool{walk.AdoptTable: true}

func (w *runner) setup() error {
	for _, c := range w.seq.Foreign {
		if err := walk.Shell(w.rig.ns, c); err != nil {
			return err
		}
	}
	k, err := walk.ReadKernel(w.rig.ns, true)
	if err != nil {
		return err
	}
	w.foreign, w.lo = walk.DumpForeign(k, 245, foreignTables, nil)
	if w.sysctl0, err = walk.SysctlBaseline(w.rig.ns); err != nil {
		return err
	}
	w.m.confirmed = []*cfg{nil}
	w.m.ended = map[string]bool{}
	return nil
}

func (w *runner) fail(check, f string, a ...any) *Failure {
	return &Failure{Check: check, Msg: fmt.Sprintf(f, a...)}
}

// capture reads the files as version v holds them.
func (w *runner) capture(v *Version) (*cfg, error) {
	d := w.rig.l.read()
	c := &cfg{v: v, d: disk{"main": d["main"]}}
	if d["main"].Data != v.Main() {
		return nil, fmt.Errorf("the main file holds %q, the walk wrote %q", abbrev(d["main"].Data), abbrev(v.Main()))
	}
	for _, n := range fragNames {
		c.d[n] = d[n]
		want, ok := v.Frags[n]
		if ok != !d[n].Missing || ok && d[n].Data != w.rig.l.render(want) {
			return nil, fmt.Errorf("fragment %s is %s, the walk wrote %q", n, d[n], want)
		}
	}
	if v.namesSides() {
		for _, n := range sideNames {
			c.d[n] = d[n]
		}
	}
	return c, nil
}

// withCandidate is the configuration a --candidate makes of the files c
// holds: the main file's content replaced, where it is (through a link,
// with the mode and owner of what it replaces).
func withCandidate(c *cfg, v *Version) *cfg {
	n := &cfg{v: c.v.withMain(v.N, v.C), d: disk{}}
	for k, s := range c.d {
		n.d[k] = s
	}
	m := n.d["main"]
	m.Data = v.Main()
	n.d["main"] = m
	return n
}

// diskBase is a configuration whose files other than the main file are
// those the files hold (every state the walk allows agrees on them): what
// a --candidate is applied with.
func (w *runner) diskBase() *cfg {
	if len(w.m.alts) == 0 {
		return nil
	}
	for _, c := range w.m.alts[1:] {
		for n, st := range c.d {
			if n != "main" && w.m.alts[0].d[n] != st {
				return nil
			}
		}
	}
	return w.m.alts[0]
}

// diskCfg is the configuration the files hold, when known exactly.
func (w *runner) diskCfg() *cfg {
	if len(w.m.alts) == 1 {
		return w.m.alts[0]
	}
	return nil
}

// step runs one step and checks the host.
func (w *runner) step(s Step) *Failure {
	w.attempt, w.attemptOf = nil, nil
	var f *Failure
	if w.rig.paused && (s.Op == opDeadline || s.Op == opDaemonStart || s.Op == opReboot) {
		// A paused daemon holds no deadline, and is the daemon that
		// runs: it goes on first (a shrunk sequence may have lost the
		// step that continued it).
		if f := w.resume(Step{Op: opDaemonResume}); f != nil {
			return f
		}
	}
	switch s.Op {
	case opEdit:
		f = w.doEdit(s)
	case opApply:
		f = w.doApply(s)
	case opBegin:
		f = w.doBegin(s)
	case opBadCand:
		f = w.doBadCand(s)
	case opConfirm, opRollback:
		f = w.doEnd(s)
	case opDeadline:
		f = w.doDeadline()
	case opSleep:
		time.Sleep(s.Sleep)
		f = w.observe(s, nil)
	case opDaemonPause:
		if err := w.rig.pauseDaemon(); err != nil {
			return w.fail("daemon", "%v", err)
		}
		f = w.observe(s, nil)
	case opDaemonResume:
		f = w.resume(s)
	case opDaemonStart:
		if err := w.rig.startDaemon(); err != nil {
			return w.fail("daemon", "%v", err)
		}
		w.daemonRecords()
		if w.m.txn != nil {
			// It holds the deadline again, or rolled back at its
			// start what was due.
			w.m.txn.holderLost = false
		}
		f = w.observe(s, nil)
	case opDaemonStop:
		sig := syscall.SIGTERM
		if s.Sig == "KILL" {
			sig = syscall.SIGKILL
		}
		if err := w.rig.stopDaemon(sig); err != nil {
			return w.fail("daemon", "%v", err)
		}
		f = w.observe(s, nil)
		if f == nil {
			f = w.daemonHeldAlone()
		}
	case opHand:
		f = w.doHand(s)
	case opHolderExit:
		if err := w.rig.holderExit(); err != nil {
			return w.fail("setup", "%v", err)
		}
		f = w.observe(s, nil)
	case opReboot:
		f = w.doReboot(s)
	}
	if f != nil {
		return f
	}
	return w.check(s)
}

// daemonActive says whether a daemon runs and is not paused: one that
// applies the files and records them.
func (w *runner) daemonActive() bool { return w.rig.daemon != nil && !w.rig.paused }

// resume continues a paused daemon. With no transaction pending, its next
// converged pass records the files as confirmed.
func (w *runner) resume(s Step) *Failure {
	if !w.rig.paused {
		return w.observe(s, nil)
	}
	if err := w.rig.resumeDaemon(); err != nil {
		return w.fail("daemon", "%v", err)
	}
	w.heldConfirm = false
	if w.m.txn == nil {
		w.m.confirmed = append(w.m.confirmed, w.m.alts...)
	}
	return w.observe(s, nil)
}

func (w *runner) doEdit(s Step) *Failure {
	v := w.seq.Versions[s.V]
	if err := w.rig.l.write(v, s.Edit, &w.rig.linkSeq); err != nil {
		return w.fail("setup", "write v%d: %v", v.N, err)
	}
	if f := w.editRaced(s, v); f != nil {
		return f
	}
	c, err := w.capture(v)
	if err != nil {
		return w.fail("setup", "%v", err)
	}
	prev := w.m.alts
	w.m.alts = []*cfg{c}
	if w.m.pinned != nil && !(len(prev) == 1 && sameDisk(prev[0].d, c.d)) {
		// Any edit lifts the pin.
		w.m.pinned = nil
	}
	if w.m.txn != nil {
		w.m.txn.edited = true
	}
	if w.daemonActive() && w.m.txn == nil {
		// The daemon's converged pass records the files as confirmed
		// (a paused one once it goes on: resume).
		w.m.confirmed = append(w.m.confirmed, c)
	}
	return w.observe(s, nil)
}

// editRaced follows a rollback (a timer's, the daemon's, at the deadline)
// that wrote the files while the edit did: nothing orders a user's edit
// with it, and the files are then a mix of both. A rollback records that it
// began before it writes a file, so a pending transaction without that
// record once the edit is written means every file the rollback writes comes
// after the edit's. Otherwise its end is followed (the kernel checked, not
// the files) and the edit is made again, after it.
func (w *runner) editRaced(s Step, v *Version) *Failure {
	if raced, f := w.rollbackUnder(); !raced {
		return f
	}
	w.raced = "files"
	fl := w.observe(s, nil)
	w.raced = ""
	if fl != nil {
		return fl
	}
	if err := w.rig.l.write(v, s.Edit, &w.rig.linkSeq); err != nil {
		return w.fail("setup", "write v%d again: %v", v.N, err)
	}
	return nil
}

// rollbackUnder says whether a rollback of the pending transaction began
// before now (its record says so before its first write), and waits for
// its end.
func (w *runner) rollbackUnder() (bool, *Failure) {
	t := w.m.txn
	if t == nil {
		return false, nil
	}
	limit := time.Now().Add(DeadlineBound)
	for {
		f, err := w.readTxn()
		if err != nil {
			return false, w.fail("state", "%v", err)
		}
		if f.Pending != nil && f.Pending.ID == t.id && f.Pending.RollingBack == "" {
			return false, nil
		}
		if f.Pending == nil || f.Pending.ID != t.id {
			return true, nil
		}
		if time.Now().After(limit) {
			return false, w.fail("deadline", "the rollback of %s began and has not ended in %s", t.id, DeadlineBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *runner) doApply(s Step) *Failure {
	before := w.m
	before.confirmed = slices.Clone(w.m.confirmed)
	if c := w.diskCfg(); c != nil {
		// A plain apply that converges records the files as confirmed.
		w.m.confirmed = append(w.m.confirmed, c)
	} else {
		w.m.confirmed = append(w.m.confirmed, nil)
	}
	res, err := w.rig.run(s.Kill, s.KillWhat, "apply")
	if err != nil {
		return w.fail("apply", "%v", err)
	}
	if f := w.killed(res); f != nil {
		return f
	}
	if f := w.observe(s, &res); f != nil {
		return f
	}
	if res.killed {
		w.m.kernel = nil
		return nil
	}
	pending := before.txn != nil
	if pending && res.code == 0 && w.m.txn == nil && !strings.Contains(res.stderr, "rolled back now") {
		// The deadline passed while the apply waited for the lock a
		// timer held to roll back: the transaction had ended when the
		// apply took it, and the apply applied the restored files.
		pending = false
		if w.rig.daemon != nil {
			// Without a daemon, observe has already narrowed the
			// confirmed configuration to the one recorded (the
			// restored files, which the apply confirmed again).
			w.m.confirmed = append(before.confirmed, w.diskCfg())
		}
	}
	switch {
	case pending && res.code == 0:
		return w.fail("apply", "a plain apply went through while transaction %s was pending: %s", before.txn.id, res)
	case pending:
		return nil
	case before.pinned != nil && w.m.pinned != nil:
		if res.code == 0 {
			return w.fail("apply", "a plain apply went through while the files hold what a rollback could not write back: %s", res)
		}
		return nil
	case res.code != 0:
		return w.fail("apply", "%s", res)
	}
	c := w.diskCfg()
	if c == nil {
		return w.fail("apply", "internal: the files are not known")
	}
	w.m.kernel = []*Version{c.v}
	if w.rig.daemon == nil && (len(w.m.confirmed) != 1 || w.m.confirmed[0] != c && !w.snapshotIsCfg(c, w.m.confirmed[0])) {
		return w.fail("confirmed", "the apply did not record the files as confirmed")
	}
	w.m.confirmed = []*cfg{c}
	return nil
}

// snapshotIsCfg says whether two configurations hold the same files.
func (w *runner) snapshotIsCfg(a, b *cfg) bool {
	return a != nil && b != nil && sameDisk(a.d, b.d)
}

// killed counts a kill, and reports a command that died another way.
func (w *runner) killed(res result) *Failure {
	if res.killed {
		w.st.kills++
		w.anyKill = true
		return nil
	}
	if res.code >= 128 {
		return w.fail("crash", "the command died: %s", res)
	}
	return nil
}

func (w *runner) doBegin(s Step) *Failure {
	args := []string{"--confirm-within", s.Window.String(), "-o", "json"}
	if s.Cand {
		v := w.seq.Versions[s.V]
		p := filepath.Join(w.rig.base, fmt.Sprintf("candidate-%d.yaml", w.i))
		if err := os.WriteFile(p, []byte(v.Main()), 0o600); err != nil {
			return w.fail("setup", "%v", err)
		}
		args = append(args, "--candidate", p)
		w.attemptOf = func() *cfg {
			if base := w.diskBase(); base != nil {
				return withCandidate(base, v)
			}
			return nil
		}
	} else {
		w.attemptOf = w.diskCfg
	}
	w.attempt = w.attemptOf()
	if s.Timer != "" {
		args = append(args, "--rollback-timer", s.Timer)
	}
	before := w.m
	beforeTxn := w.m.txn
	refuse, err := w.candidateRefused(s)
	if err != nil {
		return w.fail("state", "%v", err)
	}
	res, err := w.rig.run(s.Kill, s.KillWhat, "apply", args...)
	if err != nil {
		return w.fail("begin", "%v", err)
	}
	if f := w.killed(res); f != nil {
		return f
	}
	if f := w.observe(s, &res); f != nil {
		return f
	}
	if res.killed {
		if w.m.txn != nil && w.attempt != nil && (beforeTxn == nil || w.m.txn != beforeTxn || w.m.txn.extended != beforeTxn.extended) {
			// Recorded: the files may hold the candidate or not, the
			// kernel anything between.
			if s.Cand {
				w.m.alts = append(w.m.alts, w.attempt)
			}
			w.m.kernel = nil
		}
		return nil
	}
	t := w.m.txn
	noRestore := beforeTxn == nil && len(before.confirmed) == 1 && before.confirmed[0] == nil && !s.Cand
	switch {
	case noRestore:
		if res.code == 0 || t != nil {
			return w.fail("begin", "begun without a restore point: %s", res)
		}
		return nil
	case s.Timer == "daemon" && w.rig.daemon == nil && beforeTxn == nil:
		if res.code == 0 || t != nil {
			return w.fail("begin", "--rollback-timer daemon without a daemon went through: %s", res)
		}
		return nil
	case refuse == refuseCertain || refuse == refuseMaybe && res.code != 0:
		// A --candidate over a main file edited since the last
		// confirmed configuration is refused, and changes nothing.
		if res.code == 0 || t != nil || !strings.Contains(res.stderr, "not the one of the last confirmed configuration") {
			return w.fail("begin", "a --candidate over a main file edited since the last confirm went through: %s", res)
		}
		return nil
	case beforeTxn != nil && t == nil:
		// It was stale, and rolled back instead (observe checked it).
		if res.code == 0 {
			return w.fail("begin", "a stale transaction was rolled back, and the begin said nothing: %s", res)
		}
		return nil
	case res.code != 0:
		return w.fail("begin", "%s", res)
	case t == nil:
		return w.fail("begin", "exit 0 and no transaction pending: %s", res)
	}
	if s.Cand {
		if c := w.attempt; c != nil {
			w.m.alts = []*cfg{c}
		}
	}
	t.edited, t.inForce, t.unsure = false, nil, false
	if w.attempt != nil {
		w.m.kernel = []*Version{w.attempt.v}
	} else {
		w.m.kernel = nil
	}
	if out := parseApply(res.stdout); out == nil || out.Transaction == nil || out.Transaction.ID != t.id {
		return w.fail("begin", "apply -o json does not name transaction %s:\n%s", t.id, res)
	}
	return nil
}

// badKey is what an invalid candidate adds to the main file: a key the
// schema does not have.
const badKey = "no-such-key: 1\n"

// doBadCand begins with an invalid --candidate (the main file on the disk
// with a key the schema does not have): refused, the error at the
// candidate's own file, line and column, and nothing changed (the checks
// after the step hold the files and the kernel to the model). A stale
// transaction the command finds is rolled back first, and that is its
// error.
func (w *runner) doBadCand(s Step) *Failure {
	main := w.rig.l.read()["main"].Data
	if main != "" && !strings.HasSuffix(main, "\n") {
		main += "\n"
	}
	p := filepath.Join(w.rig.base, fmt.Sprintf("invalid-%d.yaml", w.i))
	if err := os.WriteFile(p, []byte(main+badKey), 0o600); err != nil {
		return w.fail("setup", "%v", err)
	}
	res, err := w.rig.run(0, "", "apply", "--confirm-within", "1s", "--candidate", p)
	if err != nil {
		return w.fail("begin-invalid", "%v", err)
	}
	before := w.m.txn
	if f := w.observe(s, &res); f != nil {
		return f
	}
	if res.code == 0 {
		return w.fail("begin-invalid", "an invalid --candidate went through: %s", res)
	}
	at := fmt.Sprintf("%s:%d:1:", p, strings.Count(main, "\n")+1)
	if (before == nil || w.m.txn != nil) && !strings.Contains(res.stderr, at) {
		return w.fail("begin-invalid", "the error does not name the candidate at %s: %s", at, res)
	}
	return nil
}

// Whether a begin's --candidate is refused.
const (
	refuseNo = iota
	refuseCertain
	// refuseMaybe: the daemon may record the edited files as confirmed
	// before the begin reads them.
	refuseMaybe
)

// candidateRefused says whether begin step s is to be refused because the
// main file it replaces is not the last confirmed configuration's: a
// rollback could not put back both (docs/safe-apply.md).
func (w *runner) candidateRefused(s Step) (int, error) {
	if !s.Cand || w.m.txn != nil {
		return refuseNo, nil
	}
	f, err := w.readTxn()
	if err != nil {
		return refuseNo, err
	}
	if f.Pending != nil || f.Confirmed == nil || len(f.Confirmed.Files) == 0 {
		return refuseNo, nil
	}
	cf, cur := f.Confirmed.Files[0], readState(w.rig.l.main)
	if cf.Link == cur.Link && string(cf.Data) == cur.Data {
		return refuseNo, nil
	}
	if w.rig.daemon != nil {
		return refuseMaybe, nil
	}
	return refuseCertain, nil
}

func (w *runner) doEnd(s Step) *Failure {
	var args []string
	t := w.m.txn
	switch s.ID {
	case "pending":
		if t != nil {
			args = append(args, t.id)
		}
	case "other":
		args = append(args, "20261129T000000Z-000000")
	}
	res, err := w.rig.run(s.Kill, s.KillWhat, s.Op, args...)
	if err != nil {
		return w.fail(s.Op, "%v", err)
	}
	if f := w.killed(res); f != nil {
		return f
	}
	if f := w.observe(s, &res); f != nil {
		return f
	}
	if res.killed {
		if s.Op == opRollback && w.m.txn != nil {
			// Half done: some files written back, the kernel anywhere.
			w.m.alts, w.m.kernel = nil, nil
		}
		return nil
	}
	ended := t != nil && w.m.txn == nil
	switch {
	case t == nil || s.ID == "other" && !ended:
		if res.code == 0 {
			return w.fail(s.Op, "exit 0 with nothing to %s: %s", s.Op, res)
		}
	case !ended:
		return w.fail(s.Op, "transaction %s is still pending: %s", t.id, res)
	case w.m.ended[t.id] && s.ID != "other" && res.code != 0 && !strings.Contains(res.stdout+res.stderr, "rolled back") && !strings.Contains(res.stdout+res.stderr, "rolled-back") && s.Op == opConfirm:
		return w.fail(s.Op, "%s", res)
	}
	return nil
}

// daemonHeldAlone follows a daemon stopped in the window of a transaction
// it held alone (--rollback-timer daemon arranges no timer of the command's
// own, docs/safe-apply.md): nothing holds the deadline until a command or
// the daemon's start rolls it back.
func (w *runner) daemonHeldAlone() *Failure {
	t := w.m.txn
	if t == nil {
		return nil
	}
	f, err := w.readTxn()
	if err != nil {
		return w.fail("state", "%v", err)
	}
	if p := f.Pending; p != nil && p.ID == t.id && strings.HasPrefix(p.Timer, "daemon:") && p.Fallback == "" {
		t.holderLost = true
	}
	return nil
}

// daemonRecords follows a daemon that starts: with no transaction
// pending (or one it rolls back first, as from another boot), its
// converged pass records the files as confirmed.
func (w *runner) daemonRecords() {
	if w.m.txn == nil || w.m.txn.holderLost {
		w.m.confirmed = append(w.m.confirmed, w.m.alts...)
	}
}

// doDeadline waits for the pending transaction's deadline and the bound,
// and requires it ended by then when something holds it.
func (w *runner) doDeadline() *Failure {
	t := w.m.txn
	if t == nil {
		time.Sleep(200 * time.Millisecond)
		return w.observe(Step{Op: opDeadline}, nil)
	}
	// A daemon paused past the deadline rolls back once continued.
	limit := t.deadline.Add(DeadlineBound)
	if after := w.rig.resumedAt.Add(DeadlineBound); after.After(limit) {
		limit = after
	}
	time.Sleep(time.Until(t.deadline))
	for {
		f, err := w.readTxn()
		if err != nil {
			return w.fail("state", "%v", err)
		}
		if f.Pending == nil || f.Pending.ID != t.id {
			if f.Last != nil && f.Last.ID == t.id {
				w.st.latencies = append(w.st.latencies, f.Last.Ended.Sub(t.deadline))
			}
			break
		}
		if !f.Pending.Deadline.Equal(t.deadline) {
			return w.fail("state", "the deadline of %s moved from %s to %s with no command run", t.id, t.deadline, f.Pending.Deadline)
		}
		if time.Now().After(limit) {
			if t.holderLost {
				break
			}
			return w.fail("deadline", "transaction %s is still pending %s after its deadline (held by %s; daemon %v; timers %v)\ndaemon log:\n%s",
				t.id, time.Since(t.deadline).Round(time.Millisecond), f.Pending.Timer, w.rig.daemon != nil, w.rig.timerProcs(), w.rig.daemonLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return w.observe(Step{Op: opDeadline}, nil)
}

func (w *runner) doHand(s Step) *Failure {
	h := handEdits[s.Hand%len(handEdits)]
	w.handN++
	if err := walk.Shell(w.rig.ns, h.cmd(w.handN)); err != nil {
		return w.fail("setup", "%v", err)
	}
	if !h.owned {
		k, err := walk.ReadKernel(w.rig.ns, true)
		if err != nil {
			return w.fail("oracle", "%v", err)
		}
		w.foreign, _ = walk.DumpForeign(k, 245, foreignTables, nil)
	} else if !w.daemonActive() {
		w.m.kernel = nil
	}
	if h.owned {
		// A rollback that began before the hand edit ended (its record
		// says so before it reads the kernel) may have planned before
		// it.
		raced, f := w.rollbackUnder()
		if f != nil {
			return f
		}
		if raced {
			w.raced = "kernel"
			defer func() { w.raced = "" }()
		}
	}
	return w.observe(s, nil)
}

// doReboot is a reboot with the namespace and the state directory kept:
// a new boot id, every timer process gone, the daemon started again if it
// ran.
func (w *runner) doReboot(s Step) *Failure {
	daemon := w.rig.daemon != nil
	if err := w.rig.stopDaemon(syscall.SIGKILL); err != nil {
		return w.fail("daemon", "%v", err)
	}
	for pid := range w.rig.timerProcs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := w.rig.reboot(); err != nil {
		return w.fail("setup", "%v", err)
	}
	if w.m.txn != nil && !daemon {
		w.m.txn.holderLost = true
	}
	if daemon {
		if err := w.rig.startDaemon(); err != nil {
			return w.fail("daemon", "%v", err)
		}
		w.daemonRecords()
	}
	return w.observe(s, nil)
}

// observe reads transaction.json and follows what happened to the
// transactions: one begun (only by a begin), extended, confirmed or rolled
// back (by anyone: the daemon and the timers act on their own).
func (w *runner) observe(s Step, res *result) *Failure {
	f, err := w.readTxn()
	if err != nil {
		return w.fail("state", "%v", err)
	}
	w.st.checks++
	out := ""
	if res != nil {
		out = "\ncommand: " + res.String()
	}
	if t := w.m.txn; t != nil {
		if f.Pending != nil && f.Pending.ID == t.id {
			if f.Pending.Extended != t.extended {
				if s.Op != opBegin {
					return w.fail("state", "transaction %s extended (%d → %d) by %s%s", t.id, t.extended, f.Pending.Extended, s.Op, out)
				}
				t.applied = append(t.applied, w.attempt)
				t.extended = f.Pending.Extended
				t.deadline = f.Pending.Deadline
				// The apply supersedes what the daemon applied
				// before it.
				t.inForce, t.unsure = nil, false
			}
			return w.checkPin(f, out)
		}
		// It ended.
		if f.Last == nil || f.Last.ID != t.id {
			return w.fail("state", "transaction %s is gone without an ending (last: %v)%s", t.id, f.Last, out)
		}
		w.m.txn = nil
		w.m.ended[t.id] = true
		switch f.Last.State {
		case safeapply.Confirmed:
			if s.Op != opConfirm {
				return w.fail("state", "transaction %s confirmed by %s%s", t.id, s.Op, out)
			}
			w.heldConfirm = w.heldConfirm || w.rig.paused
			if fl := w.onConfirmed(t, out); fl != nil {
				return fl
			}
		case safeapply.RolledBack:
			if fl := w.onRolledBack(s, t, f, out); fl != nil {
				return fl
			}
			if w.attemptOf != nil {
				// A begin that found the files rolled back applies
				// those.
				w.attempt = w.attemptOf()
			}
		}
	}
	if f.Pending != nil {
		if s.Op != opBegin {
			return w.fail("state", "transaction %s begun by %s%s", f.Pending.ID, s.Op, out)
		}
		if w.attempt == nil {
			// Begun on files the walk does not know (after a kill).
			w.m.alts = nil
		}
		restore := w.restorePoint(s, f.Pending.Restore)
		t := &txnModel{id: f.Pending.ID, restore: restore, applied: []*cfg{w.attempt}, extended: f.Pending.Extended, deadline: f.Pending.Deadline}
		if f.Pending.Extended != 0 {
			return w.fail("state", "a new transaction %s counts %d extensions%s", t.id, f.Pending.Extended, out)
		}
		if restore == nil {
			return w.fail("state", "transaction %s begun with no restore point the walk knows%s", t.id, out)
		}
		if w.heldConfirm && w.rig.paused {
			w.st.held++
		}
		w.m.txn = t
	}
	return w.checkPin(f, out)
}

// restorePoint is the restore point a new transaction takes: the last
// confirmed configuration (one of those the walk allows: the daemon records
// them when it gets to it), or the files as they are with --candidate when
// none was confirmed yet. got is what the transaction recorded.
func (w *runner) restorePoint(s Step, got *safeapply.Snapshot) *cfg {
	for _, c := range w.m.confirmed {
		if c != nil && got != nil && w.snapshotIs(got, c) {
			return c
		}
	}
	if slices.Contains(w.m.confirmed, nil) && s.Cand {
		if c := w.diskCfg(); c != nil && got != nil && w.snapshotIs(got, c) {
			return c
		}
	}
	return nil
}

// checkPin follows the pin and checks the confirmed configuration against
// what the walk allows.
func (w *runner) checkPin(f *safeapply.File, out string) *Failure {
	// The confirmed configuration: one of those allowed.
	found := -1
	for i, c := range w.m.confirmed {
		if c == nil && f.Confirmed == nil || c != nil && f.Confirmed != nil && w.snapshotIs(f.Confirmed, c) {
			found = i
			break
		}
	}
	if found < 0 {
		var names []string
		for _, c := range w.m.confirmed {
			names = append(names, c.String())
		}
		got := "none"
		if f.Confirmed != nil {
			got = fmt.Sprintf("%d files by %s at %s (main %q)", len(f.Confirmed.Files), f.Confirmed.By, f.Confirmed.At, abbrev(string(f.Confirmed.Files[0].Data)))
		}
		return w.fail("confirmed", "transaction.json's confirmed configuration is %s; the walk allows %s%s", got, strings.Join(names, ", "), out)
	}
	if w.rig.daemon == nil {
		// Without a daemon nothing records one behind the walk's back.
		w.m.confirmed = []*cfg{w.m.confirmed[found]}
	}
	if f.Rejected == nil {
		w.m.pinned = nil
	}
	return nil
}

// snapshotIs says whether a recorded snapshot holds the files of c: the
// same content at the same paths.
func (w *runner) snapshotIs(s *safeapply.Snapshot, c *cfg) bool {
	got := map[string]string{}
	for _, f := range s.Files {
		got[filepath.Clean(f.Path)] = string(f.Data)
	}
	want := map[string]string{}
	for n, st := range c.d {
		if !st.Missing {
			want[w.rig.l.path(n)] = st.Data
		}
	}
	return maps.Equal(got, want)
}

// daemonRecordsEdit waits for the daemon to record the files it applied
// in the window of t, once t was confirmed: the next transaction's restore
// point holds what ran when t was confirmed.
func (w *runner) daemonRecordsEdit(t *txnModel, out string) *Failure {
	if len(w.m.alts) == 0 {
		return nil
	}
	for end := time.Now().Add(convergeBound); ; time.Sleep(50 * time.Millisecond) {
		f, err := w.readTxn()
		if err != nil {
			return w.fail("state", "%v", err)
		}
		for _, c := range w.m.alts {
			if c != nil && f.Confirmed != nil && w.snapshotIs(f.Confirmed, c) {
				w.m.confirmed = []*cfg{c}
				return nil
			}
		}
		if time.Now().After(end) {
			return w.fail("confirm", "%s after the confirm of %s, the daemon has not recorded the files it applied in the window as confirmed%s", convergeBound, t.id, out)
		}
	}
}

func (w *runner) onConfirmed(t *txnModel, out string) *Failure {
	if t.extended >= len(t.applied) || t.applied[t.extended] == nil {
		w.m.alts, w.m.kernel = nil, nil
		return nil
	}
	a := t.applied[t.extended]
	w.m.confirmed = []*cfg{a}
	w.m.pinned = nil
	if t.edited && w.rig.daemon != nil {
		// The confirm records what ran: the files edited in the window
		// that the daemon was seen to apply (walk finding 107: it
		// recorded the last apply's, and the daemon the edit only on
		// its next pass, which a transaction begun before it never
		// saw: that one's rollback took the edit out), else the apply's.
		ran := a
		if t.inForce != nil {
			ran = t.inForce
			w.st.inForce++
		}
		w.m.confirmed = []*cfg{ran}
		if t.unsure {
			w.m.confirmed = append(w.m.confirmed, w.m.alts...)
		}
		if w.rig.paused || len(w.m.alts) == 1 && sameDisk(w.m.alts[0].d, ran.d) {
			// Nothing records other files before the daemon's next
			// pass.
			return nil
		}
		// Files edited since: the daemon applies them, and records them
		// as confirmed on a pass after the confirm (walk finding 125);
		// check() follows the kernel.
		w.m.confirmed = append(w.m.confirmed, w.m.alts...)
		return w.daemonRecordsEdit(t, out)
	}
	if !t.edited {
		if fl := w.checkFiles("after the confirm of "+t.id+", the files are not the candidate's", []*cfg{a}, out); fl != nil {
			return fl
		}
		w.m.alts = []*cfg{a}
	}
	if t.edited && w.m.kernel != nil {
		// A daemon applied the files edited in the window before it
		// stopped: the kernel is what check() saw it converge to.
		return w.checkKernel("after the confirm of "+t.id+", the kernel is not what the daemon applied", w.m.kernel, out)
	}
	if w.m.kernel != nil || w.rig.daemon != nil {
		// Unless edited by hand since: the kernel is the candidate.
		if fl := w.checkKernel("after the confirm of "+t.id+", the kernel is not the candidate", []*Version{a.v}, out); fl != nil {
			return fl
		}
		w.m.kernel = []*Version{a.v}
	}
	return nil
}

func (w *runner) onRolledBack(s Step, t *txnModel, f *safeapply.File, out string) *Failure {
	r := t.restore
	pinned := f.Rejected != nil && f.Rejected.ID == t.id
	detail := f.Last.Detail
	if pinned && !w.rig.mode.Service {
		return w.fail("rollback", "root's rollback of %s could not write the files back: %s%s", t.id, detail, out)
	}
	if !pinned && strings.Contains(detail, "rollback incomplete") {
		return w.fail("rollback", "the rollback of %s is incomplete: %s%s", t.id, detail, out)
	}
	// A begin that found the transaction rolled back under it (at the
	// deadline) and began another: the files hold what it applied over
	// the restore point, and the kernel too (the begin's checks follow).
	again := s.Op == opBegin && f.Pending != nil && f.Pending.ID != t.id && w.attemptOf != nil && !pinned
	if pinned {
		w.m.pinned, w.m.pinnedAt = r, w.m.alts
	} else {
		want := r
		if again {
			w.m.alts = []*cfg{r}
			if a := w.attemptOf(); a != nil {
				want = a
			}
		}
		if w.raced != "files" {
			if fl := w.checkFiles("after the rollback of "+t.id+" ("+string(f.Last.Cause)+"), the files are not the restore point's", []*cfg{want}, out); fl != nil {
				return fl
			}
		}
		w.m.alts = []*cfg{want}
	}
	if again {
		w.m.kernel = nil
		return nil
	}
	if w.raced == "kernel" || w.raced == "files" && w.rig.daemon != nil {
		// The hand edit may come after the rollback's plan; the daemon
		// applies the files the race left, and the edit made again is
		// what it converges to.
		w.m.kernel = nil
		return nil
	}
	if fl := w.checkKernel("after the rollback of "+t.id+" ("+string(f.Last.Cause)+"), the kernel is not the restore point", []*Version{r.v}, out); fl != nil {
		return fl
	}
	w.m.kernel = []*Version{r.v}
	return nil
}

// check runs the checks that hold after every step. A transaction's
// deadline may pass while they run (windows are a second or two, and the
// oracle's reads take that long on a loaded machine): when the kernel or
// the files are not what the pending transaction made, or no timer holds
// it any more (the timer rolled it back and exited), and its deadline
// passed, what ended it is followed (observe, with the checks of a
// rollback) and the checks run again.
//
// The record is read at least once however long the failed check took: a
// check of the kernel waits up to convergeBound for a daemon, longer than
// DeadlineBound, and a rollback at the deadline that overtook the daemon's
// apply of an edit made in the window is what that wait saw.
func (w *runner) check(s Step) *Failure { return checkFollowing(w, s) }

// checker is what check needs of a runner: the checks, the transaction
// the walk expects pending, and a reading of the record.
type checker interface {
	checkOnce(s Step) *Failure
	pendingTxn() *txnModel
	observeEnd() *Failure
}

func (w *runner) pendingTxn() *txnModel { return w.m.txn }

func (w *runner) observeEnd() *Failure { return w.observe(Step{Op: opDeadline}, nil) }

func checkFollowing(c checker, s Step) *Failure {
	f := c.checkOnce(s)
	if t := c.pendingTxn(); f != nil && (f.Check == "kernel" || f.Check == "files" || f.Check == "timer") && t != nil && time.Now().After(t.deadline) {
		// A rollback writes the files and the kernel before it records
		// its end: wait for the record (within the bound).
		for c.pendingTxn() == t {
			if f := c.observeEnd(); f != nil {
				return f
			}
			if c.pendingTxn() != t || time.Now().After(t.deadline.Add(DeadlineBound)) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if c.pendingTxn() != t {
			return c.checkOnce(s)
		}
	}
	return f
}

func (w *runner) checkOnce(s Step) *Failure {
	// Timers: each waits for the pending transaction; one whose
	// transaction ended is gone within timerBound.
	pending := ""
	if w.m.txn != nil {
		pending = w.m.txn.id
	}
	deadline := time.Now().Add(timerBound)
	for {
		stray := map[int]string{}
		for pid, id := range w.rig.timerProcs() {
			if id != pending {
				stray[pid] = id
			}
		}
		if len(stray) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return w.fail("timer", "timer processes %v outlive their transactions (pending: %q)", stray, pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.st.checks++
	if t := w.m.txn; t != nil && w.rig.daemon == nil && !t.holderLost {
		alive := false
		for _, id := range w.rig.timerProcs() {
			alive = alive || id == t.id
		}
		if !alive {
			return w.fail("timer", "nothing holds the deadline of pending transaction %s: no daemon, no timer process", t.id)
		}
	}
	if w.daemonActive() && pending == "" {
		deadline := time.Now().Add(timerBound)
		for strings.Contains(w.rig.daemonStatus(), "pending") {
			if time.Now().After(deadline) {
				return w.fail("timer", "the daemon still holds a transaction: STATUS=%s", w.rig.daemonStatus())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The files.
	if len(w.m.alts) > 0 {
		if f := w.checkFiles("the files", w.m.alts, ""); f != nil {
			return f
		}
	}
	// The kernel: what the daemon enforces, or what the last command made.
	want := w.m.kernel
	if w.daemonActive() {
		want = nil
		switch {
		case w.m.pinned != nil:
			want = []*Version{w.m.pinned.v}
		case len(w.m.alts) == 1:
			want = []*Version{w.m.alts[0].v}
		}
	}
	if len(want) > 0 {
		if f := w.checkKernel("the kernel", want, ""); f != nil {
			return f
		}
		if w.daemonActive() {
			// Converged: what a daemon stopped now leaves.
			w.m.kernel = want
			if f := w.followInForce(); f != nil {
				return f
			}
		}
	} else if f := w.checkForeign(""); f != nil {
		return f
	}
	if !w.anyKill {
		if l := w.rig.l.leftovers(); len(l) > 0 {
			return w.fail("files", "temporary files left behind: %v", l)
		}
	}
	return nil
}

// followInForce follows the files edited in the pending transaction's
// window that the daemon applied: once the kernel holds them (checked
// before) and no longer what was in force before, the daemon's pass that
// applied them has recorded them in the transaction.
func (w *runner) followInForce() *Failure {
	t := w.m.txn
	if t == nil || !t.edited || len(w.m.alts) != 1 || w.m.pinned != nil || t.inForce == w.m.alts[0] {
		return nil
	}
	c, prev := w.m.alts[0], t.inForce
	if prev == nil && t.extended < len(t.applied) {
		prev = t.applied[t.extended]
	}
	if prev == nil {
		t.unsure = true
		return nil
	}
	if sameDisk(prev.d, c.d) {
		return nil
	}
	k, err := walk.ReadKernel(w.rig.ns, true)
	if err != nil {
		return w.fail("oracle", "%v", err)
	}
	if len(w.compare(k, prev.v)) == 0 {
		t.unsure = true
		return nil
	}
	t.inForce, t.unsure = c, false
	return nil
}

// checkFiles requires the files to be in one of the states alts.
func (w *runner) checkFiles(what string, alts []*cfg, out string) *Failure {
	w.st.checks++
	d := w.rig.l.read()
	var diffs []string
	for _, c := range alts {
		var cd []string
		for _, n := range sortedKeys(c.d) {
			if got, want := d[n], c.d[n]; !sameFile(got, want) {
				cd = append(cd, fmt.Sprintf("%s: %s", n, fileDiff(got, want)))
			}
		}
		if len(cd) == 0 {
			diffs = nil
			break
		}
		diffs = append(diffs, fmt.Sprintf("not %s:\n      %s", c, strings.Join(cd, "\n      ")))
	}
	if stray := w.rig.l.strayFragments(); len(stray) > 0 {
		diffs = append(diffs, fmt.Sprintf("fragments the walk never wrote: %v", stray))
	}
	if len(diffs) > 0 {
		return w.fail("files", "%s:\n    %s%s", what, strings.Join(diffs, "\n    "), out)
	}
	return nil
}

// checkKernel requires the kernel to hold one of the versions (waiting
// for the daemon when it runs) and the foreign objects as they were.
func (w *runner) checkKernel(what string, want []*Version, out string) *Failure {
	w.st.checks++
	deadline := time.Now()
	if w.daemonActive() {
		deadline = deadline.Add(convergeBound)
	}
	for {
		k, err := walk.ReadKernel(w.rig.ns, true)
		if err != nil {
			return w.fail("oracle", "%v", err)
		}
		var diffs []string
		for _, v := range want {
			d := w.compare(k, v)
			if len(d) == 0 {
				diffs = nil
				break
			}
			diffs = append(diffs, fmt.Sprintf("not v%d:\n      %s", v.N, strings.Join(d, "\n      ")))
		}
		if len(diffs) == 0 {
			return w.checkForeignIn(k, out)
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s:\n    %s%s", what, strings.Join(diffs, "\n    "), out)
			if w.rig.daemon != nil {
				msg += "\ndaemon log:\n" + w.rig.daemonLog()
			}
			return w.fail("kernel", "%s", msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// compare lists the differences between the kernel and version v.
func (w *runner) compare(k *walk.Kernel, v *Version) []string {
	// The walk's own routes, apart from test/walk's.
	kk := *k
	kk.Routes = kk.Routes[:0:0]
	var own []string
	for _, r := range k.Routes {
		if ownTables[r.Table] {
			if r.Protocol == "245" {
				own = append(own, fmt.Sprintf("%s %s %s", r.Table, r.Dst, r.Type))
			}
			continue
		}
		kk.Routes = append(kk.Routes, r)
	}
	sort.Strings(own)
	diffs := walk.Compare(w.rig.ns, v.C, &kk, nil)
	nd, err := walk.CompareNft(v.C, &kk, nil, map[string]bool{walk.AdoptTable: true, sideTable: true})
	if err != nil {
		return []string{err.Error()}
	}
	diffs = append(diffs, nd...)
	sd, err := walk.CompareSysctls(w.rig.ns, v.C, w.sysctl0, nil, nil)
	if err != nil {
		return []string{err.Error()}
	}
	diffs = append(diffs, sd...)
	if !slices.Equal(own, v.Routes) {
		diffs = append(diffs, fmt.Sprintf("the walk's routes %v, want %v", own, v.Routes))
	}
	els, ok := w.setElements(k)
	switch {
	case v.Elements == nil && ok:
		diffs = append(diffs, "the set inet nrwtx s is there, and no file declares it")
	case v.Elements != nil && !ok:
		diffs = append(diffs, "the set inet nrwtx s is missing")
	case v.Elements != nil && !slices.Equal(els, v.Elements):
		diffs = append(diffs, fmt.Sprintf("the set inet nrwtx s holds %v, want %v", els, v.Elements))
	}
	return diffs
}

// setElements reads the walk's set from nft's listing.
func (w *runner) setElements(k *walk.Kernel) ([]string, bool) {
	lines := strings.Split(k.NftText, "\n")
	in, found := false, false
	var els []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(lines[i], "table ") {
			in = strings.HasPrefix(lines[i], "table inet nrwtx ")
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(l, "set s ") {
			found = true
			continue
		}
		if found && strings.HasPrefix(l, "elements = {") {
			text := strings.TrimPrefix(l, "elements = {")
			for !strings.Contains(text, "}") && i+1 < len(lines) {
				i++
				text += " " + strings.TrimSpace(lines[i])
			}
			text = strings.TrimSuffix(strings.TrimSpace(text), "}")
			for _, e := range strings.Split(text, ",") {
				if e = strings.TrimSpace(e); e != "" {
					els = append(els, e)
				}
			}
			break
		}
		if found && l == "}" {
			break
		}
	}
	if found && els == nil {
		els = []string{}
	}
	sort.Strings(els)
	return els, found
}

func (w *runner) checkForeign(out string) *Failure {
	k, err := walk.ReadKernel(w.rig.ns, true)
	if err != nil {
		return w.fail("oracle", "%v", err)
	}
	return w.checkForeignIn(k, out)
}

func (w *runner) checkForeignIn(k *walk.Kernel, out string) *Failure {
	w.st.checks++
	got, lo := walk.DumpForeign(k, 245, foreignTables, nil)
	if got != w.foreign {
		return w.fail("foreign", "foreign objects changed:\n%s%s", walk.LineDiff(w.foreign, got), out)
	}
	for _, a := range w.lo {
		if !slices.Contains(lo, a) {
			return w.fail("foreign", "foreign address %s on lo is gone%s", a, out)
		}
	}
	return nil
}

func sameDisk(a, b disk) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fileDiff says how a file differs from what was expected.
func fileDiff(got, want fileState) string {
	if got.Missing || want.Missing || got.NotRegular || want.NotRegular {
		return fmt.Sprintf("%s, want %s", got, want)
	}
	var d []string
	if got.Link != want.Link {
		d = append(d, fmt.Sprintf("link %q, want %q", got.Link, want.Link))
	}
	if got.Mode != want.Mode || got.UID != want.UID || got.GID != want.GID {
		d = append(d, fmt.Sprintf("%04o %d:%d, want %04o %d:%d", got.Mode, got.UID, got.GID, want.Mode, want.UID, want.GID))
	}
	if got.Data != want.Data {
		d = append(d, "content:\n"+walk.LineDiff(want.Data, got.Data))
	}
	return strings.Join(d, "; ")
}
