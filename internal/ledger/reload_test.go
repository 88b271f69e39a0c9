package ledger

import (
	"path/filepath"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Reload takes every record of the file, the tables' handles included: a
// handle left stale took the table another writer made again (a new
// handle: an apply's structural change while the daemon runs) for someone
// else's, and the daemon disowned it.
func TestReloadTakesEveryRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	mine, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	k := model.NftTableKey{Family: "inet", Name: "t"}
	mine.SetNftTable(k, true)
	mine.SetNftTableHandle(k, 5)
	if err := mine.Save(); err != nil {
		t.Fatal(err)
	}
	other, err := Open(p)
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
