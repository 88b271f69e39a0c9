package ledger

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Reload takes every record of the file, the tables' handles included: a
// handle left stale took the table another writer made again (a new
// handle: an apply's structural change while the daemon runs) for someone
// else's, and the daemon disowned it.
func TestReloadTakesEveryRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	mine, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	k := model.NftTableKey{Family: "inet", Name: "t"}
	mine.SetNftTable(k, true)
	mine.SetNftTableHandle(k, 5)
	if err := mine.Save(); err != nil {
		t.Fatal(err)
	}
	other, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	other.SetNftTableHandle(k, 9) // made again by the other writer
	if err := other.Save(); err != nil {
		t.Fatal(err)
	}
	if err := mine.Reload(); err != nil {
		t.Fatal(err)
	}
	if !mine.NftTableIsOurs(k, 9) || mine.NftTableIsOurs(k, 5) {
		t.Errorf("after Reload the handle is %d, want 9", mine.NFTHandles[k])
	}
}

// A namespace's name given to a new namespace while a process still writes
// the old one (ip netns del, add, under a running service): the new
// namespace's writer discards the old records, and the old process's next
// Reload refuses instead of merging; merged and saved, each wiped the
// other's records. A process that itself discarded a gone namespace's
// records reloads as before, until its first save.
func TestReloadRefusesAReusedNamespace(t *testing.T) {
	sd, err := statedir.Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	old, fresh := model.NftTableKey{Family: "inet", Name: "old"}, model.NftTableKey{Family: "inet", Name: "new"}
	d, err := OpenIn(sd, 100)
	if err != nil {
		t.Fatal(err)
	}
	d.SetNftTable(old, true)
	if err := d.Save(); err != nil {
		t.Fatal(err)
	}
	n, err := OpenIn(sd, 200)
	if err != nil || !n.Discarded {
		t.Fatalf("the new namespace's writer: %v, discarded %v", err, n.Discarded)
	}
	if err := n.Reload(); err != nil {
		t.Fatalf("a reload before the first save of the discarding writer: %v", err)
	}
	n.SetNftTable(fresh, true)
	if err := n.Save(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); !errors.Is(err, ErrNamespaceReused) {
		t.Fatalf("the old namespace's writer reloaded: %v, tables %v", err, d.NFTables)
	}
	if got, err := OpenIn(sd, 200); err != nil || !got.NFTables[fresh] {
		t.Errorf("the new namespace's records: %v %v", err, got.NFTables)
	}
}
