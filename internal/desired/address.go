package desired

import (
	"net/netip"

	"github.com/netreconcile/netreconcile/internal/model"
)

// address checks one address of a link. path makes the entry's field path,
// for an error only: a megabyte of "[{},{},…]" (aliased) is 700k entries.
func (b *builder) address(link string, path func() string, ac *addressConf) {
	if ac.has("pool") {
		b.poolAddress(link, path, ac)
		return
	}
	for _, k := range []string{"prefix-length", "ipv4-prefix-length", "ipv6-prefix-length"} {
		if ac.has(k) {
			b.errs.add(ac.at(k), path()+"."+k, "applies to an address taken from a pool; give pool, or write the length in address")
		}
	}
	if ac.Address == nil {
		b.errs.addLazy(ac.Pos, func() (string, string) {
			return path() + ".address", "missing; expected an address with prefix length like 10.0.0.1/24, or pool: NAME"
		})
		return
	}
	a := model.Address{Link: link, Prefix: ac.Address.P, NoPrefixRoute: ac.NoPrefixRoute, Origin: b.origins.String(ac.Pos)}
	if ac.Scope != nil {
		a.Scope = ac.Scope.N
	}
	if a.Prefix.Addr().Is6() {
		// The kernel derives an IPv6 address's scope from the address and
		// ignores the one asked for (addrconf's ipv6_addr_scope): a scope
		// that differs would read back as another and the address would be
		// replaced on every pass. The derived scope is the default, and
		// the only one accepted.
		derived := model.IPv6AddressScope(a.Prefix.Addr())
		if ac.Scope != nil && a.Scope != derived {
			b.errs.add(ac.at("scope"), path()+".scope", "the kernel gives IPv6 address %s scope %s whatever is asked (fe80::/10 link, fec0::/10 site, ::1 host, else global); write scope: %s or leave scope out", a.Prefix.Addr(), model.ScopeName(derived), model.ScopeName(derived))
		}
		a.Scope = derived
	}
	if ac.Peer != nil {
		if ac.Peer.Default {
			b.errs.add(ac.at("peer"), path()+".peer", "expected the far end's address, not default")
		} else if ac.Peer.P.Addr().Is4() != a.Prefix.Addr().Is4() {
			b.errs.add(ac.at("peer"), path()+".peer", "peer %s and address %s are of different families", ac.Peer.P, a.Prefix)
		} else if ac.Peer.P.IsValid() && ac.Peer.P.Bits() != a.Prefix.Bits() {
			// The kernel keeps one prefix length for a point-to-point
			// address, the peer's (ifa_prefixlen): a different one in
			// address would be another address on every read, and the
			// address would be added and deleted by turns. Refused rather
			// than rewritten, so the file reads as the kernel lists it.
			b.errs.add(ac.at("address"), path()+".address", "with a peer the kernel keeps one prefix length, the peer's: address %s has /%d and peer %s has /%d; write %s (or give the peer /%d)", a.Prefix, a.Prefix.Bits(), ac.Peer.P, ac.Peer.P.Bits(), netip.PrefixFrom(a.Prefix.Addr(), ac.Peer.P.Bits()), a.Prefix.Bits())
		}
		a.Peer = ac.Peer.P
	}
	if !a.Prefix.Addr().IsValid() || a.Prefix.Addr().IsUnspecified() {
		b.errs.add(ac.at("address"), path()+".address", "expected a unicast address, found %s", a.Prefix)
		return
	}
	if a.Prefix.Addr().IsMulticast() {
		b.errs.add(ac.at("address"), path()+".address", "%s is a multicast address", a.Prefix.Addr())
	}
	k := linkAddr{link, a.Prefix.Addr()}
	if prev, dup := b.addrAt[k]; dup {
		b.errs.add(ac.at("address"), path()+".address", "%s is already on %s (declared at %s)", a.Prefix.Addr(), link, prev)
		return
	}
	b.addrAt[k] = a.Origin
	if a.Prefix.Addr().Is4() {
		// The kernel refuses (EINVAL) a second IPv4 address of a subnet
		// whose scope is not the subnet's primary's: it would be a
		// secondary of another scope. A point-to-point address's subnet
		// is its peer's (model.Address.Subnet).
		sk := linkSubnet{link, a.Subnet()}
		if prev, ok := b.subnetScope[sk]; ok && prev.scope != a.Scope {
			whose := ""
			if a.Peer.IsValid() || prev.peer {
				whose = " (a point-to-point address's subnet is its peer's)"
			}
			b.errs.add(ac.at("address"), path()+".address", "%s is in subnet %s with %s (declared at %s), whose scope is %s: the kernel keeps one scope per subnet on a link%s; give both the same scope", a.Prefix, sk.subnet, prev.addr, prev.origin, model.ScopeName(prev.scope), whose)
		} else if !ok {
			b.subnetScope[sk] = scopeAt{a.Scope, a.Prefix.Addr(), a.Origin, a.Peer.IsValid()}
		}
	}
	b.st.Addresses = append(b.st.Addresses, a)
}

// linkSubnet is an IPv4 subnet on a link, for the one-scope-per-subnet check.
type linkSubnet struct {
	link   string
	subnet netip.Prefix
}

type scopeAt struct {
	scope  int
	addr   netip.Addr
	origin string
	peer   bool
}

// linkAddr identifies an address on a link, for the duplicate check: a set,
// so that a link with 100k addresses is checked in linear time.
type linkAddr struct {
	link string
	addr netip.Addr
}
