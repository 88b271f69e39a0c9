package nftwire

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/mdlayher/netlink"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Families by nft's names (NFPROTO_*).
var families = map[string]byte{"ip": 2, "ip6": 10, "inet": 1, "arp": 3, "bridge": 7, "netdev": 5}

// Family returns the NFPROTO number of an nft family name.
func Family(name string) (byte, bool) {
	f, ok := families[name]
	return f, ok
}

// FamilyName returns nft's name of an NFPROTO number.
func FamilyName(f byte) string {
	for n, v := range families {
		if v == f {
			return n
		}
	}
	return fmt.Sprint(f)
}

// maxElemList bounds the bytes of one message's element list: the list is
// one attribute, whose length is a uint16. google/nftables v0.3.0 does not
// split lists; nft does, as here.
const maxElemList = 60 << 10

// Batch is one nf_tables transaction: the messages between a batch begin
// and a batch end, committed by the kernel whole or not at all.
type Batch struct {
	msgs []netlink.Message
	size int
	ids  uint32
}

func (b *Batch) add(typ uint16, flags netlink.HeaderFlags, family byte, attrs []byte) {
	data := make([]byte, nfgenmsgLen, nfgenmsgLen+len(attrs))
	data[0], data[1] = family, nfnetlinkV0
	data = append(data, attrs...)
	b.msgs = append(b.msgs, netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(subsysNFTables<<8 | typ), Flags: netlink.Request | flags},
		Data:   data,
	})
	b.size += 16 + len(data)
}

// Len is the number of messages, batch begin and end not counted.
func (b *Batch) Len() int { return len(b.msgs) }

// Size is the bytes the batch takes on the wire, begin and end included.
func (b *Batch) Size() int { return b.size + 2*(16+nfgenmsgLen) }

// nextID returns a transaction id for an object the batch creates.
func (b *Batch) nextID() uint32 {
	b.ids++
	return b.ids
}

// Messages returns the batch framed by its begin and end messages. The
// last change asks for an acknowledgement: the kernel handles a batch
// within the send, queueing an error for each message it refuses, an error
// for the batch begin when the commit fails, and then that one
// acknowledgement, so that reading up to it reads every answer. An ACK on
// every message (google/nftables) costs a message each in the receive
// buffer, which a batch of a million elements overflows.
func (b *Batch) Messages() []netlink.Message {
	out := make([]netlink.Message, 0, len(b.msgs)+2)
	frame := func(typ uint16) netlink.Message {
		return netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(typ), Flags: netlink.Request},
			Data:   []byte{0, nfnetlinkV0, 0, subsysNFTables},
		}
	}
	out = append(out, frame(msgBatchBegin))
	out = append(out, b.msgs...)
	if n := len(out); n > 1 {
		out[n-1].Header.Flags |= netlink.Acknowledge
	}
	return append(out, frame(msgBatchEnd))
}

func enc() *netlink.AttributeEncoder {
	ae := netlink.NewAttributeEncoder()
	ae.ByteOrder = binary.BigEndian
	return ae
}

func encode(ae *netlink.AttributeEncoder) []byte {
	b, err := ae.Encode()
	if err != nil {
		// The encoder fails only on an attribute longer than 64 KiB;
		// the callers bound theirs.
		panic(fmt.Sprintf("nftwire: encode attributes: %v", err))
	}
	return b
}

// AddTable creates a table, or clears its flags (a dormant table wakes up).
func (b *Batch) AddTable(family byte, name string) {
	ae := enc()
	ae.String(nftaTableName, name)
	ae.Uint32(nftaTableFlags, 0)
	b.add(MsgNewTable, netlink.Create, family, encode(ae))
}

// DelTable deletes a table and everything in it.
func (b *Batch) DelTable(family byte, name string) {
	ae := enc()
	ae.String(nftaTableName, name)
	ae.Uint32(nftaTableFlags, 0)
	b.add(MsgDelTable, 0, family, encode(ae))
}

// ChainSpec is a chain to create: Hook nil for a regular chain.
type ChainSpec struct {
	Name   string
	Hook   *Hook
	Type   string
	Policy *uint32 // NF_DROP 0, NF_ACCEPT 1
}

// AddChain creates a chain, or updates an existing base chain's policy.
func (b *Batch) AddChain(family byte, table string, c ChainSpec) {
	ae := enc()
	ae.String(nftaChainTable, table)
	ae.String(nftaChainName, c.Name)
	if c.Hook != nil {
		ae.Nested(nftaChainHook, func(nae *netlink.AttributeEncoder) error {
			nae.Uint32(nftaHookHooknum, c.Hook.Num)
			nae.Uint32(nftaHookPriority, uint32(c.Hook.Priority))
			if c.Hook.Dev != "" {
				nae.String(nftaHookDev, c.Hook.Dev)
			}
			return nil
		})
	}
	if c.Policy != nil {
		ae.Uint32(nftaChainPolicy, *c.Policy)
	}
	if c.Type != "" {
		ae.String(nftaChainType, c.Type)
	}
	b.add(MsgNewChain, netlink.Create, family, encode(ae))
}

// DelChain deletes an empty chain nothing jumps to.
func (b *Batch) DelChain(family byte, table, name string) {
	ae := enc()
	ae.String(nftaChainTable, table)
	ae.String(nftaChainName, name)
	b.add(MsgDelChain, 0, family, encode(ae))
}

// SetSpec is a named set of one of netreconcile's own key types.
type SetSpec struct {
	Name            string
	KeyType, KeyLen uint32
	Flags           uint32
	Timeout         uint64 // milliseconds, 0: none
	UData           []byte
}

// AddSet creates a named set (a no-op when one of that name and spec
// exists).
func (b *Batch) AddSet(family byte, table string, s SetSpec) {
	ae := enc()
	ae.String(nftaSetTable, table)
	ae.String(nftaSetName, s.Name)
	ae.Uint32(nftaSetFlags, s.Flags)
	ae.Uint32(nftaSetKeyType, s.KeyType)
	ae.Uint32(nftaSetKeyLen, s.KeyLen)
	ae.Uint32(nftaSetID, b.nextID())
	if s.Timeout != 0 {
		ae.Uint64(nftaSetTimeout, s.Timeout)
	}
	if len(s.UData) > 0 {
		ae.Bytes(nftaSetUserdata, s.UData)
	}
	b.add(MsgNewSet, netlink.Create, family, encode(ae))
}

// AddRawSet creates a set from a spec the kernel dumped, under name, and
// returns its transaction id.
func (b *Batch) AddRawSet(family byte, table, name string, spec []byte) uint32 {
	id := b.nextID()
	ae := enc()
	ae.String(nftaSetTable, table)
	ae.String(nftaSetName, name)
	ae.Uint32(nftaSetID, id)
	b.add(MsgNewSet, netlink.Create, family, append(encode(ae), spec...))
	return id
}

// DelSet deletes a set no rule refers to.
func (b *Batch) DelSet(family byte, table, name string) {
	ae := enc()
	ae.String(nftaSetTable, table)
	ae.String(nftaSetName, name)
	b.add(MsgDelSet, 0, family, encode(ae))
}

// elemWriter fills element messages, each list up to maxElemList bytes.
type elemWriter struct {
	b          *Batch
	typ        uint16
	family     byte
	table, set string
	// id is the set's transaction id when the batch creates it.
	id    uint32
	items []attr
	size  int
}

func (w *elemWriter) put(elem []byte) {
	// An item takes its header and its payload, padded: the netlink
	// alignment.
	n := 4 + (len(elem)+3)&^3
	if w.size+n > maxElemList {
		w.flush()
	}
	w.items = append(w.items, attr{Type: netlink.Nested | nftaListElem, Data: elem})
	w.size += n
}

func (w *elemWriter) flush() {
	if len(w.items) == 0 {
		return
	}
	ae := enc()
	ae.String(nftaSetElemListTable, w.table)
	ae.String(nftaSetElemListSet, w.set)
	if w.id != 0 {
		ae.Uint32(nftaSetElemListSetID, w.id)
	}
	ae.Do(netlink.Nested|nftaSetElemListElems, func() ([]byte, error) { return marshal(w.items) })
	flags := netlink.HeaderFlags(0)
	if w.typ == MsgNewSetElem {
		flags = netlink.Create
	}
	w.b.add(w.typ, flags, w.family, encode(ae))
	w.items, w.size = w.items[:0], 0
}

func newElemWriter(b *Batch, add bool, family byte, table, set string, id uint32) *elemWriter {
	w := &elemWriter{b: b, typ: MsgDelSetElem, family: family, table: table, set: set, id: id}
	if add {
		w.typ = MsgNewSetElem
	}
	return w
}

// RawElems adds (or deletes) elements given as their attributes, as a dump
// gave them, to a set; id is the set's transaction id when the batch
// creates it under a name the kernel chooses, else 0.
func (b *Batch) RawElems(add bool, family byte, table, set string, id uint32, elems [][]byte) {
	w := newElemWriter(b, add, family, table, set, id)
	for _, e := range elems {
		w.put(e)
	}
	w.flush()
}

// Elems adds (or deletes) elements of one of netreconcile's own set types:
// a key each, and for interval sets the end of the range as an element
// flagged NFT_SET_ELEM_INTERVAL_END ("" End: the range runs to the top).
func (b *Batch) Elems(add bool, family byte, table, set string, interval bool, es []model.NftElem) {
	w := newElemWriter(b, add, family, table, set, 0)
	end := putBE32(ElemIntervalEnd)
	// The path of a million elements: one layout of the key and one of
	// the element, by mdlayher/netlink's marshaller without an encoder's
	// bookkeeping (a key is at most 16 bytes, an element 32: far from an
	// attribute's bound).
	var as [2]attr
	one := func(k string, isEnd bool) {
		as[0] = attr{Type: nftaDataValue, Data: []byte(k)}
		key, _ := netlink.MarshalAttributes(as[:1])
		as[0] = attr{Type: netlink.Nested | nftaSetElemKey, Data: key}
		n := 1
		if isEnd {
			as[1] = attr{Type: nftaSetElemFlags, Data: end}
			n = 2
		}
		e, _ := netlink.MarshalAttributes(as[:n])
		w.put(e)
	}
	for _, e := range es {
		one(e.Key, false)
		if interval && e.End != "" {
			one(e.End, true)
		}
	}
	w.flush()
}

// RuleMode says where a rule goes.
type RuleMode int

// Rule placements.
const (
	Append  RuleMode = iota // at the end of the chain
	Insert                  // before the rule of handle At
	Replace                 // in place of the rule of handle At
)

// AddRule writes a compiled rule: its anonymous sets first, created under
// names the kernel chooses and referred to by transaction id, then the
// rule, with udata as its user data.
func (b *Batch) AddRule(family byte, table, chain string, c *model.NftCompiled, udata []byte, mode RuleMode, at uint64) error {
	ids := map[string]SetRef{}
	for _, s := range c.Sets {
		name := anonWriteName(s.Name)
		id := b.AddRawSet(family, table, name, s.Spec)
		ids[s.Name] = SetRef{name, id}
		b.RawElems(true, family, table, name, id, s.Elems)
	}
	exprs, err := WriteExprs(c.Exprs)
	if err != nil {
		return fmt.Errorf("rule of chain %s: %w", chain, err)
	}
	if exprs, err = RewriteSetRefs(exprs, ids); err != nil {
		return fmt.Errorf("rule of chain %s: %w", chain, err)
	}
	ae := enc()
	ae.String(nftaRuleTable, table)
	ae.String(nftaRuleChain, chain)
	if mode == Replace {
		ae.Uint64(nftaRuleHandle, at)
	}
	ae.Bytes(netlink.Nested|nftaRuleExprs, exprs)
	if len(udata) > 0 {
		ae.Bytes(nftaRuleUserdata, udata)
	}
	flags := netlink.Create | flagAppend
	switch mode {
	case Insert:
		ae.Uint64(nftaRulePosition, at)
		flags = netlink.Create
	case Replace:
		flags = netlink.Replace
	}
	msg, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("rule of chain %s: %w", chain, err)
	}
	b.add(MsgNewRule, flags, family, msg)
	return nil
}

// anonWriteName is the name an anonymous set is created under: nft's
// pattern of the name it had ("__set3", "__map0", "__objmap1": "__set%d",
// which the kernel numbers), or the name itself for a meter's set, which
// nft names after the meter. Only listings show them.
func anonWriteName(dumped string) string {
	base := strings.TrimRight(dumped, "0123456789")
	if strings.HasPrefix(base, "__") && len(base) < len(dumped) {
		return base + "%d"
	}
	return dumped
}

// DelRule deletes the rule of a handle.
func (b *Batch) DelRule(family byte, table, chain string, handle uint64) {
	ae := enc()
	ae.String(nftaRuleTable, table)
	ae.String(nftaRuleChain, chain)
	ae.Uint64(nftaRuleHandle, handle)
	b.add(MsgDelRule, 0, family, encode(ae))
}

// AddObj creates a named object from its type and data as nft compiled
// them.
func (b *Batch) AddObj(family byte, table, name string, typ uint32, data, udata []byte) error {
	data, err := WriteObjData(typ, data)
	if err != nil {
		return fmt.Errorf("object %s: %w", name, err)
	}
	ae := enc()
	ae.String(nftaObjTable, table)
	ae.String(nftaObjName, name)
	ae.Uint32(nftaObjType, typ)
	ae.Bytes(netlink.Nested|nftaObjData, data)
	if len(udata) > 0 {
		ae.Bytes(nftaObjUserdata, udata)
	}
	msg, err := ae.Encode()
	if err != nil {
		return fmt.Errorf("object %s: %w", name, err)
	}
	b.add(MsgNewObj, netlink.Create, family, msg)
	return nil
}

// DelObj deletes a named object no rule refers to.
func (b *Batch) DelObj(family byte, table, name string, typ uint32) {
	ae := enc()
	ae.String(nftaObjTable, table)
	ae.String(nftaObjName, name)
	ae.Uint32(nftaObjType, typ)
	b.add(MsgDelObj, 0, family, encode(ae))
}
