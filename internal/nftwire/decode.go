package nftwire

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
)

// nfgenmsgLen is the netfilter header before a message's attributes:
// family, version, resource id.
const nfgenmsgLen = 4

// body returns a message's family and a decoder of its attributes.
func body(data []byte) (byte, *netlink.AttributeDecoder, error) {
	if len(data) < nfgenmsgLen {
		return 0, nil, fmt.Errorf("%w: message of %d bytes", ErrMalformed, len(data))
	}
	ad, err := decoder(data[nfgenmsgLen:])
	return data[0], ad, err
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
	fam, ad, err := body(data)
	if err != nil {
		return Table{}, err
	}
	t := Table{Family: fam}
	for ad.Next() {
		switch ad.Type() {
		case nftaTableName:
			t.Name = ad.String()
		case nftaTableHandle:
			t.Handle = ad.Uint64()
		case nftaTableFlags:
			t.Flags = ad.Uint32()
		}
	}
	return t, malformed(ad.Err())
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
	_, ad, err := body(data)
	if err != nil {
		return Chain{}, err
	}
	var c Chain
	for ad.Next() {
		switch ad.Type() {
		case nftaChainTable:
			c.Table = ad.String()
		case nftaChainName:
			c.Name = ad.String()
		case nftaChainHandle:
			c.Handle = ad.Uint64()
		case nftaChainType:
			c.Type = ad.String()
		case nftaChainPolicy:
			c.Policy = ad.Uint32()
		case nftaChainFlags:
			c.Flags = ad.Uint32()
		case nftaChainHook:
			h := &Hook{}
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					switch nad.Type() {
					case nftaHookHooknum:
						h.Num = nad.Uint32()
					case nftaHookPriority:
						h.Priority = nad.Int32()
					case nftaHookDev:
						h.Dev = nad.String()
					}
				}
				return nil
			})
			c.Hook = h
		}
	}
	if err := ad.Err(); err != nil {
		return Chain{}, fmt.Errorf("chain %s: %w", c.Name, malformed(err))
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
	if len(data) < nfgenmsgLen {
		return Rule{}, fmt.Errorf("%w: message of %d bytes", ErrMalformed, len(data))
	}
	// In place, as parseAttrs reads (a table's every rule comes through
	// here): the expressions and user data are the message's bytes.
	var r Rule
	err := each(data[nfgenmsgLen:], func(typ uint16, v []byte) error {
		switch typ {
		case nftaRuleTable:
			r.Table = nlenc.String(v)
		case nftaRuleChain:
			r.Chain = nlenc.String(v)
		case nftaRuleHandle:
			if len(v) != 8 {
				return fmt.Errorf("%w: rule handle of %d bytes", ErrMalformed, len(v))
			}
			r.Handle = binary.BigEndian.Uint64(v)
		case nftaRuleExprs:
			r.Exprs = v
		case nftaRuleUserdata:
			r.UData = v
		case nftaRuleCompat:
			r.Compat = v
		}
		return nil
	})
	return r, err
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
	attrs                      []attr
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
	as, err := parseAttrs(raw)
	if err != nil {
		return Set{}, err
	}
	s := Set{Raw: raw, attrs: as}
	for _, a := range as {
		switch kind(a) {
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
		switch kind(a) {
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

// DynsetSize is the size the kernel gives a set without one when a rule
// that adds to it or updates it from the packet path (dynset) is added.
const DynsetSize = 0xffff

// DropDynsetSize takes out of the set the size the kernel gave it for a
// rule that changes it from the packet path (a description holding the
// size DynsetSize and nothing else, made empty again): the set then reads
// as declared, and
// equal to what the file and nft make. It reports whether it did.
func (s *Set) DropDynsetSize() bool {
	for i, a := range s.attrs {
		if kind(a) != nftaSetDesc {
			continue
		}
		only := true
		size := uint32(0)
		_ = each(a.Data, func(typ uint16, v []byte) error {
			if typ == nftaSetDescSize {
				size, _ = be32(v)
			} else {
				only = false
			}
			return nil
		})
		if !only || size != DynsetSize {
			return false
		}
		// The kernel dumps a set of no size with an empty description.
		s.attrs = slices.Clone(s.attrs)
		s.attrs[i] = attr{Type: a.Type, Data: []byte{}}
		return true
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
	// Laid out as marshal would the attributes kept, in one allocation:
	// a table's read takes the spec of each anonymous set its rules use.
	n := 0
	for _, a := range s.attrs {
		if specAttr(a) {
			n += nlaHeaderLen + nlaAlign(len(a.Data))
		}
	}
	out := make([]byte, n)
	i := 0
	for _, a := range s.attrs {
		if !specAttr(a) {
			continue
		}
		// The attributes were decoded from one message: each fits again.
		binary.NativeEndian.PutUint16(out[i:], uint16(nlaHeaderLen+len(a.Data)))
		binary.NativeEndian.PutUint16(out[i+2:], a.Type)
		copy(out[i+nlaHeaderLen:], a.Data)
		i += nlaHeaderLen + nlaAlign(len(a.Data))
	}
	return out
}

// specAttr reports whether a set's attribute is part of its Spec.
func specAttr(a attr) bool {
	switch kind(a) {
	case nftaSetFlags, nftaSetKeyType, nftaSetKeyLen, nftaSetDataType, nftaSetDataLen, nftaSetPolicy, nftaSetDesc,
		nftaSetTimeout, nftaSetGCInterval, nftaSetUserdata, nftaSetObjType, nftaSetExpr, nftaSetExpressions:
		return true
	}
	return false
}

// DecodeElems decodes a NEWSETELEM message's payload: the set's name, and
// each element's attributes (the payload of its NFTA_LIST_ELEM) to fn, a
// copy fn may keep.
func DecodeElems(data []byte, fn func(elem []byte) error) (string, error) {
	if len(data) < nfgenmsgLen {
		return "", fmt.Errorf("%w: message of %d bytes", ErrMalformed, len(data))
	}
	set := ""
	err := each(data[nfgenmsgLen:], func(typ uint16, v []byte) error {
		switch typ {
		case nftaSetElemListSet:
			set = cstring(v)
		case nftaSetElemListElems:
			return each(v, func(typ uint16, e []byte) error {
				if typ != nftaListElem {
					return nil
				}
				return fn(e)
			})
		}
		return nil
	})
	return set, err
}

// ElemKey returns an element's key and flags: the path of the elements of
// big sets.
func ElemKey(elem []byte) (key []byte, flags uint32, err error) {
	err = each(elem, func(typ uint16, v []byte) error {
		switch typ {
		case nftaSetElemKey:
			return each(v, func(typ uint16, d []byte) error {
				if typ == nftaDataValue {
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

// ElemExpires reports whether an element carries an expiration: it was
// added with a timeout (its own or the set's default), and the kernel
// deletes it when that runs out.
func ElemExpires(elem []byte) (bool, error) {
	found := false
	err := each(elem, func(typ uint16, _ []byte) error {
		if typ == nftaSetElemExpiration {
			found = true
		}
		return nil
	})
	return found, err
}

// ElemIdentity is what the kernel identifies an element by: its key, its
// key end and its flags (an interval's end is another element than its
// start), in the element's bytes. Two elements of one set with the same
// identity cannot both be in it, whatever their data or timeouts.
func ElemIdentity(elem []byte) (string, error) {
	as, err := parseAttrs(elem)
	if err != nil {
		return "", err
	}
	out := make([]attr, 0, 3)
	for _, a := range as {
		switch kind(a) {
		case nftaSetElemKey, nftaSetElemKeyEnd, nftaSetElemFlags:
			out = append(out, a)
		}
	}
	b, err := marshal(out)
	return string(b), err
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
	_, ad, err := body(data)
	if err != nil {
		return Obj{}, err
	}
	var o Obj
	for ad.Next() {
		switch ad.Type() {
		case nftaObjTable:
			o.Table = ad.String()
		case nftaObjName:
			o.Name = ad.String()
		case nftaObjHandle:
			o.Handle = ad.Uint64()
		case nftaObjType:
			o.Type = ad.Uint32()
		case nftaObjData:
			o.Data = ad.Bytes()
		case nftaObjUserdata:
			o.UData = ad.Bytes()
		}
	}
	return o, malformed(ad.Err())
}

// DecodeGen returns a NEWGEN message's generation.
func DecodeGen(data []byte) (uint32, error) {
	_, ad, err := body(data)
	if err != nil {
		return 0, err
	}
	for ad.Next() {
		if ad.Type() == nftaGenID {
			if g := ad.Uint32(); ad.Err() == nil {
				return g, nil
			}
		}
	}
	if err := ad.Err(); err != nil {
		return 0, malformed(err)
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

	// setAt indexes Sets by name, for Set: a rule with an anonymous set
	// looks its set up, and a table of a thousand such rules has a
	// thousand sets.
	setAt map[string]int
}

// Set returns the set of a name, nil if none.
func (d *TableDump) Set(name string) *Set {
	if i, ok := d.setAt[name]; ok && i < len(d.Sets) && d.Sets[i].Name == name {
		return &d.Sets[i]
	}
	// Not indexed (or Sets changed since): index again. Set names are
	// unique in a table.
	if len(d.setAt) != len(d.Sets) {
		d.setAt = make(map[string]int, len(d.Sets))
		for i := range d.Sets {
			d.setAt[d.Sets[i].Name] = i
		}
		if i, ok := d.setAt[name]; ok {
			return &d.Sets[i]
		}
		return nil
	}
	for i := range d.Sets {
		if d.Sets[i].Name == name {
			return &d.Sets[i]
		}
	}
	return nil
}
