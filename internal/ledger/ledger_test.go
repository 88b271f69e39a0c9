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
