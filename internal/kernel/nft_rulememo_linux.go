package kernel

import (
	"bytes"
	"slices"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// ruleMemo keeps, for the rules of one table, what reading a rule's bytes
// found: the sets its expressions name, those it changes from the packet
// path, and the shape its marker is checked against. A daemon's pass reads
// every rule of every table it owns, and most are byte for byte the ones
// it read the pass before: parsing, normalising and hashing a thousand
// rules again costs more than the dump (bench-nft, one rule changed among
// 1,000). The key is the whole expression list, so a rule whose bytes
// differ in any way (a counter's value included) is read afresh; only
// entries met in the last read are kept, so the memo never outgrows the
// tables.
type ruleMemo struct {
	last map[string]*ruleRead // from the last read of the table
	next map[string]*ruleRead // met in the read under way
}

// ruleMemos are the tables' memos.
type ruleMemos map[model.NftTableKey]*ruleMemo

// ruleRead is what one expression list was found to hold.
type ruleRead struct {
	refs, dynsets []string
	// shape is the shape fingerprint for the user data and anonymous set
	// specs below ("" until computed).
	shape string
	udata []byte
	specs []model.NftAnonSet
}

func newRuleMemo(last *ruleMemo, rules int) *ruleMemo {
	m := &ruleMemo{next: make(map[string]*ruleRead, rules)}
	if last != nil {
		m.last = last.next
	}
	return m
}

func (m *ruleMemo) nextOrNil() map[string]*ruleRead {
	if m == nil {
		return nil
	}
	return m.next
}

// reserve sizes the memo for a read of n rules, before the first.
func (m *ruleMemo) reserve(n int) {
	if len(m.next) == 0 && n > len(m.last) {
		m.next = make(map[string]*ruleRead, n)
	}
}

// read returns what exprs holds, parsing it when no earlier read met it.
func (m *ruleMemo) read(exprs []byte) (*ruleRead, error) {
	if r, ok := m.next[string(exprs)]; ok {
		return r, nil
	}
	r, ok := m.last[string(exprs)]
	if !ok {
		refs, dynsets, err := nftwire.SetRefs(exprs)
		if err != nil {
			return nil, err
		}
		r = &ruleRead{refs: refs, dynsets: dynsets}
	}
	m.next[string(exprs)] = r
	return r, nil
}

// shape returns the rule's shape fingerprint, computed once for the same
// expressions, user data and anonymous set specs.
func (r *ruleRead) shapeOf(exprs, udata []byte, specs []model.NftAnonSet) (string, error) {
	if r.shape != "" && bytes.Equal(r.udata, udata) && slices.EqualFunc(r.specs, specs, func(a, b model.NftAnonSet) bool {
		return a.Name == b.Name && bytes.Equal(a.Spec, b.Spec)
	}) {
		return r.shape, nil
	}
	shape, err := nftwire.ShapeFingerprintOf(exprs, udata, r.refs, specs)
	if err != nil {
		return "", err
	}
	r.shape, r.udata, r.specs = shape, bytes.Clone(udata), specs
	return shape, nil
}
