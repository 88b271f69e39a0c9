package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Issue 12 finding 5, the daemon's side: a ledger save that fails (the state
// directory remounted read-only) is not dropped. The engine keeps the
// records, reports them unsaved, and the next pass saves them once it can.
func TestFailedLedgerSaveIsRetried(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	dir, sd := tmpfsStateDir(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, err := ledger.OpenIn(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Kernel: k, Ledger: l, State: sd}
	pass := func(tables ...string) error { return ledgerPass(t, e, tables...) }
	onDisk := func() map[model.NftTableKey]bool {
		t.Helper()
		l, err := ledger.OpenIn(sd, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l.NFTables
	}
	a, b := model.NftTableKey{Family: "inet", Name: "a"}, model.NftTableKey{Family: "inet", Name: "b"}
	if err := pass("a", "b"); err != nil {
		t.Fatal(err)
	}
	nettest.Exec(t, "mount", "-o", "remount,ro", dir)
	if err := pass("a"); err == nil {
		t.Fatal("a pass deleting b saved its ledger on a read-only file system")
	}
	if !e.LedgerUnsaved() || e.Ledger.NFTables[b] || !onDisk()[b] {
		t.Fatalf("after the failed save: unsaved %v, in memory %v, on disk %v", e.LedgerUnsaved(), e.Ledger.NFTables, onDisk())
	}
	// Still read-only: the next pass tries again, and says so.
	if err := pass("a"); err == nil {
		t.Fatal("the retry on a read-only file system reported no error")
	}
	nettest.Exec(t, "mount", "-o", "remount,rw", dir)
	if err := pass("a"); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(); e.LedgerUnsaved() || !got[a] || got[b] {
		t.Errorf("after the retry: unsaved %v, on disk %v", e.LedgerUnsaved(), got)
	}
}

// Issue 12 finding 5, "two processes overwrite each other's ledger": a
// long-lived engine (the service) and a short one (an apply between two of
// its passes) share a namespace. The service's next pass takes the lock and
// reads the ledger again, so its save keeps the other's record, and the
// table the other made stays ours to delete.
func TestServiceKeepsRecordsOfAnotherWriter(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	sd, err := statedir.Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	open := func() *engine.Engine { return lockedEngine(t, ns, sd) }
	pass := func(e *engine.Engine, tables ...string) {
		t.Helper()
		if err := ledgerPass(t, e, tables...); err != nil {
			t.Fatal(err)
		}
	}
	service := open()
	pass(service, "svc")
	cli := open() // an apply between two passes
	pass(cli, "svc", "cli")
	pass(service, "svc", "more") // the service's file does not name "cli"
	l, err := ledger.OpenIn(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.NFTables[model.NftTableKey{Family: "inet", Name: "cli"}] {
		t.Errorf("the table the other writer made is still recorded after the service deleted it: %v", l.NFTables)
	}
	if out := nettest.InNS(t, ns, "nft", "list", "tables"); out != "table inet svc\ntable inet more\n" {
		t.Errorf("tables after the service's pass (the other writer's table is ours to delete):\n%s", out)
	}
}

// ledgerPass is a pass of e (under its lock, when it has one) over a file
// declaring the nftables tables named, each with a chain and a rule.
func ledgerPass(t *testing.T, e *engine.Engine, tables ...string) error {
	t.Helper()
	src := "version: 1\n"
	if len(tables) > 0 {
		src += "nftables:\n"
	}
	for _, tb := range tables {
		src += fmt.Sprintf("  inet %s:\n    chains:\n      c: {rules: [counter]}\n", tb)
	}
	return filePass(t, e, src)
}

// filePass is a pass of e (under its lock, when it has one) over src.
func filePass(t *testing.T, e *engine.Engine, src string) error {
	t.Helper()
	unlock, err := e.LockPass(context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	cfg, err := desired.Parse([]desired.Source{{Name: "t.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := e.PlanDesired(context.Background(), cfg.State, false)
	if plan == nil {
		t.Fatal(err)
	}
	res, err := e.Apply(context.Background(), plan)
	if err == nil {
		err = res.Err()
	}
	return err
}

// A failed save, then another writer, then the service again: its next
// pass reads the ledger again and keeps its unsaved record on top. Before,
// it skipped the read while a record was unsaved: the table the other
// writer made was not its own, and its save wrote the stale records over
// the other writer's, so no later pass would delete that table.
func TestUnsavedRecordsMergeWithAnotherWriters(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	dir, sd := tmpfsStateDir(t)
	open := func() *engine.Engine { return lockedEngine(t, ns, sd) }
	service := open()
	if err := ledgerPass(t, service, "svc"); err != nil {
		t.Fatal(err)
	}
	nettest.Exec(t, "mount", "-o", "remount,ro", dir)
	if err := ledgerPass(t, service, "svc", "new"); err == nil || !service.LedgerUnsaved() {
		t.Fatalf("a pass on a read-only state directory: %v, unsaved %v", err, service.LedgerUnsaved())
	}
	nettest.Exec(t, "mount", "-o", "remount,rw", dir)
	if err := ledgerPass(t, open(), "svc", "cli"); err != nil { // an apply; "new" is not its own
		t.Fatal(err)
	}
	if err := ledgerPass(t, service, "svc", "new"); err != nil {
		t.Fatal(err)
	}
	// The service took the other writer's record: its file does not name
	// "cli", which it deleted as its own; its unsaved record of "new"
	// was saved.
	if out := nettest.InNS(t, ns, "nft", "list", "tables"); out != "table inet svc\ntable inet new\n" {
		t.Errorf("tables after the service's pass:\n%s", out)
	}
	l, err := ledger.OpenIn(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.NFTables) != 2 || !l.NFTables[model.NftTableKey{Family: "inet", Name: "new"}] {
		t.Errorf("records after the service's pass: %v", l.NFTables)
	}
	// Every record holds: a file naming none of them deletes the rest.
	if err := ledgerPass(t, open()); err != nil {
		t.Fatal(err)
	}
	if out := nettest.InNS(t, ns, "nft", "list", "tables"); out != "" {
		t.Errorf("tables left behind:\n%s", out)
	}
}

// An adversarial review's sequence: the service drops a sysctl key (its
// old value written back, the record dropped) and cannot save; an apply
// whose file still sets the key writes it, relying on the record it finds
// in the file; the service's next pass reloads. The record must stand: the
// apply's write relied on it, later. Dropped, the value 0 owed back was
// never written when the key left every file, and ip_forward stayed 1.
func TestRecordAnotherWriterReliedOnStands(t *testing.T) {
	ns := nettest.NewNetNS(t)
	dir, sd := tmpfsStateDir(t)
	open := func() *engine.Engine { return lockedEngine(t, ns, sd) }
	forward := func() string {
		return strings.TrimSpace(nettest.InNS(t, ns, "sysctl", "-n", "net.ipv4.ip_forward"))
	}
	const on, off = "version: 1\nsysctls: {net.ipv4.ip_forward: \"1\"}\n", "version: 1\n"
	service := open()
	if err := filePass(t, service, on); err != nil || forward() != "1" {
		t.Fatalf("first pass: %v, ip_forward %s", err, forward())
	}
	nettest.Exec(t, "mount", "-o", "remount,ro", dir)
	if err := filePass(t, service, off); err == nil || forward() != "0" {
		t.Fatalf("a pass dropping the key on a read-only state directory: %v, ip_forward %s", err, forward())
	}
	nettest.Exec(t, "mount", "-o", "remount,rw", dir)
	if err := filePass(t, open(), on); err != nil || forward() != "1" {
		t.Fatalf("the apply: %v, ip_forward %s", err, forward())
	}
	if err := filePass(t, service, off); err != nil {
		t.Fatal(err)
	}
	if got := forward(); got != "0" {
		t.Errorf("ip_forward is %s after the key left both files, want the 0 owed back", got)
	}
}

// tmpfsStateDir is a state directory on a tmpfs of its own, which a test
// remounts read-only (remount,ro) to make the ledger's saves fail.
func tmpfsStateDir(t *testing.T) (string, *statedir.Dir) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	nettest.Exec(t, "mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", dir)
	t.Cleanup(func() { _ = nettest.ExecErr("umount", dir) })
	sd, err := statedir.Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sd.Close() })
	return dir, sd
}

// lockedEngine is a writer of namespace ns with state sd, taking the
// namespace's lock as the service and apply do: a process of its own.
func lockedEngine(t *testing.T, ns string, sd *statedir.Dir) *engine.Engine {
	t.Helper()
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	l, err := ledger.OpenIn(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	lock := func(ctx context.Context) (func(), error) {
		return sd.Lock(ctx, "writer.lock", statedir.LockOptions{RecordPID: true})
	}
	return &engine.Engine{Kernel: k, Ledger: l, State: sd, Lock: lock}
}
