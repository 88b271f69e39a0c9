package walk

import (
	"fmt"
	"strconv"
	"strings"
)

// More of the generator: the keys the schema has beyond the first walk's
// (docs/walk-findings.md: TestSchemaReach holds the generator to every
// key), and the steps that change several interacting keys at once.

// wgKey gives a device the key of its name (the other one with w.Alt).
func (g *Gen) wgKey(w *WG, name string) {
	k := g.Keys[name]
	if w.Alt {
		k = g.AltKeys[name]
	}
	w.KeyFile, w.PublicKey = k[0], k[1]
}

// wgPort is a device's listen port by its name: one of two per name, so
// that two devices never want the same port in a row.
func wgPort(name string, second bool) int {
	p := 51820 + int(name[len(name)-1]-'0')
	if second {
		p += 1000
	}
	return p
}

// changeWGIdentity changes where a device's key comes from or which it is:
// the other key of its name (in place), a credential instead of a file,
// userspace allowed or not (the kernel module's kernels).
func (g *Gen) changeWGIdentity(l *Link) string {
	w := l.WG
	switch g.R.Intn(3) {
	case 0:
		w.Alt = !w.Alt
		g.wgKey(w, l.Name)
		return "change the key of " + l.Name
	case 1:
		w.Credential = !w.Credential
		return "private key of " + l.Name + " from a " + map[bool]string{true: "credential", false: "file"}[w.Credential]
	default:
		if !g.Caps.WireGuardModule {
			return "noop"
		}
		w.Kernel = !w.Kernel
		return fmt.Sprintf("userspace %v for %s", !w.Kernel, l.Name)
	}
}

// sharedSlots are link names any of several kinds may take: a step may
// make the link another kind under its name (a replace).
var sharedSlots = []string{"k0", "k1"}

// sharedKinds are the kinds a shared slot takes.
func (g *Gen) sharedKinds() []string {
	k := []string{"bridge", "vxlan"}
	if g.Caps.Dummy {
		k = append(k, "dummy")
	}
	return k
}

// changeKind makes a link of a shared slot another kind, keeping what lives
// on it: its addresses, sysctls, master, the routes through it.
func (g *Gen) changeKind(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool { return strings.HasPrefix(l.Name, "k") })
	if n == "" {
		name := ""
		for _, s := range sharedSlots {
			if c.Links[s] == nil {
				name = s
			}
		}
		if name == "" {
			return "noop"
		}
		c.Links[name] = g.newLink(c, name, g.pick(g.sharedKinds()))
		return "add " + c.Links[name].Kind + " " + name
	}
	l := c.Links[n]
	var others []string
	for _, k := range g.sharedKinds() {
		if k != l.Kind {
			others = append(others, k)
		}
	}
	old := l.Kind
	l.Kind = g.pick(others)
	l.VXLAN = nil
	if l.Kind == "vxlan" {
		l.VXLAN = g.newVXLAN(c)
	}
	// The MTU of the new kind's range (a vxlan's at most 1350).
	mtu, down, alias, master := l.MTU, l.Down, l.Alias, l.Master
	g.changeLinkAttr(c, l)
	if g.chance(0.5) {
		l.Down, l.Alias, l.Master = down, alias, master
		if l.Kind != "vxlan" {
			l.MTU = mtu
		}
	}
	return fmt.Sprintf("make %s a %s (was a %s)", n, l.Kind, old)
}

// respell writes an object's defaults out, or leaves them out again: the
// same configuration, which must plan nothing.
func (g *Gen) respell(c *Config) string {
	switch g.R.Intn(7) {
	case 6:
		c.Explicit = !c.Explicit
		return "respell the settings"
	case 0:
		if n := g.pickLink(c, func(*Link) bool { return true }); n != "" {
			c.Links[n].Explicit = !c.Links[n].Explicit
			return "respell link " + n
		}
	case 1:
		if n := g.pickLink(c, func(l *Link) bool { return len(l.Addrs) > 0 }); n != "" {
			a := c.Links[n].Addrs[g.R.Intn(len(c.Links[n].Addrs))]
			a.Explicit = !a.Explicit
			return "respell an address of " + n
		}
	case 2:
		if len(c.Routes) > 0 {
			r := c.Routes[g.R.Intn(len(c.Routes))]
			r.Explicit = !r.Explicit
			return "respell a route"
		}
	case 3:
		if len(c.Rules) > 0 {
			r := c.Rules[g.R.Intn(len(c.Rules))]
			r.Explicit = !r.Explicit
			return "respell a rule"
		}
	case 4:
		if len(c.Fou) > 0 {
			f := c.Fou[g.R.Intn(len(c.Fou))]
			f.Explicit = !f.Explicit
			return "respell a fou port"
		}
	default:
		if len(c.Tables) > 0 {
			t := c.Tables[g.R.Intn(len(c.Tables))]
			t.Explicit = !t.Explicit
			return "respell table " + t.Family + " " + t.Name
		}
	}
	return "noop"
}

// changeSettings turns protocol-override on or off (it must stay on for a
// protocol the kernel names).
func (g *Gen) changeSettings(c *Config) string {
	if !g.Defects.SettingsProtocol || c.Protocol == 42 {
		return "noop"
	}
	c.ProtocolOverride = !c.ProtocolOverride
	return fmt.Sprintf("protocol-override %v", c.ProtocolOverride)
}

// sharedSysctls are keys a link has beside a family-wide one that the
// kernel combines with it or writes through to it: all.rp_filter and
// all.accept_local are or'ed with a link's (the larger rp_filter wins),
// ip_forward sets every link's forwarding. interact draws default's
// instead of all's half of the time where the walk has it
// (DefaultSysctls), with the same values.
var sharedSysctls = map[string]string{
	"ipv4.rp_filter":    "net.ipv4.conf.all.rp_filter",
	"ipv4.accept_local": "net.ipv4.conf.all.accept_local",
	"ipv4.forwarding":   "net.ipv4.ip_forward",
}

// interact changes several keys that move each other in one step: a
// family-wide sysctl and a link's, a bridge's MTU and its ports', a port's
// master and the masters, a link recreated with what lives on it.
func (g *Gen) interact(c *Config) string {
	switch g.R.Intn(4) {
	case 0:
		n := g.pickLink(c, func(l *Link) bool { return l.Kind != "device" })
		if n == "" {
			return "noop"
		}
		short := g.pick(sortedKeys(sharedSysctls))
		l := c.Links[n]
		if l.Sysctls == nil {
			l.Sysctls = map[string]string{}
		}
		if c.Sysctls == nil {
			c.Sysctls = map[string]string{}
		}
		all := sharedSysctls[short]
		global := all
		if d := "net.ipv4.conf.default." + strings.TrimPrefix(short, "ipv4."); DefaultSysctls[d] != nil && g.kchance(0.5) {
			// default's, which the kernel copies to every link that
			// never wrote the key (drawn from K: R's draws stay).
			global = d
		}
		if g.chance(0.2) {
			delete(c.Sysctls, global)
		} else if v := g.pick(GlobalSysctls[all]); global != all && c.Sysctls[global] != "" && g.kchance(0.35) {
			// default's leaves the file too, given back (from K).
			delete(c.Sysctls, global)
		} else {
			if old, had := c.Sysctls[global]; global != all && had && old == v {
				// A change rather (from K), as changeSysctls makes.
				var others []string
				for _, o := range GlobalSysctls[all] {
					if o != old {
						others = append(others, o)
					}
				}
				v = kpick(g, others)
			}
			c.Sysctls[global] = v
		}
		l.Sysctls[short] = g.pick(LinkSysctls[short])
		return fmt.Sprintf("sysctls %s and %s of %s in one step", global, short, n)
	case 1:
		n := g.pickLink(c, func(l *Link) bool { return l.Kind == "bridge" })
		if n == "" {
			return "noop"
		}
		br := c.Links[n]
		br.MTU = pickInt(g, []int{0, 1450, 1500, 9000})
		ports := 0
		for _, p := range c.LinkNames() {
			if l := c.Links[p]; l.Master == n {
				g.portMTU(c, l)
				ports++
			}
		}
		return fmt.Sprintf("bridge %s mtu %d with its %d ports' in one step", n, br.MTU, ports)
	case 2:
		port := g.pickLink(c, func(l *Link) bool {
			return l.Kind == "veth" || l.Kind == "vxlan" || l.Kind == "dummy" || l.Kind == "macvlan" || l.Kind == "vlan"
		})
		if port == "" {
			return "noop"
		}
		l := c.Links[port]
		from := l.Master
		l.Master = g.pickLink(c, masterKind)
		g.portMTU(c, l)
		for _, m := range []string{from, l.Master} {
			if ml := c.Links[m]; ml != nil {
				if g.chance(0.5) {
					g.portMTU(c, ml)
				} else {
					ml.Down = !ml.Down
				}
			}
		}
		return fmt.Sprintf("move %s from master %q to %q, and change the masters", port, from, l.Master)
	default:
		return g.recreateWithKeys(c)
	}
}

// portMTU gives a link an MTU of its kind's range (changeLinkAttr's).
func (g *Gen) portMTU(c *Config, l *Link) {
	down, alias, master := l.Down, l.Alias, l.Master
	g.changeLinkAttr(c, l)
	l.Down, l.Alias, l.Master = down, alias, master
}

// recreateWithKeys replaces a link (another kind, another vxlan id, a veth
// end's peer renamed, a tunnel's remote) and changes in the same step what
// lives on it: an address, a route through it, a sysctl, a WireGuard
// device's peers (a set fed by them follows).
func (g *Gen) recreateWithKeys(c *Config) string {
	n := g.pickLink(c, func(l *Link) bool {
		return strings.HasPrefix(l.Name, "k") || l.Kind == "vxlan" || l.Kind == "wireguard" || l.Tunnel != nil || l.Kind == "macvlan"
	})
	if n == "" {
		return g.changeKind(c)
	}
	l := c.Links[n]
	what := ""
	switch {
	case strings.HasPrefix(n, "k"):
		what = g.changeKind(c)
	case l.Kind == "vxlan":
		l.VXLAN.ID = pickInt(g, []int{10, 20, 30, 40, 16777215})
		what = "recreate vxlan " + n
	case l.Kind == "wireguard":
		// Not a replace: a device keeps its peers' sets' elements in
		// step with its peers.
		g.changeWG(l.WG)
		what = "change the peers of " + n
	case l.Tunnel != nil:
		l.Tunnel = g.newTunnel(l.Kind)
		what = "recreate tunnel " + n
	default:
		g.newLowerOrMaster(c, l)
		what = "recreate macvlan " + n
	}
	l = c.Links[n]
	if l == nil {
		return what
	}
	if g.chance(0.7) {
		g.addAddr(l)
	}
	if len(l.Addrs) > 1 && g.chance(0.5) {
		l.Addrs = l.Addrs[1:]
	}
	if g.chance(0.6) && !l.Down {
		r := &Route{Table: g.pickTable(c), Metric: g.metric(), To: fmt.Sprintf("172.16.%d.0/24", 6+g.R.Intn(3)), Dev: n, Frag: g.frag()}
		if gw := connectedGateway(l, false); gw != "" && g.chance(0.5) {
			r.Via = gw
		}
		c.Routes = append(c.Routes, r)
	}
	if g.chance(0.5) {
		keys := sortedKeys(LinkSysctls)
		if !hasIPv6Conf(c, l) {
			keys = []string{"ipv4.rp_filter", "ipv4.arp_ignore"}
		}
		k := g.pick(keys)
		if l.Sysctls == nil {
			l.Sysctls = map[string]string{}
		}
		l.Sysctls[k] = g.pick(LinkSysctls[k])
	}
	return what + ", with its addresses, a route and a sysctl"
}

// changeRouteFiles moves a route into a routes file or out, adds or drops a
// routes file, or changes a file's default table (its routes that name none
// move with it).
func (g *Gen) changeRouteFiles(c *Config) string {
	names := []string{"a.routes", "b.routes"}
	switch x := g.R.Intn(4); {
	case x == 0 || len(c.RouteFiles) == 0:
		name := g.pick(names)
		for i, f := range c.RouteFiles {
			if f.Name == name {
				c.RouteFiles = append(c.RouteFiles[:i], c.RouteFiles[i+1:]...)
				for _, r := range c.Routes {
					if r.Side == name {
						r.Side = ""
					}
				}
				return "drop routes file " + name
			}
		}
		f := &RouteFile{Name: name, Table: g.pick([]string{"", "", "100", "main"}), Short: g.chance(0.5)}
		c.RouteFiles = append(c.RouteFiles, f)
		return "add routes file " + name
	case x == 1:
		f := c.RouteFiles[g.R.Intn(len(c.RouteFiles))]
		f.Table = g.pick([]string{"", "100", "200", "main"})
		f.Short = g.chance(0.5)
		return "routes file " + f.Name + " takes table " + f.Table
	default:
		if len(c.Routes) == 0 {
			return "noop"
		}
		r := c.Routes[g.R.Intn(len(c.Routes))]
		if r.Side != "" || r.Family != "" {
			r.Side = ""
			return "move a route to the YAML"
		}
		r.Side = c.RouteFiles[g.R.Intn(len(c.RouteFiles))].Name
		return "move a route to " + r.Side
	}
}

// changeFou changes a FoU port in place: its protocol, or GUE.
func (g *Gen) changeFou(c *Config) string {
	if len(c.Fou) == 0 {
		return "noop"
	}
	f := c.Fou[g.R.Intn(len(c.Fou))]
	if g.chance(0.5) {
		f.GUE = !f.GUE
	} else {
		f.GUE = false
		f.IPProto = map[int]int{4: 41, 41: 4}[f.IPProto]
	}
	return fmt.Sprintf("change fou port %d", f.Port)
}

// dualPool is the walk's dual-stack pool: a block index names a v4 and a v6
// block, an allocation gets both.
var dualPool = [3]string{"pd", "10.98.0.0/24", "fd98::/120"}

// changePool changes a pool's keys: its export table, reuse delay, blocks,
// how its subnets are written, or (when nothing holds an address of it) its
// block size.
func (g *Gen) changePool(c *Config, p *Pool) string {
	switch g.R.Intn(7) {
	case 0:
		p.Table = pickInt(g, []int{119, 120, 121})
		return fmt.Sprintf("pool %s exports to table %d", p.Name, p.Table)
	case 1:
		p.Delay = g.pick([]string{"0s", "1h", "", "5m"})
		return "pool " + p.Name + " reuse delay " + p.Delay
	case 2:
		p.Blocks = g.pick([]string{"", "0-7", "2", "1-3", "0-63"})
		return "pool " + p.Name + " blocks " + p.Blocks
	case 5:
		if g.poolHeld(g.before, p.Name) || g.poolHeld(c, p.Name) {
			return "noop"
		}
		p.Subnet = subnetAlt[p.Subnet]
		if p.Subnet6 != "" {
			p.Subnet6 = subnetAlt[p.Subnet6]
		}
		return "pool " + p.Name + " takes subnet " + p.Subnet
	case 3:
		p.Pair = !p.Pair
		return "respell the subnets of pool " + p.Name
	case 6:
		p.Explicit = !p.Explicit
		return "respell pool " + p.Name
	default:
		if g.poolHeld(g.before, p.Name) || g.poolHeld(c, p.Name) {
			return "noop"
		}
		p.Bits = map[int]int{0: 2, 2: 5, 5: 0}[p.Bits]
		return fmt.Sprintf("pool %s block size %d bits", p.Name, p.Bits)
	}
}

// poolHeld says whether c gives an address of pool to a link or another
// owner.
func (g *Gen) poolHeld(c *Config, pool string) bool {
	if c == nil {
		return false
	}
	for _, o := range c.Others {
		if o.Pool == pool {
			return true
		}
	}
	for _, l := range c.Links {
		for _, a := range l.Addrs {
			if a.Pool == pool {
				return true
			}
		}
	}
	return false
}

// changeOthers hands a pool's address to another owner, as a CNI plugin
// does with `ipam allocate`, or takes one back.
func (g *Gen) changeOthers(c *Config) string {
	if len(c.Others) > 0 && g.chance(0.4) {
		i := g.R.Intn(len(c.Others))
		o := c.Others[i]
		c.Others = append(c.Others[:i], c.Others[i+1:]...)
		return "release the address of " + o.Owner + " in pool " + o.Pool
	}
	if len(c.Pools) == 0 {
		return "noop"
	}
	p := c.Pools[g.R.Intn(len(c.Pools))]
	if len(c.Others) >= 4 {
		return "noop"
	}
	g.owners++
	c.Others = append(c.Others, &Other{Pool: p.Name, Owner: "cni:walk-" + strconv.Itoa(g.owners)})
	return "allocate an address of pool " + p.Name + " to another owner"
}

// poolAddr makes a link's entry of a pool, with its prefix lengths now and
// then.
func (g *Gen) poolAddr(c *Config, name string) *Addr {
	a := &Addr{Pool: name}
	switch name {
	case dualPool[0]:
		if g.chance(0.4) {
			a.PrefixLen4 = pickInt(g, []int{32, 24})
		}
		if g.chance(0.4) {
			a.PrefixLen6 = pickInt(g, []int{128, 120, 64})
		}
	case "pv":
		if g.chance(0.4) {
			a.PrefixLen = pickInt(g, []int{128, 120, 64})
		}
	default:
		if g.chance(0.4) {
			a.PrefixLen = pickInt(g, []int{32, 24, 28})
		}
	}
	return a
}

// filterHooks are the hooks a filter chain of the family may take.
func filterHooks(family string) []string {
	switch family {
	case "arp":
		return []string{"input", "output"}
	case "netdev":
		return []string{"ingress"}
	}
	return []string{"prerouting", "input", "forward", "output", "postrouting"}
}

// chainDevices are the links a netdev chain of c may hook: lo, or a link
// of the file that the walk does not move to another namespace.
func chainDevices(c *Config) []string {
	out := []string{"lo"}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if (l.Kind == "veth" && l.PeerNS == "") || l.Kind == "bridge" || l.Kind == "dummy" || l.Kind == "vxlan" {
			out = append(out, n)
		}
	}
	return out
}

// changeNftMore changes the keys of a table beyond elements and rules: a
// netdev chain's device, a base chain's hook or type, a set's type, flags,
// timeout, elements file or the WireGuard link that feeds it.
func (g *Gen) changeNftMore(c *Config) string {
	t := c.Tables[g.R.Intn(len(c.Tables))]
	for _, x := range c.Tables {
		if x.Family == "netdev" && g.chance(0.3) {
			t = x
		}
	}
	id := t.Family + " " + t.Name
	if t.Adopt && g.chance(0.2) {
		t.Adopt = false
		return "drop adopt of " + id
	}
	switch g.R.Intn(7) {
	case 6:
		return g.unhook(t)
	case 0:
		for _, ch := range t.Chains {
			if ch.Device != "" {
				ch.Device = g.pick(chainDevices(c))
				return "chain " + ch.Name + " of " + id + " hooks " + ch.Device
			}
		}
	case 1:
		for _, ch := range t.Chains {
			if ch.Hook == "" || ch.Type == "nat" {
				continue
			}
			if ch.Name == "rtc" && g.chance(0.5) {
				ch.Type = map[string]string{"route": "filter", "filter": "route", "": "route"}[ch.Type]
				ch.Hook = "output"
			} else {
				ch.Type = "filter"
				ch.Hook = g.pick(filterHooks(t.Family))
			}
			ch.Priority = g.chainPriority(t.Family, ch)
			ch.Rules = g.rules(t.Family, ch)
			return fmt.Sprintf("chain %s of %s: type %s hook %s", ch.Name, id, ch.chainType(), ch.Hook)
		}
	case 2:
		for i, s := range t.Sets {
			if s.Name == "sx" {
				if g.chance(0.3) {
					t.Sets = append(t.Sets[:i], t.Sets[i+1:]...)
					return "remove set sx of " + id
				}
				s.Type = map[string]string{"inet_service": "mark", "mark": "inet_service"}[s.Type]
				s.Elements, s.FileElements = g.elements(s.Type), nil
				return "set sx of " + id + " becomes " + s.Type
			}
		}
		t.Sets = append(t.Sets, &Set{Name: "sx", Type: g.pick([]string{"inet_service", "mark"})})
		return "add set sx to " + id
	case 3:
		for _, s := range t.Sets {
			if s.FromWG != "" || s.Type != "ipv4_addr" && s.Type != "ipv6_addr" || s.Timeout != "" && s.Timeout != "flag" {
				continue
			}
			s.Interval, s.Timeout = !s.Interval, ""
			if !s.Interval && g.chance(0.5) {
				s.Timeout = "flag"
			}
			if !s.Interval {
				s.Elements, s.FileElements = withoutIntervals(s.Elements), withoutIntervals(s.FileElements)
			}
			return fmt.Sprintf("set %s of %s interval %v", s.Name, id, s.Interval)
		}
	case 4:
		for _, s := range t.Sets {
			if s.Interval || s.FromWG != "" {
				continue
			}
			s.Timeout = g.pick([]string{"", "flag", "1h", "90s"})
			if s.Timeout != "" && s.Timeout != "flag" {
				// Elements declared in a set whose elements expire
				// would expire (validation refuses them).
				s.Elements, s.FileElements, s.ElemFile = nil, nil, ""
			}
			return fmt.Sprintf("set %s of %s timeout %q", s.Name, id, s.Timeout)
		}
	default:
		for _, s := range t.Sets {
			if s.Timeout != "" && s.Timeout != "flag" {
				continue
			}
			if s.ElemFile != "" && g.chance(0.4) {
				s.Elements = append(s.Elements, s.FileElements...)
				s.ElemFile, s.FileElements = "", nil
				return "set " + s.Name + " of " + id + " without its elements file"
			}
			name := strings.ReplaceAll(id, " ", "-") + "-" + s.Name
			if s.ElemFile == name+".elems" && g.chance(0.5) {
				name += ".2"
			}
			s.ElemFile = name + ".elems"
			all := append(s.Elements, s.FileElements...)
			s.Elements, s.FileElements = nil, nil
			for _, e := range all {
				if g.chance(0.5) {
					s.FileElements = append(s.FileElements, e)
				} else {
					s.Elements = append(s.Elements, e)
				}
			}
			if s.FromWG != "" && g.chance(0.5) {
				s.FromWG = g.pickLink(c, func(l *Link) bool { return l.Kind == "wireguard" })
			}
			return "set " + s.Name + " of " + id + " with an elements file"
		}
	}
	return "noop"
}

// changeRule changes one key of a rule: the kernel's rule is then another
// (a rule's identity is all of it), deleted and added.
func (g *Gen) changeRule(c *Config) string {
	r := c.Rules[g.R.Intn(len(c.Rules))]
	v6 := r.Family == "ipv6"
	switch g.R.Intn(6) {
	case 0:
		r.From = g.pick(map[bool][]string{false: {"", "10.50.0.0/16", "10.51.0.0/16"}, true: {"", "fd50::/48", "fd51::/48"}}[v6])
	case 1:
		r.To = g.pick(map[bool][]string{false: {"", "172.17.0.0/16", "172.18.0.0/16"}, true: {"", "2001:db8:50::/48", "2001:db8:51::/48"}}[v6])
	case 2:
		r.Fwmark = g.pick([]string{"", "0x10", "0x40/0x60", "0x20"})
	case 3:
		r.IIF, r.OIF = g.pick([]string{"", "b0", "lo"}), g.pick([]string{"", "b1", "x0"})
	case 4:
		if r.Action == "lookup" {
			r.Table = g.pick([]string{"100", "200", "main"})
			r.Suppress, r.HasSuppress = pickInt(g, []int{0, 8, 32}), g.chance(0.5)
		}
	default:
		r.Priority = pickInt(g, []int{100, 200, 1000, 2000, 30000, 30001})
	}
	if r.From == "" && r.To == "" && r.Fwmark == "" && r.IIF == "" && r.OIF == "" && !g.Defects.CatchAllRule {
		r.Fwmark = "0x10"
	}
	return "change a rule"
}

// changeRouteMore changes a default route's family key, or renames a routes
// file (its routes go with it).
func (g *Gen) changeRouteMore(c *Config) string {
	if len(c.RouteFiles) > 0 && g.chance(0.3) {
		f := c.RouteFiles[g.R.Intn(len(c.RouteFiles))]
		to := map[string]string{"a.routes": "c.routes", "c.routes": "a.routes", "b.routes": "d.routes", "d.routes": "b.routes"}[f.Name]
		for _, o := range c.RouteFiles {
			if o.Name == to {
				return "noop"
			}
		}
		for _, r := range c.Routes {
			if r.Side == f.Name {
				r.Side = to
			}
		}
		from := f.Name
		f.Name = to
		return "rename routes file " + from + " to " + to
	}
	for _, i := range g.R.Perm(len(c.Routes)) {
		r := c.Routes[i]
		if r.To == "default" && r.Via == "" && len(r.Hops) == 0 {
			r.Family = g.pick([]string{"", "ipv4", "ipv6", "both"})
			r.Side = ""
			if r.Family != "" && r.Family != "ipv4" {
				r.TOS, r.Scope, r.Src = 0, "", ""
			}
			return "default route family " + r.Family
		}
	}
	return "noop"
}

// unhook makes a base chain a regular one, or a regular chain of a base
// chain's name a base chain again (its rules drawn again for it).
func (g *Gen) unhook(t *Table) string {
	if len(t.Chains) == 0 {
		return "noop"
	}
	ch := t.Chains[g.R.Intn(len(t.Chains))]
	if ch.Name == "helper" {
		return "noop"
	}
	if ch.Hook != "" {
		ch.Hook, ch.Type, ch.Priority, ch.Policy, ch.Device = "", "", "", "", ""
		ch.Rules = g.rules(t.Family, ch)
		return "chain " + ch.Name + " of " + t.Family + " " + t.Name + " no longer hooked"
	}
	for _, sp := range chainSpecs(t.Family) {
		if sp[0] == ch.Name {
			ch.Type, ch.Hook = sp[1], sp[2]
			ch.Priority = g.chainPriority(t.Family, ch)
			ch.Policy = "accept"
			if t.Family == "netdev" {
				ch.Device = "lo"
			}
			ch.Rules = g.rules(t.Family, ch)
			return "chain " + ch.Name + " of " + t.Family + " " + t.Name + " hooked again"
		}
	}
	return "noop"
}

// subnetAlt is the other subnet a pool takes when nothing holds an address
// of it (a subnet that holds a block cannot change).
var subnetAlt = map[string]string{
	"10.99.0.0/24": "10.97.0.0/24", "10.97.0.0/24": "10.99.0.0/24",
	"fd99::/120": "fd97::/120", "fd97::/120": "fd99::/120",
	"10.98.0.0/24": "10.96.0.0/24", "10.96.0.0/24": "10.98.0.0/24",
	"fd98::/120": "fd96::/120", "fd96::/120": "fd98::/120",
}

// keepKeys lets WireGuard devices of n keep the keys they hold now (in
// before) instead of naming their sources: the device keeps its private
// key (public-key alone) when before made the device of the name with the
// same key, and a peer its preshared key (keep-preshared-key) when the
// peer was on it. What a peer keeps is before's preshared key, or none.
func (g *Gen) keepKeys(before, n *Config) {
	for _, name := range n.LinkNames() {
		l := n.Links[name]
		if l.WG == nil {
			continue
		}
		w := l.WG
		// Shown beside its source now and then, and mostly again the
		// next step: a key changed in between is a change of public-key.
		w.Keep, w.ShowPublic = false, w.ShowPublic && g.chance(0.7) || g.chance(0.1)
		var bw *WG
		if b := before.Links[name]; b != nil && b.WG != nil && b.WG.PublicKey == w.PublicKey && b.WG.Kernel == w.Kernel {
			bw = b.WG
		}
		if bw == nil {
			for _, p := range w.Peers {
				if p.KeepPSK {
					p.KeepPSK, p.PSK, p.PSKFile = false, "", ""
				}
			}
			continue
		}
		w.Keep = g.chance(0.2)
		for _, p := range w.Peers {
			p.KeepPSK = false
			var bp *WGPeer
			for _, x := range bw.Peers {
				if x.PublicKey == p.PublicKey {
					bp = x
				}
			}
			if bp != nil && g.chance(0.25) {
				p.KeepPSK, p.PSK, p.PSKFile = true, bp.PSK, bp.PSKFile
			}
		}
	}
}
