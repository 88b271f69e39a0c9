package nftwire

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// nfgenmsgLen is the netfilter header before a message's attributes:
// family, version, resource id.
const nfgenmsgLen = 4

func split(data []byte) (byte, []Attr, error) {
	if len(data) < nfgenmsgLen {
		return 0, nil, fmt.Errorf("%w: message of %d bytes", ErrMalformed, len(data))
	}
	as, err := ParseAttrs(data[nfgenmsgLen:])
	return data[0], as, err
}

// Table is a table as the kernel dumps it.
type Table struct {
	Family byte
	Name   string
	Handle uint64
	Flags  uint32
}

// DecodeTable decodes a NEWTABLE message's payload.
func DecodeTable(data []byte) (Table, error) {
	fam, as, err := split(data)
	if err != nil {
		return Table{}, err
	}
	t := Table{Family: fam}
	for _, a := range as {
		switch a.Kind() {
		case nftaTableName:
			t.Name = cstring(a.Data)
		case nftaTableHandle:
			t.Handle, _ = be64(a.Data)
		case nftaTableFlags:
			t.Flags, _ = be32(a.Data)
		}
	}
	return t, nil
}

// Hook is a base chain's hook.
type Hook struct {
	Num      uint32
	Priority int32
	Dev      string
}

// Chain is a chain as the kernel dumps it.
type Chain struct {
	Table, Name string
	Handle      uint64
	Hook        *Hook // nil for a regular chain
	Type        string
	Policy      uint32 // NF_DROP 0, NF_ACCEPT 1
	Flags       uint32
}

// DecodeChain decodes a NEWCHAIN message's payload.
func DecodeChain(data []byte) (Chain, error) {
	_, as, err := split(data)
	if err != nil {
		return Chain{}, err
	}
	var c Chain
	for _, a := range as {
		switch a.Kind() {
		case nftaChainTable:
			c.Table = cstring(a.Data)
		case nftaChainName:
			c.Name = cstring(a.Data)
		case nftaChainHandle:
			c.Handle, _ = be64(a.Data)
		case nftaChainType:
			c.Type = cstring(a.Data)
		case nftaChainPolicy:
			c.Policy, _ = be32(a.Data)
		case nftaChainFlags:
			c.Flags, _ = be32(a.Data)
		case nftaChainHook:
			hs, err := ParseAttrs(a.Data)
			if err != nil {
				return Chain{}, fmt.Errorf("chain %s hook: %w", c.Name, err)
			}
			h := &Hook{}
			for _, x := range hs {
				switch x.Kind() {
				case nftaHookHooknum:
					h.Num, _ = be32(x.Data)
				case nftaHookPriority:
					p, _ := be32(x.Data)
					h.Priority = int32(p)
				case nftaHookDev:
					h.Dev = cstring(x.Data)
				}
			}
			c.Hook = h
		}
	}
	return c, nil
}

// Rule is a rule as the kernel dumps it: its expressions and user data as
// the bytes of their attributes.
type Rule struct {
	Table, Chain string
	Handle       uint64
	// Exprs is the payload of NFTA_RULE_EXPRESSIONS: a list of
	// NFTA_LIST_ELEM, each an expression's name and data.
	Exprs []byte
	UData []byte
	// Compat is NFTA_RULE_COMPAT (iptables-nft's xt matches): nft never
	// writes it, so a rule with it is never one of ours.
	Compat []byte
}

// DecodeRule decodes a NEWRULE message's payload.
func DecodeRule(data []byte) (Rule, error) {
	_, as, err := split(data)
	if err != nil {
		return Rule{}, err
	}
	var r Rule
	for _, a := range as {
		switch a.Kind() {
		case nftaRuleTable:
			r.Table = cstring(a.Data)
		case nftaRuleChain:
			r.Chain = cstring(a.Data)
		case nftaRuleHandle:
			r.Handle, _ = be64(a.Data)
		case nftaRuleExprs:
			r.Exprs = a.Data
		case nftaRuleUserdata:
			r.UData = a.Data
		case nftaRuleCompat:
			r.Compat = a.Data
		}
	}
	return r, nil
}

// Set is a set as the kernel dumps it. Raw is the message's attributes, of
// which the other fields are decoded (and which JSON carries).
type Set struct {
	Raw                        []byte
	Table, Name                string `json:"-"`
	Handle                     uint64 `json:"-"`
	Flags                      uint32 `json:"-"`
	KeyType, KeyLen            uint32 `json:"-"`
	DataType, DataLen, ObjType uint32 `json:"-"`
	Timeout                    uint64 `json:"-"` // milliseconds
	UData                      []byte `json:"-"`
	attrs                      []Attr
}

// UnmarshalJSON decodes a set from its Raw attributes.
func (s *Set) UnmarshalJSON(b []byte) error {
	var w struct{ Raw []byte }
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	d, err := decodeSet(w.Raw)
	if err != nil {
		return err
	}
	*s = d
	return nil
}

// Anonymous reports whether the set belongs to one rule (NFT_SET_ANONYMOUS).
func (s *Set) Anonymous() bool { return s.Flags&SetAnonymous != 0 }

// DecodeSet decodes a NEWSET message's payload.
func DecodeSet(data []byte) (Set, error) {
	if len(data) < nfgenmsgLen {
		return Set{}, fmt.Errorf("%w: message of %d bytes", ErrMalformed, len(data))
	}
	return decodeSet(data[nfgenmsgLen:])
}

func decodeSet(raw []byte) (Set, error) {
	as, err := ParseAttrs(raw)
	if err != nil {
		return Set{}, err
	}
	s := Set{Raw: raw, attrs: as}
	for _, a := range as {
		switch a.Kind() {
		case nftaSetTable:
			s.Table = cstring(a.Data)
		case nftaSetName:
			s.Name = cstring(a.Data)
		case nftaSetHandle:
			s.Handle, _ = be64(a.Data)
		case nftaSetFlags:
			s.Flags, _ = be32(a.Data)
		case nftaSetKeyType:
			s.KeyType, _ = be32(a.Data)
		case nftaSetKeyLen:
			s.KeyLen, _ = be32(a.Data)
		case nftaSetDataType:
			s.DataType, _ = be32(a.Data)
		case nftaSetDataLen:
			s.DataLen, _ = be32(a.Data)
		case nftaSetObjType:
			s.ObjType, _ = be32(a.Data)
		case nftaSetTimeout:
			s.Timeout, _ = be64(a.Data)
		case nftaSetUserdata:
			s.UData = a.Data
		}
	}
	return s, nil
}

// HasExtras reports whether the set has a part only a declaration in nft's
// words gives it: expressions, a size or concatenation (a non-empty
// description), a policy, a garbage collection interval.
func (s *Set) HasExtras() bool {
	for _, a := range s.attrs {
		switch a.Kind() {
		case nftaSetExpr, nftaSetExpressions, nftaSetPolicy, nftaSetGCInterval:
			return true
		case nftaSetDesc:
			if len(a.Data) > 0 {
				return true
			}
		}
	}
	return false
}

// Spec is what a NEWSET needs to make the set again, in the order the
// kernel dumped it: the attributes a NEWSET takes, but its table, name and
// id. A dump carries more that a NEWSET does not take (the handle; from
// Linux 6.13 the backend, NFTA_SET_TYPE, and the element count,
// NFTA_SET_COUNT), which a kernel to come may add to: the list is of what
// to keep.
func (s *Set) Spec() []byte {
	var out []byte
	for _, a := range s.attrs {
		switch a.Kind() {
		case nftaSetFlags, nftaSetKeyType, nftaSetKeyLen, nftaSetDataType, nftaSetDataLen, nftaSetPolicy, nftaSetDesc,
			nftaSetTimeout, nftaSetGCInterval, nftaSetUserdata, nftaSetObjType, nftaSetExpr, nftaSetExpressions:
			out = AppendAttr(out, a.Type, a.Data)
		}
	}
	return out
}

// DecodeElems decodes a NEWSETELEM message's payload: the set's name, and
// each element's attributes (the payload of its NFTA_LIST_ELEM) to fn. The
// element bytes alias data.
func DecodeElems(data []byte, fn func(elem []byte) error) (string, error) {
	if len(data) < nfgenmsgLen {
		return "", fmt.Errorf("%w: message of %d bytes", ErrMalformed, len(data))
	}
	set := ""
	err := each(data[nfgenmsgLen:], func(typ uint16, v []byte) error {
		switch typ & nlaTypeMask {
		case nftaSetElemListSet:
			set = cstring(v)
		case nftaSetElemListElems:
			return each(v, func(typ uint16, e []byte) error {
				if typ&nlaTypeMask != nftaListElem {
					return nil
				}
				return fn(e)
			})
		}
		return nil
	})
	return set, err
}

// ElemKey returns an element's key and flags, without allocating: the path
// of the elements of big sets.
func ElemKey(elem []byte) (key []byte, flags uint32, err error) {
	err = each(elem, func(typ uint16, v []byte) error {
		switch typ & nlaTypeMask {
		case nftaSetElemKey:
			return each(v, func(typ uint16, d []byte) error {
				if typ&nlaTypeMask == nftaDataValue {
					key = d
				}
				return nil
			})
		case nftaSetElemFlags:
			flags, _ = be32(v)
		}
		return nil
	})
	return key, flags, err
}

// each calls fn for every attribute of b, without allocating.
func each(b []byte, fn func(typ uint16, v []byte) error) error {
	for len(b) > 0 {
		if len(b) < nlaHdrLen {
			return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b))
		}
		l := int(binary.NativeEndian.Uint16(b))
		if l < nlaHdrLen || l > len(b) {
			return fmt.Errorf("%w: attribute of length %d in %d bytes", ErrMalformed, l, len(b))
		}
		if err := fn(binary.NativeEndian.Uint16(b[2:]), b[nlaHdrLen:l]); err != nil {
			return err
		}
		n := align(l)
		if n > len(b) {
			n = len(b)
		}
		b = b[n:]
	}
	return nil
}

// Obj is a named stateful object (counter, quota, limit, ct helper…).
type Obj struct {
	Table, Name string
	Handle      uint64
	Type        uint32
	Data, UData []byte
}

// DecodeObj decodes a NEWOBJ message's payload.
func DecodeObj(data []byte) (Obj, error) {
	_, as, err := split(data)
	if err != nil {
		return Obj{}, err
	}
	var o Obj
	for _, a := range as {
		switch a.Kind() {
		case nftaObjTable:
			o.Table = cstring(a.Data)
		case nftaObjName:
			o.Name = cstring(a.Data)
		case nftaObjHandle:
			o.Handle, _ = be64(a.Data)
		case nftaObjType:
			o.Type, _ = be32(a.Data)
		case nftaObjData:
			o.Data = a.Data
		case nftaObjUserdata:
			o.UData = a.Data
		}
	}
	return o, nil
}

// DecodeGen returns a NEWGEN message's generation.
func DecodeGen(data []byte) (uint32, error) {
	_, as, err := split(data)
	if err != nil {
		return 0, err
	}
	if a, ok := find(as, nftaGenID); ok {
		if v, ok := be32(a.Data); ok {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: generation message without its id", ErrMalformed)
}

// TableDump is a table as the kernel holds it, every object as dumped.
type TableDump struct {
	Table  Table
	Chains []Chain
	// Rules are in the kernel's order: chain by chain, each chain's rules
	// in order.
	Rules []Rule
	// Sets are every set of the table, the anonymous ones of its rules
	// included.
	Sets []Set
	// Elems holds the elements of the sets Read was asked to read, by
	// set name: each element's attributes.
	Elems map[string][][]byte
	Objs  []Obj
}

// Set returns the set of a name, nil if none.
func (d *TableDump) Set(name string) *Set {
	for i := range d.Sets {
		if d.Sets[i].Name == name {
			return &d.Sets[i]
		}
	}
	return nil
}
