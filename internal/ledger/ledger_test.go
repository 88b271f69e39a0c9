package ledger

import (
	"path/filepath"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

func TestNftTablesRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	l, err := Open(p)
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
	l2, err := Open(p)
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
	l, err := Open(p)
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
	l2, err := Open(p)
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
