package diff

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// addresses: an address on a link netreconcile owns is its to prune. On a
// link it does not own (a device), where the kernel records an address's
// protocol (IFA_PROTO, Linux 6.3; State.AddressProtocols), an address of
// ours (our protocol) is pruned when it leaves the file, as a route is, and
// one of another protocol or none is never touched unless the file lists
// it. The file's addresses found without a protocol (added before
// netreconcile stamped addresses, or by hand) are stamped in place
// (NLM_F_REPLACE sets ifa_proto); those of another program's protocol are
// left with it. On older kernels no address has a protocol: a device's
// addresses are only added, never deleted.
func (c *computer) addresses() {
	have := map[model.AddressKey]*model.Address{}
	for i := range c.a.Addresses {
		a := &c.a.Addresses[i]
		if c.recreated[a.Link] || ((c.downed[a.Link] || c.v6Flushed[a.Link]) && a.Prefix.Addr().Is6()) {
			continue
		}
		have[a.Key()] = a
	}
	c.lastIPv4(have)
	// The kernel keeps one scope per IPv4 subnet on a link: an address of
	// a subnet whose present addresses have another scope is refused
	// (EINVAL) until they are gone. Such stale addresses are deleted before
	// the creates, not after.
	wantScope := map[linkSubnet]int{}
	inSubnet := map[linkSubnet]int{} // the file's addresses per subnet
	for i := range c.d.Addresses {
		if w := &c.d.Addresses[i]; w.Prefix.Addr().Is4() {
			wantScope[linkSubnet{w.Link, w.Subnet()}] = w.Scope
			inSubnet[linkSubnet{w.Link, w.Subnet()}]++
		}
	}
	var creates, scopeEarly, flushing []Op
	want := map[model.AddressKey]bool{}
	for i := range c.d.Addresses {
		want[c.d.Addresses[i].Key()] = true
	}
	// The kernel knows an IPv6 address on a link by the address alone,
	// not its prefix length: the file's address of another length is the
	// kernel's address changed, replaced (deleted, then added: the
	// kernel's replace keeps the old length), not another one added
	// beside it. Added over it, the add only refreshed the old one, and
	// the stale delete then took the address away.
	have6 := map[linkAddr]*model.Address{}
	for _, h := range have {
		if h.Prefix.Addr().Is6() && !want[h.Key()] {
			have6[linkAddr{h.Link, h.Prefix.Addr()}] = h
		}
	}
	// The kernel keeps one scope per IPv4 subnet: an address held back
	// (max-disruption) keeps its subnet's scope, so another address of
	// that subnet in a new scope would be refused (EINVAL). It waits with
	// the held one.
	keptScope := map[linkSubnet]*model.Address{}
	if c.hold != nil && len(c.hold.objects) > 0 {
		for _, h := range have {
			if h.Prefix.Addr().Is4() && c.holds(KindAddress, h.Key().String()) {
				keptScope[linkSubnet{h.Link, h.Subnet()}] = h
			}
		}
	}
	for i := range c.d.Addresses {
		w := &c.d.Addresses[i]
		if k := keptScope[linkSubnet{w.Link, w.Subnet()}]; k != nil && k.Scope != w.Scope && !c.holds(KindAddress, w.Key().String()) {
			c.plan.HeldDependents = append(c.plan.HeldDependents, fmt.Sprintf("address %s is held: its subnet keeps scope %s with held address %s", w.Key(), model.ScopeName(k.Scope), k.Key()))
			want[w.Key()] = true // as the kernel has it, if it has it
			if c.addrWaits == nil {
				c.addrWaits = map[model.AddressKey]*model.Address{}
			}
			c.addrWaits[w.Key()] = k
			continue
		}
		h, ok := have[w.Key()]
		if h6 := have6[linkAddr{w.Link, w.Prefix.Addr()}]; !ok && h6 != nil {
			delete(have6, linkAddr{w.Link, w.Prefix.Addr()})
			want[h6.Key()] = true // changed here, not stale
			if c.holds(KindAddress, w.Key().String()) {
				continue
			}
			ch := append([]Change{{"prefix-length", strconv.Itoa(h6.Prefix.Bits()), strconv.Itoa(w.Prefix.Bits())}}, addressChanges(w, h6)...)
			creates = append(creates, Op{Action: Replace, Kind: KindAddress, ID: w.Key().String(), Changes: ch, Address: w, Old: h6, Reason: replaceReason(w)})
			continue
		}
		switch {
		case !ok:
			creates = append(creates, Op{Action: Create, Kind: KindAddress, ID: w.Key().String(), Summary: addressSummary(w), Address: w})
		case c.holds(KindAddress, w.Key().String()):
			// Held back: the kernel's address stays as it is.
		default:
			if ch := addressChanges(w, h); len(ch) > 0 && c.deletesOthers(h) {
				c.conflict("address %s: its %s cannot change in place, and deleting it would delete the other addresses of its subnet on %s with it (it is their primary, and promote_secondaries is not netreconcile's to turn on for a link it does not own); change it by hand or keep it", w.Key(), ch[0].Field, h.Link)
			} else if len(ch) > 0 && w.Prefix.Addr().Is4() && w.Scope != h.Scope && inSubnet[linkSubnet{w.Link, w.Subnet()}] > 1 {
				// A change of scope is a change of its subnet's scope
				// (one per subnet). With other addresses of the subnet
				// in the file, the old address goes before any of them
				// is added, this one included, as a stale one of that
				// subnet does (below): replaced in one op, it could come
				// after a create (or the replace of a sibling) in the
				// new scope, which the kernel refuses (EINVAL).
				scopeEarly = append(scopeEarly, Op{Action: Delete, Kind: KindAddress, ID: h.Key().String(), Reason: "its subnet changes scope", Address: h, Promote: c.promotes(h)})
				creates = append(creates, Op{Action: Create, Kind: KindAddress, ID: w.Key().String(), Summary: addressSummary(w), Address: w})
			} else if len(ch) == 0 && c.a.AddressProtocols && h.Protocol == 0 && c.d.Protocol != 0 {
				u := *w
				u.KeptFlags = h.KeptFlags
				creates = append(creates, Op{Action: Update, Kind: KindAddress, ID: w.Key().String(), Reason: "stamped as ours",
					Changes: []Change{{"protocol", "none", strconv.Itoa(c.d.Protocol)}}, Address: &u})
			} else if len(ch) > 0 && changesInPlace(w, ch) {
				// NLM_F_REPLACE sets an IPv6 address's flags where it is
				// (inet6_addr_modify, which adds or removes the prefix
				// route with noprefixroute): a delete and add would send
				// it through duplicate address detection again, tentative
				// and unusable as a source meanwhile.
				if c.a.AddressProtocols && h.Protocol == 0 && c.d.Protocol != 0 {
					ch = append(ch, Change{"protocol", "none", strconv.Itoa(c.d.Protocol)})
				}
				u := *w
				u.KeptFlags = h.KeptFlags
				creates = append(creates, Op{Action: Update, Kind: KindAddress, ID: w.Key().String(), Changes: ch, Address: &u, Old: h})
			} else if len(ch) > 0 {
				// The kernel keeps scope and peer at creation, and an IPv4
				// address's flags: NLM_F_REPLACE on an IPv4 address only
				// refreshes lifetimes. An IPv6 address's peer changed in
				// place would keep the route to the old peer.
				op := Op{Action: Replace, Kind: KindAddress, ID: w.Key().String(), Changes: ch, Address: w, Old: h, Promote: c.promotes(h),
					Reason: replaceReason(w)}
				// Replacing a link's only IPv4 address deletes it first,
				// which flushes the link's IPv4 routes (as in lastIPv4).
				// It goes before the creates: a new IPv4 address added on
				// the link before it would keep the routes, which the
				// plan adds again (EEXIST).
				if h.Prefix.Addr().Is4() && ipv4Count(have, h.Link) == 1 {
					c.flushed4[h.Link] = true
					flushing = append(flushing, op)
				} else {
					creates = append(creates, op)
				}
			}
		}
	}
	v4left := map[string]int{} // IPv4 addresses a link keeps until the creates
	for _, h := range have {
		if h.Prefix.Addr().Is4() {
			v4left[h.Link]++
		}
	}
	early := scopeEarly
	for _, op := range scopeEarly {
		v4left[op.Address.Link]--
	}
	for i := range c.a.Addresses {
		h := &c.a.Addresses[i]
		if want[h.Key()] || c.recreated[h.Link] || ((c.downed[h.Link] || c.v6Flushed[h.Link]) && h.Prefix.Addr().Is6()) {
			continue
		}
		// IPv6 link-local addresses are the kernel's (addrconf makes them
		// with the same flags as a user's): never pruned, unless they
		// carry our protocol (one the file declared; the kernel's own
		// carries kernel_ll).
		if h.Prefix.Addr().Is6() && h.Prefix.Addr().IsLinkLocalUnicast() && !c.oursByProtocol(h) {
			continue
		}
		l, ok := c.a.Links[h.Link]
		// An adopted link is owned whole from this plan on, its addresses
		// with it, so the first apply is already complete.
		adopting := ok && c.d.Links[h.Link] != nil && c.d.Links[h.Link].Adopt && c.d.Links[h.Link].Kind == l.Kind
		if !ok || !(l.Owned || adopting || c.oursByProtocol(h)) {
			continue
		}
		if !(l.Owned || adopting) && c.deletesOthers(h) {
			c.conflict("address %s is ours (protocol %d) and no longer in the file, but deleting it would delete the other addresses of its subnet on %s with it (it is their primary, and promote_secondaries is not netreconcile's to turn on for a link it does not own); delete it by hand, or keep it in the file", h.Key(), h.Protocol, h.Link)
			continue
		}
		op := Op{Action: Delete, Kind: KindAddress, ID: h.Key().String(), Address: h, Promote: c.promotes(h)}
		if c.goesWithLink(h.Link, op) {
			continue // the link goes, its addresses with it
		}
		if h.Prefix.Addr().Is4() && c.flushed4[h.Link] {
			// Deleting the link's last IPv4 address flushes its IPv4
			// routes: it goes before the routes are added, not after.
			early = append(early, op)
			continue
		}
		if sc, ok := wantScope[linkSubnet{h.Link, h.Subnet()}]; ok && h.Prefix.Addr().Is4() && sc != h.Scope {
			early = append(early, op)
			v4left[h.Link]--
			continue
		}
		c.del(op)
	}
	for _, op := range early {
		// A link left without an IPv4 address until the creates loses
		// its IPv4 routes (fib_disable_ip): they are planned again.
		if op.Address.Prefix.Addr().Is4() && v4left[op.Address.Link] <= 0 {
			c.flushed4[op.Address.Link] = true
		}
		c.add(op)
	}
	for _, op := range append(flushing, creates...) {
		c.add(op)
	}
}

// heldReach is what the held addresses leave unreached: the prefixes
// only their new forms route on their links (a prefix route they get, a
// new peer, a wider IPv6 prefix), with the address as the file has it, and
// what is reached already: the kernel's routes of its addresses (the held
// ones' old forms among them), and the file's new addresses'. Until the
// change is applied the kernel keeps the old form. srcs are the local
// addresses the kernel lacks until then, those of the file that wait with
// a held address of their subnet, mapped to it.
type heldReach struct {
	news map[netip.Prefix]*model.Address
	kept []netip.Prefix
	srcs map[netip.Addr]*model.Address
}

// heldReach returns nil when no address is held.
func (c *computer) heldReach() *heldReach {
	if c.hold == nil {
		return nil
	}
	r := &heldReach{news: map[netip.Prefix]*model.Address{}, srcs: map[netip.Addr]*model.Address{}}
	have := map[model.AddressKey]bool{}
	local := map[netip.Addr]bool{}
	subnets := map[linkSubnet]bool{}
	for i := range c.a.Addresses {
		h := &c.a.Addresses[i]
		have[h.Key()] = true
		local[h.Prefix.Addr()] = true
		if h.Prefix.Addr().Is4() {
			subnets[linkSubnet{h.Link, h.Subnet()}] = true
			if h.Secondary {
				// The kernel routes an IPv4 subnet for its primary
				// alone (fib_add_ifaddr).
				continue
			}
		}
		r.kept = append(r.kept, addressReach(h)...)
	}
	for i := range c.d.Addresses {
		w := &c.d.Addresses[i]
		switch {
		case c.holds(KindAddress, w.Key().String()):
			for _, p := range addressReach(w) {
				r.news[p] = w
			}
		case c.addrWaits[w.Key()] != nil:
			if !local[w.Prefix.Addr()] {
				r.srcs[w.Prefix.Addr()] = c.addrWaits[w.Key()]
			}
		case have[w.Key()]:
		case w.Prefix.Addr().Is6() || !subnets[linkSubnet{w.Link, w.Subnet()}]:
			r.kept = append(r.kept, addressReach(w)...)
		}
	}
	if len(r.news) == 0 && len(r.srcs) == 0 {
		return nil
	}
	return r
}

// waits returns the held address whose new form alone reaches gw, nil if
// none does.
func (r *heldReach) waits(gw netip.Addr) *model.Address {
	if !gw.IsValid() || slices.ContainsFunc(r.kept, func(p netip.Prefix) bool { return p.Contains(gw) }) {
		return nil
	}
	for p, a := range r.news {
		if p.Contains(gw) {
			return a
		}
	}
	return nil
}

// addressReach lists the prefixes the kernel routes on the link of the
// address a for it (fib_add_ifaddr, addrconf_prefix_route): its subnet, or
// its peer's, unless noprefixroute.
func addressReach(a *model.Address) []netip.Prefix {
	if a.NoPrefixRoute {
		return nil
	}
	if a.Prefix.Addr().Is4() {
		return []netip.Prefix{a.Subnet()}
	}
	out := []netip.Prefix{a.Prefix.Masked()}
	if a.Peer.IsValid() {
		out = append(out, netip.PrefixFrom(a.Peer.Addr(), 128))
	}
	return out
}

// linkAddr is an address on a link, whatever its prefix length.
type linkAddr struct {
	link string
	addr netip.Addr
}

// linkSubnet is an IPv4 subnet on a link (model.Address.Subnet).
type linkSubnet struct {
	link   string
	subnet netip.Prefix
}

// lastIPv4 marks the owned links that hold IPv4 addresses and keep none in
// the file (flushed4).
func (c *computer) lastIPv4(have map[model.AddressKey]*model.Address) {
	keeps := map[string]bool{}
	for i := range c.d.Addresses {
		if c.d.Addresses[i].Prefix.Addr().Is4() {
			keeps[c.d.Addresses[i].Link] = true
		}
	}
	for _, h := range have {
		l, ok := c.a.Links[h.Link]
		if !h.Prefix.Addr().Is4() || keeps[h.Link] || !ok || c.d.Links[h.Link] == nil {
			continue
		}
		if l.Owned || (c.d.Links[h.Link].Adopt && c.d.Links[h.Link].Kind == l.Kind) {
			c.flushed4[h.Link] = true
		}
	}
	// A link netreconcile does not own loses its IPv4 routes too when the
	// only IPv4 addresses it has are ours and leave the file.
	if !c.a.AddressProtocols {
		return
	}
	stays := map[string]bool{}
	goes := map[string]bool{}
	for _, h := range have {
		if !h.Prefix.Addr().Is4() {
			continue
		}
		if c.oursByProtocol(h) {
			goes[h.Link] = true
		} else {
			stays[h.Link] = true
		}
	}
	for link := range goes {
		if l, ok := c.a.Links[link]; ok && !l.Owned && !keeps[link] && !stays[link] {
			c.flushed4[link] = true
		}
	}
}

// oursByProtocol reports whether the address h carries our protocol, on a
// kernel that records it: then it is ours wherever it is.
func (c *computer) oursByProtocol(h *model.Address) bool {
	return c.a.AddressProtocols && c.d.Protocol != 0 && h.Protocol == c.d.Protocol
}

// deletesOthers reports whether deleting the IPv4 address h would take
// other addresses with it: it is the primary of its subnet on a link where
// netreconcile does not turn promote_secondaries on, and the subnet has
// other addresses there.
func (c *computer) deletesOthers(h *model.Address) bool {
	if !h.Prefix.Addr().Is4() || h.Secondary || c.promotes(h) {
		return false
	}
	for i := range c.a.Addresses {
		o := &c.a.Addresses[i]
		if o.Link == h.Link && o.Prefix != h.Prefix && o.Prefix.Addr().Is4() && o.Subnet() == h.Subnet() {
			return true
		}
	}
	return false
}

// promotes says whether deleting the IPv4 address h should first turn on
// promote_secondaries on its link. With it off (the kernel's default),
// deleting a subnet's primary address deletes every secondary of the subnet
// with it, the address just added to replace it included, and a link left
// without an IPv4 address loses every route through it. Only a link
// netreconcile owns (or adopts in this plan) gets the setting: a device
// link is not ours to configure.
func (c *computer) promotes(h *model.Address) bool {
	if !h.Prefix.Addr().Is4() {
		return false // IPv6 has no primary and secondaries
	}
	l, ok := c.a.Links[h.Link]
	if !ok {
		return false
	}
	w := c.d.Links[h.Link]
	return l.Owned || w != nil && w.Adopt && w.Kind == l.Kind
}

func addressChanges(w, h *model.Address) []Change {
	var ch []Change
	// An IPv6 address's scope is the kernel's to derive from the address
	// (desired gives it the same way): comparing it could only flap.
	if w.Scope != h.Scope && w.Prefix.Addr().Is4() {
		ch = append(ch, Change{"scope", model.ScopeName(h.Scope), model.ScopeName(w.Scope)})
	}
	if w.Peer != h.Peer {
		ch = append(ch, Change{"peer", prefixStr(h.Peer), prefixStr(w.Peer)})
	}
	if w.NoPrefixRoute != h.NoPrefixRoute {
		ch = append(ch, Change{"noprefixroute", boolStr(h.NoPrefixRoute), boolStr(w.NoPrefixRoute)})
	}
	return ch
}

// changesInPlace reports whether the kernel takes the changes ch of the
// address w where it is: an IPv6 address's noprefixroute.
func changesInPlace(w *model.Address, ch []Change) bool {
	if !w.Prefix.Addr().Is6() {
		return false
	}
	for _, c := range ch {
		if c.Field != "noprefixroute" {
			return false
		}
	}
	return true
}

// replaceReason says what a replace of the address w costs: it is deleted
// and added again, and an IPv6 one is tentative until duplicate address
// detection passes again.
func replaceReason(w *model.Address) string {
	if w.Prefix.Addr().Is6() {
		return "deleted and added again: tentative until duplicate address detection passes"
	}
	return "deleted and added again"
}

// addressSummary lists what an address has beyond its identity.
func addressSummary(a *model.Address) string {
	var parts []string
	if a.Peer.IsValid() {
		parts = append(parts, "peer "+a.Peer.String())
	}
	if a.Scope != model.ScopeUniverse {
		parts = append(parts, "scope "+model.ScopeName(a.Scope))
	}
	if a.NoPrefixRoute {
		parts = append(parts, "noprefixroute")
	}
	return strings.Join(parts, " ")
}

// ipv4Count counts the IPv4 addresses of link in have.
func ipv4Count(have map[model.AddressKey]*model.Address, link string) int {
	n := 0
	for _, a := range have {
		if a.Link == link && a.Prefix.Addr().Is4() {
			n++
		}
	}
	return n
}

// poolGiveBacks deletes the addresses a link held from a pool and no longer
// takes (see Inputs.PoolAddrs), also from links netreconcile does not own
// (a device link keeps its other addresses): the registry says they were
// ours. An address the plan changes already, or whose link it creates,
// recreates or deletes, is left to that op.
func (c *computer) poolGiveBacks(ours map[string]map[netip.Addr]bool) {
	if len(ours) == 0 {
		return
	}
	want := map[model.AddressKey]bool{}
	// The addresses the file still gives a link, at whatever prefix
	// length: a link left out for a conflict keeps such an address as it
	// is (the address stage left its change out with the link), since the
	// pool has not taken it back.
	kept := map[linkAddr]bool{}
	for i := range c.d.Addresses {
		a := &c.d.Addresses[i]
		want[a.Key()] = true
		if c.blocked[a.Link] {
			kept[linkAddr{a.Link, a.Prefix.Addr()}] = true
		}
	}
	planned := map[model.AddressKey]bool{}
	// A held change (max-disruption) leaves the kernel's address as it
	// is: an IPv6 address whose prefix length the file changes is the
	// same address replaced, which the pool still gives the link.
	if c.hold != nil {
		for k, op := range c.hold.objects {
			if k.kind == KindAddress && op.Old != nil {
				planned[op.Old.Key()] = true
			}
		}
	}
	links := map[string]bool{} // links whose addresses the kernel handles
	for _, ops := range [][]Op{c.plan.Ops, c.deletes, c.linkDeletes} {
		for i := range ops {
			op := &ops[i]
			switch {
			case op.Kind == KindAddress:
				planned[op.Address.Key()] = true
				if op.Old != nil {
					planned[op.Old.Key()] = true
				}
			case op.Kind == KindLink && op.Action != Update && op.Link != nil:
				links[op.Link.Name] = true
				// A veth's peer goes (or comes) with it: its addresses are
				// the kernel's business too, whichever end the op names.
				for _, l := range []*model.Link{op.Link, c.a.Links[op.Link.Name]} {
					if l != nil && l.Veth != nil && l.Veth.Peer != "" {
						links[l.Veth.Peer] = true
					}
				}
			}
		}
	}
	for i := range c.a.Addresses {
		a := &c.a.Addresses[i]
		if !ours[a.Link][a.Prefix.Addr()] || want[a.Key()] || kept[linkAddr{a.Link, a.Prefix.Addr()}] || planned[a.Key()] || links[a.Link] {
			continue
		}
		if (c.downed[a.Link] || c.v6Flushed[a.Link]) && a.Prefix.Addr().Is6() {
			// The kernel takes it with the link's IPv6 (set down, MTU
			// below 1280, disable_ipv6): a delete would find it gone.
			continue
		}
		c.del(Op{Action: Delete, Kind: KindAddress, ID: a.Key().String(), Reason: "given back to its pool", Address: a})
	}
}

// pending shows the pool addresses apply allocates (Plan.Pending). Those
// of a link left out for a conflict are left out with it, in the words the
// plan uses for the link's other addresses: an apply allocates nothing for
// them (engine.PlanDesired), and a dry run and an apply list the same
// conflicts.
func (c *computer) pending(unallocated []model.PoolAddress) {
	for _, pa := range unallocated {
		if c.blocked[pa.Link] {
			if c.heldLinks[pa.Link] {
				c.leftOut(pa.Link, "address (from pool %s) dev %s is held: link %s is held", pa.Pool, pa.Link, pa.Link)
			} else {
				c.conflict("address (from pool %s) dev %s is left out: link %s is in conflict", pa.Pool, pa.Link, pa.Link)
			}
			continue
		}
		c.plan.Pending = append(c.plan.Pending, Op{Action: Create, Kind: KindAddress,
			ID: fmt.Sprintf("(from pool %s) dev %s", pa.Pool, pa.Link), Reason: "allocated by apply"})
	}
}
