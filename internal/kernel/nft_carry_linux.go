package kernel

import (
	"slices"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// nftTableRead is the last whole read of a table, kept so that the read
// that follows our own batch (an apply's verification) need not dump the
// table again: a one-rule change among a thousand otherwise read the
// thousand twice, which cost a one-shot apply more than nft -f takes for
// the change (bench-nft).
//
// The kernel counts every committed transaction (the ruleset generation).
// When the generation moved by exactly one over our batch, and the read was
// at the generation the batch was sent at, the table holds what the read
// found changed by that batch alone. The rules the batch replaced are read
// back from the kernel, by handle, as the kernel holds them; the rules it
// deleted are gone. Only batches of rule replaces and deletes are carried:
// anything else (an added rule, whose handle the kernel chooses; a set, a
// chain, elements) makes the next read a whole one. So do tables that
// change without a commit (sets with timeouts or fed from the packet
// path).
//
// The carried table serves the one read that follows the batch, then the
// next read is whole again: a daemon's later passes read the kernel as
// before, and so does every command that starts afresh.
type nftTableRead struct {
	gen   uint32
	table *model.NftTable
	// carried says the batch at gen left the table as table plus ops: the
	// next read at gen takes it so, once.
	carried bool
	ops     []model.NftOp
}

// keepNFTRead records a whole read of a table at gen, if nothing in it
// changes without a commit.
func (k *Netlink) keepNFTRead(key model.NftTableKey, gen uint32, t *model.NftTable, stable bool) {
	if !stable {
		delete(k.nftReads, key)
		return
	}
	if k.nftReads == nil {
		k.nftReads = map[model.NftTableKey]*nftTableRead{}
	}
	k.nftReads[key] = &nftTableRead{gen: gen, table: cloneNftTable(t)}
}

// carryNFTReads follows our batch of ops, sent at generation before, which
// committed with the generation at gen now (0, 0: unknown, or failed).
func (k *Netlink) carryNFTReads(ops []model.NftOp, before, gen uint32) {
	touched := map[model.NftTableKey][]model.NftOp{}
	for _, op := range ops {
		touched[op.Table] = append(touched[op.Table], op)
	}
	for key, r := range k.nftReads {
		r.carried, r.ops = false, nil
		if gen != before+1 || r.gen != before {
			delete(k.nftReads, key)
			continue
		}
		r.gen = gen
		tops, ok := touched[key]
		if !ok {
			// Untouched by the only commit since the read.
			r.carried = true
			continue
		}
		carried := true
		for _, op := range tops {
			if op.Op != model.NftReplaceRule && op.Op != model.NftDelRule || op.Chain == nil {
				carried = false
				break
			}
		}
		if !carried {
			delete(k.nftReads, key)
			continue
		}
		r.carried, r.ops = true, tops
	}
}

// forgetNFTReads drops every kept read: after a batch whose outcome is not
// known.
func (k *Netlink) forgetNFTReads() { clear(k.nftReads) }

// carriedNFTTable returns the table as our last batch left it, when the
// generation is still gen, the one that batch committed, and this is the
// first read since; nil otherwise (the caller reads it whole).
func (k *Netlink) carriedNFTTable(c *nftwire.Conn, fam byte, key model.NftTableKey, gen uint32) *model.NftTable {
	r := k.nftReads[key]
	if r == nil || !r.carried || r.gen != gen {
		return nil
	}
	r.carried = false
	t := cloneNftTable(r.table)
	memo := k.nftRules[key]
	if memo == nil {
		memo = newRuleMemo(nil, 0)
		k.nftRules[key] = memo
	}
	for _, op := range r.ops {
		ci := slices.IndexFunc(t.Chains, func(ch model.NftChain) bool { return ch.Name == op.Chain.Name })
		if ci < 0 {
			return nil
		}
		rules := t.Chains[ci].Rules
		ri := slices.IndexFunc(rules, func(mr model.NftRule) bool { return mr.Handle == op.Handle })
		if ri < 0 {
			return nil
		}
		if op.Op == model.NftDelRule {
			t.Chains[ci].Rules = slices.Delete(rules, ri, ri+1)
			continue
		}
		mr, ok := k.readBackRule(c, fam, key, op.Chain.Name, op.Handle, memo)
		if !ok {
			return nil
		}
		rules[ri] = mr
	}
	// The rules read back are of the generation the table stands for.
	if after, err := c.Gen(); err != nil || after != gen {
		return nil
	}
	r.table, r.ops = cloneNftTable(t), nil
	return t
}

// readBackRule reads one rule by its handle, with the anonymous sets it
// refers to, as a whole read would; false when it cannot.
func (k *Netlink) readBackRule(c *nftwire.Conn, fam byte, key model.NftTableKey, chain string, handle uint64, memo *ruleMemo) (model.NftRule, bool) {
	r, ok, err := c.GetRule(fam, key.Name, chain, handle)
	if err != nil || !ok || len(r.Compat) > 0 {
		return model.NftRule{}, false
	}
	rr, err := memo.read(r.Exprs)
	if err != nil || len(rr.dynsets) > 0 {
		// A rule that feeds a set makes the table change without a
		// commit: read whole.
		return model.NftRule{}, false
	}
	d := &nftwire.TableDump{Elems: map[string][][]byte{}}
	for _, n := range rr.refs {
		s, ok, err := c.GetSet(fam, key.Name, n)
		if err != nil || !ok {
			return model.NftRule{}, false
		}
		if s.Anonymous() {
			d.Sets = append(d.Sets, s)
		}
	}
	mr, err := k.readRule(c, fam, key, d, &r, memo, nil)
	if err != nil {
		return model.NftRule{}, false
	}
	return mr, true
}

// cloneNftTable copies a table read from the kernel deep enough that the
// copy's chains, rules, sets and objects can be changed apart (elements are
// shared: nothing changes them in place).
func cloneNftTable(t *model.NftTable) *model.NftTable {
	c := *t
	c.Chains = slices.Clone(t.Chains)
	for i := range c.Chains {
		c.Chains[i].Rules = slices.Clone(c.Chains[i].Rules)
	}
	c.Sets = slices.Clone(t.Sets)
	c.Objects = slices.Clone(t.Objects)
	return &c
}
