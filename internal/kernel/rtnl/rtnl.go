// Package rtnl is netreconcile's rtnetlink codec: it decodes and encodes
// the messages the product reads and writes (routes, addresses, rules,
// links), for every reader alike: the kernel seam's dumps and writes, the
// route batch writer, the daemon's event filter and its socket prefilter,
// and the walk's oracle. It holds no socket; a message is its body, the
// header struct and the attributes after the netlink header.
//
// Attributes are read with mdlayher/netlink's AttributeDecoder and written
// with its AttributeEncoder, but for those of route messages, which are
// read by walking them in place (walk.go): a reconcile reads every route of
// ours, 100k of them, and the decoder's copy of each attribute made a no-op
// reconcile take a quarter more CPU (BenchmarkRouteWalk, docs/design.md).
//
// Decoders are strict: an attribute of the wrong size, an address of the
// wrong family or a prefix longer than its address is an error, never a
// guess; attributes they do not know are skipped.
package rtnl

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Attribute types and values the kernel's headers define and
// golang.org/x/sys/unix does not name (yet). Every other number comes
// from x/sys/unix.
const (
	// IFA_PROTO (include/uapi/linux/if_addr.h, Linux 6.3) is the
	// protocol (owner) of an address, a u8, as RTA_PROTOCOL is a route's.
	// A kernel before 6.3 ignores it in a request and never sends it; one
	// from 6.3 sends it only when it is not 0.
	IFA_PROTO = 11

	// LWTUNNEL_IP_* and LWTUNNEL_IP6_* (include/uapi/linux/lwtunnel.h):
	// the attributes of an ip or ip6 route encapsulation (RTA_ENCAP).
	LWTUNNEL_IP_ID        = 1
	LWTUNNEL_IP_DST       = 2
	LWTUNNEL_IP_SRC       = 3
	LWTUNNEL_IP_TTL       = 4
	LWTUNNEL_IP_TOS       = 5
	LWTUNNEL_IP_FLAGS     = 6
	LWTUNNEL_IP6_ID       = 1
	LWTUNNEL_IP6_DST      = 2
	LWTUNNEL_IP6_SRC      = 3
	LWTUNNEL_IP6_HOPLIMIT = 4
	LWTUNNEL_IP6_TC       = 5
	LWTUNNEL_IP6_FLAGS    = 6

	// SEG6_IPTUNNEL_SRH (include/uapi/linux/seg6_iptunnel.h) holds a
	// seg6 encapsulation: the mode (an int) and the segment routing
	// header.
	SEG6_IPTUNNEL_SRH = 1

	// IPV4_DEVCONF_PROMOTE_SECONDARIES (include/uapi/linux/ip.h) is the
	// attribute type of that setting inside IFLA_INET_CONF.
	IPV4_DEVCONF_PROMOTE_SECONDARIES = 20

	// SizeofFibRuleHdr is sizeof(struct fib_rule_hdr): rtmsg's layout,
	// its type byte being the rule's action.
	SizeofFibRuleHdr = 12
)

// ErrFamily is returned for a route of a family other than IPv4 and IPv6
// (a dump of every family also sends multicast and MPLS routes): the
// caller skips it.
var ErrFamily = errors.New("not an IPv4 or IPv6 message")

// addrLen is the size of an address of family.
func addrLen(family uint8) int {
	switch family {
	case unix.AF_INET:
		return 4
	case unix.AF_INET6:
		return 16
	}
	return 0
}

// addrOf reads an address of family. A 16-byte address stays IPv6, also
// when IPv4-mapped: ::ffff:10.60.0.0/112 is an IPv6 route, address or rule
// the kernel holds as such, and an unmapped reading of it is an IPv4
// prefix of length 112, which is no prefix at all.
func addrOf(v []byte, family uint8) (netip.Addr, error) {
	switch {
	case len(v) == 4 && family == unix.AF_INET:
		return netip.AddrFrom4([4]byte(v)), nil
	case len(v) == 16 && family == unix.AF_INET6:
		return netip.AddrFrom16([16]byte(v)), nil
	}
	return netip.Addr{}, addrError(len(v), family)
}

func addrError(n int, family uint8) error {
	return fmt.Errorf("address of %d bytes in a message of family %d", n, family)
}

// prefixOf reads an address of family with its prefix length.
func prefixOf(v []byte, family, bits uint8) (netip.Prefix, error) {
	a, err := addrOf(v, family)
	if err != nil {
		return netip.Prefix{}, err
	}
	if int(bits) > a.BitLen() {
		return netip.Prefix{}, fmt.Errorf("prefix length %d of %s", bits, a)
	}
	return netip.PrefixFrom(a, int(bits)), nil
}

// viaOf reads RTA_VIA: an address family (u16) and an address of it.
func viaOf(v []byte) (netip.Addr, error) {
	if len(v) < 2 {
		return netip.Addr{}, fmt.Errorf("via of %d bytes", len(v))
	}
	fam := native.Uint16(v)
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return netip.Addr{}, fmt.Errorf("via of family %d", fam)
	}
	return addrOf(v[2:], uint8(fam))
}

// unspecified is the family's all-zeros address.
func unspecified(family uint8) netip.Addr {
	if family == unix.AF_INET6 {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

// familyOf is the address family of a.
func familyOf(a netip.Addr) uint8 {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// bits is a prefix's length for a header byte, 0 for none.
func bits(p netip.Prefix) uint8 {
	if !p.IsValid() {
		return 0
	}
	return uint8(p.Bits())
}
