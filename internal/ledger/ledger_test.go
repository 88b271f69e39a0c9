package ledger

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

func TestNftTablesRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	l, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	a := model.NftTableKey{Family: "inet", Name: "talos_kubespan"}
	b := model.NftTableKey{Family: "ip", Name: "talos_kubespan"}
	l.SetNftTable(a, true)
	l.SetNftTable(b, true)
	l.SetNftTable(b, false)
	l.SetFou(model.FouKey{Port: 5555}, true)
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	l2, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	if !l2.NFTables[a] || l2.NFTables[b] || len(l2.NFTables) != 1 || !l2.Fou[model.FouKey{Port: 5555}] {
		t.Errorf("read back tables %v, fou %v", l2.NFTables, l2.Fou)
	}
}

// A table's handle survives a save; a table listed without one (an older
// ledger) is taken as ours; another handle is not ours.
func TestNftTableHandles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	l, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	a := model.NftTableKey{Family: "inet", Name: "a"}
	b := model.NftTableKey{Family: "inet", Name: "b"}
	l.SetNftTable(a, true)
	l.SetNftTableHandle(a, 7)
	l.SetNftTable(b, true)
	l.SetNftTableHandle(model.NftTableKey{Family: "ip", Name: "unlisted"}, 9)
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	l2, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	if l2.NFTHandles[a] != 7 || len(l2.NFTHandles) != 1 {
		t.Errorf("handles read back: %v", l2.NFTHandles)
	}
	if !l2.NftTableIsOurs(a, 7) || l2.NftTableIsOurs(a, 8) || !l2.NftTableIsOurs(b, 3) {
		t.Errorf("ownership by handle wrong")
	}
	l2.SetNftTable(a, false)
	if _, ok := l2.NFTHandles[a]; ok {
		t.Errorf("the handle of a forgotten table is kept")
	}
}

// The ledger is bound to its namespace's cookie: records made for another
// cookie are dropped (Discarded), the file is written 0600, and a read-only
// ledger is never written.
func TestCookieModeAndReadOnly(t *testing.T) {
	dir := t.TempDir()
	sd, err := statedir.Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	l, err := OpenIn(sd, 7)
	if err != nil {
		t.Fatal(err)
	}
	k := model.NftTableKey{Family: "inet", Name: "t"}
	l.SetNftTable(k, true)
	l.PendingLinks["br9"] = true
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file: %v, mode %v", err, fi.Mode())
	}
	same, err := OpenIn(sd, 7)
	if err != nil || same.Discarded || !same.NFTables[k] || !same.PendingLinks["br9"] {
		t.Errorf("same cookie: %v discarded %v tables %v pending %v", err, same.Discarded, same.NFTables, same.PendingLinks)
	}
	other, err := OpenIn(sd, 8)
	if err != nil || !other.Discarded || len(other.NFTables) != 0 {
		t.Errorf("other cookie: %v discarded %v tables %v", err, other.Discarded, other.NFTables)
	}
	other.ReadOnly = true
	other.SetNftTable(k, false)
	if err := other.Save(); err != nil {
		t.Fatal(err)
	}
	if again, _ := OpenIn(sd, 7); !again.NFTables[k] {
		t.Errorf("a read-only ledger was written")
	}
}

// openPath opens the ledger file at path, its directory made if missing.
func openPath(path string) (*Ledger, error) {
	dir, err := statedir.Open(filepath.Dir(path), true)
	if err != nil {
		return nil, err
	}
	return OpenIn(dir, 0)
}
