package nftwire

import (
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// LibraryDump is Dump through mdlayher/netlink's Execute, the reader Dump
// replaces, for the tests that hold the two to each other.
func (n *Conn) LibraryDump(typ uint16, family byte, attrs []byte) ([][]byte, error) {
	msgs, err := n.c.Execute(request(typ, netlink.Dump, family, attrs))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		if m.Header.Flags&netlink.DumpInterrupted != 0 {
			return nil, fmt.Errorf("nftables dump: %w", unix.EINTR)
		}
		out = append(out, m.Data)
	}
	return out, nil
}

// DumpFilter encodes the attributes that filter a dump of typ by table
// (and, for elements, set).
func DumpFilter(typ uint16, table, set string) []byte {
	ae := enc()
	switch typ {
	case MsgGetRule:
		ae.String(nftaRuleTable, table)
	case MsgGetSet:
		ae.String(nftaSetTable, table)
	case MsgGetObj:
		ae.String(nftaObjTable, table)
	case MsgGetSetElem:
		ae.String(nftaSetElemListTable, table)
		ae.String(nftaSetElemListSet, set)
	}
	return encode(ae)
}
