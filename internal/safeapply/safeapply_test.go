package safeapply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// The transaction logic on the in-memory kernel: what is recorded, what a
// rollback writes back and plans, and who refuses what.

const goodConf = `version: 1
links:
  br0:
    kind: bridge
    addresses: [10.0.0.1/24]
routes:
  - {to: 10.98.0.0/24, via: 10.0.0.2}
`

// badConf breaks the management path: the route goes, a blackhole comes.
const badConf = `version: 1
links:
  br0:
    kind: bridge
    addresses: [10.0.0.1/24]
routes:
  - {to: 10.98.0.0/24, type: blackhole}
`

type fixture struct {
	t      *testing.T
	k      *kerneltest.Kernel
	h      *Host
	main   string
	now    time.Time
	bootID string
	boot   string // the boot id file
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	sd, err := statedir.Open(filepath.Join(tmp, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sd.Close() })
	l, err := ledger.OpenIn(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := kerneltest.New()
	// Someone else's route in the same table, and their link: never
	// touched by an apply or a rollback.
	k.PutLink(&model.Link{Name: "eth0", Kind: "device", MTU: 1500, Up: true})
	k.PutRoute(model.Route{Table: 254, Dst: netip.MustParsePrefix("192.0.2.0/24"), Dev: "eth0", Protocol: 4})
	f := &fixture{t: t, k: k, main: filepath.Join(tmp, "etc", "nr.yaml"), now: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC),
		bootID: "boot-1", boot: filepath.Join(tmp, "boot_id")}
	f.setBoot("boot-1")
	if err := os.MkdirAll(filepath.Dir(f.main), 0o755); err != nil {
		t.Fatal(err)
	}
	f.h = &Host{Dir: sd, Engine: &engine.Engine{Kernel: k, Ledger: l, State: sd}, AllowInsecureConfig: true,
		Getenv: func(k string) string {
			if k == BootIDFileEnv {
				return f.boot
			}
			return ""
		},
		Now: func() time.Time { return f.now },
	}
	return f
}

func (f *fixture) setBoot(id string) {
	if err := os.WriteFile(f.boot, []byte(id+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) write(content string) {
	if err := os.WriteFile(f.main, []byte(content), 0o640); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) file() string {
	data, err := os.ReadFile(f.main)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

// applyPlain is a plain apply: converge, verify, record as confirmed.
func (f *fixture) applyPlain() {
	f.t.Helper()
	snap, err := ReadSnapshot(f.main, "", f.now, "apply")
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.h.RefusePending(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	// As apply does: the parse records the side files in the snapshot.
	cfg, err := snap.Parse(f.h.AllowInsecureConfig)
	if err != nil {
		f.t.Fatal(err)
	}
	o, err := Converge(context.Background(), f.h.Engine, cfg.State)
	if err != nil || o.Err != nil || o.Verify != nil {
		f.t.Fatalf("apply: %v %v %v", err, o.Err, o.Verify)
	}
	if err := f.h.RecordConfirmed(snap); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) routes() string {
	var out []string
	for _, line := range strings.Split(f.k.Dump(), "\n") {
		if strings.HasPrefix(line, "route ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func (f *fixture) load() *File {
	f.t.Helper()
	file, err := Load(f.h.Dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return file
}

const (
	wantGood = "route 10.98.0.0/24 table main via 10.0.0.2 proto 245\nroute 192.0.2.0/24 table main dev eth0 proto 4"
	wantBad  = "route 10.98.0.0/24 table main blackhole proto 245\nroute 192.0.2.0/24 table main dev eth0 proto 4"
)

func TestBeginRecordsBeforeApplyAndRollsBack(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	good := f.routes()
	ctx := context.Background()

	// The timer is arranged before the transaction is recorded, the
	// record names it, and the timer is let go once the record is saved:
	// all before the first kernel write. What each sees is what a crash
	// would leave.
	var atTimer, atRelease string
	f.h.Timer = func(tx *Txn) (*Arranged, error) {
		if file := f.load(); file.Pending != nil {
			t.Errorf("timer arranged after the transaction was recorded")
		}
		atTimer = f.routes()
		return &Arranged{Holder: "process:0", Release: func() {
			if file := f.load(); file.Pending == nil || file.Pending.ID != tx.ID || file.Pending.Timer != "process:0" {
				t.Errorf("timer let go before the transaction naming it was recorded: %+v", file.Pending)
			}
			atRelease = f.routes()
		}}, nil
	}
	res, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if atTimer != good || atRelease != good {
		t.Errorf("the kernel changed before the timer was arranged:\n%s\nor let go:\n%s", atTimer, atRelease)
	}
	if got := f.routes(); got != wantBad {
		t.Errorf("after apply:\n%s", got)
	}
	if f.file() != badConf {
		t.Errorf("candidate not installed:\n%s", f.file())
	}
	tx := f.load().Pending
	if tx == nil || tx.ID != res.Txn.ID || tx.BootID != "boot-1" || !tx.Deadline.Equal(f.now.Add(3*time.Second)) ||
		string(tx.Restore.Files[0].Data) != goodConf || string(tx.Applied.Files[0].Data) != badConf || tx.Timer != "process:0" ||
		!strings.Contains(tx.Before, "10.98.0.0/24") || len(tx.Plans) != 1 {
		t.Fatalf("recorded transaction: %+v", tx)
	}
	fi, err := os.Stat(filepath.Join(f.h.Dir.Path(), FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("transaction file mode: %v %v", fi.Mode(), err)
	}

	// Not due yet.
	if rolled, next, err := f.h.Due(ctx); rolled != nil || err != nil || !next.Equal(tx.Deadline) {
		t.Fatalf("Due before the deadline: %v %v %v", rolled, next, err)
	}
	f.now = f.now.Add(3 * time.Second)
	rolled, next, err := f.h.Due(ctx)
	if err != nil || rolled == nil || !next.IsZero() {
		t.Fatalf("Due at the deadline: %v %v %v", rolled, next, err)
	}
	if rolled.Txn.Cause != CauseTimeout || rolled.Err != nil {
		t.Errorf("rollback: %+v", rolled.Txn)
	}
	if got := f.routes(); got != good {
		t.Errorf("after rollback:\n%s\nwant\n%s", got, good)
	}
	if f.file() != goodConf {
		t.Errorf("file not restored:\n%s", f.file())
	}
	if data, err := os.ReadFile(RejectedName(f.main, tx.ID)); err != nil || string(data) != badConf {
		t.Errorf("the rolled-back file is not kept aside: %v", err)
	}
	file := f.load()
	if file.Pending != nil || file.Last == nil || file.Last.State != RolledBack || file.Counts.RolledBack[CauseTimeout] != 1 || file.Last.Restore != nil {
		t.Errorf("after rollback: %+v", file)
	}
}

func TestPlainApplyRefusedWhilePendingAndExtensionKeepsRestorePoint(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	ctx := context.Background()
	first, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.h.RefusePending(ctx)
	if !errors.Is(err, ErrPending) || !strings.Contains(err.Error(), "netreconcile confirm "+first.Txn.ID) || !strings.Contains(err.Error(), "--confirm-within") {
		t.Fatalf("plain apply while pending: %v", err)
	}
	f.now = f.now.Add(30 * time.Second)
	third := strings.Replace(badConf, "10.98.0.0/24", "10.97.0.0/24", 1)
	second, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(third), Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tx := f.load().Pending
	if !second.Extended || tx.ID != first.Txn.ID || tx.Extended != 1 || !tx.Deadline.Equal(f.now.Add(time.Minute)) ||
		string(tx.Restore.Files[0].Data) != goodConf || string(tx.Applied.Files[0].Data) != third || len(tx.Plans) != 2 {
		t.Fatalf("extended transaction: %+v", tx)
	}
	rolled, err := f.h.Rollback(ctx, "", CauseManual, "test")
	if err != nil || rolled.Txn.Cause != CauseManual {
		t.Fatal(err, rolled)
	}
	if f.file() != goodConf || f.routes() != wantGood {
		t.Errorf("after rollback of an extended transaction:\n%s\n%s", f.file(), f.routes())
	}
}

func TestConfirmMakesTheRestorePoint(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	ctx := context.Background()
	res, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.h.Confirm(ctx, "not-this-one"); !errors.Is(err, ErrNoPending) {
		t.Errorf("confirm of another id: %v", err)
	}
	tx, rolled, err := f.h.Confirm(ctx, res.Txn.ID)
	if err != nil || rolled != nil || tx.State != Confirmed {
		t.Fatal(err, rolled, tx)
	}
	file := f.load()
	if file.Pending != nil || string(file.Confirmed.Files[0].Data) != badConf || file.Counts.Confirmed != 1 {
		t.Fatalf("after confirm: %+v", file)
	}
	// The deadline passes: nothing happens.
	f.now = f.now.Add(time.Hour)
	if rolled, _, err := f.h.Due(ctx); rolled != nil || err != nil {
		t.Fatalf("Due after confirm: %v %v", rolled, err)
	}
	if f.routes() != wantBad {
		t.Errorf("confirmed change undone:\n%s", f.routes())
	}
	// The next transaction rolls back to the confirmed change.
	good2 := strings.Replace(goodConf, "10.98.0.0/24", "10.96.0.0/24", 1)
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(good2), Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Rollback(ctx, "", CauseManual, "test"); err != nil {
		t.Fatal(err)
	}
	if f.file() != badConf || f.routes() != wantBad {
		t.Errorf("rollback after a confirmed change:\n%s\n%s", f.file(), f.routes())
	}
	if _, _, err := f.h.Confirm(ctx, ""); !errors.Is(err, ErrNoPending) || !strings.Contains(err.Error(), "rolled-back") {
		t.Errorf("confirm with nothing pending: %v", err)
	}
}

func TestAnotherBootRollsBackFirst(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	ctx := context.Background()
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	f.setBoot("boot-2")
	// A confirm after the reboot is refused: the transaction rolls back.
	_, rolled, err := f.h.Confirm(ctx, "")
	if err == nil || rolled == nil || rolled.Txn.Cause != CauseReboot {
		t.Fatalf("confirm after a reboot: %v %+v", err, rolled)
	}
	if f.file() != goodConf || f.routes() != wantGood {
		t.Errorf("after the reboot's rollback:\n%s\n%s", f.file(), f.routes())
	}
}

func TestFailedOperationRollsBackAtOnce(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	withRule := badConf + "rules:\n  - {priority: 1000, from: 10.0.0.0/24, table: 100}\n"
	f.k.FailNext(kerneltest.CallAddRule, syscall.EPERM)
	res, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte(withRule), Window: time.Hour})
	if err == nil || res == nil || res.Rollback == nil || res.Rollback.Txn.Cause != CauseApply {
		t.Fatalf("failed apply: %v %+v", err, res)
	}
	if f.file() != goodConf || f.routes() != wantGood {
		t.Errorf("after the rollback:\n%s\n%s", f.file(), f.routes())
	}
}

// failingProbe passes before the apply and fails after it.
type failingProbe struct{ calls int }

func (p *failingProbe) String() string { return "test" }
func (p *failingProbe) Check(context.Context) error {
	p.calls++
	if p.calls == 2 {
		return errors.New("unreachable")
	}
	return nil
}

// deadProbe fails from the start: it is not armed.
type deadProbe struct{}

func (deadProbe) String() string              { return "dead" }
func (deadProbe) Check(context.Context) error { return errors.New("down already") }

func TestProbes(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	p := &failingProbe{}
	res, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour, Probes: []Probe{p, deadProbe{}}})
	if err == nil || res.Rollback == nil || res.Rollback.Txn.Cause != CauseProbe {
		t.Fatalf("probe failure: %v %+v", err, res)
	}
	if len(res.Armed) != 1 || res.Armed[0] != "test" || len(res.Skipped) != 1 || res.Skipped[0].Probe != "dead" {
		t.Errorf("armed %v skipped %v", res.Armed, res.Skipped)
	}
	if len(res.After) != 1 || res.After[0].OK || len(res.Again) != 1 || !res.Again[0].OK {
		t.Errorf("after %v again %v", res.After, res.Again)
	}
	if f.file() != goodConf || f.routes() != wantGood {
		t.Errorf("after the probe's rollback:\n%s\n%s", f.file(), f.routes())
	}
}

func TestNoRestorePoint(t *testing.T) {
	f := newFixture(t)
	f.write(badConf)
	_, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Window: time.Hour})
	if !errors.Is(err, errNoRestorePoint) {
		t.Fatalf("first transaction without --candidate: %v", err)
	}
	if f.routes() != "route 192.0.2.0/24 table main dev eth0 proto 4" || f.load().Pending != nil {
		t.Errorf("something changed:\n%s", f.routes())
	}
	// An invalid candidate is refused before anything is written.
	f.write(goodConf)
	if _, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte("version: 1\nlinks: 3\n"), Window: time.Hour}); err == nil {
		t.Fatal("invalid candidate accepted")
	}
	if f.file() != goodConf || f.load().Pending != nil {
		t.Errorf("invalid candidate installed or recorded")
	}
}

func TestRollbackMovesAsideAddedDropIns(t *testing.T) {
	f := newFixture(t)
	dropIn := filepath.Join(filepath.Dir(f.main), "conf.d")
	if err := os.MkdirAll(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	f.write(goodConf)
	snap, err := ReadSnapshot(f.main, dropIn, f.now, "apply")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.RecordConfirmed(snap); err != nil {
		t.Fatal(err)
	}
	added := filepath.Join(dropIn, "50-more.yaml")
	if err := os.WriteFile(added, []byte("version: 1\nroutes:\n  - {to: 10.95.0.0/24, via: 10.0.0.2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, DropIn: dropIn, Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.routes(), "10.95.0.0/24") {
		t.Fatalf("drop-in not applied:\n%s", f.routes())
	}
	rolled, err := f.h.Rollback(ctx, "", CauseManual, "test")
	if err != nil || rolled.Err != nil {
		t.Fatal(err, rolled.Err)
	}
	if _, err := os.Stat(added); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("added drop-in still in place: %v", err)
	}
	if _, err := os.Stat(RejectedName(added, rolled.Txn.ID)); err != nil {
		t.Errorf("added drop-in not kept aside: %v", err)
	}
	if f.routes() != wantGood {
		t.Errorf("after rollback:\n%s", f.routes())
	}
}

// A rollback that cannot write the files back (here: their directory became
// writable by others, which CheckTrusted refuses; in production, the
// service's user cannot write /etc/netreconcile) still rolls the kernel back
// and pins the confirmed configuration while the files hold the rejected one.
func TestRollbackThatCannotWriteTheFilesPins(t *testing.T) {
	f := newFixture(t)
	f.h.AllowInsecureConfig = false
	etc := filepath.Dir(f.main)
	f.write(goodConf)
	f.applyPlain()
	ctx := context.Background()
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(etc, 0o777); err != nil {
		t.Fatal(err)
	}
	rolled, err := f.h.Rollback(ctx, "", CauseManual, "test")
	if err != nil || rolled.Err == nil || !strings.Contains(rolled.Txn.Detail, "files not restored") {
		t.Fatalf("rollback: %v %+v", err, rolled)
	}
	if f.file() != badConf || f.routes() != wantGood {
		t.Fatalf("want the file as it was and the kernel rolled back:\n%s\n%s", f.file(), f.routes())
	}
	pin := &Pin{Dir: f.h.Dir}
	bad, err := ReadSnapshot(f.main, "", f.now, "test")
	if err != nil {
		t.Fatal(err)
	}
	out, by, err := pin.Sources(bad.Sources())
	if err != nil || by != rolled.Txn.ID || len(out) != 1 || string(out[0].Data) != goodConf {
		t.Fatalf("pin of the rejected files: %v %q %v", err, by, out)
	}
	// An edit lifts it.
	f.write(badConf + "# edited\n")
	edited, err := ReadSnapshot(f.main, "", f.now, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, by, err := pin.Sources(edited.Sources()); by != "" || err != nil {
		t.Errorf("an edited file is still pinned: %q %v", by, err)
	}
	if err := os.Chmod(etc, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The pin holds the confirmed configuration only while a rollback's
// rejection can use it: a daemon would otherwise keep a copy of every file
// (5.6 MB for 100k routes) for nothing.
func TestPinHoldsNoConfirmedCopyWithoutARejection(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	ctx := context.Background()
	res, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.h.Confirm(ctx, res.Txn.ID); err != nil {
		t.Fatal(err)
	}
	if f.load().Confirmed == nil {
		t.Fatal("no confirmed configuration recorded")
	}
	pin := &Pin{Dir: f.h.Dir}
	cur, err := ReadSnapshot(f.main, "", f.now, "test")
	if err != nil {
		t.Fatal(err)
	}
	out, by, err := pin.Sources(cur.Sources())
	if err != nil || by != "" || len(out) != 1 || string(out[0].Data) != badConf {
		t.Fatalf("unpinned sources: %v %q %v", err, by, out)
	}
	if pin.confirmed != nil {
		t.Error("the pin keeps the confirmed configuration with no rejection to enforce it for")
	}
}

// A file written back keeps its mode and owner (the packaged service's
// files belong to its user when it may write them).
func TestRollbackKeepsModeAndOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	f := newFixture(t)
	f.write(goodConf)
	if err := os.Chown(f.main, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	f.applyPlain()
	ctx := context.Background()
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	owner := func() (uint32, uint32, os.FileMode) {
		fi, err := os.Stat(f.main)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return st.Uid, st.Gid, fi.Mode().Perm()
	}
	if u, g, m := owner(); u != 65534 || g != 65534 || m != 0o640 {
		t.Errorf("installed candidate: %d:%d %v", u, g, m)
	}
	if _, err := f.h.Rollback(ctx, "", CauseManual, "test"); err != nil {
		t.Fatal(err)
	}
	if u, g, m := owner(); u != 65534 || g != 65534 || m != 0o640 || f.file() != goodConf {
		t.Errorf("restored file: %d:%d %v", u, g, m)
	}
}

// A side file (routes-files, elements-file) is part of the configuration a
// transaction records and a rollback writes back: a commit-confirmed change
// made in the side file alone is rolled back, file and kernel, and a side
// file the change added a name for is left alone.
func TestRollbackRestoresSideFiles(t *testing.T) {
	f := newFixture(t)
	etc := filepath.Dir(f.main)
	routes := filepath.Join(etc, "tables", "up.routes")
	if err := os.MkdirAll(filepath.Dir(routes), 0o755); err != nil {
		t.Fatal(err)
	}
	writeSide := func(p, content string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	const sideConf = "version: 1\nlinks:\n  br0:\n    kind: bridge\n    addresses: [10.0.0.1/24]\nroutes-files: [tables/up.routes]\n"
	const goodRoutes = "# the management path\n10.98.0.0/24 via 10.0.0.2\n"
	f.write(sideConf)
	writeSide(routes, goodRoutes)
	f.applyPlain()
	if f.routes() != wantGood {
		t.Fatalf("applied:\n%s", f.routes())
	}
	confirmed := f.load().Confirmed
	if len(confirmed.Files) != 2 || !confirmed.Files[1].Side || confirmed.Files[1].Path != routes || string(confirmed.Files[1].Data) != goodRoutes {
		t.Fatalf("the confirmed configuration lacks the side file: %+v", confirmed.Files)
	}
	// The change is in the side file only.
	writeSide(routes, "blackhole 10.98.0.0/24\n")
	ctx := context.Background()
	res, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if f.routes() != wantBad {
		t.Fatalf("the side file's change not applied:\n%s", f.routes())
	}
	if tx := f.load().Pending; len(tx.Applied.Files) != 2 || string(tx.Applied.Files[1].Data) != "blackhole 10.98.0.0/24\n" {
		t.Fatalf("applied snapshot: %+v", tx.Applied.Files)
	}
	f.now = f.now.Add(time.Minute)
	rolled, _, err := f.h.Due(ctx)
	if err != nil || rolled == nil || rolled.Err != nil {
		t.Fatalf("rollback at the deadline: %v %+v", err, rolled)
	}
	if data, err := os.ReadFile(routes); err != nil || string(data) != goodRoutes {
		t.Errorf("side file after the rollback: %q %v; want %q", data, err, goodRoutes)
	}
	if fi, err := os.Stat(routes); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("side file mode after the rollback: %v %v", fi.Mode(), err)
	}
	if data, err := os.ReadFile(RejectedName(routes, res.Txn.ID)); err != nil || string(data) != "blackhole 10.98.0.0/24\n" {
		t.Errorf("the rolled-back side file is not kept aside: %q %v", data, err)
	}
	if f.routes() != wantGood || !slices.Contains(rolled.Files, routes) {
		t.Errorf("after the rollback: files %v, kernel\n%s", rolled.Files, f.routes())
	}
	// A candidate that names another side file: the rollback writes the
	// old one back and leaves the new one, which the restored files do
	// not name.
	other := filepath.Join(etc, "other.routes")
	writeSide(other, "blackhole 10.98.0.0/24\n")
	cand := strings.Replace(sideConf, "tables/up.routes", "other.routes", 1)
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(cand), Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	writeSide(routes, "garbage\n")
	if f.routes() != wantBad {
		t.Fatalf("the candidate not applied:\n%s", f.routes())
	}
	if rolled, err := f.h.Rollback(ctx, "", CauseManual, "test"); err != nil || rolled.Err != nil {
		t.Fatalf("rollback: %v %+v", err, rolled)
	}
	if data, _ := os.ReadFile(routes); string(data) != goodRoutes || f.file() != sideConf || f.routes() != wantGood {
		t.Errorf("after the second rollback: side file %q, main file %q, kernel\n%s", data, f.file(), f.routes())
	}
	if data, err := os.ReadFile(other); err != nil || string(data) != "blackhole 10.98.0.0/24\n" {
		t.Errorf("the candidate's side file was touched: %q %v", data, err)
	}
}

// The pin of a rejected configuration covers its side files: while the
// main file and the side file hold what the rollback could not write back,
// the confirmed configuration is enforced; an edit of the side file alone
// lifts it.
func TestPinCoversSideFiles(t *testing.T) {
	f := newFixture(t)
	f.h.AllowInsecureConfig = false
	etc := filepath.Dir(f.main)
	routes := filepath.Join(etc, "up.routes")
	if err := os.WriteFile(routes, []byte("10.98.0.0/24 via 10.0.0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.write("version: 1\nlinks:\n  br0:\n    kind: bridge\n    addresses: [10.0.0.1/24]\nroutes-files: [up.routes]\n")
	f.applyPlain()
	if err := os.WriteFile(routes, []byte("blackhole 10.98.0.0/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(etc, 0o777); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(etc, 0o755)
	rolled, err := f.h.Rollback(ctx, "", CauseManual, "test")
	if err != nil || rolled.Err == nil || f.routes() != wantGood {
		t.Fatalf("rollback: %v %+v\n%s", err, rolled, f.routes())
	}
	if rej := f.load().Rejected; rej == nil || !slices.Equal(rej.Sides, []string{routes}) {
		t.Fatalf("rejected: %+v", rej)
	}
	pin := &Pin{Dir: f.h.Dir}
	yaml, err := ReadSnapshot(f.main, "", f.now, "test")
	if err != nil {
		t.Fatal(err)
	}
	out, by, err := pin.Sources(yaml.Sources())
	if err != nil || by != rolled.Txn.ID || len(out) != 2 || !out[1].Side || string(out[1].Data) != "10.98.0.0/24 via 10.0.0.2\n" {
		t.Fatalf("pin of the rejected files: %v %q %+v", err, by, out)
	}
	if err := os.WriteFile(routes, []byte("blackhole 10.98.0.0/24\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, by, err := pin.Sources(yaml.Sources()); by != "" || err != nil {
		t.Errorf("an edited side file is still pinned: %q %v", by, err)
	}
}

// A configuration linked into a deploy's tree (the main file, a fragment, a
// side file each a symlink): a --candidate keeps the main file's link and
// writes the file it points to; a rollback puts back each link and what it
// pointed to, whether the deploy changed the file under the link or
// pointed the link elsewhere. Transaction walk (test/txwalk) seeds 1, 3 and
// 8: the rollback restored the links alone, leaving the rolled-back content
// behind them for the daemon to apply again, and the candidate replaced the
// main file's link by a file.
func TestTxWalkFindingRollbackThroughLinks(t *testing.T) {
	f := newFixture(t)
	etc := filepath.Dir(f.main)
	deploy := filepath.Join(filepath.Dir(etc), "deploy")
	dropIn := filepath.Join(etc, "conf.d")
	for _, d := range []string{deploy, dropIn} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(p, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		_ = os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	const mainConf = "version: 1\nlinks:\n  br0:\n    kind: bridge\n    addresses: [10.0.0.1/24]\nroutes-files: [up.routes]\n"
	const goodRoutes = "10.98.0.0/24 via 10.0.0.2\n"
	const frag = "version: 1\nroutes:\n  - {to: 10.95.0.0/24, via: 10.0.0.2}\n"
	put(filepath.Join(deploy, "main.yaml"), mainConf, 0o640)
	link("../deploy/main.yaml", f.main)
	put(filepath.Join(deploy, "up.routes.1"), goodRoutes, 0o644)
	link(filepath.Join(deploy, "up.routes.1"), filepath.Join(etc, "up.routes"))
	put(filepath.Join(deploy, "10.yaml"), frag, 0o600)
	link("../../deploy/10.yaml", filepath.Join(dropIn, "10.yaml"))
	snap, err := ReadSnapshot(f.main, dropIn, f.now, "apply")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := snap.Parse(true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if o, err := Converge(ctx, f.h.Engine, cfg.State); err != nil || o.Err != nil || o.Verify != nil {
		t.Fatal(err, o)
	}
	if err := f.h.RecordConfirmed(snap); err != nil {
		t.Fatal(err)
	}
	state := func() map[string]string {
		out := map[string]string{}
		for _, p := range []string{f.main, filepath.Join(etc, "up.routes"), filepath.Join(dropIn, "10.yaml")} {
			to, _ := os.Readlink(p)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(p)
			out[p] = fmt.Sprintf("-> %s %v %q", to, fi.Mode().Perm(), data)
		}
		return out
	}
	before := state()

	// The deploy changes the fragment under its link and points the side
	// file's link at a new file; the candidate comes in for the main file.
	put(filepath.Join(deploy, "10.yaml"), "version: 1\nroutes:\n  - {to: 10.94.0.0/24, via: 10.0.0.2}\n", 0o600)
	put(filepath.Join(deploy, "up.routes.2"), "blackhole 10.98.0.0/24\n", 0o644)
	link(filepath.Join(deploy, "up.routes.2"), filepath.Join(etc, "up.routes"))
	cand := mainConf + "sysctls: {net.ipv4.ip_forward: \"1\"}\n"
	res, err := f.h.Begin(ctx, BeginRequest{Main: f.main, DropIn: dropIn, Candidate: []byte(cand), Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if to, err := os.Readlink(f.main); err != nil || to != "../deploy/main.yaml" {
		t.Fatalf("the candidate replaced the main file's link: %q %v", to, err)
	}
	if data, _ := os.ReadFile(filepath.Join(deploy, "main.yaml")); string(data) != cand {
		t.Fatalf("the candidate is not in the file the main file's link points to: %q", data)
	}
	if fi, _ := os.Stat(f.main); fi.Mode().Perm() != 0o640 {
		t.Errorf("the candidate's mode: %v", fi.Mode())
	}
	rolled, err := f.h.Rollback(ctx, res.Txn.ID, CauseManual, "test")
	if err != nil || rolled.Err != nil {
		t.Fatal(err, rolled.Err)
	}
	if after := state(); !maps.Equal(after, before) {
		t.Errorf("after the rollback:\n%v\nwant the restore point:\n%v", after, before)
	}
	if data, err := os.ReadFile(RejectedName(filepath.Join(dropIn, "10.yaml"), res.Txn.ID)); err != nil || !strings.Contains(string(data), "10.94.0.0/24") {
		t.Errorf("the content rolled back from under the fragment's link is not kept aside: %q %v", data, err)
	}
	if f.routes() != "route 10.95.0.0/24 table main via 10.0.0.2 proto 245\n"+wantGood {
		t.Errorf("the kernel after the rollback:\n%s", f.routes())
	}
}

// A --candidate replaces the main file as it is, and a rollback puts back
// the restore point's: when the main file was edited since the last
// confirmed configuration, the begin is refused and nothing changes.
// Transaction walk seed 7 (service user): root's process wrote back the
// edited file it had replaced, which was not the restore point, and the
// files were left holding a configuration never applied; as root, the
// rollback wrote the confirmed file over the edit, which was lost.
func TestTxWalkFindingCandidateOverAnEditedMainFile(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	edited := goodConf + "# edited, not applied\n"
	f.write(edited)
	before := f.routes()
	_, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "not the one of the last confirmed configuration") {
		t.Fatalf("begin over an edited main file: %v", err)
	}
	if f.file() != edited || f.routes() != before || f.load().Pending != nil {
		t.Errorf("the refused begin changed something: file %q, pending %v, kernel\n%s", f.file(), f.load().Pending, f.routes())
	}
	// Put back as it was confirmed, the candidate goes in.
	f.write(goodConf)
	if _, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// A begin SIGKILLed at any point leaves either no transaction or one whose
// record names what holds its deadline: the timer is arranged before the
// record is saved, and let go (Arranged.Release) once it is. Before, the
// record was saved first and the timer arranged after it: a kill between
// the two left a transaction pending with nothing to roll it back at its
// deadline (the transaction walk's check that something holds every
// pending deadline, after begin with a SIGKILL a few milliseconds in).
func TestTxWalkFindingKilledBetweenRecordAndTimer(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	var seen []*Txn
	f.h.Timer = func(tx *Txn) (*Arranged, error) {
		seen = append(seen, f.load().Pending)
		return &Arranged{Holder: "process:0", Release: func() { seen = append(seen, f.load().Pending) }}, nil
	}
	if _, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, f.load().Pending)
	if len(seen) != 3 {
		t.Fatalf("the timer was not arranged and let go: %d states", len(seen))
	}
	for i, p := range seen {
		if p != nil && p.Timer == "" {
			t.Errorf("state %d a kill could leave: transaction %s pending with nothing holding its deadline", i, p.ID)
		}
	}
	if seen[0] != nil || seen[2] == nil || seen[2].Timer != "process:0" {
		t.Errorf("arranged with %+v recorded, ended with %+v", seen[0], seen[2])
	}
}

// A plain apply reads transaction.json once (RefusePending), and its pin
// and its record of the confirmed configuration use that reading only
// while the file is the one read: a transaction another writer began
// meanwhile is seen, and its restore point is not overwritten.
func TestKeptTransactionFileIsTheFileOnDisk(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	snap, err := ReadSnapshot(f.main, "", f.now, "apply")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.RefusePending(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.h.kept == nil {
		t.Fatal("RefusePending kept nothing")
	}
	// Another writer (apply --confirm-within) begins a transaction.
	other := &Host{Dir: f.h.Dir, Engine: f.h.Engine, AllowInsecureConfig: true, Getenv: f.h.Getenv, Now: f.h.Now}
	f.write(badConf)
	if _, err := other.Begin(context.Background(), BeginRequest{Main: f.main, Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	onDisk, err := Load(f.h.Dir)
	if err != nil || onDisk.Pending == nil {
		t.Fatalf("no pending transaction on disk: %v", err)
	}
	if kept := f.h.keptFile(); kept != nil {
		t.Error("the kept reading outlived a rewrite of the file")
	}
	// Refused while the transaction is pending: the daemon asks again
	// once it ended.
	if err := f.h.RecordConfirmed(snap); !errors.Is(err, ErrPending) {
		t.Fatalf("RecordConfirmed while a transaction is pending: %v, want ErrPending", err)
	}
	after, err := Load(f.h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if after.Pending == nil || after.Pending.ID != onDisk.Pending.ID || after.Confirmed.Hash != onDisk.Confirmed.Hash {
		t.Errorf("RecordConfirmed wrote over the other writer's transaction: pending %v", after.Pending)
	}
}

// killedKernel is the kernel of a process SIGKILLed at its first route
// write: the panic stops the rollback there, as the kill does, and the
// test recovers it.
type killedKernel struct {
	kernel.Interface
}

type killed struct{}

func (killedKernel) WriteRoutes([]kernel.RouteWrite, int) []error { panic(killed{}) }

// rollbackKilled runs a rollback of the pending transaction that is
// killed after it wrote the files back, before it ended the transaction.
func (f *fixture) rollbackKilled() {
	f.t.Helper()
	e := f.h.Engine
	defer func() { f.h.Engine = e }()
	f.h.Engine = &engine.Engine{Kernel: killedKernel{f.k}, Ledger: e.Ledger, State: e.State}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killed); !ok {
				panic(r)
			}
		}
	}()
	_, _ = f.h.Rollback(context.Background(), "", CauseManual, "rolled back by netreconcile rollback")
	f.t.Fatal("the rollback wrote no route")
}

// A rollback killed after it wrote the restore point's files back, before
// it ended the transaction, is finished by the next command: a confirm
// then confirmed the transaction, recording the candidate as confirmed
// over files (and a kernel) half rolled back. A confirm leaves the
// candidate, or nothing is confirmed.
// Transaction walk soak seed 87523430531761 (root/proc, step 30; shrunk to
// 7 steps: edit v0, apply, holder-exit, begin --candidate v10, rollback
// SIGKILLed 37 ms in, apply, confirm).
func TestTxWalkFindingConfirmAfterAnInterruptedRollback(t *testing.T) {
	for _, next := range []string{"confirm", "apply", "begin", "rollback", "due"} {
		t.Run(next, func(t *testing.T) {
			f := newFixture(t)
			f.write(goodConf)
			f.applyPlain()
			good := f.routes()
			ctx := context.Background()
			if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute}); err != nil {
				t.Fatal(err)
			}
			id := f.load().Pending.ID
			f.rollbackKilled()
			if f.file() != goodConf {
				t.Fatalf("the killed rollback did not write the file back:\n%s", f.file())
			}
			if p := f.load().Pending; p == nil || p.RollingBack != CauseManual {
				t.Errorf("after the kill, the record does not say a rollback began: %+v", p)
			}
			var err error
			switch next {
			case "confirm":
				_, _, err = f.h.Confirm(ctx, id)
			case "apply":
				_, err = f.h.RefusePending(ctx)
			case "begin":
				_, err = f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute})
			case "rollback":
				_, err = f.h.Rollback(ctx, id, CauseManual, "rolled back by netreconcile rollback")
			case "due":
				_, _, err = f.h.Due(ctx)
			}
			if (err == nil) != (next == "rollback" || next == "due") {
				t.Errorf("%s after the killed rollback: %v", next, err)
			}
			file := f.load()
			if file.Pending != nil || file.Last == nil || file.Last.ID != id || file.Last.State != RolledBack || file.Last.Cause != CauseManual {
				t.Errorf("%s after the killed rollback left pending %+v, last %+v", next, file.Pending, file.Last)
			}
			if file.Confirmed == nil || string(file.Confirmed.Files[0].Data) != goodConf {
				t.Errorf("%s after the killed rollback: the confirmed configuration is not the restore point", next)
			}
			if f.file() != goodConf || f.routes() != good {
				t.Errorf("%s after the killed rollback: file\n%s\nroutes\n%s", next, f.file(), f.routes())
			}
		})
	}
}

// A file made private after it was confirmed (chmod 0600, a plain apply or
// not) is given back by a rollback as it was when the transaction began:
// the snapshot's hash covers names, links and contents, so a plain apply
// of the same content did not record the new mode, and the rollback wrote
// the old one back, widening what the user had narrowed.
func TestTxWalkFinding120RollbackKeepsAModeNarrowedSinceTheConfirm(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	ctx := context.Background()
	mode := func() os.FileMode {
		fi, err := os.Stat(f.main)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	for _, viaApply := range []bool{false, true} {
		if err := os.Chmod(f.main, 0o600); err != nil {
			t.Fatal(err)
		}
		if viaApply {
			// A plain apply of the same content records the new mode.
			f.applyPlain()
			if c := f.load().Confirmed; c == nil || c.Files[0].Mode != 0o600 {
				t.Fatalf("a plain apply after chmod 0600 did not record the mode")
			}
		}
		if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.Rollback(ctx, "", CauseManual, "test"); err != nil {
			t.Fatal(err)
		}
		if m := mode(); m != 0o600 || f.file() != goodConf {
			t.Errorf("after the rollback (plain apply after chmod: %v): mode %v, want 0600", viaApply, m)
		}
		if err := os.Chmod(f.main, 0o640); err != nil {
			t.Fatal(err)
		}
		f.applyPlain()
	}
}

// An invalid --candidate is reported at its own file's line and column: it
// is parsed under the main file's name (its relative side files resolve
// there), and the errors named the main file, at a line that holds
// something else or nothing.
func TestTxWalkFinding124CandidateErrorsNameTheCandidate(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	bad := "version: 1\nlinks:\n  br0: {kind: bridge}\n  br0: {kind: bridge, mtu: 99999999}\n"
	_, err := f.h.Begin(context.Background(), BeginRequest{Main: f.main, Candidate: []byte(bad), CandidateName: "staged.yaml", Window: time.Hour})
	if err == nil {
		t.Fatal("an invalid candidate was taken")
	}
	if !strings.Contains(err.Error(), "staged.yaml:4:3:") || strings.Contains(err.Error(), f.main) {
		t.Errorf("the error does not name the candidate's own position:\n%v", err)
	}
	if f.file() != goodConf || f.load().Pending != nil {
		t.Error("an invalid candidate changed something")
	}
}

// An extension with a shorter --confirm-within moves the deadline nearer:
// a process timer (rollback --due) that slept until the deadline it had
// read first kept sleeping, and the transaction stayed pending past its new
// deadline until the old one (an hour, extended to a second).
func TestTxWalkFinding126ProcessTimerSeesADeadlineMovedNearer(t *testing.T) {
	f := newFixture(t)
	f.h.Now = time.Now
	f.write(goodConf)
	f.applyPlain()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	type due struct {
		r   *RollbackResult
		err error
	}
	done := make(chan due, 1)
	go func() {
		r, err := WaitDue(ctx, f.h.Dir, res.Txn.ID, func(context.Context) (*Host, func(), error) { return f.h, func() {}, nil })
		done <- due{r, err}
	}()
	// The timer reads the file, then sleeps.
	time.Sleep(200 * time.Millisecond)
	ext, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Second})
	if err != nil || !ext.Extended {
		t.Fatalf("extension: %v", err)
	}
	select {
	case d := <-done:
		if d.err != nil || d.r == nil || d.r.Txn.Cause != CauseTimeout {
			t.Fatalf("the timer: %+v %v", d.r, d.err)
		}
		if late := time.Since(ext.Txn.Deadline); late < 0 {
			t.Errorf("rolled back %s before the deadline", -late)
		}
	case <-ctx.Done():
		t.Fatal("the timer did not roll back at the deadline the extension moved nearer")
	}
	if f.file() != goodConf || f.routes() != wantGood {
		t.Error("not rolled back")
	}
}

// A transaction past its deadline that nothing rolled back yet (its timer
// stopped, the host asleep) can no longer be confirmed: a confirm rolls it
// back. status offered its confirm command all the same ("… rolls it back
// unless confirmed", confirm_command set).
func TestTxWalkFinding130PastTheDeadlineNoConfirmIsOffered(t *testing.T) {
	now := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	tx := &Txn{ID: "20261124T005900Z-abcdef", State: Pending, Started: now.Add(-time.Minute), Deadline: now.Add(-time.Second)}
	if r := Report(tx, now, "netreconcile confirm "+tx.ID); r.ConfirmCommand != nil || r.SecondsLeft != 0 {
		t.Errorf("past its deadline: confirm_command %v, seconds_left %v", r.ConfirmCommand, r.SecondsLeft)
	}
	tx.Deadline = now.Add(time.Minute)
	if r := Report(tx, now, "netreconcile confirm "+tx.ID); r.ConfirmCommand == nil {
		t.Error("before its deadline: no confirm_command")
	}
}

// The daemon's record on a state directory where no transaction.json exists
// yet (no safe-apply command ran on the namespace): its first converged
// configuration is recorded. The first version of the daemon's deferral took
// the missing file's stamp (zero) for the file of a transaction that had
// refused a record, and never recorded: a transaction begun later had no
// confirmed configuration to pin when its rollback could not write the main
// file back (CI's guest systemd checks, the packaged service user).
func TestTxWalkFinding125RecorderRecordsOnAFreshStateDirectory(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	if ok, err := f.h.Dir.Exists(FileName); err != nil || ok {
		t.Fatalf("transaction.json exists before any record: %v", err)
	}
	snap, err := ReadSnapshot(f.main, "", f.now, "run")
	if err != nil {
		t.Fatal(err)
	}
	r := &Recorder{Dir: f.h.Dir}
	if err := r.Record(func() (*Snapshot, error) { return snap, nil }); err != nil {
		t.Fatal(err)
	}
	if c := f.load().Confirmed; c == nil || c.Hash != snap.Hash {
		t.Fatalf("the daemon's first converged configuration is not recorded: %+v", c)
	}
}

// The daemon's configuration of a transaction's window is recorded in the
// transaction, in the pass that converged it, and it becomes the confirmed
// configuration only if the transaction is confirmed: after a confirm, an
// edit the daemon applied in the window runs confirmed and belongs in the
// next restore point; after a rollback the restore point stands (the files
// in force in the window are what it rejected). An edit undone in the
// window, and an apply that extends the transaction, leave the apply's
// configuration the one that runs.
func TestTxWalkFinding125RecorderAfterTheWindow(t *testing.T) {
	ctx := context.Background()
	for _, confirm := range []bool{false, true} {
		f := newFixture(t)
		f.write(goodConf)
		f.applyPlain()
		f.write(badConf)
		if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute}); err != nil {
			t.Fatal(err)
		}
		r := &Recorder{Dir: f.h.Dir}
		snapshot := func(content string) *Snapshot {
			t.Helper()
			f.write(content)
			s, err := ReadSnapshot(f.main, "", f.now, "run")
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Record(func() (*Snapshot, error) { return s, nil }); err != nil {
				t.Fatalf("while pending: %v", err)
			}
			return s
		}
		// The apply's own files: nothing to keep.
		snapshot(badConf)
		if c := f.load().Pending.Converged; c != nil {
			t.Errorf("the applied configuration kept as converged in the window")
		}
		// Edited in the window, and converged by the daemon; undone, and
		// edited again.
		window := snapshot(badConf + "# edited in the window\n")
		if c := f.load().Pending.Converged; c == nil || c.Hash != window.Hash {
			t.Fatalf("the window's configuration is not in the transaction: %+v", c)
		}
		snapshot(badConf)
		if c := f.load().Pending.Converged; c != nil {
			t.Errorf("an edit undone in the window is still the configuration in force")
		}
		window = snapshot(badConf + "# edited in the window\n")
		if c := f.load().Confirmed; c == nil || c.Hash == window.Hash {
			t.Error("the window's configuration recorded as confirmed while pending")
		}
		before := f.load().Confirmed
		if confirm {
			if _, _, err := f.h.Confirm(ctx, ""); err != nil {
				t.Fatal(err)
			}
		} else if _, err := f.h.Rollback(ctx, "", CauseManual, "test"); err != nil {
			t.Fatal(err)
		}
		after := f.load()
		if after.Last.Converged != nil {
			t.Error("the ended transaction keeps the window's configuration")
		}
		switch recorded := after.Confirmed != nil && after.Confirmed.Hash == window.Hash; {
		case confirm && !recorded:
			t.Error("after a confirm, the window's configuration was not recorded")
		case !confirm && (recorded || after.Confirmed == nil || after.Confirmed.Hash != before.Hash):
			t.Error("after a rollback, the window's configuration was recorded as confirmed")
		}
		// No transaction: the next configuration is recorded.
		next := snapshot(goodConf + "# edited\n")
		if c := f.load().Confirmed; c == nil || c.Hash != next.Hash {
			t.Error("a configuration converged after the transaction ended is not recorded")
		}
	}
	// An apply inside the window supersedes what the daemon converged
	// before it.
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	f.write(badConf)
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.write(badConf + "# edited in the window\n")
	s, err := ReadSnapshot(f.main, "", f.now, "run")
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Recorder{Dir: f.h.Dir}).Record(func() (*Snapshot, error) { return s, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(goodConf + "# candidate\n"), Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if c := f.load().Pending.Converged; c != nil {
		t.Error("an extension keeps what the daemon converged before it")
	}
	if _, _, err := f.h.Confirm(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if c := f.load().Confirmed; c == nil || string(c.Files[0].Data) != goodConf+"# candidate\n" {
		t.Error("the extension's candidate is not the confirmed configuration")
	}
}

// A rollback that cannot write the files back pins the restore point even
// on a namespace that had no confirmed configuration: the first transaction
// there (with --candidate) takes the files on disk as its restore point, and
// the pin, which enforced the last confirmed configuration only, pinned
// nothing, so the daemon's next pass applied the rejected candidate again
// and recorded it as confirmed.
func TestTxWalkFinding125PinWithoutAConfirmedConfiguration(t *testing.T) {
	f := newFixture(t)
	f.h.AllowInsecureConfig = false
	etc := filepath.Dir(f.main)
	f.write(goodConf)
	ctx := context.Background()
	if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// A daemon converged the candidate in the window.
	bad, err := ReadSnapshot(f.main, "", f.now, "run")
	if err != nil {
		t.Fatal(err)
	}
	r := &Recorder{Dir: f.h.Dir}
	if err := r.Record(func() (*Snapshot, error) { return bad, nil }); err != nil {
		t.Fatalf("while pending: %v", err)
	}
	if err := os.Chmod(etc, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(etc, 0o755) })
	rolled, err := f.h.Rollback(ctx, "", CauseManual, "test")
	if err != nil || rolled.Err == nil {
		t.Fatalf("rollback: %v %+v", err, rolled)
	}
	if f.file() != badConf || f.routes() != wantGood {
		t.Fatalf("want the file as it was and the kernel rolled back:\n%s\n%s", f.file(), f.routes())
	}
	out, by, err := (&Pin{Dir: f.h.Dir}).Sources(bad.Sources())
	if err != nil || by != rolled.Txn.ID || len(out) != 1 || string(out[0].Data) != goodConf {
		t.Fatalf("pin of the rejected files: %v %q %v", err, by, out)
	}
	// Nor is the rejected configuration the daemon converged in the
	// window recorded as confirmed once the transaction ended; the
	// daemon then enforces the pin, the confirmed configuration, and
	// records that.
	if c := f.load().Confirmed; c == nil || c.Hash == bad.Hash {
		t.Error("the rejected candidate is recorded as confirmed")
	}
	pinned, err := SnapshotOf(f.main, "", out, f.now, "run")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Record(func() (*Snapshot, error) { return pinned, nil }); err != nil {
		t.Fatal(err)
	}
	if c := f.load().Confirmed; c == nil || string(c.Files[0].Data) != goodConf {
		t.Error("the pinned configuration the daemon converged is not the confirmed one")
	}
}

// daemonPass is one converged pass of a daemon: the files read, the kernel
// made to match them, and the configuration offered to the recorder, under
// the lock as the daemon does (the test is the only actor).
func (f *fixture) daemonPass(r *Recorder) {
	f.t.Helper()
	snap, err := ReadSnapshot(f.main, "", f.now, "run")
	if err != nil {
		f.t.Fatal(err)
	}
	cfg, err := snap.Parse(true)
	if err != nil {
		f.t.Fatal(err)
	}
	o, err := Converge(context.Background(), f.h.Engine, cfg.State)
	if err != nil || o.Err != nil || o.Verify != nil {
		f.t.Fatalf("daemon pass: %v %v %v", err, o.Err, o.Verify)
	}
	if err := r.Record(func() (*Snapshot, error) { return snap, nil }); err != nil {
		f.t.Fatalf("daemon pass: record: %v", err)
	}
}

// kernelIs says whether the kernel plans nothing towards conf.
func (f *fixture) kernelIs(conf string) bool {
	f.t.Helper()
	cfg, err := (&Snapshot{Main: f.main, Files: []FileCopy{{Path: f.main, Data: []byte(conf)}}}).Parse(true)
	if err != nil {
		f.t.Fatal(err)
	}
	plan, _, err := f.h.Engine.PlanDesired(context.Background(), cfg.State, true)
	return err == nil && plan != nil && plan.Empty()
}

// A file edited in a transaction's window and applied by the daemon runs
// confirmed when the transaction is confirmed, whatever begins next and
// however soon. The daemon recorded it only on its first pass after the
// transaction ended: a transaction begun before that pass took the
// confirm's record, the apply's files without the edit, as its restore
// point, and its rollback (by hand or at the deadline) took the edit out of
// the files and the kernel, and the daemon recorded nothing (the last
// transaction had been rolled back). Every order of the ends of two
// transactions with the daemon's passes.
func TestTxWalkFinding107ConfirmedWindowEditSurvivesTheNextTransaction(t *testing.T) {
	ctx := context.Background()
	editConf := badConf + "  - {to: 10.97.0.0/24, via: 10.0.0.2}\n"
	nextConf := goodConf + "  - {to: 10.96.0.0/24, via: 10.0.0.2}\n"
	ends := []string{"confirm", "rollback", "deadline"}
	for _, endA := range ends {
		for _, passBetween := range []bool{false, true} {
			for _, endB := range ends {
				name := fmt.Sprintf("A %s, pass between %v, B %s", endA, passBetween, endB)
				t.Run(name, func(t *testing.T) {
					f := newFixture(t)
					r := &Recorder{Dir: f.h.Dir}
					end := func(how string) {
						t.Helper()
						var err error
						switch how {
						case "confirm":
							_, _, err = f.h.Confirm(ctx, "")
						case "rollback":
							_, err = f.h.Rollback(ctx, "", CauseManual, "test")
						case "deadline":
							f.now = f.now.Add(2 * time.Minute)
							var rolled *RollbackResult
							rolled, _, err = f.h.Due(ctx)
							if err == nil && rolled == nil {
								err = errors.New("nothing rolled back at the deadline")
							}
						}
						if err != nil {
							t.Fatalf("%s: %v", how, err)
						}
					}
					f.write(goodConf)
					f.applyPlain()
					f.daemonPass(r)
					f.write(badConf)
					if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute}); err != nil {
						t.Fatal(err)
					}
					f.daemonPass(r)
					// Edited in the window, and applied by the daemon.
					f.write(editConf)
					f.daemonPass(r)
					end(endA)
					if passBetween {
						f.daemonPass(r)
					}
					restore := goodConf
					if endA == "confirm" {
						restore = editConf
					}
					f.write(nextConf)
					if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute}); err != nil {
						t.Fatal(err)
					}
					if got := string(f.load().Pending.Restore.Files[0].Data); got != restore {
						t.Errorf("the next transaction's restore point:\n%s\nwant:\n%s", got, restore)
					}
					f.daemonPass(r)
					end(endB)
					want := restore
					if endB == "confirm" {
						want = nextConf
					}
					check := func(when string) {
						t.Helper()
						if got := f.file(); got != want {
							t.Errorf("%s: the file:\n%s\nwant:\n%s", when, got, want)
						}
						if !f.kernelIs(want) {
							t.Errorf("%s: the kernel does not match:\n%s", when, f.routes())
						}
						if c := f.load().Confirmed; c == nil || string(c.Files[0].Data) != want {
							t.Errorf("%s: the confirmed configuration is not the one in force", when)
						}
					}
					check("after the next transaction")
					f.daemonPass(r)
					check("after the daemon's next pass")
				})
			}
		}
	}
}

// killedProbe is a probe whose process is SIGKILLed when it runs after the
// apply (its second check): the apply and its verification passed, the
// begin had not yet said so.
type killedProbe struct{ n int }

func (p *killedProbe) String() string { return "killed" }
func (p *killedProbe) Check(context.Context) error {
	if p.n++; p.n > 1 {
		panic(killed{})
	}
	return nil
}

// beginKilled runs req in a begin SIGKILLed at point: "record" (the
// transaction recorded, the candidate not installed yet), "kernel" (the
// candidate installed, at the first route write), "probe" (applied and
// verified, while the probes run again).
func (f *fixture) beginKilled(point string, req BeginRequest) {
	f.t.Helper()
	e, timer := f.h.Engine, f.h.Timer
	defer func() { f.h.Engine, f.h.Timer = e, timer }()
	switch point {
	case "record":
		f.h.Timer = func(*Txn) (*Arranged, error) {
			return &Arranged{Holder: "process:0", Release: func() { panic(killed{}) }}, nil
		}
	case "kernel":
		f.h.Engine = &engine.Engine{Kernel: killedKernel{f.k}, Ledger: e.Ledger, State: e.State}
	case "probe":
		req.Probes = []Probe{&killedProbe{}}
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killed); !ok {
				panic(r)
			}
		}
	}()
	_, err := f.h.Begin(context.Background(), req)
	f.t.Fatalf("the begin was not killed at %s: %v", point, err)
}

// A begin SIGKILLed part-way, after it recorded the transaction (before its
// candidate was installed, or with the kernel written in part), left a
// transaction that a confirm then confirmed: the record's applied
// configuration, the candidate, became the confirmed one while the main file
// still held the restore point's (or the kernel anything between). Whoever
// finds it next under the lock rolls it back instead, and a confirm says so.
// Transaction walk seed 1 (root/name, make test's short walk, load ~30),
// step 10, shrunk to 10 steps: edit v0, apply, begin-invalid, begin
// --candidate v1, confirm (SIGKILL 120 ms), apply (SIGKILL 1 ms),
// daemon-start, deadline, begin --candidate v2 --rollback-timer daemon
// (SIGKILL 375 ms), confirm: exit 0, the main file not v2.
func TestTxWalkFinding131KilledBeginIsNeverConfirmed(t *testing.T) {
	const third = `version: 1
links:
  br0:
    kind: bridge
    addresses: [10.0.0.1/24]
routes:
  - {to: 10.98.0.0/24, via: 10.0.0.3}
`
	for _, ext := range []bool{false, true} {
		for _, point := range []string{"record", "kernel", "probe"} {
			for _, next := range []string{"confirm", "apply", "begin", "rollback", "due", "record"} {
				name := point + "/" + next
				if ext {
					name = "extension/" + name
				}
				t.Run(name, func(t *testing.T) {
					f := newFixture(t)
					f.write(goodConf)
					f.applyPlain()
					good := f.routes()
					ctx := context.Background()
					cand := badConf
					if ext {
						if _, err := f.h.Begin(ctx, BeginRequest{Main: f.main, Candidate: []byte(badConf), Window: time.Minute}); err != nil {
							t.Fatal(err)
						}
						cand = third
					}
					f.beginKilled(point, BeginRequest{Main: f.main, Candidate: []byte(cand), Window: time.Minute})
					p := f.load().Pending
					if p == nil {
						t.Fatal("the killed begin recorded no transaction")
					}
					id := p.ID
					var err error
					switch next {
					case "confirm":
						_, _, err = f.h.Confirm(ctx, id)
						if err == nil || !strings.Contains(err.Error(), "interrupted") {
							t.Errorf("confirm of the interrupted begin: %v", err)
						}
					case "apply":
						_, err = f.h.RefusePending(ctx)
					case "begin":
						_, err = f.h.Begin(ctx, BeginRequest{Main: f.main, Window: time.Minute})
					case "rollback":
						_, err = f.h.Rollback(ctx, id, CauseManual, "rolled back by netreconcile rollback")
					case "due":
						_, _, err = f.h.Due(ctx)
					case "record":
						// The daemon's converged pass (under the lock)
						// records nothing of the window: only a
						// rollback can end it.
						snap, serr := ReadSnapshot(f.main, "", f.now, "run")
						if serr != nil {
							t.Fatal(serr)
						}
						if err := (&Recorder{Dir: f.h.Dir}).Record(func() (*Snapshot, error) { return snap, nil }); err != nil {
							t.Fatal(err)
						}
						if p := f.load().Pending; p == nil || p.Converged != nil {
							t.Fatalf("the daemon recorded its pass in the interrupted transaction: %+v", p)
						}
						_, _, err = f.h.Confirm(ctx, id)
					}
					if (err == nil) != (next == "rollback" || next == "due") {
						t.Errorf("%s after the killed begin: %v", next, err)
					}
					file := f.load()
					if file.Pending != nil || file.Last == nil || file.Last.ID != id || file.Last.State != RolledBack {
						t.Fatalf("%s after the killed begin left pending %+v, last %+v", next, file.Pending, file.Last)
					}
					if want := CauseApply; next != "rollback" && file.Last.Cause != want {
						t.Errorf("rolled back with cause %s, want %s", file.Last.Cause, want)
					}
					if file.Confirmed == nil || string(file.Confirmed.Files[0].Data) != goodConf {
						t.Errorf("%s after the killed begin: the confirmed configuration is not the restore point", next)
					}
					if f.file() != goodConf || f.routes() != good {
						t.Errorf("%s after the killed begin: file\n%s\nroutes\n%s", next, f.file(), f.routes())
					}
				})
			}
		}
	}
}

// LastConfirmed tells files a plain apply recorded as confirmed (as
// RefusePending read transaction.json) from others: the CLI starts nft
// ahead of the read only for the others.
func TestLastConfirmedHint(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	snapOf := func() *Snapshot {
		s, err := ReadSnapshot(f.main, "", f.now, "apply")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	refuse := func() {
		if _, err := f.h.RefusePending(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	refuse()
	if f.h.LastConfirmed(snapOf()) {
		t.Fatal("files never applied read as the confirmed ones")
	}
	f.applyPlain()
	refuse()
	if !f.h.LastConfirmed(snapOf()) {
		t.Fatal("the files just applied do not read as the confirmed ones")
	}
	f.write(f.file() + "# edited\n")
	refuse()
	if f.h.LastConfirmed(snapOf()) {
		t.Fatal("edited files read as the confirmed ones")
	}
}

// A record staged while the files are applied (StageConfirmed) ends as
// transaction.json as RecordConfirmed writes it; one staged from a
// transaction.json rewritten since is dropped, and the record is made from
// the file as it is then; a dropped one leaves nothing in the directory.
func TestStagedConfirmedRecord(t *testing.T) {
	f := newFixture(t)
	f.write(goodConf)
	f.applyPlain()
	stateFiles := func() []string {
		es, err := os.ReadDir(f.h.Dir.Path())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	before := stateFiles()
	readSnap := func() *Snapshot {
		s, err := ReadSnapshot(f.main, "", f.now, "apply")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.h.RefusePending(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Parse(true); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The files applied before: nothing to stage.
	if r := f.h.StageConfirmed(readSnap()); r != nil {
		t.Fatal("staged a record of the files confirmed already")
	}
	f.write(goodConf + "# edited\n")
	snap := readSnap()
	r := f.h.StageConfirmed(snap)
	if r == nil {
		t.Fatal("nothing staged for edited files")
	}
	if err := f.h.RecordConfirmedStaged(snap, r); err != nil {
		t.Fatal(err)
	}
	r.Discard()
	if got := f.load().Confirmed; got == nil || got.Hash != snap.Hash {
		t.Fatalf("confirmed after the staged record: %+v", got)
	}
	if got := stateFiles(); !slices.Equal(got, before) {
		t.Errorf("state directory after the staged record: %v, before %v", got, before)
	}
	// transaction.json rewritten after the stage (its counts changed):
	// the record keeps what the rewrite wrote.
	f.write(goodConf + "# edited again\n")
	snap = readSnap()
	r = f.h.StageConfirmed(snap)
	file := f.load()
	file.Counts.Confirmed = 42
	time.Sleep(10 * time.Millisecond) // another modification time
	if err := file.Save(f.h.Dir); err != nil {
		t.Fatal(err)
	}
	if err := f.h.RecordConfirmedStaged(snap, r); err != nil {
		t.Fatal(err)
	}
	r.Discard()
	if got := f.load(); got.Confirmed == nil || got.Confirmed.Hash != snap.Hash || got.Counts.Confirmed != 42 {
		t.Fatalf("after a rewrite: confirmed %+v, counts %+v", got.Confirmed, got.Counts)
	}
	// Staged, then the apply fails: dropped.
	f.write(goodConf + "# once more\n")
	r = f.h.StageConfirmed(readSnap())
	r.Discard()
	if got := stateFiles(); !slices.Equal(got, before) {
		t.Errorf("state directory after a dropped record: %v, before %v", got, before)
	}
	if got := f.load().Confirmed; got == nil || got.Hash != snap.Hash {
		t.Errorf("a dropped record changed the confirmed one: %+v", got)
	}
}
