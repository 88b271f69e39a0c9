package kerneltest

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"syscall"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// nftTable is a table as the kernel holds it: handles and the rule handle
// counter (per table, as in the kernel).
type nftTable struct {
	t          model.NftTable
	nextHandle uint64
}

func (t *nftTable) clone() *nftTable {
	c := &nftTable{t: cloneNftTable(&t.t), nextHandle: t.nextHandle}
	return c
}

func cloneNftTable(t *model.NftTable) model.NftTable {
	c := *t
	c.Sets = make([]model.NftSet, len(t.Sets))
	for i, s := range t.Sets {
		s.Elems = append([]model.NftElem(nil), s.Elems...)
		c.Sets[i] = s
	}
	c.Objects = append([]model.NftObject(nil), t.Objects...)
	for i, s := range c.Sets {
		if s.Raw != nil {
			r := *s.Raw
			r.Elems = append([][]byte(nil), r.Elems...)
			r.ElemFPs = append([]string(nil), r.ElemFPs...)
			c.Sets[i].Raw = &r
		}
	}
	c.Chains = make([]model.NftChain, len(t.Chains))
	for i, ch := range t.Chains {
		ch.Rules = append([]model.NftRule(nil), ch.Rules...)
		c.Chains[i] = ch
	}
	return c
}

// PutNftTable stores a table as it is (its Handle, its rules' handles),
// without a write: foreign or previously applied state.
func (f *Kernel) PutNftTable(t model.NftTable) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &nftTable{t: cloneNftTable(&t)}
	c.t.Owned, c.t.Adopt, c.t.Origin = false, false, ""
	if c.t.Handle == 0 {
		f.nftHandle++
		c.t.Handle = f.nftHandle
	}
	f.nftHandle = max(f.nftHandle, c.t.Handle)
	for i := range c.t.Chains {
		for _, r := range c.t.Chains[i].Rules {
			c.nextHandle = max(c.nextHandle, r.Handle)
		}
	}
	f.nft[t.Key()] = c
}

func (f *Kernel) nftUnsupported() error {
	if f.NoNFTables {
		return fmt.Errorf("nftables: %w", kernel.ErrUnsupported)
	}
	return nil
}

// NFTTable reads a table; nil when it does not exist.
func (f *Kernel) NFTTable(k model.NftTableKey) (*model.NftTable, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.nftUnsupported(); err != nil {
		return nil, err
	}
	if err := f.injected(CallNFTTable, k.String()); err != nil {
		return nil, fmt.Errorf("read nftables table %s: %w", k, err)
	}
	t := f.nft[k]
	if t == nil {
		return nil, nil
	}
	c := cloneNftTable(&t.t)
	return &c, nil
}

// NFTTables lists every table.
func (f *Kernel) NFTTables() ([]model.NftTableKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.nftUnsupported(); err != nil {
		return nil, err
	}
	if err := f.injected(CallNFTTables, ""); err != nil {
		return nil, fmt.Errorf("list nftables tables: %w", err)
	}
	out := make([]model.NftTableKey, 0, len(f.nft))
	for k := range f.nft {
		out = append(out, k)
	}
	return out, nil
}

// NFTTableHandle returns a table's handle, 0 when it does not exist.
func (f *Kernel) NFTTableHandle(k model.NftTableKey) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.nftUnsupported(); err != nil {
		return 0, err
	}
	if err := f.injected(CallNFTTableHandle, k.String()); err != nil {
		return 0, fmt.Errorf("read nftables table %s: %w", k, err)
	}
	if t := f.nft[k]; t != nil {
		return t.t.Handle, nil
	}
	return 0, nil
}

// NFTApply applies the ops as one transaction: on a copy of the tables it
// touches, committed only if every op succeeds. An injected failure refuses
// the batch whole; its object is the first op's table.
func (f *Kernel) NFTApply(ops []model.NftOp) error {
	if len(ops) == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.nftUnsupported(); err != nil {
		return err
	}
	f.writes += uint64(len(ops))
	id := ops[0].Table.String()
	if err := f.injected(CallNFTApply, id); err != nil {
		return fmt.Errorf("nftables batch of %d messages: %w", len(ops), err)
	}
	work := map[model.NftTableKey]*nftTable{}
	get := func(k model.NftTableKey) *nftTable {
		if t, ok := work[k]; ok {
			return t
		}
		if t := f.nft[k]; t != nil {
			work[k] = t.clone()
		} else {
			work[k] = nil
		}
		return work[k]
	}
	handle := f.nftHandle
	for i := range ops {
		op := &ops[i]
		t := get(op.Table)
		if err := nftOp(t, op, func(t *nftTable) { work[op.Table] = t }, &handle); err != nil {
			return fmt.Errorf("nftables batch of %d messages: op %d on table %s: %w", len(ops), i+1, op.Table, err)
		}
	}
	for k, t := range work {
		if t == nil {
			delete(f.nft, k)
		} else {
			f.nft[k] = t
		}
	}
	f.nftHandle = handle
	f.logged(CallNFTApply, id)
	return nil
}

// refs finds what a rule's text refers to: sets (@name) and chains (jump,
// goto).
var (
	setRefRE   = regexp.MustCompile(`@([A-Za-z0-9_]+)`)
	chainRefRE = regexp.MustCompile(`\b(?:jump|goto) ([A-Za-z0-9_]+)`)
	objRefRE   = regexp.MustCompile(`\bname "?([A-Za-z0-9_]+)`)
)

// rawElems adds or deletes elements of a set nft declared, by their fake
// fingerprints.
func rawElems(family string, s *model.NftSet, op *model.NftOp) error {
	if s.Raw == nil {
		return syscall.EINVAL
	}
	for _, e := range op.RawElems {
		fp := Fingerprint(family, string(e))
		i := slices.Index(s.Raw.ElemFPs, fp)
		switch {
		case op.Op == model.NftDelElems && i < 0:
			return syscall.ENOENT
		case op.Op == model.NftDelElems:
			s.Raw.Elems = slices.Delete(s.Raw.Elems, i, i+1)
			s.Raw.ElemFPs = slices.Delete(s.Raw.ElemFPs, i, i+1)
		case i < 0:
			s.Raw.Elems = append(s.Raw.Elems, e)
			s.Raw.ElemFPs = append(s.Raw.ElemFPs, fp)
		}
	}
	return nil
}

func refersTo(re *regexp.Regexp, rules []model.NftRule, name string) bool {
	for _, r := range rules {
		for _, m := range re.FindAllStringSubmatch(r.Text, -1) {
			if m[1] == name {
				return true
			}
		}
	}
	return false
}

func (t *nftTable) anyRuleRefers(re *regexp.Regexp, name string) bool {
	for _, c := range t.t.Chains {
		if refersTo(re, c.Rules, name) {
			return true
		}
	}
	return false
}

func (t *nftTable) chainIndex(name string) int {
	for i := range t.t.Chains {
		if t.t.Chains[i].Name == name {
			return i
		}
	}
	return -1
}

func ruleIndex(c *model.NftChain, handle uint64) int {
	for i := range c.Rules {
		if c.Rules[i].Handle == handle {
			return i
		}
	}
	return -1
}

// nftOp applies one op to t (nil: no such table) with the kernel's checks:
// ENOENT for what is missing, EBUSY for a chain or set still in use.
func nftOp(t *nftTable, op *model.NftOp, set func(*nftTable), handle *uint64) error {
	if op.Op == model.NftAddTable {
		if t == nil {
			*handle++
			set(&nftTable{t: model.NftTable{Family: op.Table.Family, Name: op.Table.Name, Handle: *handle}})
			return nil
		}
		t.t.Dormant = false // a NEWTABLE without flags clears them
		return nil
	}
	if t == nil {
		return syscall.ENOENT
	}
	switch op.Op {
	case model.NftDelTable:
		set(nil)
	case model.NftAddSet:
		if s := t.t.Set(op.Set.Name); s != nil {
			if s.Spec() != op.Set.Spec() {
				return syscall.EEXIST
			}
			return nil
		}
		s := *op.Set
		s.Elems, s.From, s.Origin = nil, nil, ""
		s.Decl, s.ElemTexts, s.ElemSources = "", nil, nil
		if s.Raw != nil {
			// As the kernel holds it: the spec, no element yet.
			s.Raw = &model.NftRawSet{Spec: s.Raw.Spec, SpecFP: s.Raw.SpecFP}
		}
		t.t.Sets = append(t.t.Sets, s)
	case model.NftDelSet:
		i := -1
		for j := range t.t.Sets {
			if t.t.Sets[j].Name == op.Set.Name {
				i = j
			}
		}
		if i < 0 {
			return syscall.ENOENT
		}
		if t.anyRuleRefers(setRefRE, op.Set.Name) {
			return syscall.EBUSY
		}
		t.t.Sets = append(t.t.Sets[:i], t.t.Sets[i+1:]...)
	case model.NftAddElems, model.NftDelElems:
		s := t.t.Set(op.Set.Name)
		if s == nil {
			return syscall.ENOENT
		}
		if op.RawElems != nil {
			return rawElems(t.t.Family, s, op)
		}
		have := map[string]model.NftElem{}
		for _, e := range s.Elems {
			have[e.Key] = e
		}
		for _, e := range op.Elems {
			if op.Op == model.NftDelElems {
				if _, ok := have[e.Key]; !ok {
					return syscall.ENOENT
				}
				delete(have, e.Key)
				continue
			}
			have[e.Key] = e
		}
		s.Elems = s.Elems[:0]
		for _, e := range have {
			s.Elems = append(s.Elems, e)
		}
		model.SortNftElems(s.Elems)
	case model.NftAddObj:
		if o := t.t.Object(op.Obj.Name); o != nil {
			if o.Raw.Fingerprint != op.Obj.Raw.Fingerprint {
				return syscall.EEXIST
			}
			return nil
		}
		// Listed as it was declared: the fake's nft lists an object in
		// the words that made it (show prints them).
		t.t.Objects = append(t.t.Objects, model.NftObject{Name: op.Obj.Name, Raw: op.Obj.Raw, Decl: op.Obj.Decl})
	case model.NftDelObj:
		for i := range t.t.Objects {
			if t.t.Objects[i].Name == op.Obj.Name {
				if t.anyRuleRefers(objRefRE, op.Obj.Name) {
					return syscall.EBUSY
				}
				t.t.Objects = append(t.t.Objects[:i], t.t.Objects[i+1:]...)
				return nil
			}
		}
		return syscall.ENOENT
	case model.NftAddChain:
		if i := t.chainIndex(op.Chain.Name); i >= 0 {
			c := &t.t.Chains[i]
			if c.Base() != op.Chain.Base() || c.Type != op.Chain.Type || c.Hook != op.Chain.Hook || c.Priority != op.Chain.Priority || c.Device != op.Chain.Device {
				return syscall.EOPNOTSUPP
			}
			c.Policy = op.Chain.Policy
			return nil
		}
		c := *op.Chain
		c.Rules, c.Origin = nil, ""
		t.t.Chains = append(t.t.Chains, c)
	case model.NftDelChain:
		i := t.chainIndex(op.Chain.Name)
		if i < 0 {
			return syscall.ENOENT
		}
		if len(t.t.Chains[i].Rules) > 0 || t.anyRuleRefers(chainRefRE, op.Chain.Name) {
			return syscall.EBUSY
		}
		t.t.Chains = append(t.t.Chains[:i], t.t.Chains[i+1:]...)
	case model.NftAddRule, model.NftReplaceRule, model.NftDelRule:
		i := t.chainIndex(op.Chain.Name)
		if i < 0 {
			return syscall.ENOENT
		}
		c := &t.t.Chains[i]
		if op.Op == model.NftDelRule {
			j := ruleIndex(c, op.Handle)
			if j < 0 {
				return syscall.ENOENT
			}
			c.Rules = append(c.Rules[:j], c.Rules[j+1:]...)
			return nil
		}
		if op.Rule.Compiled == nil {
			return fmt.Errorf("rule %q not compiled: %w", op.Rule.Text, syscall.EINVAL)
		}
		// As the real kernel's read gives it: the bytecode's
		// fingerprint, and the marker (key, fingerprint written, text).
		r := model.NftRule{Text: op.Rule.Text, Key: op.Rule.Key, Fingerprint: op.Rule.Compiled.Fingerprint, Marked: op.Rule.Compiled.Fingerprint}
		for _, m := range setRefRE.FindAllStringSubmatch(r.Text, -1) {
			if t.t.Set(m[1]) == nil {
				return syscall.ENOENT
			}
		}
		for _, m := range chainRefRE.FindAllStringSubmatch(r.Text, -1) {
			if t.chainIndex(m[1]) < 0 {
				return syscall.ENOENT
			}
		}
		if op.Op == model.NftReplaceRule {
			j := ruleIndex(c, op.Handle)
			if j < 0 {
				return syscall.ENOENT
			}
			r.Handle = op.Handle
			c.Rules[j] = r
			return nil
		}
		t.nextHandle++
		r.Handle = t.nextHandle
		if op.Before == 0 {
			c.Rules = append(c.Rules, r)
			return nil
		}
		j := ruleIndex(c, op.Before)
		if j < 0 {
			return syscall.ENOENT
		}
		c.Rules = append(c.Rules[:j], append([]model.NftRule{r}, c.Rules[j:]...)...)
	default:
		return fmt.Errorf("unknown op %d: %w", op.Op, syscall.EINVAL)
	}
	return nil
}

func sortedNftKeys(m map[model.NftTableKey]*nftTable) []model.NftTableKey {
	ks := make([]model.NftTableKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Less(ks[j]) })
	return ks
}
