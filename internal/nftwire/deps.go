package nftwire

import "bytes"

// Attributes of the expressions a protocol dependency is made of.
const (
	metaDreg      = 1 // NFTA_META_DREG
	metaKey       = 2 // NFTA_META_KEY
	payloadDreg   = 1 // NFTA_PAYLOAD_DREG
	payloadBase   = 2 // NFTA_PAYLOAD_BASE
	payloadOffset = 3 // NFTA_PAYLOAD_OFFSET
	payloadLen    = 4 // NFTA_PAYLOAD_LEN
	cmpSreg       = 1 // NFTA_CMP_SREG
	cmpOp         = 2 // NFTA_CMP_OP

	metaProtocol = 1  // NFT_META_PROTOCOL
	metaIiftype  = 8  // NFT_META_IIFTYPE
	metaOiftype  = 9  // NFT_META_OIFTYPE
	metaNfproto  = 15 // NFT_META_NFPROTO
	metaL4proto  = 16 // NFT_META_L4PROTO

	payloadLL = 0 // NFT_PAYLOAD_LL_HEADER
	payloadNH = 1 // NFT_PAYLOAD_NETWORK_HEADER

	cmpEq = 0 // NFT_CMP_EQ
)

// DependencyFree is the normal form of an expression list (normalExprs)
// with nft's protocol dependencies taken out: a load of the packet's
// protocol at some layer (meta protocol, nfproto or l4proto, the link's
// type, iiftype or oiftype; the link header's ether type or a vlan's; the
// network header's ip protocol or ip6 nexthdr), each with the equality on
// its register that follows it.
//
// nft lists a rule without such a match where it takes it for the
// dependency of the next one, and compiles the listed text with a
// dependency of its own, which may be another (`ip protocol tcp tcp dport
// 22` lists as `tcp dport 22`, which compiles to `meta l4proto tcp`): two
// rules nft lists alike have equal dependency-free forms. The converse
// does not hold; it says only which pairs of rules nft's listing must
// judge, so that a pair that differs elsewhere (another port) is not
// listed at all. A dependency this misses makes two such rules look
// different, and so unlisted: each is then its bytecode, as without the
// listing.
func DependencyFree(list []byte, anon []string) ([]byte, error) {
	n, err := normalExprs(list, anon)
	if err != nil {
		return nil, err
	}
	as, err := parseAttrs(n)
	if err != nil {
		return nil, err
	}
	es := make([]expr, len(as))
	for i, a := range as {
		if kind(a) != nftaListElem {
			continue
		}
		if es[i], err = parseExpr(a.Data); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	for i := 0; i < len(as); i++ {
		if i+1 < len(as) && dependency(es[i], es[i+1]) {
			i++
			continue
		}
		out.Write(as[i].Data)
		out.WriteByte(0) // keeps expressions apart: the form is only compared
	}
	return out.Bytes(), nil
}

// dependency reports whether load then cmp are a match on a protocol
// field that nft may take for a dependency (DependencyFree).
func dependency(load, cmp expr) bool {
	if cmp.name != "cmp" {
		return false
	}
	reg := func(as []attr, k uint16) (uint32, bool) {
		a, ok := find(as, k)
		if !ok {
			return 0, false
		}
		return be32(a.Data)
	}
	var dreg uint32
	switch load.name {
	case "meta":
		key, ok := reg(load.data, metaKey)
		if !ok || key != metaProtocol && key != metaNfproto && key != metaL4proto && key != metaIiftype && key != metaOiftype {
			return false
		}
		if dreg, ok = reg(load.data, metaDreg); !ok {
			return false
		}
	case "payload":
		base, ok1 := reg(load.data, payloadBase)
		off, ok2 := reg(load.data, payloadOffset)
		n, ok3 := reg(load.data, payloadLen)
		var ok4 bool
		dreg, ok4 = reg(load.data, payloadDreg)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return false
		}
		switch {
		case base == payloadLL && n == 2 && (off == 12 || off == 16): // ether type, a vlan's type
		case base == payloadNH && n == 1 && (off == 9 || off == 6): // ip protocol, ip6 nexthdr
		default:
			return false
		}
	default:
		return false
	}
	sreg, ok := reg(cmp.data, cmpSreg)
	op, ok2 := reg(cmp.data, cmpOp)
	return ok && ok2 && sreg == dreg && op == cmpEq
}
