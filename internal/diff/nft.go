package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// nftables object kinds.
const (
	KindNftTable Kind = "nft table"
	KindNftSet   Kind = "nft set"
	KindNftElem  Kind = "nft element"
	KindNftChain Kind = "nft chain"
	KindNftRule  Kind = "nft rule"
	KindNftObj   Kind = "nft object"
)

// nftPlan collects the nftables ops of a plan in the order the batch runs
// them. The whole group is one kernel transaction, and the order is the
// one each message needs from those before it:
//  1. tables created (or replaced whole);
//  2. objects created (maps' elements and rules name them);
//  3. chains created (jump targets exist before rules and verdict maps'
//     elements use them) or updated;
//  4. sets created with their elements, then elements of existing sets:
//     deletes before adds, since a changed interval would overlap its old
//     self;
//  5. rules: deletes, in-place replaces (by handle), inserts (before the next
//     kept rule, or appended), chain by chain in the file's order;
//  6. sets deleted (no rule looks them up any more), then chains (their
//     rules, deleted in 5, no longer jump anywhere, nor does an element of
//     a verdict map deleted just before: the kernel refuses to delete a
//     chain still jumped to, EBUSY), then objects (no rule or element
//     names them), then tables.
type nftPlan struct {
	tables, objs, chains, sets, elems, rules, setDels, chainDels, objDels, tableDels []Op
	// filled are the sets created with elements: their element ops follow
	// the set's op (sets[i]) and are made only when the plan is put
	// together (appendTo), straight into the plan's array.
	filled []filledSet
}

type filledSet struct {
	at  int // index of the set's op in sets
	key model.NftTableKey
	set *model.NftSet
}

// appendTo appends the ops to ops in batch order, growing it once (not at
// all when Compute's size hint covered them). The element ops of the sets
// created with elements are made in place, after their set's op, so that
// they are never held twice: a second copy of the ops of a 100k-element
// cold load was the first converge's peak (bench-memory).
func (p *nftPlan) appendTo(ops []Op) []Op {
	groups := [][]Op{p.tables, p.objs, p.chains, p.sets, p.elems, p.rules, p.setDels, p.chainDels, p.objDels, p.tableDels}
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	for _, f := range p.filled {
		n += elemCreates(len(f.set.Elems))
	}
	ops = slices.Grow(ops, n)
	for gi, g := range groups {
		if gi != 3 {
			ops = append(ops, g...)
			continue
		}
		next := 0
		for _, f := range p.filled {
			ops = append(ops, g[next:f.at+1]...)
			next = f.at + 1
			ops = appendElemCreates(ops, f.key, f.set)
		}
		ops = append(ops, g[next:]...)
	}
	return ops
}

// elemChunk is the most elements a set may be created with and still get
// an op per element; a larger one gets an op per run of elemChunk of them
// (in the set's order), shown as its first and last element and its count.
// A plan of a big host holds its ops whole: an op per element of a 100k
// set was 40 MB (the op, its message, its ID) of the first converge's
// peak (bench-memory), and 100k plan lines that no one reviews.
// Changes to a set that exists are an op per element, whatever their
// number: those are the lines a review is for.
const elemChunk = 1024

// elemCreates is the number of ops a set created with n elements gets.
func elemCreates(n int) int {
	if n <= elemChunk {
		return n
	}
	return (n + elemChunk - 1) / elemChunk
}

// appendElemCreates appends the element ops of s, a set created with
// elements (elemChunk). One array holds all their messages, whose elements
// are the set's own (capacity clipped, so an append cannot write into the
// set), and the ID prefix is built once.
func appendElemCreates(ops []Op, k model.NftTableKey, s *model.NftSet) []Op {
	msgs := make([]model.NftOp, elemCreates(len(s.Elems)))
	if len(s.Elems) > elemChunk {
		prefix := k.Family + " " + k.Name + " set " + s.Name + " elements "
		for c := range msgs {
			i, j := c*elemChunk, min((c+1)*elemChunk, len(s.Elems))
			msgs[c] = model.NftOp{Op: model.NftAddElems, Table: k, Set: s, Elems: s.Elems[i:j:j]}
			ops = append(ops, Op{Action: Create, Kind: KindNftElem, Table: k,
				ID:      prefix + model.FormatNftElem(s.Type, s.Interval, s.Elems[i]) + " ... " + model.FormatNftElem(s.Type, s.Interval, s.Elems[j-1]),
				Summary: fmt.Sprintf("%d elements", j-i), NFT: msgs[c : c+1 : c+1]})
		}
		return ops
	}
	prefix := elemIDPrefix(k, s)
	for i := range s.Elems {
		msgs[i] = model.NftOp{Op: model.NftAddElems, Table: k, Set: s, Elems: s.Elems[i : i+1 : i+1]}
		ops = append(ops, Op{Action: Create, Kind: KindNftElem, Table: k, ID: prefix + model.FormatNftElem(s.Type, s.Interval, s.Elems[i]),
			NFT: msgs[i : i+1 : i+1]})
	}
	return ops
}

// coldElems counts the elements of the declared sets that the kernel's
// tables do not hold at all (their table or set is absent): the element ops
// a cold load will make, known before the diff (Compute's size hint).
func coldElems(d, a *model.State) int {
	have := map[model.NftTableKey]*model.NftTable{}
	for i := range a.NFTables {
		have[a.NFTables[i].Key()] = &a.NFTables[i]
	}
	n := 0
	for i := range d.NFTables {
		w := &d.NFTables[i]
		h := have[w.Key()]
		for j := range w.Sets {
			if h == nil || h.Set(w.Sets[j].Name) == nil {
				n += elemCreates(len(w.Sets[j].Elems))
			}
		}
	}
	return n
}

// nft diffs the tables the file declares against those the kernel holds,
// and deletes the tables netreconcile owns that left the file. A table the
// file does not declare and the ledger does not list is never read nor
// touched; a foreign one the file declares is a conflict unless the file
// says adopt, and is then owned whole from then on.
func (c *computer) nft() {
	p := &nftPlan{}
	have := map[model.NftTableKey]*model.NftTable{}
	for i := range c.a.NFTables {
		have[c.a.NFTables[i].Key()] = &c.a.NFTables[i]
	}
	want := map[model.NftTableKey]bool{}
	for i := range c.d.NFTables {
		w := &c.d.NFTables[i]
		want[w.Key()] = true
		h := have[w.Key()]
		if c.hold != nil && c.hold.tables[w.Key()] != nil {
			// Held back (Inputs.MaxDisruption): left as it is.
			continue
		}
		if foreignTable(w, h) {
			// Taking it over would delete its sets, chains and rules: the
			// same rule as for a foreign link of a declared name. Said
			// even while its rules wait for a link: the apply that made
			// the link would leave the table as it is and say nothing.
			c.conflict("nftables table %s exists and netreconcile did not create it (the ownership ledger does not list it); add \"adopt: true\" to the table to take it over whole, or choose another name", w.Key())
			continue
		}
		if c.waiting[w.Key()] != "" {
			// Compiled once its links exist (waitingTables).
			continue
		}
		switch {
		case h == nil:
			p.createTable(w, Create, "")
		default:
			if !h.Owned {
				p.tables = append(p.tables, Op{Action: Update, Kind: KindNftTable, ID: w.Key().String(), Table: w.Key(),
					Changes: []Change{{Field: "owner", From: "none", To: "netreconcile"}}, Reason: "declared in the file: owned whole from now on"})
			}
			if why := nftStructural(w, h); why != "" {
				p.createTable(w, Replace, why)
				continue
			}
			if h.Dormant {
				// A dormant table keeps its chains and rules but none of
				// them runs. NEWTABLE on the existing table with flags 0
				// (what NftAddTable sends) wakes it in place.
				p.tables = append(p.tables, Op{Action: Update, Kind: KindNftTable, ID: tableID(w.Key()), Table: w.Key(),
					Changes: []Change{{Field: "flags", From: "dormant", To: "none"}}, Reason: "a dormant table runs none of its rules",
					NFT: []model.NftOp{{Op: model.NftAddTable, Table: w.Key()}}})
			}
			p.updateTable(w, h)
		}
	}
	for i := range c.a.NFTables {
		h := &c.a.NFTables[i]
		if h.Owned && !want[h.Key()] {
			p.tableDels = append(p.tableDels, Op{Action: Delete, Kind: KindNftTable, ID: h.Key().String(), Table: h.Key(),
				NFT: []model.NftOp{{Op: model.NftDelTable, Table: h.Key()}}})
		}
	}
	c.plan.Ops = p.appendTo(c.plan.Ops)
}

// waitingTables lists in Pending the declared tables left as they are until
// the links their rules name exist (Inputs.Waiting), and names them in
// Plan.Waiting: a create where the kernel has no such table, an update
// where it has one (its rules hold the index of a link since deleted).
func (c *computer) waitingTables() {
	for i := range c.d.NFTables {
		w := &c.d.NFTables[i]
		k := w.Key()
		why := c.waiting[k]
		if why == "" {
			continue
		}
		action := Create
		for j := range c.a.NFTables {
			if c.a.NFTables[j].Key() == k {
				action = Update
				if foreignTable(w, &c.a.NFTables[j]) {
					// In conflict (nft), not waiting.
					action = ""
				}
				break
			}
		}
		if action == "" {
			continue
		}
		if c.plan.Waiting == nil {
			c.plan.Waiting = map[model.NftTableKey]string{}
		}
		c.plan.Waiting[k] = why
		c.plan.Pending = append(c.plan.Pending, Op{Action: action, Kind: KindNftTable, ID: tableID(k), Table: k, Reason: why})
	}
}

// foreignTable reports whether the kernel's table h of a declared table w
// is someone else's, which the file does not adopt.
func foreignTable(w, h *model.NftTable) bool { return h != nil && !h.Owned && !w.Adopt }

// nftStructural says why a table cannot be changed in place: a set's type or
// flags, or a chain's type, hook, priority or device changed. The kernel changes
// neither, and deleting a set or chain first means deleting every rule that
// refers to it, so the table is rebuilt whole, in the same atomic batch.
func nftStructural(w, h *model.NftTable) string {
	for i := range w.Objects {
		wo := &w.Objects[i]
		if ho := h.Object(wo.Name); ho != nil && !sameObject(wo, ho) {
			return fmt.Sprintf("object %s changes", wo.Name)
		}
	}
	for i := range w.Sets {
		ws := &w.Sets[i]
		if hs := h.Set(ws.Name); hs != nil && !model.SameSpec(ws, hs) {
			return fmt.Sprintf("set %s changes from %q to %q", ws.Name, hs.Spec(), ws.Spec())
		}
	}
	for i := range w.Chains {
		wc := &w.Chains[i]
		hc := h.Chain(wc.Name)
		if hc == nil {
			continue
		}
		if hc.Base() != wc.Base() || hc.Type != wc.Type || hc.Hook != wc.Hook || hc.Priority != wc.Priority || hc.Device != wc.Device {
			hs, ws := *hc, *wc
			hs.Policy, ws.Policy = "", ""
			return fmt.Sprintf("chain %s changes from %q to %q", wc.Name, hs.Spec(), ws.Spec())
		}
	}
	return ""
}

func tableID(k model.NftTableKey) string { return k.String() }

// sameObject reports whether a declared object and a kernel one are the
// same: as nft compiled it, stateful values aside.
func sameObject(w, h *model.NftObject) bool {
	return w.Raw != nil && h.Raw != nil && w.Raw.Fingerprint == h.Raw.Fingerprint
}

func objID(k model.NftTableKey, name string) string { return k.String() + " object " + name }

func (p *nftPlan) createObj(k model.NftTableKey, o *model.NftObject) {
	p.objs = append(p.objs, Op{Action: Create, Kind: KindNftObj, Table: k, ID: objID(k, o.Name), Summary: o.Decl,
		NFT: []model.NftOp{{Op: model.NftAddObj, Table: k, Obj: o}}})
}

func (p *nftPlan) createTable(w *model.NftTable, action Action, why string) {
	k := w.Key()
	ops := []model.NftOp{{Op: model.NftAddTable, Table: k}}
	if action == Replace {
		ops = []model.NftOp{{Op: model.NftDelTable, Table: k}, {Op: model.NftAddTable, Table: k}}
	}
	p.tables = append(p.tables, Op{Action: action, Kind: KindNftTable, Table: k, ID: tableID(k), Reason: why, NFT: ops})
	for i := range w.Objects {
		p.createObj(k, &w.Objects[i])
	}
	for i := range w.Sets {
		p.createSet(k, &w.Sets[i])
	}
	for i := range w.Chains {
		wc := &w.Chains[i]
		p.chains = append(p.chains, Op{Action: Create, Kind: KindNftChain, Table: k, ID: chainID(k, wc.Name), Summary: wc.Spec(),
			NFT: []model.NftOp{{Op: model.NftAddChain, Table: k, Chain: wc}}})
		for j := range wc.Rules {
			p.rules = append(p.rules, ruleOp(Create, k, wc, j, &wc.Rules[j], 0, 0))
		}
	}
}

func setID(k model.NftTableKey, name string) string   { return k.String() + " set " + name }
func chainID(k model.NftTableKey, name string) string { return k.String() + " chain " + name }

func (p *nftPlan) createSet(k model.NftTableKey, s *model.NftSet) {
	summary := s.Spec()
	if s.Decl != "" {
		summary = s.Decl
	}
	p.sets = append(p.sets, Op{Action: Create, Kind: KindNftSet, Table: k, ID: setID(k, s.Name), Summary: summary,
		NFT: []model.NftOp{{Op: model.NftAddSet, Table: k, Set: s}}})
	if s.Raw != nil && len(s.Raw.Elems) > 0 {
		p.sets = append(p.sets, rawElemsOp(Create, k, s, s.Raw.Elems))
		return
	}
	if len(s.Elems) > 0 {
		p.filled = append(p.filled, filledSet{at: len(p.sets) - 1, key: k, set: s})
	}
}

func elemIDPrefix(k model.NftTableKey, s *model.NftSet) string {
	return k.Family + " " + k.Name + " set " + s.Name + " element "
}

func elemOp(a Action, k model.NftTableKey, s *model.NftSet, e model.NftElem) Op {
	op := model.NftAddElems
	if a == Delete {
		op = model.NftDelElems
	}
	return Op{Action: a, Kind: KindNftElem, Table: k, ID: elemIDPrefix(k, s) + model.FormatNftElem(s.Type, s.Interval, e),
		NFT: []model.NftOp{{Op: op, Table: k, Set: s, Elems: []model.NftElem{e}}}}
}

func ruleOp(a Action, k model.NftTableKey, c *model.NftChain, pos int, r *model.NftRule, handle, before uint64) Op {
	op := model.NftOp{Table: k, Chain: c, Rule: r, Handle: handle, Before: before}
	switch a {
	case Create:
		op.Op = model.NftAddRule
	case Update:
		op.Op = model.NftReplaceRule
	case Delete:
		op.Op = model.NftDelRule
	}
	id := fmt.Sprintf("%s rule %d", chainID(k, c.Name), pos+1)
	if a == Delete {
		id = fmt.Sprintf("%s rule handle %d", chainID(k, c.Name), handle)
	}
	return Op{Action: a, Kind: KindNftRule, Table: k, ID: id, Summary: r.Label(), NFT: []model.NftOp{op}}
}

// sameRule reports whether a desired rule and a kernel rule are the same
// rule: their fingerprints are known and equal.
func sameRule(w, h *model.NftRule) bool { return w.Fingerprint != "" && w.Fingerprint == h.Fingerprint }

// rawElemsOp adds (or deletes) elements of a set nft declared: one op for
// all of them, since only nft can name them.
func rawElemsOp(a Action, k model.NftTableKey, s *model.NftSet, elems [][]byte) Op {
	op := model.NftAddElems
	verb := "added"
	if a == Delete {
		op, verb = model.NftDelElems, "deleted"
	}
	return Op{Action: a, Kind: KindNftElem, Table: k, ID: setID(k, s.Name) + " elements", Summary: fmt.Sprintf("%d %s", len(elems), verb),
		NFT: []model.NftOp{{Op: op, Table: k, Set: s, RawElems: elems}}}
}

// rawElemsDiff diffs the elements of a set nft declared by their
// fingerprints.
func (p *nftPlan) rawElemsDiff(k model.NftTableKey, ws, hs *model.NftSet) {
	if ws.Raw == nil || hs.Raw == nil {
		return
	}
	have := make(map[string]bool, len(hs.Raw.ElemFPs))
	for _, fp := range hs.Raw.ElemFPs {
		have[fp] = true
	}
	want := make(map[string]bool, len(ws.Raw.ElemFPs))
	var wantKeys map[string]bool
	if hs.Raw.Keys != nil {
		// The file's keys, for the elements the kernel may hold under
		// the same key with another value (a map's, from the packet
		// path): the file's element takes its place, deleted and added in
		// one batch, where adding it beside fails with EEXIST. The
		// compiled set has no keys when nft compiled it without the rule
		// that fills it (the rule was intact in the kernel, or memoised).
		wantKeys = make(map[string]bool, len(ws.Raw.Elems))
		for i, e := range ws.Raw.Elems {
			if ws.Raw.Keys != nil {
				wantKeys[ws.Raw.Keys[i]] = true
			} else if id, err := nftwire.ElemIdentity(e); err == nil {
				wantKeys[id] = true
			}
		}
	}
	var adds, dels [][]byte
	for i, fp := range ws.Raw.ElemFPs {
		want[fp] = true
		if !have[fp] {
			adds = append(adds, ws.Raw.Elems[i])
		}
	}
	for i, fp := range hs.Raw.ElemFPs {
		if want[fp] {
			continue
		}
		// An element the kernel will delete by itself, or one the
		// packet path added, is the kernel's (docs/config.md, "State
		// the kernel changes by itself"): left alone, unless the file
		// declares its key, whose element then takes its place.
		if (hs.Raw.Expiring != nil && hs.Raw.Expiring[i] || hs.FromPackets) && !(wantKeys != nil && wantKeys[hs.Raw.Keys[i]]) {
			continue
		}
		dels = append(dels, hs.Raw.Elems[i])
	}
	// A dump lists an interval set's elements from the highest key down
	// (the kernel's rbtree), each interval's end before its start; the
	// kernel takes an interval's elements to add or delete in the order
	// nft writes them, lowest first, the start before its end: the
	// other order is refused (ENOENT deleting, EEXIST adding). In a set
	// of any other kind the order is nobody's.
	slices.Reverse(adds)
	slices.Reverse(dels)
	if len(dels) > 0 {
		p.elems = append(p.elems, rawElemsOp(Delete, k, ws, dels))
	}
	if len(adds) > 0 {
		p.elems = append(p.elems, rawElemsOp(Create, k, ws, adds))
	}
}

func (p *nftPlan) updateTable(w, h *model.NftTable) {
	k := w.Key()
	for i := range w.Objects {
		if h.Object(w.Objects[i].Name) == nil {
			p.createObj(k, &w.Objects[i])
		}
	}
	for i := range h.Objects {
		ho := &h.Objects[i]
		if w.Object(ho.Name) == nil {
			p.objDels = append(p.objDels, Op{Action: Delete, Kind: KindNftObj, Table: k, ID: objID(k, ho.Name),
				NFT: []model.NftOp{{Op: model.NftDelObj, Table: k, Obj: ho}}})
		}
	}
	for i := range w.Sets {
		ws := &w.Sets[i]
		hs := h.Set(ws.Name)
		if hs == nil {
			p.createSet(k, ws)
			continue
		}
		if ws.Decl != "" {
			p.rawElemsDiff(k, ws, hs)
			continue
		}
		// Both lists are sorted by key: one merge walk, no maps (a set
		// may hold 100k elements and change by one).
		//
		// The elements the kernel holds with an expiration (Expiring),
		// and in a set the packet path fills those it holds that the
		// file does not declare, are the kernel's (docs/config.md, "State
		// the kernel changes by itself"): left alone. A declared element
		// the kernel holds with an expiration is put back without one.
		he, we := hs.Elems, ws.Elems
		var dels, adds []Op
		for i, j := 0, 0; i < len(he) || j < len(we); {
			switch {
			case j == len(we) || i < len(he) && he[i].Key < we[j].Key:
				if !hs.FromPackets {
					dels = append(dels, elemOp(Delete, k, ws, he[i]))
				}
				i++
			case i == len(he) || we[j].Key < he[i].Key:
				if x, ok := slices.BinarySearchFunc(hs.Expiring, we[j].Key, func(e model.NftElem, key string) int {
					return strings.Compare(e.Key, key)
				}); ok {
					dels = append(dels, elemOp(Delete, k, ws, hs.Expiring[x]))
				}
				adds = append(adds, elemOp(Create, k, ws, we[j]))
				j++
			default:
				if he[i] != we[j] {
					dels = append(dels, elemOp(Delete, k, ws, he[i]))
					adds = append(adds, elemOp(Create, k, ws, we[j]))
				}
				i++
				j++
			}
		}
		p.elems = append(append(p.elems, dels...), adds...)
	}
	for i := range h.Sets {
		hs := &h.Sets[i]
		if w.Set(hs.Name) == nil {
			p.setDels = append(p.setDels, Op{Action: Delete, Kind: KindNftSet, Table: k, ID: setID(k, hs.Name),
				NFT: []model.NftOp{{Op: model.NftDelSet, Table: k, Set: hs}}})
		}
	}
	for i := range w.Chains {
		wc := &w.Chains[i]
		hc := h.Chain(wc.Name)
		if hc == nil {
			p.chains = append(p.chains, Op{Action: Create, Kind: KindNftChain, Table: k, ID: chainID(k, wc.Name), Summary: wc.Spec(),
				NFT: []model.NftOp{{Op: model.NftAddChain, Table: k, Chain: wc}}})
			for j := range wc.Rules {
				p.rules = append(p.rules, ruleOp(Create, k, wc, j, &wc.Rules[j], 0, 0))
			}
			continue
		}
		if wc.Base() && hc.Policy != wc.Policy {
			p.chains = append(p.chains, Op{Action: Update, Kind: KindNftChain, Table: k, ID: chainID(k, wc.Name),
				Changes: []Change{{Field: "policy", From: hc.Policy, To: wc.Policy}},
				NFT:     []model.NftOp{{Op: model.NftAddChain, Table: k, Chain: wc}}})
		}
		p.rules = append(p.rules, ruleDiff(k, wc, hc.Rules)...)
	}
	for i := range h.Chains {
		hc := &h.Chains[i]
		if w.Chain(hc.Name) != nil {
			continue
		}
		for j := range hc.Rules {
			p.rules = append(p.rules, ruleOp(Delete, k, hc, j, &hc.Rules[j], hc.Rules[j].Handle, 0))
		}
		p.chainDels = append(p.chainDels, Op{Action: Delete, Kind: KindNftChain, Table: k, ID: chainID(k, hc.Name),
			NFT: []model.NftOp{{Op: model.NftDelChain, Table: k, Chain: hc}}})
	}
}

// ruleDiff turns the chain's actual rules into the desired list with the
// fewest writes: the longest common subsequence of equal rules is kept as
// is (handles and counters unchanged); in each gap between kept rules,
// actual rules are replaced in place by desired ones pairwise, extra
// desired rules are inserted before the next kept rule (or appended), extra
// actual rules are deleted. Two rules are equal when their bytecode is, in
// normal form (their fingerprints): what nft makes of the text, whatever
// its wording, so a rule reworded to the same meaning is not written, and a
// rule edited behind our back is put back.
func ruleDiff(k model.NftTableKey, c *model.NftChain, have []model.NftRule) []Op {
	want := c.Rules
	n, m := len(want), len(have)
	// The common head and tail are kept whole: they belong to a longest
	// common subsequence, and leaving them out of the table keeps a change
	// among many rules linear rather than quadratic in the chain's length.
	head := 0
	for head < n && head < m && sameRule(&want[head], &have[head]) {
		head++
	}
	tail := 0
	for tail < n-head && tail < m-head && sameRule(&want[n-1-tail], &have[m-1-tail]) {
		tail++
	}
	wEnd, hEnd := n-tail, m-tail
	// lcs at (i-head, j-head) is the LCS length of want[i:wEnd] and
	// have[j:hEnd], for head <= i <= wEnd and head <= j <= hEnd.
	cols := hEnd - head + 1
	lcs := make([]int32, (wEnd-head+1)*cols)
	at := func(i, j int) *int32 { return &lcs[(i-head)*cols+j-head] }
	for i := wEnd - 1; i >= head; i-- {
		for j := hEnd - 1; j >= head; j-- {
			switch {
			case sameRule(&want[i], &have[j]):
				*at(i, j) = *at(i+1, j+1) + 1
			case *at(i+1, j) >= *at(i, j+1):
				*at(i, j) = *at(i+1, j)
			default:
				*at(i, j) = *at(i, j+1)
			}
		}
	}
	var dels, repl, ins []Op
	gapW, gapH := []int{}, []int{}
	flush := func(anchor uint64) {
		for x := 0; x < len(gapW) || x < len(gapH); x++ {
			switch {
			case x < len(gapW) && x < len(gapH):
				wr, hr := &want[gapW[x]], &have[gapH[x]]
				op := ruleOp(Update, k, c, gapW[x], wr, hr.Handle, 0)
				op.Summary = ""
				op.Changes = []Change{{Field: fmt.Sprintf("handle %d", hr.Handle), From: hr.Label(), To: wr.Text}}
				repl = append(repl, op)
			case x < len(gapW):
				ins = append(ins, ruleOp(Create, k, c, gapW[x], &want[gapW[x]], 0, anchor))
			default:
				dels = append(dels, ruleOp(Delete, k, c, 0, &have[gapH[x]], have[gapH[x]].Handle, 0))
			}
		}
		gapW, gapH = gapW[:0], gapH[:0]
	}
	i, j := head, head
	for i < wEnd || j < hEnd {
		switch {
		case i < wEnd && j < hEnd && sameRule(&want[i], &have[j]):
			flush(have[j].Handle)
			i++
			j++
		case j < hEnd && (i == wEnd || *at(i, j+1) >= *at(i+1, j)):
			gapH = append(gapH, j)
			j++
		default:
			gapW = append(gapW, i)
			i++
		}
	}
	for ; j < m; j++ {
		flush(have[j].Handle)
	}
	flush(0)
	return append(append(dels, repl...), ins...)
}
