package nftwire

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// GetTable returns a table by name: the zero Table, nil when it does not
// exist.
func (n *Conn) GetTable(family byte, name string) (Table, error) {
	ae := enc()
	ae.String(nftaTableName, name)
	msgs, err := n.Get(MsgGetTable, family, encode(ae))
	if errors.Is(err, unix.ENOENT) {
		return Table{}, nil
	}
	if err != nil {
		return Table{}, err
	}
	for _, m := range msgs {
		t, err := DecodeTable(m)
		if err != nil {
			return Table{}, err
		}
		if t.Handle != 0 {
			return t, nil
		}
	}
	return Table{}, errors.New("no handle in the answer")
}

// ListTables lists the namespace's tables of every family.
func (n *Conn) ListTables() ([]Table, error) {
	msgs, err := n.Dump(MsgGetTable, unix.NFPROTO_UNSPEC, nil)
	if err != nil {
		return nil, fmt.Errorf("list nftables tables: %w", err)
	}
	out := make([]Table, 0, len(msgs))
	for _, m := range msgs {
		t, err := DecodeTable(m)
		if err != nil {
			return nil, fmt.Errorf("list nftables tables: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// ReadTable dumps a table whole, but the elements of the sets for which
// elems says false (nil: every set's); elems sees the table's chains, rules
// and sets already read. It returns nil, nil when the table does not exist.
func (n *Conn) ReadTable(family byte, name string, elems func(d *TableDump, s *Set) bool) (*TableDump, error) {
	ae := enc()
	ae.String(nftaTableName, name)
	msgs, err := n.Get(MsgGetTable, family, encode(ae))
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get nftables table %s %s: %w", FamilyName(family), name, err)
	}
	d := &TableDump{Elems: map[string][][]byte{}}
	for _, m := range msgs {
		if d.Table, err = DecodeTable(m); err != nil {
			return nil, err
		}
	}
	what := fmt.Sprintf("nftables table %s %s", FamilyName(family), name)
	// Chains: the kernel does not filter a chain dump by table.
	msgs, err = n.Dump(MsgGetChain, family, nil)
	if err != nil {
		return nil, fmt.Errorf("list chains of %s: %w", what, err)
	}
	for _, m := range msgs {
		c, err := DecodeChain(m)
		if err != nil {
			return nil, fmt.Errorf("list chains of %s: %w", what, err)
		}
		if c.Table == name {
			d.Chains = append(d.Chains, c)
		}
	}
	ae = enc()
	ae.String(nftaRuleTable, name)
	if msgs, err = n.Dump(MsgGetRule, family, encode(ae)); err != nil {
		return nil, fmt.Errorf("list rules of %s: %w", what, err)
	}
	if len(msgs) > 0 {
		d.Rules = make([]Rule, 0, len(msgs))
	}
	for _, m := range msgs {
		r, err := DecodeRule(m)
		if err != nil {
			return nil, fmt.Errorf("list rules of %s: %w", what, err)
		}
		if r.Table == name {
			d.Rules = append(d.Rules, r)
		}
	}
	ae = enc()
	ae.String(nftaSetTable, name)
	if msgs, err = n.Dump(MsgGetSet, family, encode(ae)); err != nil {
		return nil, fmt.Errorf("list sets of %s: %w", what, err)
	}
	if len(msgs) > 0 {
		d.Sets = make([]Set, 0, len(msgs))
	}
	for _, m := range msgs {
		s, err := DecodeSet(m)
		if err != nil {
			return nil, fmt.Errorf("list sets of %s: %w", what, err)
		}
		if s.Table == name {
			d.Sets = append(d.Sets, s)
		}
	}
	for i := range d.Sets {
		s := &d.Sets[i]
		if elems != nil && !elems(d, s) {
			continue
		}
		es, err := n.Elements(family, name, s.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		d.Elems[s.Name] = es
	}
	ae = enc()
	ae.String(nftaObjTable, name)
	if msgs, err = n.Dump(MsgGetObj, family, encode(ae)); err != nil {
		return nil, fmt.Errorf("list objects of %s: %w", what, err)
	}
	for _, m := range msgs {
		o, err := DecodeObj(m)
		if err != nil {
			return nil, fmt.Errorf("list objects of %s: %w", what, err)
		}
		if o.Table == name {
			d.Objs = append(d.Objs, o)
		}
	}
	return d, nil
}

// Elements dumps a set's elements: each one's attributes.
func (n *Conn) Elements(family byte, table, set string) ([][]byte, error) {
	var out [][]byte
	err := n.EachElement(family, table, set, func(e []byte) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// EachElement dumps a set's elements to fn. The bytes are valid during the
// call only... and after: each message's payload is its own.
func (n *Conn) EachElement(family byte, table, set string, fn func(elem []byte) error) error {
	ae := enc()
	ae.String(nftaSetElemListTable, table)
	ae.String(nftaSetElemListSet, set)
	msgs, err := n.Dump(MsgGetSetElem, family, encode(ae))
	if err != nil {
		return fmt.Errorf("list elements of set %s: %w", set, err)
	}
	for _, m := range msgs {
		if _, err := DecodeElems(m, fn); err != nil {
			return fmt.Errorf("list elements of set %s: %w", set, err)
		}
	}
	return nil
}

// GetRule returns the rule of a handle in a table's chain; ok is false when
// the table, the chain or the rule does not exist.
func (n *Conn) GetRule(family byte, table, chain string, handle uint64) (r Rule, ok bool, err error) {
	ae := enc()
	ae.String(nftaRuleTable, table)
	ae.String(nftaRuleChain, chain)
	ae.Uint64(nftaRuleHandle, handle)
	msgs, err := n.Get(MsgGetRule, family, encode(ae))
	if errors.Is(err, unix.ENOENT) {
		return Rule{}, false, nil
	}
	if err != nil {
		return Rule{}, false, fmt.Errorf("get rule %d of chain %s in nftables table %s %s: %w", handle, chain, FamilyName(family), table, err)
	}
	for _, m := range msgs {
		r, err := DecodeRule(m)
		if err != nil {
			return Rule{}, false, fmt.Errorf("get rule %d of chain %s in nftables table %s %s: %w", handle, chain, FamilyName(family), table, err)
		}
		if r.Table == table && r.Chain == chain && r.Handle == handle {
			return r, true, nil
		}
	}
	return Rule{}, false, nil
}

// GetSet returns a set of a table by name (an anonymous one too); ok is
// false when it does not exist.
func (n *Conn) GetSet(family byte, table, name string) (s Set, ok bool, err error) {
	ae := enc()
	ae.String(nftaSetTable, table)
	ae.String(nftaSetName, name)
	msgs, err := n.Get(MsgGetSet, family, encode(ae))
	if errors.Is(err, unix.ENOENT) {
		return Set{}, false, nil
	}
	if err != nil {
		return Set{}, false, fmt.Errorf("get set %s of nftables table %s %s: %w", name, FamilyName(family), table, err)
	}
	for _, m := range msgs {
		s, err := DecodeSet(m)
		if err != nil {
			return Set{}, false, fmt.Errorf("get set %s of nftables table %s %s: %w", name, FamilyName(family), table, err)
		}
		if s.Table == table && s.Name == name {
			return s, true, nil
		}
	}
	return Set{}, false, nil
}
