package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// Hook numbers per family: ip, ip6, inet and bridge share NF_INET_*; arp and
// netdev number their own.
var nftHookNums = map[string]map[string]uint32{
	"inet":   {"prerouting": 0, "input": 1, "forward": 2, "output": 3, "postrouting": 4},
	"arp":    {"input": 0, "output": 1},
	"netdev": {"ingress": 0, "egress": 1},
}

func nftHooks(family string) map[string]uint32 {
	if h, ok := nftHookNums[family]; ok {
		return h
	}
	return nftHookNums["inet"]
}

// nftSetType is one of netreconcile's own set key types: nft's datatype
// number and the key's length.
type nftSetType struct {
	id, len uint32
}

var nftSetTypes = map[string]nftSetType{
	model.NftIPv4: {7, 4}, model.NftIPv6: {8, 16}, model.NftProto: {12, 1}, model.NftService: {13, 2}, model.NftMark: {19, 4},
}

// nftSetUData is the user data google/nftables gave the sets netreconcile
// made before (libnftnl's NFTNL_UDATA_SET_KEYBYTEORDER: 2, big endian, for
// interval sets; 1, host order, for marks), kept so that those sets list
// as before.
func nftSetUData(s *model.NftSet) []byte {
	order := uint32(0)
	switch {
	case s.Interval:
		order = 2
	case s.Type == model.NftMark:
		order = 1
	default:
		return nil
	}
	return binary.NativeEndian.AppendUint32([]byte{0, 4}, order)
}

// nft returns the nftables socket, opened on first use in the kernel's
// namespace.
func (k *Netlink) nft() (*nftwire.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.nftConn != nil {
		return k.nftConn, nil
	}
	fd := -1
	if k.ns.IsOpen() {
		fd = int(k.ns)
	}
	c, err := nftwire.Dial(fd)
	if err != nil {
		return nil, err
	}
	k.nftConn = c
	return c, nil
}

// nftGen returns the ruleset generation: the kernel counts every committed
// nftables transaction, whoever made it.
func (k *Netlink) nftGen() (uint32, error) {
	c, err := k.nft()
	if err != nil {
		return 0, err
	}
	return c.Gen()
}

// NFTTables lists every table of the namespace.
func (k *Netlink) NFTTables() ([]model.NftTableKey, error) {
	c, err := k.nft()
	if err != nil {
		return nil, err
	}
	ts, err := c.ListTables()
	if err != nil {
		return nil, err
	}
	out := make([]model.NftTableKey, 0, len(ts))
	for _, t := range ts {
		// A family nft has no name for here (none today) is not one the
		// model can name either: left out.
		if name := nftwire.FamilyName(t.Family); isFamily(name) {
			out = append(out, model.NftTableKey{Family: name, Name: t.Name})
		}
	}
	return out, nil
}

// NFTTableHandle returns the kernel's handle of a table, 0 when it does not
// exist.
func (k *Netlink) NFTTableHandle(key model.NftTableKey) (uint64, error) {
	t, err := k.nftTableInfo(key)
	return t.Handle, err
}

// nftTableInfo returns a table's handle (0 when it does not exist) and
// flags.
func (k *Netlink) nftTableInfo(key model.NftTableKey) (nftwire.Table, error) {
	c, err := k.nft()
	if err != nil {
		return nftwire.Table{}, err
	}
	fam, ok := nftwire.Family(key.Family)
	if !ok {
		return nftwire.Table{}, fmt.Errorf("nftables table %s: unknown family", key)
	}
	t, err := c.GetTable(fam, key.Name)
	if err != nil {
		return nftwire.Table{}, fmt.Errorf("get nftables table %s: %w", key, err)
	}
	return t, nil
}

func (k *Netlink) closeNFT() {
	if k.nftConn != nil {
		_ = k.nftConn.Close()
	}
}

// NFTTable reads one table whole.
func (k *Netlink) NFTTable(key model.NftTableKey) (*model.NftTable, error) {
	c, err := k.nft()
	if err != nil {
		return nil, err
	}
	fam, ok := nftwire.Family(key.Family)
	if !ok {
		return nil, fmt.Errorf("nftables table %s: unknown family", key)
	}
	// The generation first, then the table: the cache then stands for a
	// ruleset at gen that the whole read saw (checked again at the end).
	// An absent table validates the cache too, so that the batch that
	// creates it, its sets and their elements is carried forward (applied)
	// rather than dumped again: reading the generation after the table
	// would let a commit in between make a table this read calls absent.
	gen, err := c.Gen()
	if err != nil {
		return nil, err
	}
	if !k.nftElems.valid || k.nftElems.gen != gen {
		k.nftElems.reset(gen)
	}
	if k.nftRules == nil {
		k.nftRules = ruleMemos{}
	}
	if t := k.carriedNFTTable(c, fam, key, gen); t != nil {
		return t, nil
	}
	delete(k.nftReads, key)
	var d *nftwire.TableDump
	// The sets a rule changes from the packet path (add @s, update @s,
	// delete @s) change without a commit, whatever their flags (the
	// kernel takes such a rule on a set without the dynamic flag).
	fromPackets := map[string]bool{}
	cached := map[string][]model.NftElem{}
	last := k.nftRules[key]
	memo := newRuleMemo(last, len(last.nextOrNil()))
	// What the memo found for each rule, by its index in the dump: the
	// rules are read again below.
	var reads []*ruleRead
	for attempt := 0; ; attempt++ {
		rulesSeen := false
		reads = reads[:0]
		d, err = c.ReadTable(fam, key.Name, func(d *nftwire.TableDump, s *nftwire.Set) bool {
			if !rulesSeen {
				rulesSeen = true
				memo.reserve(len(d.Rules))
				reads = slices.Grow(reads, len(d.Rules))
				for _, r := range d.Rules {
					rr, err := memo.read(r.Exprs)
					if err == nil {
						for _, n := range rr.dynsets {
							fromPackets[n] = true
						}
					}
					reads = append(reads, rr)
				}
			}
			if s.Anonymous() {
				// Read for the rules that need them only (below).
				return false
			}
			if fromPackets[s.Name] {
				s.DropDynsetSize()
			}
			if !ownSet(s) {
				return true
			}
			// Elements of timeout sets expire, and dynamic sets change
			// from the packet path, without a new generation: such sets
			// are read every time.
			if s.Flags&(nftwire.SetTimeout|nftwire.SetEval) != 0 || fromPackets[s.Name] {
				return true
			}
			if es, ok := k.nftElems.sets[nftSetKey{key, s.Name}]; ok {
				cached[s.Name] = es
				return false
			}
			return true
		})
		if err == nil || !errors.Is(err, unix.EINTR) || attempt == dumpRetries {
			break
		}
		clear(fromPackets)
		clear(cached)
	}
	if err != nil {
		return nil, err
	}
	if d == nil {
		delete(k.nftRules, key)
		if after, err := c.Gen(); err != nil || after != gen {
			k.nftElems.valid = false
		}
		return nil, nil
	}
	t := &model.NftTable{Family: key.Family, Name: key.Name, Handle: d.Table.Handle, Dormant: d.Table.Flags&unix.NFT_TABLE_F_DORMANT != 0}
	for _, ch := range d.Chains {
		mc := model.NftChain{Name: ch.Name}
		if ch.Hook != nil {
			for name, n := range nftHooks(key.Family) {
				if n == ch.Hook.Num {
					mc.Hook = name
				}
			}
			mc.Type = ch.Type
			mc.Priority = int(ch.Hook.Priority)
			mc.Device = ch.Hook.Dev
			mc.Policy = "accept"
			if ch.Policy == 0 {
				mc.Policy = "drop"
			}
		}
		t.Chains = append(t.Chains, mc)
	}
	chainAt := map[string]int{}
	for j := range t.Chains {
		chainAt[t.Chains[j].Name] = j
	}
	for i := range d.Rules {
		r := &d.Rules[i]
		ci, ok := chainAt[r.Chain]
		if !ok {
			continue
		}
		var rr *ruleRead
		if len(reads) == len(d.Rules) {
			rr = reads[i]
		}
		mr, err := k.readRule(c, fam, key, d, r, memo, rr)
		if err != nil {
			return nil, fmt.Errorf("read rule %d of chain %s in table %s: %w", r.Handle, r.Chain, key, err)
		}
		t.Chains[ci].Rules = append(t.Chains[ci].Rules, mr)
	}
	for i := range d.Objs {
		o := &d.Objs[i]
		raw, err := nftwire.RawObj(o)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", key, err)
		}
		t.Objects = append(t.Objects, model.NftObject{Name: o.Name, Raw: raw})
	}
	read := map[nftSetKey][]model.NftElem{}
	// Whether anything in the table changes without a commit (elements
	// that expire or come from the packet path): such a table is never
	// carried past our batch (keepNFTRead).
	stable := len(fromPackets) == 0
	for i := range d.Sets {
		s := &d.Sets[i]
		if s.Anonymous() {
			continue
		}
		if s.Flags&(nftwire.SetTimeout|nftwire.SetEval) != 0 {
			stable = false
		}
		if fromPackets[s.Name] {
			// The kernel gave it a size when our rule was added: it
			// reads as the file declares it (docs/config.md, "State the
			// kernel changes by itself").
			s.DropDynsetSize()
		}
		if !ownSet(s) || hasCatchall(d.Elems[s.Name]) {
			// A set nft declared: its bytes, compared with what nft
			// compiles from the file. A set of our own types that
			// holds nft's catch-all element is one too: the file
			// declares such a set for nft (desired.nftDeclared), and
			// our own element path has no key for it.
			raw, err := nftwire.RawSet(s, d.Elems[s.Name], fromPackets[s.Name])
			if err != nil {
				return nil, fmt.Errorf("table %s: %w", key, err)
			}
			t.Sets = append(t.Sets, model.NftSet{Name: s.Name, Map: s.Flags&nftwire.SetMap != 0, Raw: raw,
				FromPackets: s.Flags&nftwire.SetEval != 0 || fromPackets[s.Name]})
			continue
		}
		ms := modelSet(s)
		ms.FromPackets = fromPackets[s.Name]
		volatile := s.Flags&(nftwire.SetTimeout|nftwire.SetEval) != 0 || fromPackets[s.Name]
		if es, ok := cached[s.Name]; ok {
			ms.Elems = es
		} else {
			es, expiring, err := modelElems(s, d.Elems[s.Name])
			if err != nil {
				return nil, fmt.Errorf("table %s: set %s: %w", key, s.Name, err)
			}
			ms.Elems, ms.Expiring = es, expiring
			if !volatile {
				read[nftSetKey{key, s.Name}] = es
			}
		}
		t.Sets = append(t.Sets, *ms)
	}
	k.nftRules[key] = memo
	// Keep what was read only if nothing committed during the read.
	if after, err := c.Gen(); err == nil && after == gen {
		for sk, es := range read {
			k.nftElems.sets[sk] = es
		}
		k.keepNFTRead(key, gen, t, stable)
	} else {
		k.nftElems.valid = false
	}
	return t, nil
}

// readRule reads a rule's fingerprint. The anonymous sets' elements are
// dumped only for a rule that is not as netreconcile wrote it: a rule whose
// shape (its expressions and the specs of its anonymous sets) is the one
// its marker records has the elements written, since an anonymous set of
// nft's takes none once its rule holds it. A table of a thousand rules
// with anonymous sets is otherwise a thousand dumps a pass.
func (k *Netlink) readRule(c *nftwire.Conn, fam byte, key model.NftTableKey, d *nftwire.TableDump, r *nftwire.Rule, memo *ruleMemo, rr *ruleRead) (model.NftRule, error) {
	ud, m := nftwire.SplitUData(r.UData)
	mr := model.NftRule{Handle: r.Handle, Key: m.Key, Marked: m.Fingerprint, Text: m.Text}
	if rr == nil {
		var err error
		if rr, err = memo.read(r.Exprs); err != nil {
			return mr, err
		}
	}
	var specs []model.NftAnonSet
	for _, n := range rr.refs {
		if s := d.Set(n); s != nil && s.Anonymous() {
			specs = append(specs, model.NftAnonSet{Name: n, Spec: s.Spec()})
		}
	}
	if m.Shape != "" && len(r.Compat) == 0 {
		shape, err := rr.shapeOf(r.Exprs, ud, specs)
		if err != nil {
			return mr, err
		}
		if shape == m.Shape {
			mr.Fingerprint = m.Fingerprint
			return mr, nil
		}
	}
	for _, s := range specs {
		if _, ok := d.Elems[s.Name]; ok {
			continue
		}
		es, err := c.Elements(fam, key.Name, s.Name)
		if err != nil {
			return mr, err
		}
		d.Elems[s.Name] = es
	}
	comp, _, err := nftwire.Compile(r, func(name string) (*nftwire.Set, [][]byte) { return d.Set(name), d.Elems[name] })
	if err != nil {
		return mr, err
	}
	mr.Fingerprint = comp.Fingerprint
	return mr, nil
}

// ownSet reports whether a set is one netreconcile makes itself: one of
// its five key types, flags interval and timeout at most, and nothing else
// a set nft declared would carry (data, expressions, a size, a policy,
// user data of its own such as typeof or a comment). Any other set is
// held as bytes (model.NftRawSet).
func ownSet(s *nftwire.Set) bool {
	typ := ""
	for name, st := range nftSetTypes {
		if st.id == s.KeyType && st.len == s.KeyLen {
			typ = name
		}
	}
	if typ == "" || s.Flags&^(nftwire.SetInterval|nftwire.SetTimeout) != 0 || s.DataType != 0 || s.DataLen != 0 || s.ObjType != 0 {
		return false
	}
	return onlyByteOrder(s.UData) && !s.HasExtras()
}

// hasCatchall reports whether a set's elements include the catch-all.
func hasCatchall(raw [][]byte) bool {
	for _, e := range raw {
		if _, flags, err := nftwire.ElemKey(e); err == nil && flags&nftwire.ElemCatchall != 0 {
			return true
		}
	}
	return false
}

// onlyByteOrder reports whether a set's user data holds nothing but the
// key's byte order (NFTNL_UDATA_SET_KEYBYTEORDER), which nft and
// google/nftables write for listing and the kernel does not read: a set
// nft made with `type ipv4_addr` is then one of netreconcile's own types.
func onlyByteOrder(ud []byte) bool {
	for len(ud) > 0 {
		if len(ud) < 2 || int(ud[1])+2 > len(ud) || ud[0] != 0 {
			return false
		}
		ud = ud[2+int(ud[1]):]
	}
	return true
}

// modelSet is a set netreconcile makes itself as the model holds one.
func modelSet(s *nftwire.Set) *model.NftSet {
	ms := &model.NftSet{Name: s.Name, Interval: s.Flags&nftwire.SetInterval != 0, Timeout: s.Flags&nftwire.SetTimeout != 0,
		DefaultTimeout: time.Duration(s.Timeout) * time.Millisecond}
	for name, st := range nftSetTypes {
		if st.id == s.KeyType && st.len == s.KeyLen {
			ms.Type = name
		}
	}
	return ms
}

// modelElems decodes a set's elements: those that stay, and those that
// carry an expiration (a set with the timeout flag only; netreconcile's
// own sets cannot have both timeout and interval, so those are single
// values). Interval sets hold start and end elements; the dump order is
// the tree's. Sort by key, ends before starts at one key (adjacent
// ranges), and pair each start with the end that follows it. An end
// without a start (nft writes one at 0) closes nothing.
func modelElems(s *nftwire.Set, raw [][]byte) (elems, expiring []model.NftElem, err error) {
	type elem struct {
		key string
		end bool
	}
	els := make([]elem, 0, len(raw))
	timeouts := s.Flags&nftwire.SetTimeout != 0
	for _, e := range raw {
		k, flags, err := nftwire.ElemKey(e)
		if err != nil {
			return nil, nil, err
		}
		if timeouts && s.Flags&nftwire.SetInterval == 0 {
			exp, err := nftwire.ElemExpires(e)
			if err != nil {
				return nil, nil, err
			}
			if exp {
				expiring = append(expiring, model.NftElem{Key: string(k)})
				continue
			}
		}
		els = append(els, elem{string(k), flags&nftwire.ElemIntervalEnd != 0})
	}
	model.SortNftElems(expiring)
	var out []model.NftElem
	if s.Flags&nftwire.SetInterval == 0 {
		out = make([]model.NftElem, 0, len(els))
		for _, e := range els {
			out = append(out, model.NftElem{Key: e.key})
		}
		model.SortNftElems(out)
		return out, expiring, nil
	}
	sort.Slice(els, func(i, j int) bool {
		if els[i].key != els[j].key {
			return els[i].key < els[j].key
		}
		return els[i].end && !els[j].end
	})
	var open *string
	for i := range els {
		e := &els[i]
		switch {
		case !e.end:
			if open != nil {
				out = append(out, model.NftElem{Key: *open, End: e.key})
			}
			open = &e.key
		case open != nil:
			out = append(out, model.NftElem{Key: *open, End: e.key})
			open = nil
		}
	}
	if open != nil {
		out = append(out, model.NftElem{Key: *open})
	}
	return out, expiring, nil
}

// describeOp names an op for an error.
func describeOp(op *model.NftOp) string {
	switch {
	case op.Rule != nil:
		return fmt.Sprintf("rule %q of chain %s", op.Rule.Text, op.Chain.Name)
	case op.Set != nil:
		return "set " + op.Set.Name
	case op.Chain != nil:
		return "chain " + op.Chain.Name
	case op.Obj != nil:
		return "object " + op.Obj.Name
	}
	return "table " + op.Table.String()
}

// NFTApply sends the ops as one batch.
func (k *Netlink) NFTApply(ops []model.NftOp) error {
	if len(ops) == 0 {
		return nil
	}
	c, err := k.nft()
	if err != nil {
		return err
	}
	var b nftwire.Batch
	// The sets the batch's rules change from the packet path: the cache
	// cannot follow them (applied).
	fromPackets := map[nftSetKey]bool{}
	// ends[i] is the number of messages after op i: a message the kernel
	// refuses is named by its op.
	ends := make([]int, len(ops))
	for i := range ops {
		if i > 0 {
			ends[i-1] = b.Len()
		}
		op := &ops[i]
		fam, ok := nftwire.Family(op.Table.Family)
		if !ok {
			return fmt.Errorf("nftables table %s: unknown family", op.Table)
		}
		table := op.Table.Name
		switch op.Op {
		case model.NftAddTable:
			b.AddTable(fam, table)
		case model.NftDelTable:
			b.DelTable(fam, table)
		case model.NftAddSet:
			if op.Set.Raw != nil {
				b.AddRawSet(fam, table, op.Set.Name, op.Set.Raw.Spec)
				continue
			}
			if op.Set.Decl != "" {
				return fmt.Errorf("add set %s to table %s: not compiled", op.Set.Name, op.Table)
			}
			st, ok := nftSetTypes[op.Set.Type]
			if !ok {
				return fmt.Errorf("add set %s to table %s: unknown type %s", op.Set.Name, op.Table, op.Set.Type)
			}
			spec := nftwire.SetSpec{Name: op.Set.Name, KeyType: st.id, KeyLen: st.len, UData: nftSetUData(op.Set),
				Timeout: uint64(op.Set.DefaultTimeout.Milliseconds())}
			if op.Set.Interval {
				spec.Flags |= nftwire.SetInterval
			}
			if op.Set.Timeout {
				spec.Flags |= nftwire.SetTimeout
			}
			b.AddSet(fam, table, spec)
		case model.NftDelSet:
			b.DelSet(fam, table, op.Set.Name)
		case model.NftAddElems, model.NftDelElems:
			if op.RawElems != nil {
				b.RawElems(op.Op == model.NftAddElems, fam, table, op.Set.Name, 0, op.RawElems)
				continue
			}
			b.Elems(op.Op == model.NftAddElems, fam, table, op.Set.Name, op.Set.Interval, op.Elems)
		case model.NftAddObj:
			if op.Obj.Raw == nil {
				return fmt.Errorf("add object %s to table %s: not compiled", op.Obj.Name, op.Table)
			}
			if err := b.AddObj(fam, table, op.Obj.Name, op.Obj.Raw.Type, op.Obj.Raw.Data, op.Obj.Raw.UData); err != nil {
				return err
			}
		case model.NftDelObj:
			b.DelObj(fam, table, op.Obj.Name, op.Obj.Raw.Type)
		case model.NftAddChain:
			spec := nftwire.ChainSpec{Name: op.Chain.Name}
			if op.Chain.Base() {
				spec.Hook = &nftwire.Hook{Num: nftHooks(op.Table.Family)[op.Chain.Hook], Priority: int32(op.Chain.Priority), Dev: op.Chain.Device}
				spec.Type = op.Chain.Type
				policy := uint32(1) // NF_ACCEPT
				if op.Chain.Policy == "drop" {
					policy = 0
				}
				spec.Policy = &policy
			}
			b.AddChain(fam, table, spec)
		case model.NftDelChain:
			b.DelChain(fam, table, op.Chain.Name)
		case model.NftAddRule, model.NftReplaceRule:
			r := op.Rule
			if r.Compiled == nil {
				return fmt.Errorf("rule %q in chain %s of table %s: not compiled", r.Text, op.Chain.Name, op.Table)
			}
			names, err := nftwire.DynsetSets(r.Compiled.Exprs)
			if err != nil {
				return fmt.Errorf("rule %q in chain %s of table %s: %w", r.Text, op.Chain.Name, op.Table, err)
			}
			for _, n := range names {
				fromPackets[nftSetKey{op.Table, n}] = true
			}
			ud, err := nftwire.AppendMarker(r.Compiled.UData, nftwire.Marker{Key: r.Key, Fingerprint: r.Compiled.Fingerprint, Shape: r.Compiled.ShapeFP, Text: r.Text})
			if err != nil {
				return fmt.Errorf("rule %q in chain %s of table %s: marker: %w", r.Text, op.Chain.Name, op.Table, err)
			}
			mode, at := nftwire.Append, uint64(0)
			switch {
			case op.Op == model.NftReplaceRule:
				mode, at = nftwire.Replace, op.Handle
			case op.Before != 0:
				mode, at = nftwire.Insert, op.Before
			}
			if err := b.AddRule(fam, table, op.Chain.Name, r.Compiled, ud, mode, at); err != nil {
				return err
			}
		case model.NftDelRule:
			b.DelRule(fam, table, op.Chain.Name, op.Handle)
		default:
			return fmt.Errorf("nftables: unknown op %d", op.Op)
		}
	}
	ends[len(ends)-1] = b.Len()
	k.writes.Add(uint64(b.Len()))
	before, gerr := c.Gen()
	if gerr != nil {
		return gerr
	}
	if err := c.Send(&b); err != nil {
		k.nftElems.valid = false
		k.forgetNFTReads()
		var be *nftwire.BatchError
		if errors.As(err, &be) && be.Index >= 0 {
			i := sort.SearchInts(ends, be.Index+1)
			if i < len(ops) {
				return fmt.Errorf("nftables batch of %d messages: %s: %w", b.Len(), describeOp(&ops[i]), err)
			}
		}
		return fmt.Errorf("nftables batch of %d messages: %w", b.Len(), err)
	}
	if gen, err := c.Gen(); err == nil {
		k.nftElems.applied(ops, fromPackets, before, gen)
		k.carryNFTReads(ops, before, gen)
	} else {
		k.nftElems.valid = false
		k.forgetNFTReads()
	}
	return nil
}

func isFamily(name string) bool {
	_, ok := nftwire.Family(name)
	return ok
}

// NFTRuleDependencyFree reads a rule by its handle and returns its
// expressions' dependency-free form (nftwire.DependencyFree), the anonymous
// sets it refers to named by their order; ok is false when the rule is
// gone.
func (k *Netlink) NFTRuleDependencyFree(key model.NftTableKey, chain string, handle uint64) (form []byte, ok bool, err error) {
	c, err := k.nft()
	if err != nil {
		return nil, false, err
	}
	fam, known := nftwire.Family(key.Family)
	if !known {
		return nil, false, fmt.Errorf("nftables table %s: unknown family", key)
	}
	r, ok, err := c.GetRule(fam, key.Name, chain, handle)
	if err != nil || !ok {
		return nil, false, err
	}
	refs, err := nftwire.ReferencedSets(r.Exprs)
	if err != nil {
		return nil, false, fmt.Errorf("rule %d of chain %s in nftables table %s: %w", handle, chain, key, err)
	}
	var anon []string
	for _, n := range refs {
		s, found, err := c.GetSet(fam, key.Name, n)
		if err != nil {
			return nil, false, err
		}
		if found && s.Anonymous() {
			anon = append(anon, n)
		}
	}
	form, err = nftwire.DependencyFree(r.Exprs, anon)
	if err != nil {
		return nil, false, fmt.Errorf("rule %d of chain %s in nftables table %s: %w", handle, chain, key, err)
	}
	return form, true, nil
}
