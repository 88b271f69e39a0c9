package apply_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// nftFake is the fake kernel with nftables batches that fail when they
// touch table "bad", as the kernel fails a whole batch with EINVAL.
type nftFake struct {
	*kerneltest.Kernel
	batches [][]model.NftOp
}

func (f *nftFake) NFTTable(model.NftTableKey) (*model.NftTable, error) { return nil, nil }
func (f *nftFake) NFTTableHandle(model.NftTableKey) (uint64, error)    { return 0, nil }
func (f *nftFake) NFTApply(ops []model.NftOp) error {
	f.batches = append(f.batches, ops)
	for _, op := range ops {
		if op.Table.Name == "bad" {
			return errors.New("conn.Receive: netlink receive: " + syscall.EINVAL.Error())
		}
	}
	return nil
}

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
	k := &nftFake{Kernel: kerneltest.New()}
	owned := map[model.NftTableKey]bool{}
	res := apply.Apply(context.Background(), k, plan, apply.Hooks{NftTableChanged: func(key model.NftTableKey, own bool) { owned[key] = own }})
	if len(k.batches) != 3 {
		t.Errorf("%d nftables batches, want 3 (one per table)", len(k.batches))
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
