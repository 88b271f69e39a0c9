package model

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Scopes, as rtnetlink numbers them.
const (
	ScopeUniverse = 0
	ScopeSite     = 200
	ScopeLink     = 253
	ScopeHost     = 254
	ScopeNowhere  = 255
)

// ScopeNames maps the file's words to scope numbers.
var ScopeNames = map[string]int{"global": ScopeUniverse, "universe": ScopeUniverse, "site": ScopeSite, "link": ScopeLink, "host": ScopeHost, "nowhere": ScopeNowhere}

// ScopeName renders a scope the way `ip` does.
func ScopeName(s int) string {
	switch s {
	case ScopeUniverse:
		return "global"
	case ScopeSite:
		return "site"
	case ScopeLink:
		return "link"
	case ScopeHost:
		return "host"
	case ScopeNowhere:
		return "nowhere"
	}
	return fmt.Sprint(s)
}

// IPv6AddressScope is the scope the kernel gives an IPv6 interface address,
// whatever scope the request carries (net/ipv6/addrconf.c takes it from
// ipv6_addr_scope): host for ::1, link for fe80::/10, site for the
// deprecated fec0::/10, else global.
func IPv6AddressScope(a netip.Addr) int {
	switch {
	case a.IsLoopback():
		return ScopeHost
	case a.IsLinkLocalUnicast():
		return ScopeLink
	case siteLocal.Contains(a):
		return ScopeSite
	}
	return ScopeUniverse
}

var siteLocal = netip.MustParsePrefix("fec0::/10")

// Address is an interface address.
type Address struct {
	Link string
	// Prefix is the local address with the prefix length of the subnet.
	Prefix netip.Prefix
	// Peer is the far end of a point-to-point address (invalid = none).
	Peer          netip.Prefix
	Scope         int
	NoPrefixRoute bool

	// Protocol (actual) is the address's owner, IFA_PROTO (Linux 6.3):
	// netreconcile stamps its own (settings.protocol) on every address it
	// adds; 0 when none was given or the kernel keeps none.
	Protocol int
	Owned    bool   // actual: on a link we own
	Origin   string // desired: file:line:col
	// Tentative (actual) is an IPv6 address whose duplicate address
	// detection has not finished: the kernel refuses it as a route's
	// source until then. DADFailed: detection found a duplicate.
	Tentative, DADFailed bool
	// Secondary (actual) is an IPv4 address that is not the first of its
	// subnet on its link (IFA_F_SECONDARY): deleting the primary deletes
	// the secondaries too unless promote_secondaries is on.
	Secondary bool
	// KeptFlags (actual) are the IPv6 address flags (IFA_F_*) the file
	// has no key for and another program may have set: nodad, home,
	// mngtmpaddr. A write in place carries them over, since NLM_F_REPLACE
	// sets an IPv6 address's flags to those the request carries.
	KeptFlags uint32
}

// Subnet is the kernel's subnet of an IPv4 address on its link: its masked
// prefix, or for a point-to-point address its peer's (the kernel matches the
// peer, ifa_address, under the one prefix length it keeps). The addresses of
// one subnet on a link are a primary and its secondaries: they share one
// scope, and deleting the primary deletes the secondaries unless
// promote_secondaries is on.
func (a *Address) Subnet() netip.Prefix {
	if a.Peer.IsValid() {
		return a.Peer.Masked()
	}
	return a.Prefix.Masked()
}

// AddressKey is what the kernel identifies an address by on a link.
type AddressKey struct {
	Link   string
	Prefix netip.Prefix
}

// Key returns the address's identity.
func (a *Address) Key() AddressKey { return AddressKey{a.Link, a.Prefix} }

func (k AddressKey) String() string { return fmt.Sprintf("%s dev %s", k.Prefix, k.Link) }

// String renders the address as `ip addr add` arguments.
func (a *Address) String() string {
	s := a.Prefix.String()
	if a.Peer.IsValid() {
		s += " peer " + a.Peer.String()
	}
	s += " dev " + a.Link
	if a.Scope != ScopeUniverse {
		s += " scope " + ScopeName(a.Scope)
	}
	if a.NoPrefixRoute {
		s += " noprefixroute"
	}
	return s
}

// SortAddresses orders addresses by link, then by address. A sorted list is
// left as it is (one pass).
func SortAddresses(as []Address) {
	if !slices.IsSortedFunc(as, CompareAddresses) {
		slices.SortStableFunc(as, CompareAddresses)
	}
}

// CompareAddresses is the order of SortAddresses: by link, then by address
// and prefix length.
func CompareAddresses(a, b Address) int {
	if c := strings.Compare(a.Link, b.Link); c != 0 {
		return c
	}
	if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits())
}

func prefixLess(a, b netip.Prefix) bool {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c < 0
	}
	return a.Bits() < b.Bits()
}
