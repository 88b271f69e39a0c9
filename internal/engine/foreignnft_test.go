package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// show --all read only the tables the ledger lists: someone else's table
// was not shown at all. Actual with all reads every table, the others'
// not owned (one that cannot be read named with the reason, never failing
// the read); without all, and in a plan, only the ledger's.
func TestActualAllReadsOthersTables(t *testing.T) {
	st, err := desired.Parse([]desired.Source{{Name: "nr.yaml", Data: []byte("version: 1\nnftables:\n  inet mine:\n    chains:\n      c: {}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	e, k := convergedEngine(t, st.State)
	k.PutNftTable(model.NftTable{Family: "inet", Name: "fw", Sets: []model.NftSet{{Name: "s", Type: model.NftIPv4}}})
	k.PutNftTable(model.NftTable{Family: "netdev", Name: "odd"})
	k.FailOn(kerneltest.CallNFTTable, "netdev odd", errors.New("an expression this reader does not know"))

	tables := func(all bool) string {
		t.Helper()
		a, err := e.Actual(model.DefaultProtocol, all)
		if err != nil {
			t.Fatalf("actual (all %v): %v", all, err)
		}
		var out []string
		for _, tb := range a.NFTables {
			s := tb.Key().String()
			if tb.Owned {
				s += " owned"
			}
			if tb.Unread != "" {
				s += " unread: " + tb.Unread
			}
			if len(tb.Sets) > 0 {
				s += " sets " + tb.Sets[0].Name
			}
			out = append(out, s)
		}
		return strings.Join(out, "\n")
	}
	want := "inet fw sets s\ninet mine owned\nnetdev odd unread: read nftables table netdev odd: NFTTable netdev odd: an expression this reader does not know"
	if got := tables(true); got != want {
		t.Errorf("all:\n%s\nwant:\n%s", got, want)
	}
	if got := tables(false); got != "inet mine owned" {
		t.Errorf("without all:\n%s", got)
	}
	if ops := planOps(t, e, st.State); ops != "" {
		t.Errorf("others' tables changed the plan:\n%s", ops)
	}
}
