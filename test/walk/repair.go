package walk

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Repair makes c a valid configuration that a kernel can hold, by dropping
// what no longer fits after a mutation (or after the shrinker removed an
// object): references to links that are gone, masters that are not bridges,
// gateways outside the device's subnets, duplicate identities. It is
// deterministic, so a shrunk sequence repairs the same way every time.
func (g *Gen) Repair(c *Config) {
	// Pairs: both ends declared, each naming the other.
	for changed := true; changed; {
		changed = false
		for _, n := range c.LinkNames() {
			l := c.Links[n]
			if l.Kind == "veth" && l.PeerNS == "" {
				p := c.Links[l.Peer]
				if p == nil || p.Kind != "veth" || p.Peer != n {
					delete(c.Links, n)
					changed = true
				}
			}
			if l.Kind == "ipvlan" {
				p := c.Links[l.Parent]
				if p == nil || p.Kind != "dummy" {
					delete(c.Links, n)
					changed = true
				}
			}
			if l.Kind == "macvlan" || l.Kind == "vlan" {
				if p := c.Links[l.Parent]; p == nil || !lowerParent(p) {
					delete(c.Links, n)
					changed = true
				}
			}
			if l.Kind == "macvlan" && ipvlanParent(c, l.Parent) {
				// One receive handler per link: its ipvlans' or its
				// macvlans' (EBUSY; validation refuses the file).
				delete(c.Links, n)
				changed = true
			}
		}
	}
	// A vlan is up only while its parent is: the kernel takes it down with
	// the parent and refuses it up on a parent that is down (ENETDOWN), and
	// validation refuses the file.
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; l.Kind == "vlan" && c.Links[l.Parent].Down {
			l.Down = true
		}
	}
	// The kernel holds a VNI once per UDP port (EEXIST for a second vxlan):
	// a file declaring two is not one the kernel can hold.
	vnis := map[[2]int]bool{}
	for _, n := range c.LinkNames() {
		if v := c.Links[n].VXLAN; v != nil {
			for vnis[[2]int{v.ID, v.Port}] {
				v.ID = (v.ID + 1) % 16777216
			}
			vnis[[2]int{v.ID, v.Port}] = true
		}
	}
	// The kernel refuses a vxlan over IPv6 on a device whose IPv6 the file
	// turns off (EPERM), and validate refuses such a file: the vxlan goes
	// without its device (a group needs it: the device keeps IPv6 then).
	for _, n := range c.LinkNames() {
		v := c.Links[n].VXLAN
		if v == nil || v.Dev == "" || !strings.Contains(v.Local+v.Remote+v.Group, ":") {
			continue
		}
		if d := c.Links[v.Dev]; d != nil && d.Sysctls["ipv6.disable_ipv6"] == "1" {
			if v.Group == "" {
				v.Dev = ""
			} else {
				delete(d.Sysctls, "ipv6.disable_ipv6")
			}
		}
	}
	// Likewise a tunnel's kind and endpoints.
	tunnels := map[string]bool{}
	for _, n := range c.LinkNames() {
		if t := c.Links[n].Tunnel; t != nil && t.External {
			// One flow-based device per kind and namespace.
			if tunnels[c.Links[n].Kind+" external"] {
				c.Links[n].Tunnel = &Tunnel{Local: "192.0.2.9", Remote: "198.51.100.9"}
				if c.Links[n].Kind == "ip6tnl" {
					c.Links[n].Tunnel = &Tunnel{Local: "2001:db8:ff::9", Remote: "2001:db8:fe::9", Mode: t.Mode}
				}
			}
			tunnels[c.Links[n].Kind+" external"] = true
		}
	}
	for _, n := range c.LinkNames() {
		if t := c.Links[n].Tunnel; t != nil && !t.External {
			for i := 0; tunnels[c.Links[n].Kind+t.Local+t.Remote] && i < 20; i++ {
				t.Remote = netip.MustParseAddr(t.Remote).Next().String()
			}
			tunnels[c.Links[n].Kind+t.Local+t.Remote] = true
		}
	}
	// Likewise a WireGuard listen port (EADDRINUSE).
	ports := map[int]bool{}
	for _, n := range c.LinkNames() {
		if w := c.Links[n].WG; w != nil && w.ListenPort != 0 {
			if ports[w.ListenPort] {
				w.ListenPort = 0
			}
			ports[w.ListenPort] = true
		}
	}
	// The kernel keeps one ipvlan mode per parent: a second ipvlan of
	// another mode changes the first one's (docs/walk-findings.md, 13).
	hasIPVlan := map[string]bool{}
	mode := map[string]string{}
	passthru := map[string]bool{}
	macvlans := map[string]int{}
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; l.Kind == "macvlan" {
			macvlans[l.Parent]++
		}
	}
	vlanIDs := map[string]bool{}
	vrfTables := map[int]bool{}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		switch l.Kind {
		case "macvlan":
			// A macvlan claims its parent's receive handler, as an
			// ipvlan does; a passthru one takes the parent alone.
			hasIPVlan[l.Parent] = true
			if l.Mode == "passthru" && (macvlans[l.Parent] > 1 || passthru[l.Parent]) {
				l.Mode = "bridge"
			}
			passthru[l.Parent] = passthru[l.Parent] || l.Mode == "passthru"
		case "vlan":
			// One vlan per parent, protocol and id (EEXIST).
			proto := l.Mode
			if proto == "" {
				proto = "802.1q"
			}
			for vlanIDs[fmt.Sprint(l.Parent, proto, l.VlanID)] {
				l.VlanID = 1 + l.VlanID%4094
			}
			vlanIDs[fmt.Sprint(l.Parent, proto, l.VlanID)] = true
		case "vrf":
			// Validation wants a table per vrf.
			for vrfTables[l.Table] {
				l.Table++
			}
			vrfTables[l.Table] = true
		}
	}
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; l.Kind == "ipvlan" {
			hasIPVlan[l.Parent] = true
			if m, ok := mode[l.Parent]; ok && !g.Defects.IPVlanModes {
				l.Mode = m
			}
			mode[l.Parent] = l.Mode
		}
	}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		m := c.Links[l.Master]
		if !portKind(l) {
			// A link made another kind (changeKind) keeps no master
			// its new kind cannot have.
			l.Master, m = "", nil
		}
		if l.Master != "" && (m == nil || !masterKind(m) || m.Name == n) {
			l.Master, m = "", nil
		}
		switch {
		case m == nil:
		case m.Kind == "vrf":
			// A vrf takes any port but a vrf.
			if l.Kind == "vrf" {
				l.Master = ""
			}
		case hasIPVlan[n]:
			// A bridge or bond claims the port's receive handler, which
			// an ipvlan or macvlan on it holds already (EBUSY).
			l.Master = ""
		case m.Kind == "bond":
			// The walk's bond members are veths and dummies, up, without
			// addresses, and take the bond's MTU (validation).
			if l.Kind != "veth" && l.Kind != "dummy" {
				l.Master = ""
				break
			}
			l.MTU, l.Down, l.Addrs = 0, false, nil
		}
		if v := l.VXLAN; v != nil && v.Dev != "" {
			if d := c.Links[v.Dev]; d == nil || (d.Kind != "veth" && d.Kind != "dummy" && d.Kind != "bridge") {
				v.Dev = ""
			}
			// A bridge cannot be both a vxlan's lower device and its
			// master (EBUSY).
			if v.Dev == l.Master {
				l.Master = ""
			}
		}
		// A multicast group needs a lower device.
		if v := l.VXLAN; v != nil && v.Group != "" && v.Dev == "" {
			v.Remote = "198.51.100.9"
			if strings.Contains(v.Group, ":") {
				v.Remote = "2001:db8:fe::9"
			}
			v.Group = ""
		}
		l.Addrs = g.repairAddrs(c, l)
	}
	breakStackLoops(c)
	repairMTUs(c)
	// Pools: lo must be declared (and so up) while a pool exports routes.
	if len(c.Pools) > 0 {
		if c.Links["lo"] == nil {
			c.Links["lo"] = &Link{Name: "lo", Kind: "device", Up: true}
		}
	} else if lo := c.Links["lo"]; lo != nil && len(lo.Addrs) == 0 {
		delete(c.Links, "lo")
	}
	c.Routes = g.repairRoutes(c)
	seenRule := map[string]bool{}
	var rules []*Rule
	for _, r := range c.Rules {
		k := r.yaml()
		if !g.Defects.RuleNotIdentity {
			// The kernel tells rules apart without their "not" flag
			// (docs/walk-findings.md, 14).
			x := *r
			x.Not = false
			k = x.yaml()
		}
		if !g.Defects.RulePartialDelete {
			// The kernel deletes the first rule that matches the
			// attributes a delete gives: one rule per priority and
			// family (docs/walk-findings.md, 15).
			k = fmt.Sprintf("%d %s", r.Priority, r.Family)
		}
		if seenRule[k] {
			continue
		}
		if !g.Defects.RuleAddClash && slices.ContainsFunc(rules, func(o *Rule) bool { return rulesClash(r, o) }) {
			// The kernel takes a rule for another of its priority and
			// action that differs only in from or to, which it leaves
			// unset (docs/walk-findings.md, 36): validation refuses such
			// files.
			continue
		}
		seenRule[k] = true
		rules = append(rules, r)
	}
	c.Rules = rules
	for _, t := range c.Tables {
		g.repairTable(c, t)
	}
	// A pool's blocks are among those its subnets hold (validation).
	for _, p := range c.Pools {
		if p.Blocks != "" && blockCount(p) > 0 && maxBlock(p.Blocks) >= blockCount(p) {
			p.Blocks = ""
		}
	}
	// Other owners hold addresses of declared pools only.
	var others []*Other
	for _, o := range c.Others {
		for _, p := range c.Pools {
			if p.Name == o.Pool {
				others = append(others, o)
				break
			}
		}
	}
	c.Others = others
}

func (g *Gen) repairAddrs(c *Config, l *Link) []*Addr {
	var out []*Addr
	seen := map[string]bool{}
	subnets := map[netip.Prefix]bool{}
	// The kernel keeps one scope per IPv4 subnet on a link (validation
	// refuses others): later addresses of a subnet take the first's.
	scopes := map[netip.Prefix]string{}
	pool := map[string]bool{}
	for _, a := range l.Addrs {
		if a.Pool != "" {
			declared := false
			for _, p := range c.Pools {
				declared = declared || p.Name == a.Pool
			}
			if pool[a.Pool] || !declared {
				continue
			}
			pool[a.Pool] = true
			out = append(out, a)
			continue
		}
		p := netip.MustParsePrefix(a.CIDR)
		if seen[p.Addr().String()] {
			continue
		}
		if p.Addr().Is4() && !g.Defects.AddressInSubnet {
			if subnets[p.Masked()] {
				continue
			}
			subnets[p.Masked()] = true
		}
		if p.Addr().Is4() {
			// A point-to-point address's subnet is its peer's (host soak
			// seed 125963786465382 step 45).
			sn := p.Masked()
			if a.Peer != "" {
				sn = netip.MustParsePrefix(a.Peer).Masked()
			}
			if sc, ok := scopes[sn]; ok {
				a.Scope = sc
			} else {
				scopes[sn] = a.Scope
			}
		}
		seen[p.Addr().String()] = true
		out = append(out, a)
	}
	if len(pool) > 0 && !g.Defects.PoolStaticAddress {
		// The pool may hand out an address the link also declares
		// statically, and apply refuses the file then (finding 25).
		kept := out[:0]
		for _, a := range out {
			if a.Pool == "" && inPools(c, netip.MustParsePrefix(a.CIDR).Addr()) {
				continue
			}
			kept = append(kept, a)
		}
		out = kept
	}
	return out
}

// inPools reports whether ip is in the subnet of one of c's pools.
func inPools(c *Config, ip netip.Addr) bool {
	for _, p := range c.Pools {
		for _, s := range []string{p.Subnet, p.Subnet6} {
			if sn, err := netip.ParsePrefix(s); err == nil && sn.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// repairRoutes keeps the routes the kernel accepts: a device that is declared
// and up, a gateway inside a connected subnet of it (or onlink), a source
// address the device holds, one route per key.
func (g *Gen) repairRoutes(c *Config) []*Route {
	var out []*Route
	keys := map[string]bool{}
	files := map[string]bool{}
	for _, f := range c.RouteFiles {
		files[f.Name] = true
	}
	for _, r := range c.Routes {
		if r.To != "default" || r.Via != "" || len(r.Hops) > 0 {
			r.Family = ""
		}
		if r.Family != "" && r.Family != "ipv4" {
			r.TOS, r.Scope, r.Src = 0, "", ""
		}
		if !files[r.Side] || r.Family != "" {
			// A routes file has no family word, and a route of a file
			// that left the configuration goes back to the YAML.
			r.Side = ""
		}
		if r.Dev != "" {
			l := c.Links[r.Dev]
			if l == nil || l.Down {
				continue
			}
			if r.Via != "" && !r.Onlink && !connected(l, r.Via) && !(linkLocal(r.Via) && r.Dev != "lo") {
				continue
			}
			if r.Src != "" && (!holds(l, r.Src) || !vrfSourceFits(c, l, r.Table)) {
				continue
			}
		}
		if v6 := slices.ContainsFunc(r.dsts(), func(d string) bool { return strings.Contains(d, ":") }); v6 || strings.Contains(r.Via, ":") {
			// No IPv6 through a link the kernel holds below IPv6's
			// minimum MTU or with IPv6 turned off (validation refuses
			// them).
			if r.Dev != "" && noIPv6(c, r.Dev) || slices.ContainsFunc(r.Hops, func(h Hop) bool { return noIPv6(c, h.Dev) }) {
				continue
			}
		}
		if slices.ContainsFunc(r.Hops, func(h Hop) bool { return strings.Contains(h.Via, ":") && noIPv6(c, h.Dev) }) {
			continue
		}
		if len(r.Hops) > 0 {
			ok := len(r.Hops) >= 2
			for i, h := range r.Hops {
				l := c.Links[h.Dev]
				if l == nil || l.Down || !connected(l, h.Via) && !(linkLocal(h.Via) && h.Dev != "lo" && !h.NoDev) {
					ok = false
				}
				// Two hops the same (validation refuses them: finding 64).
				for _, o := range r.Hops[:i] {
					if o.Via == h.Via && (o.Dev == h.Dev || o.NoDev || h.NoDev) {
						ok = false
					}
				}
			}
			if !ok {
				continue
			}
		}
		tbl := r.Table
		if tbl == "" || tbl == "main" {
			tbl = "254"
		}
		var ks []string
		dup := false
		for _, d := range r.dsts() {
			m := r.Metric
			if strings.Contains(d, ":") && m == 0 {
				m = 1024
			}
			k := fmt.Sprintf("%s %s %d %d", tbl, d, m, r.TOS)
			dup = dup || keys[k]
			ks = append(ks, k)
		}
		if dup {
			continue
		}
		for _, k := range ks {
			keys[k] = true
		}
		out = append(out, r)
	}
	return out
}

// linkLocal reports whether ip is an IPv6 link-local address: a next hop
// on the link given with it, whatever its addresses (RFC 5549 for an IPv4
// route), but lo ("Egress device can not be loopback device for this
// route": desired refuses it).
func linkLocal(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Is6() && a.IsLinkLocalUnicast()
}

// connected reports whether ip is inside the on-link subnet of one of l's
// global addresses that has a prefix route.
//
// An IPv4 subnet gets its prefix route from its primary address only (the
// first one added; the kernel adds none for a secondary), so a subnet where
// any address says noprefixroute may have none, whatever the others say:
// which one is primary depends on the order of earlier steps (host soak seed
// 136840634092635 step 80: "network is unreachable").
func connected(l *Link, ip string) bool {
	a := netip.MustParseAddr(ip)
	for _, x := range l.Addrs {
		if x.Pool != "" || x.NoPrefixRoute || x.Scope != "" || x.Peer != "" {
			continue
		}
		p := netip.MustParsePrefix(x.CIDR)
		if p.Masked().Contains(a) && p.Addr() != a && !(p.Addr().Is4() && noPrefixRouteIn(l, p)) {
			return true
		}
	}
	return false
}

// noPrefixRouteIn reports whether an address of l in subnet p (same length)
// says noprefixroute.
func noPrefixRouteIn(l *Link, p netip.Prefix) bool {
	for _, y := range l.Addrs {
		if y.Pool != "" || !y.NoPrefixRoute {
			continue
		}
		q, err := netip.ParsePrefix(y.CIDR)
		if err == nil && q.Bits() == p.Bits() && q.Masked() == p.Masked() {
			return true
		}
	}
	return false
}

func holds(l *Link, ip string) bool {
	for _, x := range l.Addrs {
		if x.Pool == "" && netip.MustParsePrefix(x.CIDR).Addr().String() == ip && x.Scope == "" && x.Peer == "" {
			return true
		}
	}
	return false
}

// repairTable drops rules that name a set or chain the table lacks, and
// sets that the table's family cannot match.
func (g *Gen) repairTable(c *Config, t *Table) {
	sets := map[string]bool{}
	var ss []*Set
	for _, s := range t.Sets {
		if (t.Family == "ip" && s.Type == "ipv6_addr") || (t.Family == "ip6" && s.Type == "ipv4_addr") {
			continue
		}
		if s.Name == "sw" && s.FromWG != "" {
			if l := c.Links[s.FromWG]; l == nil || l.Kind != "wireguard" {
				continue
			}
		}
		sets[s.Name] = true
		ss = append(ss, s)
	}
	t.Sets = ss
	for _, s := range t.NSets {
		sets[s.Name] = true
	}
	objs := map[string]bool{}
	for _, o := range t.Objects {
		objs[o.Name] = true
	}
	for _, s := range t.Sets {
		if s.Timeout != "" && s.Timeout != "flag" {
			s.Elements, s.FileElements, s.ElemFile = nil, nil, ""
		}
	}
	devices := chainDevices(c)
	for _, ch := range t.Chains {
		if ch.Device != "" && !slices.Contains(devices, ch.Device) {
			ch.Device = "lo"
		}
	}
	chains := map[string]bool{}
	for _, ch := range t.Chains {
		chains[ch.Name] = true
	}
	// A verdict map's jump to a chain the table lacks is an element the
	// kernel refuses (ENOENT); a map that jumps to helper is a loop when
	// helper's own rules look it up (ELOOP).
	jumpingMaps := map[string]bool{}
	for _, s := range t.NSets {
		if !s.Map {
			continue
		}
		dangling := func(e string) bool {
			return slices.ContainsFunc(jumpTargets(e), func(to string) bool { return !chains[to] })
		}
		s.Elements, s.FileElements = slices.DeleteFunc(s.Elements, dangling), slices.DeleteFunc(s.FileElements, dangling)
		for _, e := range append(slices.Clone(s.Elements), s.FileElements...) {
			if len(jumpTargets(e)) > 0 {
				jumpingMaps[s.Name] = true
			}
		}
	}
	for _, ch := range t.Chains {
		var rs []string
		for _, r := range ch.Rules {
			if n := linkRuleName(r); n != "" && n != "lo" && c.Links[n] == nil {
				// iif and oif name a link that must exist: only the
				// file's links are sure to.
				continue
			}
			if i := strings.Index(r, "@"); i >= 0 && ch.Name == "helper" && jumpingMaps[strings.Fields(r[i+1:])[0]] {
				continue
			}
			if i := strings.Index(r, "@"); i >= 0 && !sets[strings.Fields(r[i+1:])[0]] {
				continue
			}
			if _, n, ok := strings.Cut(r, ` name "`); ok && !objs[strings.TrimSuffix(strings.Fields(n)[0], `"`)] {
				continue
			}
			if slices.ContainsFunc(jumpTargets(r), func(to string) bool { return !chains[to] || ch.Name == "helper" }) {
				continue
			}
			rs = append(rs, r)
		}
		ch.Rules = rs
	}
}

// breakStackLoops drops masters until no link sits above itself in the
// kernel's stack of devices: a port is below its master, a vxlan above its
// dev, an ipvlan above its parent. The kernel refuses the link that closes
// such a loop (EBUSY), and validation refuses the file (finding 24).
func breakStackLoops(c *Config) {
	for {
		up := map[string][]string{}
		for _, n := range c.LinkNames() {
			l := c.Links[n]
			if l.Master != "" {
				up[n] = append(up[n], l.Master)
			}
			if v := l.VXLAN; v != nil && v.Dev != "" {
				up[v.Dev] = append(up[v.Dev], n)
			}
			if (l.Kind == "ipvlan" || l.Kind == "macvlan" || l.Kind == "vlan") && l.Parent != "" {
				up[l.Parent] = append(up[l.Parent], n)
			}
		}
		// The master edge n -> m closes a loop when n is above m. (Every
		// loop has one: the generator gives a vxlan only a veth, dummy or
		// bridge as its dev, and an ipvlan only a dummy as its parent.)
		above := func(from, to string) bool {
			seen := map[string]bool{}
			stack := []string{from}
			for len(stack) > 0 {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if x == to {
					return true
				}
				if seen[x] {
					continue
				}
				seen[x] = true
				stack = append(stack, up[x]...)
			}
			return false
		}
		broke := false
		for _, n := range c.LinkNames() {
			if l := c.Links[n]; l.Master != "" && above(l.Master, n) {
				l.Master = ""
				broke = true
				break
			}
		}
		if !broke {
			return
		}
	}
}

// rulesClash reports whether the kernel would take one of a and b for the
// other when it is added (model.Rule.AddClashes): the same priority,
// family, action, table, interfaces, mark and suppress_prefixlength (which
// rule_exists compares exactly, none being -1), and the from and to of one
// are those of the other where it sets them (the not flag is not compared).
func rulesClash(a, b *Rule) bool {
	if a.Priority != b.Priority || a.Action != b.Action || a.Table != b.Table || a.IIF != b.IIF || a.OIF != b.OIF || a.Fwmark != b.Fwmark {
		return false
	}
	if a.HasSuppress != b.HasSuppress || a.HasSuppress && a.Suppress != b.Suppress {
		return false
	}
	if a.Family != b.Family && a.Family != "" && b.Family != "" {
		return false
	}
	within := func(x, y *Rule) bool { return (x.From == "" || x.From == y.From) && (x.To == "" || x.To == y.To) }
	return within(a, b) || within(b, a)
}

// ipvlanParent reports whether an ipvlan of c sits on link p.
func ipvlanParent(c *Config, p string) bool {
	for _, l := range c.Links {
		if l.Kind == "ipvlan" && l.Parent == p {
			return true
		}
	}
	return false
}

// vrfSourceFits says whether a route of table (walk form: "" is main) may
// take its source from an address of l: the kernel looks a source up in the
// route's table and in table local, and a VRF's addresses are in its own
// table (walk seed 31120218735296; validation refuses the others).
func vrfSourceFits(c *Config, l *Link, table string) bool {
	vrf := l
	if l.Kind != "vrf" {
		if vrf = c.Links[l.Master]; vrf == nil || vrf.Kind != "vrf" {
			return true
		}
	}
	return table == strconv.Itoa(vrf.Table)
}

// portKind says whether the generator gives a link of l's kind a master.
func portKind(l *Link) bool {
	switch l.Kind {
	case "veth", "vxlan", "dummy", "macvlan", "vlan":
		return true
	}
	return false
}

// blockCount is how many blocks pool p's first subnet holds (0: not known).
func blockCount(p *Pool) int {
	sn, err := netip.ParsePrefix(p.Subnet)
	if err != nil {
		if sn, err = netip.ParsePrefix(p.Subnet6); err != nil {
			return 0
		}
	}
	host := sn.Addr().BitLen() - sn.Bits() - p.Bits
	if host < 0 || host > 20 {
		return 0
	}
	return 1 << host
}

// maxBlock is the largest block index a blocks string names.
func maxBlock(blocks string) int {
	most := 0
	for _, r := range strings.Split(blocks, ",") {
		_, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = r
		}
		if n, err := strconv.Atoi(strings.TrimSpace(hi)); err == nil && n > most {
			most = n
		}
	}
	return most
}

// jumpTargets lists the chains a rule's text jumps or goes to: a verdict
// of its own, or one of an anonymous verdict map's elements
// (`tcp dport vmap { 22 : accept, 24 : jump helper }`). A target the table
// does not declare is a rule the kernel refuses (ENOENT); the regular
// chain helper, which the others jump to, jumps nowhere (ELOOP).
func jumpTargets(r string) []string {
	var out []string
	f := strings.Fields(r)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "jump" || f[i] == "goto" {
			out = append(out, strings.Trim(strings.TrimRight(f[i+1], ",}"), `"`))
		}
	}
	return out
}
