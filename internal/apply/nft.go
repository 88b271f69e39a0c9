package apply

import (
	"fmt"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

func isNft(op *diff.Op) bool { return op.Kind.IsNft() }

// runNFT sends the nftables ops of the plan one table at a time, each table
// in one batch: the kernel commits a batch whole or not at all, so a table
// is never left half changed. Tables are separate batches because nothing
// in one table refers to another (a rule jumps, and looks up sets, only in
// its own table): one table the kernel refuses then fails alone, with its
// name in the error, and does not hold back changes to the others, nor the
// deletion of a table that left the file. Tables go in the order the plan
// first names them. Consecutive element ops of one set are merged into one
// message list (the kernel side splits it to fit netlink attributes).
func runNFT(k kernel.Interface, plan *diff.Plan, hooks Hooks, res *Result) {
	type group struct {
		key   model.NftTableKey
		ops   []*diff.Op // the plan's
		batch []model.NftOp
	}
	var groups []*group
	byTable := map[model.NftTableKey]*group{}
	for i := range plan.Ops {
		op := &plan.Ops[i]
		if !isNft(op) {
			continue
		}
		key := op.NftTable()
		g := byTable[key]
		if g == nil {
			g = &group{key: key}
			byTable[key] = g
			groups = append(groups, g)
		}
		g.ops = append(g.ops, op)
		for _, n := range op.NFT {
			if l := len(g.batch) - 1; l >= 0 && (n.Op == model.NftAddElems || n.Op == model.NftDelElems) &&
				g.batch[l].Op == n.Op && g.batch[l].Table == n.Table && g.batch[l].Set.Name == n.Set.Name {
				g.batch[l].Elems = append(g.batch[l].Elems, n.Elems...)
				continue
			}
			if n.Elems != nil {
				n.Elems = append([]model.NftElem(nil), n.Elems...)
			}
			g.batch = append(g.batch, n)
		}
	}
	for _, g := range groups {
		var err error
		if len(g.batch) > 0 {
			err = k.NFTApply(g.batch)
		}
		if err != nil {
			for _, op := range g.ops {
				res.Failed = append(res.Failed, Failure{*op, fmt.Errorf("%s %s %s: batch of %d changes to nftables table %s not applied (the table is unchanged): %w", op.Action, op.Kind, op.ID, len(g.ops), g.key, err)})
			}
			continue
		}
		res.Done = append(res.Done, g.ops...)
		for _, op := range g.ops {
			if op.Kind == diff.KindNftTable && hooks.NftTableChanged != nil {
				hooks.NftTableChanged(g.key, op.Action != diff.Delete)
			}
		}
	}
}
