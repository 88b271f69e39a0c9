package apply

import (
	"fmt"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

func isNft(op *diff.Op) bool { return strings.HasPrefix(op.Kind, "nft ") }

// runNFT sends every nftables op of the plan in one batch: the kernel
// commits all of them or none, so they all succeed or all fail together.
// Consecutive element ops of one set are merged into one message list (the
// kernel side splits it to fit netlink attributes).
func runNFT(k kernel.Writer, plan *diff.Plan, hooks Hooks, res *Result) {
	// Sized up front: a cold load of a large set is one op per element.
	n := 0
	for i := range plan.Ops {
		if isNft(&plan.Ops[i]) {
			n++
		}
	}
	ops := make([]diff.Op, 0, n)
	var batch []model.NftOp
	for i := range plan.Ops {
		op := &plan.Ops[i]
		if !isNft(op) {
			continue
		}
		ops = append(ops, *op)
		for _, n := range op.NFT {
			if l := len(batch) - 1; l >= 0 && (n.Op == model.NftAddElems || n.Op == model.NftDelElems) &&
				batch[l].Op == n.Op && batch[l].Table == n.Table && batch[l].Set.Name == n.Set.Name {
				batch[l].Elems = append(batch[l].Elems, n.Elems...)
				continue
			}
			if n.Elems != nil {
				n.Elems = append([]model.NftElem(nil), n.Elems...)
			}
			batch = append(batch, n)
		}
	}
	if len(ops) == 0 {
		return
	}
	var err error
	if len(batch) > 0 {
		nk, ok := k.(kernel.NFTables)
		if !ok {
			err = fmt.Errorf("nftables: %w", kernel.ErrUnsupported)
		} else {
			err = nk.NFTApply(batch)
		}
	}
	if err != nil {
		for _, op := range ops {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: batch of %d nftables changes not applied (the ruleset is unchanged): %w", op.Action, op.Kind, op.ID, len(ops), err)})
		}
		return
	}
	res.Done = slices.Grow(res.Done, len(ops))
	res.Done = append(res.Done, ops...)
	for i := range ops {
		op := &ops[i]
		if op.Kind == diff.KindNftTable && hooks.NftTableChanged != nil {
			key := model.NftTableKey{}
			key.Family, key.Name, _ = strings.Cut(op.ID, " ")
			hooks.NftTableChanged(key, op.Action != diff.Delete)
		}
	}
}
