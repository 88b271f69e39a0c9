package model

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Well-known routing tables.
const (
	TableDefault = 253
	TableMain    = 254
	TableLocal   = 255
)

// TableNames maps the file's words to table numbers (as /etc/iproute2/rt_tables).
var TableNames = map[string]int{"main": TableMain, "local": TableLocal, "default": TableDefault}

// TableName renders a table the way `ip` does.
func TableName(t int) string {
	switch t {
	case TableMain:
		return "main"
	case TableLocal:
		return "local"
	case TableDefault:
		return "default"
	}
	return fmt.Sprint(t)
}

// Route types, rtnetlink numbering.
const (
	RouteUnicast     = 1
	RouteLocal       = 2
	RouteBlackhole   = 6
	RouteUnreachable = 7
	RouteProhibit    = 8
	RouteThrow       = 9
)

// RouteTypeNames maps the file's words to route types.
var RouteTypeNames = map[string]int{"unicast": RouteUnicast, "local": RouteLocal, "blackhole": RouteBlackhole, "unreachable": RouteUnreachable, "prohibit": RouteProhibit, "throw": RouteThrow}

// kernelRouteTypes are the types only the kernel makes (rtnetlink.h), named
// as ip-route(8) names them for show --all; a file cannot declare them.
var kernelRouteTypes = map[int]string{3: "broadcast", 4: "anycast", 5: "multicast", 10: "nat", 11: "xresolve"}

// RouteTypeName renders a route type.
func RouteTypeName(t int) string {
	for n, v := range RouteTypeNames {
		if v == t {
			return n
		}
	}
	if n, ok := kernelRouteTypes[t]; ok {
		return n
	}
	return fmt.Sprint(t)
}

// IPv6DefaultMetric is what the kernel stores for an IPv6 route given metric 0.
const IPv6DefaultMetric = 1024

// IPv6KernelPrefixMetric is the metric of the prefix route the kernel makes
// for an IPv6 address (IP6_RT_PRIO_ADDRCONF).
const IPv6KernelPrefixMetric = 256

// Route is a route in one table. The fields are as narrow as the kernel's
// (rtmsg's u8 type, scope, protocol and tos; u32 table, priority and MTU)
// and the pointers come first: a daemon holds the file's routes and the
// kernel's between passes, 160 bytes a route where ints made 200.
type Route struct {
	Dst netip.Prefix
	// Gateway is the next hop, of the route's family or, for an IPv4
	// route, an IPv6 one (RFC 5549: written as RTA_VIA). Unset on a
	// multipath route.
	Gateway netip.Addr
	Src     netip.Addr
	Dev     string
	// NextHops, two or more, make a multipath route (RTA_MULTIPATH); then
	// Gateway and Dev are unset. Kept in CompareNextHops order, so that two
	// sets compare as sets whatever order the file or the kernel gives.
	NextHops []NextHop
	Origin   Origin // desired

	Table    uint32
	Metric   uint32
	MTU      uint32
	TOS      uint8
	Type     uint8
	Scope    uint8
	Protocol uint8 // actual
	OnLink   bool
}

// NextHop is one path of a multipath route.
type NextHop struct {
	// Gateway is of the route's family or, for an IPv4 route, IPv6
	// (RFC 5549); invalid for a next hop that is a device only.
	Gateway netip.Addr
	// Dev is the next hop's link: in the file, optional with a gateway
	// (the kernel picks the gateway's link).
	Dev string
	// Weight is 1 to 256 (rtnh_hops + 1); the kernel's default is 1.
	Weight int
}

// String renders the next hop in `ip route` words.
func (h NextHop) String(dst netip.Prefix) string {
	var b []string
	if h.Gateway.IsValid() {
		b = append(b, "via "+viaWord(dst, h.Gateway))
	}
	if h.Dev != "" {
		b = append(b, "dev "+h.Dev)
	}
	b = append(b, fmt.Sprintf("weight %d", h.Weight))
	return strings.Join(b, " ")
}

// viaWord renders a gateway as ip does: "inet6 fe80::1" for an IPv6 one of
// an IPv4 route.
func viaWord(dst netip.Prefix, gw netip.Addr) string {
	if dst.Addr().Is4() && gw.Is6() {
		return "inet6 " + gw.String()
	}
	return gw.String()
}

// CompareNextHops orders next hops by gateway, then device, then weight: -1, 0 or +1.
func CompareNextHops(a, b NextHop) int {
	if c := a.Gateway.Compare(b.Gateway); c != 0 {
		return c
	}
	if c := strings.Compare(a.Dev, b.Dev); c != 0 {
		return c
	}
	return cmp.Compare(a.Weight, b.Weight)
}

// SortNextHops puts next hops in CompareNextHops order.
func SortNextHops(hs []NextHop) { slices.SortFunc(hs, CompareNextHops) }

// RouteKey is what the kernel identifies a route by.
type RouteKey struct {
	Dst    netip.Prefix // the family is Dst's
	Table  uint32
	Metric uint32
	TOS    uint8
}

// Key returns the route's identity.
func (r *Route) Key() RouteKey {
	return RouteKey{Dst: r.Dst, Table: r.Table, Metric: r.Metric, TOS: r.TOS}
}

// Devs lists the links the route goes through: its dev, or its next hops'.
func (r *Route) Devs() []string {
	if len(r.NextHops) == 0 {
		if r.Dev == "" {
			return nil
		}
		return []string{r.Dev}
	}
	ds := make([]string, 0, len(r.NextHops))
	for _, h := range r.NextHops {
		if h.Dev != "" {
			ds = append(ds, h.Dev)
		}
	}
	return ds
}

// IsIPv6 reports the route's family.
func (r *Route) IsIPv6() bool { return r.Dst.Addr().Is6() }

func (k RouteKey) String() string {
	dst := k.Dst.String()
	if k.Dst.Bits() == 0 {
		dst = "default"
		if k.Dst.Addr().Is6() {
			dst = "default (ipv6)"
		}
	}
	s := dst + " table " + TableName(int(k.Table))
	if k.Metric != 0 {
		s += fmt.Sprintf(" metric %d", k.Metric)
	}
	if k.TOS != 0 {
		s += fmt.Sprintf(" tos %#x", k.TOS)
	}
	return s
}

// Attrs renders the route's non-key attributes in `ip route` words.
func (r *Route) Attrs() string {
	var b []string
	if r.Type != RouteUnicast && r.Type != 0 {
		b = append(b, RouteTypeName(int(r.Type)))
	}
	if r.Gateway.IsValid() {
		b = append(b, "via "+viaWord(r.Dst, r.Gateway))
	}
	if r.Dev != "" {
		b = append(b, "dev "+r.Dev)
	}
	for _, h := range r.NextHops {
		b = append(b, "nexthop "+h.String(r.Dst))
	}
	if r.Src.IsValid() {
		b = append(b, "src "+r.Src.String())
	}
	if r.Scope != ScopeUniverse {
		b = append(b, "scope "+ScopeName(int(r.Scope)))
	}
	if r.OnLink {
		b = append(b, "onlink")
	}
	if r.MTU != 0 {
		b = append(b, fmt.Sprintf("mtu %d", r.MTU))
	}
	return strings.Join(b, " ")
}

// String renders the route as `ip route` would list it.
func (r *Route) String() string {
	return strings.TrimSpace(r.Key().String() + " " + r.Attrs())
}

// Less orders route keys: table, family, dst, metric, tos.
func (k RouteKey) Less(o RouteKey) bool {
	if k.Table != o.Table {
		return k.Table < o.Table
	}
	if k.Dst != o.Dst {
		return prefixLess(k.Dst, o.Dst)
	}
	if k.Metric != o.Metric {
		return k.Metric < o.Metric
	}
	return k.TOS < o.TOS
}

// Compare orders route keys as Less does: -1, 0 or +1.
func (k RouteKey) Compare(o RouteKey) int {
	if c := cmp.Compare(k.Table, o.Table); c != 0 {
		return c
	}
	if c := k.Dst.Addr().Compare(o.Dst.Addr()); c != 0 {
		return c
	}
	if c := cmp.Compare(k.Dst.Bits(), o.Dst.Bits()); c != 0 {
		return c
	}
	if c := cmp.Compare(k.Metric, o.Metric); c != 0 {
		return c
	}
	return cmp.Compare(k.TOS, o.TOS)
}

func compareRoutes(a, b Route) int { return a.Key().Compare(b.Key()) }

// RoutesSorted reports whether routes are in key order.
func RoutesSorted(rs []Route) bool {
	for i := 1; i < len(rs); i++ {
		if rs[i].Key().Compare(rs[i-1].Key()) < 0 {
			return false
		}
	}
	return true
}

// SortRoutes orders routes by key. Lists that are sorted already (the
// kernel dumps a table in key order) cost one pass.
func SortRoutes(rs []Route) {
	if !RoutesSorted(rs) {
		slices.SortStableFunc(rs, compareRoutes)
	}
}

// RouteProtocols are the route protocols the kernel's uapi names
// (include/uapi/linux/rtnetlink.h, RTPROT_*): the kernel's own (0-4) and
// the routing daemons' (8-18, 42, 99, 186-192). netreconcile deletes the
// routes and rules of its protocol that the file does not list, so taking
// one of these would delete another program's routes.
var RouteProtocols = map[int]string{
	0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static",
	8: "gated", 9: "ra", 10: "mrt", 11: "zebra", 12: "bird", 13: "dnrouted", 14: "xorp", 15: "ntk",
	16: "dhcp", 17: "mrouted", 18: "keepalived", 42: "babel", 99: "openr",
	186: "bgp", 187: "isis", 188: "ospf", 189: "rip", 192: "eigrp",
}

// ProtocolName renders a route protocol number with its kernel name, if any:
// "186 (bgp)".
func ProtocolName(p int) string {
	if n, ok := RouteProtocols[p]; ok {
		return fmt.Sprintf("%d (%s)", p, n)
	}
	return strconv.Itoa(p)
}
