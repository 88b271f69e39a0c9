package apply_test

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// One table the kernel refuses fails alone, with its name in the error; the
// others are changed, a pruned table is deleted.
func TestNftBadTableDoesNotBlockOthers(t *testing.T) {
	bad := model.NftTableKey{Family: "inet", Name: "bad"}
	good := model.NftTableKey{Family: "inet", Name: "good"}
	gone := model.NftTableKey{Family: "inet", Name: "gone"}
	c := &model.NftChain{Name: "c"}
	plan := &diff.Plan{Ops: []diff.Op{
		{Action: diff.Create, Kind: diff.KindNftTable, Table: bad, ID: bad.String(), NFT: []model.NftOp{{Op: model.NftAddTable, Table: bad}}},
		{Action: diff.Create, Kind: diff.KindNftTable, Table: good, ID: good.String(), NFT: []model.NftOp{{Op: model.NftAddTable, Table: good}}},
		{Action: diff.Create, Kind: diff.KindNftChain, Table: bad, ID: bad.String() + " chain c", NFT: []model.NftOp{{Op: model.NftAddChain, Table: bad, Chain: c}}},
		{Action: diff.Create, Kind: diff.KindNftChain, Table: good, ID: good.String() + " chain c", NFT: []model.NftOp{{Op: model.NftAddChain, Table: good, Chain: c}}},
		{Action: diff.Delete, Kind: diff.KindNftTable, Table: gone, ID: gone.String(), NFT: []model.NftOp{{Op: model.NftDelTable, Table: gone}}},
	}}
	k := kerneltest.New()
	// The kernel fails a whole batch with EINVAL.
	k.FailOn(kerneltest.CallNFTApply, bad.String(), syscall.EINVAL)
	k.PutNftTable(model.NftTable{Family: gone.Family, Name: gone.Name})
	owned := map[model.NftTableKey]bool{}
	res := apply.Apply(context.Background(), k, plan, apply.Hooks{NftTableChanged: func(key model.NftTableKey, own bool) { owned[key] = own }})
	var batches int
	for _, l := range append(k.Log, k.Fired()...) {
		if strings.HasPrefix(l, "NFTApply ") {
			batches++
		}
	}
	if batches != 3 {
		t.Errorf("%d nftables batches, want 3 (one per table)", batches)
	}
	if got, want := k.Dump(), "link lo device mtu 65536 up\nnft table inet good handle 2\nnft chain inet good c { regular }\n"; got != want {
		t.Errorf("kernel:\n%s\nwant:\n%s", got, want)
	}
	var failed []string
	for _, f := range res.Failed {
		failed = append(failed, f.Op.ID)
		if !strings.Contains(f.Err.Error(), "nftables table inet bad not applied") {
			t.Errorf("error does not name the table: %v", f.Err)
		}
	}
	if got := strings.Join(failed, ", "); got != "inet bad, inet bad chain c" {
		t.Errorf("failed ops %q, want only those of inet bad", got)
	}
	if len(res.Done) != 3 || !owned[good] || own(owned, gone) {
		t.Errorf("done %d ops (want 3), ledger hooks %v", len(res.Done), owned)
	}
}

func own(m map[model.NftTableKey]bool, k model.NftTableKey) bool {
	v, ok := m[k]
	return !ok || v
}
