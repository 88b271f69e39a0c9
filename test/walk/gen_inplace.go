package walk

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// inPlace changes one key of an object that stays to another value, or
// takes the key out of it: the changes and removals that the other
// mutations make only by drawing the whole object again, so rarely that
// TestSchemaReach would not see them. The events are tried in a random
// order, and the first one c has an object for is made.
func (g *Gen) inPlace(c *Config) string {
	events := []func(*Config) string{
		g.inPlacePoolPrefix, g.inPlaceMiimon, g.inPlaceLowerMode, g.inPlacePeerHome,
		g.inPlaceGroup, g.inPlacePSK, g.inPlaceChainType, g.inPlaceSetFeed,
		g.inPlaceSetFlags, g.inPlaceBlocks, g.inPlaceWeight, g.inPlaceRouteScope,
		g.inPlaceRouteSrc, g.inPlaceRouteTOS, g.inPlaceRuleFamily, g.inPlaceSuppress,
		g.inPlaceMaxDisruption, g.inPlaceAdopt, g.inPlaceExternal, g.inPlaceUserspace,
		g.inPlaceElemFile, g.inPlaceRouteMTU, g.inPlaceRuleNot, g.inPlaceRuleAction,
		g.inPlaceBondMode, g.inPlaceWGPeer, g.inPlaceCredential, g.inPlaceHopDev, g.inPlaceOnlink,
		g.inPlaceRotation, g.inPlaceSetTimeout, g.inPlaceVia, g.inPlaceVXLAN,
	}
	for _, i := range g.R.Perm(len(events)) {
		if what := events[i](c); what != "noop" {
			return what
		}
	}
	return "noop"
}

// other picks a value of vs other than cur.
func otherInt(g *Gen, vs []int, cur int) int {
	var out []int
	for _, v := range vs {
		if v != cur {
			out = append(out, v)
		}
	}
	return pickInt(g, out)
}

func otherString(g *Gen, vs []string, cur string) string {
	var out []string
	for _, v := range vs {
		if v != cur {
			out = append(out, v)
		}
	}
	return g.pick(out)
}

// inPlacePoolPrefix changes the prefix length of a link's pool entry (the
// same pool): the address is another to the kernel, the entry the same.
func (g *Gen) inPlacePoolPrefix(c *Config) string {
	type entry struct {
		link string
		a    *Addr
	}
	var es []entry
	for _, n := range c.LinkNames() {
		for _, a := range c.Links[n].Addrs {
			if a.Pool != "" {
				es = append(es, entry{n, a})
			}
		}
	}
	if len(es) == 0 {
		return "noop"
	}
	e := es[g.R.Intn(len(es))]
	a := e.a
	// A length of the entry's family, another than it has; none now and
	// then (the default, a host's).
	next := func(cur int, v6 bool) int {
		vs := []int{32, 24, 28}
		if v6 {
			vs = []int{128, 120, 64}
		}
		if cur != 0 && g.chance(0.25) {
			return 0
		}
		return otherInt(g, vs, cur)
	}
	switch {
	case a.Pool == dualPool[0] && g.chance(0.5):
		a.PrefixLen4 = next(a.PrefixLen4, false)
	case a.Pool == dualPool[0]:
		a.PrefixLen6 = next(a.PrefixLen6, true)
	default:
		a.PrefixLen = next(a.PrefixLen, a.Pool == "pv")
	}
	return "change the prefix lengths of the pool " + a.Pool + " entry of " + e.link
}

// inPlaceMiimon gives a bond's miimon another value, or takes it out (the
// default). The largest the kernel takes is among them: the file's type
// held more, which validated and the kernel refused (walk finding 151).
func (g *Gen) inPlaceMiimon(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Kind == "bond" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	if l.Miimon >= 0 && g.chance(0.4) {
		l.Miimon = -1
	} else {
		l.Miimon = otherInt(g, []int{0, 50, 200, math.MaxInt32}, l.Miimon)
	}
	return fmt.Sprintf("bond %s miimon %d", n, l.Miimon)
}

// inPlaceLowerMode gives an ipvlan or a macvlan another mode, a vlan
// another protocol, or takes it out (the default: l2, bridge, 802.1q).
func (g *Gen) inPlaceLowerMode(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Kind == "ipvlan" || l.Kind == "macvlan" || l.Kind == "vlan" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	switch l.Kind {
	case "ipvlan":
		l.Mode = otherString(g, []string{"", "l2", "l3", "l3s"}, l.Mode)
	case "vlan":
		// Its protocol: a replace.
		l.Mode = otherString(g, []string{"", "802.1q", "802.1ad"}, l.Mode)
	default:
		l.Mode = otherString(g, []string{"", "bridge", "private", "vepa", "passthru"}, l.Mode)
	}
	return fmt.Sprintf("%s %s mode %q", l.Kind, n, l.Mode)
}

// inPlacePeerHome brings the peer of a veth whose peer is in another
// namespace home: peer-netns leaves the link, and the peer is declared
// here.
func (g *Gen) inPlacePeerHome(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.PeerNS != "" })
	if n == "" || c.Links[c.Links[n].Peer] != nil {
		return "noop"
	}
	l := c.Links[n]
	l.PeerNS = ""
	p := g.newLink(c, l.Peer, "veth")
	p.Peer = n
	c.Links[l.Peer] = p
	return "bring the peer " + l.Peer + " of " + n + " here"
}

// inPlaceGroup gives a vxlan of a multicast group another group.
func (g *Gen) inPlaceGroup(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.VXLAN != nil && l.VXLAN.Group != "" })
	if n == "" {
		return "noop"
	}
	v := c.Links[n].VXLAN
	if strings.Contains(v.Group, ":") {
		v.Group = otherString(g, []string{"ff05::100", "ff05::101", "ff05::102"}, v.Group)
	} else {
		v.Group = otherString(g, []string{"239.1.1.1", "239.1.1.2", "239.1.1.3"}, v.Group)
	}
	return "vxlan " + n + " group " + v.Group
}

// inPlaceVXLAN changes what the kernel changes of a vxlan in place: its
// remote or local address (another of its family, or none while the other
// stays, so the family does too), ttl or learning. The oracle holds the
// ifindex (vxlanInPlace).
func (g *Gen) inPlaceVXLAN(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.VXLAN != nil && l.VXLAN.Group == "" })
	if n == "" {
		return "noop"
	}
	v := c.Links[n].VXLAN
	six := strings.Contains(v.Remote+v.Local, ":")
	addr := func(cur string, v4, v6 string) string {
		var vs []string
		for i := 1; i <= 4; i++ {
			if six {
				vs = append(vs, fmt.Sprintf(v6, i))
			} else {
				vs = append(vs, fmt.Sprintf(v4, i))
			}
		}
		return otherString(g, vs, cur)
	}
	switch g.R.Intn(4) {
	case 0:
		if v.Local != "" && v.Remote != "" && g.chance(0.3) {
			v.Remote = ""
		} else {
			v.Remote = addr(v.Remote, "198.51.100.%d", "2001:db8:fe::%d")
		}
		return "vxlan " + n + " remote " + cmp.Or(v.Remote, "none")
	case 1:
		if v.Local != "" && v.Remote != "" && g.chance(0.3) {
			v.Local = ""
		} else {
			v.Local = addr(v.Local, "192.0.2.%d", "2001:db8:ff::%d")
		}
		return "vxlan " + n + " local " + cmp.Or(v.Local, "none")
	case 2:
		v.TTL = otherInt(g, []int{0, 64, 128, 255}, v.TTL)
		return fmt.Sprintf("vxlan %s ttl %d", n, v.TTL)
	}
	v.NoLearning = !v.NoLearning
	return fmt.Sprintf("vxlan %s learning %t", n, !v.NoLearning)
}

// inPlacePSK gives a WireGuard peer the other preshared key file.
func (g *Gen) inPlacePSK(c *Config) string {
	if len(g.PSKs) < 2 {
		return "noop"
	}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if l.WG == nil {
			continue
		}
		for _, p := range l.WG.Peers {
			if p.PSKFile == "" || p.KeepPSK {
				continue
			}
			for _, k := range g.PSKs {
				if k[0] != p.PSKFile {
					p.PSKFile, p.PSK = k[0], k[1]
					return "another preshared key for a peer of " + n
				}
			}
		}
	}
	return "noop"
}

// inPlaceChainType makes a base chain on the output hook of an IP family
// a route chain, or a route chain a filter one (nft refuses route chains
// elsewhere).
func (g *Gen) inPlaceChainType(c *Config) string {
	for _, i := range g.R.Perm(len(c.Tables)) {
		t := c.Tables[i]
		if !l3(t.Family) {
			continue
		}
		for _, ch := range t.Chains {
			if ch.Hook != "output" || ch.Type == "nat" {
				continue
			}
			ch.Type = map[string]string{"route": "filter", "filter": "route", "": "route"}[ch.Type]
			ch.Priority = g.chainPriority(t.Family, ch)
			if ch.Type == "route" {
				ch.Policy = "accept"
			}
			ch.Rules = g.rules(t.Family, ch)
			return fmt.Sprintf("chain %s of %s %s: type %s", ch.Name, t.Family, t.Name, ch.chainType())
		}
	}
	return "noop"
}

// inPlaceSetFeed changes what feeds a set from a WireGuard link's peers:
// which peers (up, all, or the default), or no feed at all (the set keeps
// its own elements); or feeds such a set again.
func (g *Gen) inPlaceSetFeed(c *Config) string {
	wg := g.pickLink(c, func(l *Link) bool { return l.Kind == "wireguard" })
	for _, t := range c.Tables {
		for _, s := range t.Sets {
			if s.Name != "sw" {
				continue
			}
			id := t.Family + " " + t.Name
			switch {
			case s.FromWG == "" && wg != "" && s.Interval:
				// Peers feed prefixes: only a set with flags [interval]
				// (inPlaceSetFlags may have taken them off while it was
				// not fed).
				s.FromWG, s.FromPeers = wg, g.pick([]string{"", "up", "all", "all"})
				return "set sw of " + id + " fed by " + wg + " again"
			case s.FromWG == "":
			case g.chance(0.25):
				s.FromWG, s.FromPeers = "", ""
				return "set sw of " + id + " fed no more"
			default:
				s.FromPeers = otherString(g, []string{"", "up", "all"}, s.FromPeers)
				return fmt.Sprintf("set sw of %s fed by peers %q", id, s.FromPeers)
			}
		}
	}
	if wg == "" {
		return "noop"
	}
	// A set fed by the link's peers, to change later: in an inet table
	// where there is one (the walk's ip table may be someone else's,
	// left out of the comparison for a conflict).
	perm := g.R.Perm(len(c.Tables))
	sort.SliceStable(perm, func(i, j int) bool { return c.Tables[perm[i]].Family == "inet" && c.Tables[perm[j]].Family != "inet" })
	for _, i := range perm {
		if t := c.Tables[i]; (t.Family == "ip" || t.Family == "inet") && !slices.ContainsFunc(t.Sets, func(s *Set) bool { return s.Name == "sw" }) {
			// Not where a set sw is already, one the peers cannot feed
			// (without flags [interval]): a name given twice.
			// Mostly fed by all its peers: what the oracle sees of the
			// feed where no peer shakes hands (wireguard-go here).
			t.Sets = append(t.Sets, &Set{Name: "sw", Type: setTypes["sw"], Interval: true, FromWG: wg, FromPeers: g.pick([]string{"", "up", "all", "all"}), Elements: g.elements("ipv4_addr")})
			return "add set sw to " + t.Family + " " + t.Name + ", fed by " + wg
		}
	}
	return "noop"
}

// inPlaceSetFlags turns a set of addresses with flags [interval] into one
// with flags [timeout] (elements that never expire), or back.
func (g *Gen) inPlaceSetFlags(c *Config) string {
	for _, i := range g.R.Perm(len(c.Tables)) {
		t := c.Tables[i]
		for _, s := range t.Sets {
			if s.FromWG != "" || s.Type != "ipv4_addr" && s.Type != "ipv6_addr" {
				continue
			}
			switch {
			case s.Interval && s.Timeout == "":
				s.Interval, s.Timeout = false, "flag"
				s.Elements, s.FileElements = withoutIntervals(s.Elements), withoutIntervals(s.FileElements)
			case !s.Interval && s.Timeout == "flag":
				s.Interval, s.Timeout = true, ""
			default:
				continue
			}
			return fmt.Sprintf("set %s of %s %s: interval %v, timeout %q", s.Name, t.Family, t.Name, s.Interval, s.Timeout)
		}
	}
	return "noop"
}

// inPlaceBlocks gives a pool other blocks the host may take, or every one.
func (g *Gen) inPlaceBlocks(c *Config) string {
	if len(c.Pools) == 0 {
		return "noop"
	}
	p := c.Pools[g.R.Intn(len(c.Pools))]
	p.Blocks = otherString(g, []string{"", "0-7", "2", "1-3", "0-63"}, p.Blocks)
	return "pool " + p.Name + " blocks " + p.Blocks
}

// inPlaceWeight gives a next hop of a multipath route another weight, or
// the default.
func (g *Gen) inPlaceWeight(c *Config) string {
	var hs []*Hop
	var to []string
	weighted := g.chance(0.6)
	for _, r := range c.Routes {
		for i := range r.Hops {
			if !weighted || r.Hops[i].Weight != 0 {
				hs, to = append(hs, &r.Hops[i]), append(to, r.To)
			}
		}
	}
	if len(hs) == 0 {
		// A route made multipath, to change a weight of later.
		for _, i := range g.R.Perm(len(c.Routes)) {
			r := c.Routes[i]
			if r.Side == "" && r.Family == "" && g.multipath(c, r, strings.Contains(r.To, ":")) {
				r.Type, r.Via, r.Dev, r.Src, r.Scope, r.Onlink = "unicast", "", "", "", "", false
				return "route to " + r.To + " made multipath"
			}
		}
		return "noop"
	}
	i := g.R.Intn(len(hs))
	h := hs[i]
	if h.Weight != 0 && g.chance(0.3) {
		h.Weight = 0
	} else {
		h.Weight = otherInt(g, []int{2, 5, 256}, h.Weight)
	}
	return fmt.Sprintf("next hop %s of a route to %s weight %d", h.Via, to[i], h.Weight)
}

// devRoute says whether r is an IPv4 unicast route through a device alone
// (no gateway): the routes the walk gives a scope or a source.
func devRoute(r *Route) bool {
	return (r.Type == "" || r.Type == "unicast") && r.Dev != "" && r.Via == "" && len(r.Hops) == 0 &&
		!strings.Contains(r.To, ":") && (r.Family == "" || r.Family == "ipv4")
}

// inPlaceRouteScope gives a route another scope, or one.
func (g *Gen) inPlaceRouteScope(c *Config) string {
	given := g.chance(0.6)
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		if r.Scope != "" || !given && devRoute(r) {
			r.Scope = otherString(g, []string{"global", "link"}, r.Scope)
			return "route to " + r.To + " scope " + r.Scope
		}
	}
	return "noop"
}

// sources are the IPv4 addresses of l a route through it may take as its
// source (Repair's holds).
func sources(l *Link) []string {
	var out []string
	for _, a := range l.Addrs {
		if a.Pool == "" && a.Scope == "" && a.Peer == "" && !strings.Contains(a.CIDR, ":") {
			out = append(out, netip.MustParsePrefix(a.CIDR).Addr().String())
		}
	}
	return out
}

// inPlaceRouteSrc gives a route through a link another of the link's
// addresses as its source (the link takes one more if it has one alone),
// or a source.
func (g *Gen) inPlaceRouteSrc(c *Config) string {
	given := g.chance(0.6)
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		l := c.Links[r.Dev]
		if given && r.Src == "" || l == nil || l.Down || len(r.Hops) > 0 || strings.Contains(r.To, ":") || r.Family != "" && r.Family != "ipv4" ||
			r.Type != "" && r.Type != "unicast" || strings.Contains(r.Via, ":") || !vrfSourceFits(c, l, r.Table) {
			continue
		}
		srcs := sources(l)
		if len(srcs) == 0 || len(srcs) == 1 && srcs[0] == r.Src {
			idx := linkIndex(l.Name)
			a := &Addr{CIDR: fmt.Sprintf("10.%d.%d.%d/24", idx, g.R.Intn(2), 5+g.R.Intn(4))}
			if slices.Contains(srcs, netip.MustParsePrefix(a.CIDR).Addr().String()) {
				return "noop"
			}
			l.Addrs = append(l.Addrs, a)
			srcs = sources(l)
		}
		r.Src = otherString(g, srcs, r.Src)
		return "route to " + r.To + " source " + r.Src
	}
	return "noop"
}

// inPlaceRouteTOS gives an IPv4 route another tos, or one (the route is
// another to the kernel: tos is part of its key).
func (g *Gen) inPlaceRouteTOS(c *Config) string {
	given := g.chance(0.6)
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		if given && r.TOS == 0 || strings.Contains(r.To, ":") || r.Family != "" && r.Family != "ipv4" {
			continue
		}
		r.TOS = otherInt(g, []int{4, 8, 16}, r.TOS)
		return fmt.Sprintf("route to %s tos %d", r.To, r.TOS)
	}
	return "noop"
}

// inPlaceRuleFamily leaves a rule's family to its from or to, or writes it
// again.
func (g *Gen) inPlaceRuleFamily(c *Config) string {
	for _, i := range g.R.Perm(len(c.Rules)) {
		r := c.Rules[i]
		if r.From == "" && r.To == "" {
			continue
		}
		r.NoFamily = !r.NoFamily
		return fmt.Sprintf("rule %d: family written %v", r.Priority, !r.NoFamily)
	}
	return "noop"
}

// inPlaceSuppress gives a lookup rule another suppress-prefixlength, or
// one.
func (g *Gen) inPlaceSuppress(c *Config) string {
	for _, i := range g.R.Perm(len(c.Rules)) {
		r := c.Rules[i]
		if r.Action != "lookup" {
			continue
		}
		cur := -1
		if r.HasSuppress {
			cur = r.Suppress
		}
		r.Suppress, r.HasSuppress = otherInt(g, []int{0, 8, 32}, cur), true
		return fmt.Sprintf("rule %d: suppress-prefixlength %d", r.Priority, r.Suppress)
	}
	return "noop"
}

// disruptionLevels are the values of settings.max-disruption ("" none).
var disruptionLevels = []string{"", "in-place", "table-replaced", "readded", "link-flapped", "link-recreated"}

// inPlaceMaxDisruption gives the service another limit, or none: the
// runner's service pass holds what is above it (heldPass).
func (g *Gen) inPlaceMaxDisruption(c *Config) string {
	if g.chance(0.5) {
		// Every configuration has one: half as often as the others.
		return "noop"
	}
	c.MaxDisruption = otherString(g, disruptionLevels, c.MaxDisruption)
	return fmt.Sprintf("max-disruption %q", c.MaxDisruption)
}

// inPlaceAdopt drops adopt from an adopted link or table, spelt out as
// adopt: false (adopted, it is ours either way).
func (g *Gen) inPlaceAdopt(c *Config) string {
	if l := c.Links[AdoptLink]; l != nil && l.Adopt && g.chance(0.5) {
		l.Adopt, l.Explicit = false, true
		return "adopt: false for " + AdoptLink
	}
	for _, t := range c.Tables {
		if t.Adopt {
			t.Adopt, t.Explicit = false, true
			return "adopt: false for " + t.Family + " " + t.Name
		}
	}
	return "noop"
}

// inPlaceExternal makes a tunnel flow-based, or one with endpoints again,
// with external spelt out either way.
func (g *Gen) inPlaceExternal(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Tunnel != nil })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	if l.Explicit && !l.Tunnel.External && g.chance(0.3) {
		// external: false, the default, left out.
		l.Explicit = false
		return "respell link " + n
	}
	l.Explicit = true
	if l.Tunnel.External {
		t := g.newTunnel(l.Kind)
		if t.External {
			return "respell link " + n
		}
		l.Tunnel = t
	} else {
		l.Tunnel = &Tunnel{Mode: l.Tunnel.Mode, External: true}
	}
	return fmt.Sprintf("tunnel %s external %v", n, l.Tunnel.External)
}

// inPlaceUserspace allows a WireGuard device wireguard-go, or not, with
// userspace spelt out (the kernel module's kernels).
func (g *Gen) inPlaceUserspace(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.WG != nil })
	if n == "" || !g.Caps.WireGuardModule {
		return "noop"
	}
	l := c.Links[n]
	if l.Explicit && l.WG.Kernel && g.chance(0.4) {
		// userspace: false, the default, left out.
		l.Explicit = false
		return "respell link " + n
	}
	l.Explicit, l.WG.Kernel = true, !l.WG.Kernel
	return fmt.Sprintf("userspace %v for %s", !l.WG.Kernel, n)
}

// inPlaceElemFile takes a set's elements file out: its elements move into
// the file's elements.
func (g *Gen) inPlaceElemFile(c *Config) string {
	for _, t := range c.Tables {
		for _, s := range t.Sets {
			if s.ElemFile != "" {
				s.Elements = append(s.Elements, s.FileElements...)
				s.ElemFile, s.FileElements = "", nil
				return "set " + s.Name + " of " + t.Family + " " + t.Name + " without its elements file"
			}
		}
	}
	return "noop"
}

// inPlaceRouteMTU gives a route another MTU, or takes it out.
func (g *Gen) inPlaceRouteMTU(c *Config) string {
	given := g.chance(0.6)
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		if given && r.MTU == 0 {
			continue
		}
		r.MTU = otherInt(g, []int{0, 1400, 1300}, r.MTU)
		return fmt.Sprintf("route to %s mtu %d", r.To, r.MTU)
	}
	return "noop"
}

// inPlaceRuleNot inverts a rule's selector, with not spelt out.
func (g *Gen) inPlaceRuleNot(c *Config) string {
	for _, i := range g.R.Perm(len(c.Rules)) {
		r := c.Rules[i]
		if r.Action != "lookup" && !g.Defects.CatchAllRule {
			continue
		}
		r.Not, r.Explicit = !r.Not, true
		return fmt.Sprintf("rule %d: not %v", r.Priority, r.Not)
	}
	return "noop"
}

// inPlaceRuleAction makes a lookup rule one that drops (its table and
// suppressor leave it), or a dropping rule a lookup.
func (g *Gen) inPlaceRuleAction(c *Config) string {
	if len(c.Rules) == 0 {
		return "noop"
	}
	r := c.Rules[g.R.Intn(len(c.Rules))]
	if r.Action == "lookup" {
		r.Action, r.Table, r.Suppress, r.HasSuppress = g.pick([]string{"blackhole", "unreachable", "prohibit"}), "", 0, false
		if r.Not && !g.Defects.CatchAllRule {
			r.Not = false
		}
	} else {
		r.Action, r.Table = "lookup", g.pick([]string{"100", "200", "main"})
	}
	return fmt.Sprintf("rule %d: action %s", r.Priority, r.Action)
}

// inPlaceBondMode gives a bond another mode, or the default.
func (g *Gen) inPlaceBondMode(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.Kind == "bond" })
	if n == "" {
		return "noop"
	}
	l := c.Links[n]
	l.Mode = otherString(g, bondModes, l.Mode)
	return fmt.Sprintf("bond %s mode %q", n, l.Mode)
}

// inPlaceWGPeer changes a WireGuard peer's keepalive or its endpoints, or
// takes them out.
func (g *Gen) inPlaceWGPeer(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.WG != nil && len(l.WG.Peers) > 0 })
	if n == "" {
		return "noop"
	}
	w := c.Links[n].WG
	i := g.R.Intn(len(w.Peers))
	p := w.Peers[i]
	if g.chance(0.4) {
		p.Keepalive = otherInt(g, []int{0, 25, 60}, p.Keepalive)
		return fmt.Sprintf("peer %d of %s keepalive %d", i, n, p.Keepalive)
	}
	if len(p.AllowedIPs) > 0 && g.chance(0.3) {
		p.AllowedIPs = nil
		return fmt.Sprintf("peer %d of %s without allowed IPs", i, n)
	}
	if len(p.Endpoints) > 0 && g.chance(0.3) {
		p.Endpoints = nil
		return fmt.Sprintf("peer %d of %s without endpoints", i, n)
	}
	// The peer's index in PeerKeys numbers its candidates (changeWG).
	k := slices.Index(g.PeerKeys, p.PublicKey)
	cands := []string{fmt.Sprintf("192.0.2.%d:51820", 10+k), fmt.Sprintf("[2001:db8:24::%d]:51820", 10+k), fmt.Sprintf("192.0.2.%d:51821", 20+k)}
	was := strings.Join(p.Endpoints, " ")
	for strings.Join(p.Endpoints, " ") == was {
		p.Endpoints = nil
		for _, j := range g.R.Perm(len(cands))[:1+g.R.Intn(len(cands))] {
			p.Endpoints = append(p.Endpoints, cands[j])
		}
	}
	return fmt.Sprintf("peer %d of %s endpoints %v", i, n, p.Endpoints)
}

// inPlaceCredential gives a device the other key of its name (another
// credential, another file; another public key where the file shows it).
func (g *Gen) inPlaceCredential(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.WG != nil })
	if n == "" {
		return "noop"
	}
	w := c.Links[n].WG
	w.Alt = !w.Alt
	g.wgKey(w, n)
	return "another key for " + n
}

// inPlaceHopDev leaves a next hop's device to its gateway's connected
// subnet, or names it again.
func (g *Gen) inPlaceHopDev(c *Config) string {
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		for j := range r.Hops {
			h := &r.Hops[j]
			if l := c.Links[h.Dev]; l != nil && connected(l, h.Via) {
				h.NoDev = !h.NoDev
				return fmt.Sprintf("next hop %s of a route to %s: dev written %v", h.Via, r.To, !h.NoDev)
			}
		}
	}
	return "noop"
}

// inPlaceOnlink turns onlink on or off, spelt out, on a route whose
// gateway is in a connected subnet of its device (valid either way).
func (g *Gen) inPlaceOnlink(c *Config) string {
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		// Not on lo: the kernel routes lo's subnets as local, and takes no
		// on-link gateway there (the file refuses one).
		if l := c.Links[r.Dev]; l != nil && r.Dev != "lo" && r.Via != "" && connected(l, r.Via) {
			r.Onlink, r.Explicit = !r.Onlink, true
			return fmt.Sprintf("route to %s onlink %v", r.To, r.Onlink)
		}
	}
	return "noop"
}

// inPlaceRotation gives a WireGuard device the other endpoint rotation
// settings, or none.
func (g *Gen) inPlaceRotation(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return l.WG != nil })
	if n == "" {
		return "noop"
	}
	w := c.Links[n].WG
	w.Rotation = otherInt(g, []int{0, 1, 2}, w.Rotation)
	return fmt.Sprintf("rotation %d for %s", w.Rotation, n)
}

// inPlaceSetTimeout gives a set whose elements expire another timeout.
func (g *Gen) inPlaceSetTimeout(c *Config) string {
	for _, t := range c.Tables {
		for _, s := range t.Sets {
			if s.Timeout != "" && s.Timeout != "flag" {
				s.Timeout = otherString(g, []string{"1h", "90s", "10m"}, s.Timeout)
				return "set " + s.Name + " of " + t.Family + " " + t.Name + " timeout " + s.Timeout
			}
		}
	}
	return "noop"
}

// inPlaceVia gives a route another gateway in the same connected subnet.
func (g *Gen) inPlaceVia(c *Config) string {
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		l := c.Links[r.Dev]
		if l == nil || r.Via == "" || r.Onlink || !connected(l, r.Via) {
			continue
		}
		a := netip.MustParseAddr(r.Via)
		for _, b := range []netip.Addr{a.Next(), a.Prev()} {
			if b.IsValid() && connected(l, b.String()) {
				r.Via = b.String()
				return "route to " + r.To + " via " + r.Via
			}
		}
	}
	return "noop"
}
