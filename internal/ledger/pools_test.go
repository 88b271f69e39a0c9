package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The record of pools with a registry (walk finding 63) survives a save;
// a ledger written before it existed, or none, does not claim it complete;
// NotePools lists without claiming completeness.
func TestPoolsRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	l, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if l.PoolsRecorded {
		t.Fatal("a new ledger (no file: the state directory may have been lost) claims a complete record of pools")
	}
	if !l.RecordPools(nil) || !l.PoolsRecorded {
		t.Fatal("recording no registry: no change, or not complete")
	}
	if l.RecordPools(nil) {
		t.Error("recording the same again: a change")
	}
	if !l.RecordPools([]string{"pw", "pods"}) || l.RecordPools([]string{"pods"}) {
		t.Error("RecordPools changes")
	}
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if !l2.PoolsRecorded || !l2.Pools["pw"] || !l2.Pools["pods"] || len(l2.Pools) != 2 {
		t.Errorf("read back: recorded %v, pools %v", l2.PoolsRecorded, l2.Pools)
	}
	// A ledger of an earlier netreconcile: no record.
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(data), `"pools_recorded": true`, `"pools_recorded": false`, 1)
	if old == string(data) {
		t.Fatalf("no pools_recorded in\n%s", data)
	}
	if err := os.WriteFile(p, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	l3, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if l3.PoolsRecorded {
		t.Error("an old ledger claims a complete record")
	}
	if !l3.NotePools([]string{"new"}) || l3.PoolsRecorded || !l3.Pools["new"] {
		t.Errorf("NotePools: recorded %v, pools %v", l3.PoolsRecorded, l3.Pools)
	}
}

// Reload takes every record of the file, the tables' handles and the pools
// included: a handle left stale took the table another apply made again
// (a new handle) for someone else's.
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
	other.RecordPools([]string{"pw"})
	if err := other.Save(); err != nil {
		t.Fatal(err)
	}
	if err := mine.Reload(); err != nil {
		t.Fatal(err)
	}
	if !mine.NftTableIsOurs(k, 9) || mine.NftTableIsOurs(k, 5) {
		t.Errorf("after Reload the handle is %d, want 9", mine.NFTHandles[k])
	}
	if !mine.PoolsRecorded || !mine.Pools["pw"] {
		t.Errorf("after Reload: recorded %v, pools %v", mine.PoolsRecorded, mine.Pools)
	}
}
