package walk

import (
	"fmt"
	"net/netip"
	"strings"
)

// oracleCheck is the oracle's comparison of one key of the schema, held to
// being one: mutate changes the key in a configuration the kernel holds
// (the walk's, after a step's checks passed) to a value the kernel does
// not hold, and the oracle must then find a difference. A key whose
// comparison is lost fails TestSchemaReach.
type oracleCheck struct {
	// by names the comparison and its reader.
	by string
	// needs says the kernel must have it (nil: any kernel).
	needs func(Caps) bool
	// mutate changes one instance of the key in c and reports whether c
	// had one.
	mutate func(c *Config) bool
}

// maybeUnseen are the keys whose mutant can equal the kernel in some
// configurations (the oracle then rightly sees nothing), and when: unseen,
// such a mutant proves nothing and fails nothing.
var maybeUnseen = map[string]string{
	"nftables.*.sets.*.elements-from.peers":     "every peer up, or none with allowed IPs: both choices give the same elements",
	"nftables.*.sets.*.elements-from.wireguard": "fed by the peers that are up, none of them up (wireguard-go's peers never shake hands here): the link's peers and none give the same elements",
	"settings.protocol":                         "a rule of another protocol that clashes with a declared one is a conflict to the oracle (finding 36), so a file of rules alone differs in nothing it compares",
}

// The comparisons, by their readers.
const (
	byLink    = "compareLink: ip -d -j link"
	byAddr    = "compareAddrs: ip -j addr"
	byRoute   = "compareRoutes: ip -j route show table all"
	byRule    = "compareRules: ip -j rule"
	byNft     = "CompareNft: nft -j list ruleset, nft -a list ruleset"
	byWG      = "CompareWG: wg show NAME dump"
	byFou     = "CompareFou: ip fou show"
	bySysctl  = "CompareSysctls: sysctl in the namespace"
	byPeerNS  = "comparePeerNS: ip -j link in the peer namespace"
	byExports = "compareExports: ip -j route show table EXPORT"
	byBlocks  = "compareNewBlocks: ip -j addr against the pool's blocks"
)

func needFou(c Caps) bool    { return c.Fou }
func needWG(c Caps) bool     { return c.WireGuard }
func needBond(c Caps) bool   { return c.Bond }
func needIPIP(c Caps) bool   { return c.IPIP }
func needIP6Tnl(c Caps) bool { return c.IP6Tnl }
func needIPVlan(c Caps) bool { return c.IPVlan && c.Dummy }
func needVLAN(c Caps) bool   { return c.VLAN }
func needVRF(c Caps) bool    { return c.VRF }

// link finds a link of c that ok accepts (by name order).
func link(c *Config, ok func(*Link) bool) *Link {
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; ok(l) {
			return l
		}
	}
	return nil
}

// withLink mutates the first link ok accepts.
func withLink(ok func(*Link) bool, f func(c *Config, l *Link)) func(*Config) bool {
	return func(c *Config) bool {
		l := link(c, ok)
		if l == nil {
			return false
		}
		f(c, l)
		return true
	}
}

// withAddr mutates the first address of a link that ok accepts.
func withAddr(ok func(*Link, *Addr) bool, f func(*Addr)) func(*Config) bool {
	return func(c *Config) bool {
		for _, n := range c.LinkNames() {
			for _, a := range c.Links[n].Addrs {
				if ok(c.Links[n], a) {
					f(a)
					return true
				}
			}
		}
		return false
	}
}

// withRoute mutates the first route of the YAML that ok accepts.
func withRoute(ok func(*Route) bool, f func(*Route)) func(*Config) bool {
	return func(c *Config) bool {
		for _, r := range c.Routes {
			if ok(r) {
				f(r)
				return true
			}
		}
		return false
	}
}

// withRule mutates the first rule that ok accepts.
func withRule(ok func(*Rule) bool, f func(*Rule)) func(*Config) bool {
	return func(c *Config) bool {
		for _, r := range c.Rules {
			if ok(r) {
				f(r)
				return true
			}
		}
		return false
	}
}

// withSet mutates the first set that ok accepts.
func withSet(ok func(*Table, *Set) bool, f func(*Set)) func(*Config) bool {
	return func(c *Config) bool {
		for _, t := range c.Tables {
			for _, s := range t.Sets {
				if ok(t, s) {
					f(s)
					return true
				}
			}
		}
		return false
	}
}

// withEverySet mutates every set that ok accepts: where one is left out
// of the comparison (its table in conflict) another may show the change.
func withEverySet(ok func(*Table, *Set) bool, f func(*Set)) func(*Config) bool {
	return func(c *Config) bool {
		mutated := false
		for _, t := range c.Tables {
			for _, s := range t.Sets {
				if ok(t, s) {
					f(s)
					mutated = true
				}
			}
		}
		return mutated
	}
}

// withEveryRoute mutates every route of the YAML that ok accepts, as
// withEverySet.
func withEveryRoute(ok func(*Route) bool, f func(*Route)) func(*Config) bool {
	return func(c *Config) bool {
		mutated := false
		for _, r := range c.Routes {
			if ok(r) {
				f(r)
				mutated = true
			}
		}
		return mutated
	}
}

// withChain mutates the first chain that ok accepts.
func withChain(ok func(*Table, *Chain) bool, f func(*Chain)) func(*Config) bool {
	return func(c *Config) bool {
		for _, t := range c.Tables {
			for _, ch := range t.Chains {
				if ok(t, ch) {
					f(ch)
					return true
				}
			}
		}
		return false
	}
}

// withPeer mutates the first WireGuard peer that ok accepts.
func withPeer(ok func(*WGPeer) bool, f func(*WGPeer)) func(*Config) bool {
	return withLinkOf(func(l *Link) bool {
		if l.WG == nil {
			return false
		}
		for _, p := range l.WG.Peers {
			if ok(p) {
				f(p)
				return true
			}
		}
		return false
	})
}

// withLinkOf runs f on links in name order until it reports it changed one.
func withLinkOf(f func(*Link) bool) func(*Config) bool {
	return func(c *Config) bool {
		for _, n := range c.LinkNames() {
			if f(c.Links[n]) {
				return true
			}
		}
		return false
	}
}

// withPool mutates the first pool that ok accepts.
func withPool(ok func(*Config, *Pool) bool, f func(*Config, *Pool)) func(*Config) bool {
	return func(c *Config) bool {
		for _, p := range c.Pools {
			if ok(c, p) {
				f(c, p)
				return true
			}
		}
		return false
	}
}

// poolInUse says whether a link of c takes an address of pool p.
func poolInUse(c *Config, p *Pool) bool {
	for _, l := range c.Links {
		for _, a := range l.Addrs {
			if a.Pool == p.Name {
				return true
			}
		}
	}
	return false
}

// other is an address of the family of a, outside anything the walk uses.
func otherAddr(a string) string {
	if strings.Contains(a, ":") {
		return "2001:db8:eeee::1"
	}
	return "192.0.2.250"
}

// oracleChecks are the comparisons of every key the oracle reads back.
var oracleChecks = map[string]oracleCheck{
	"fou[].family": {byFou, needFou, func(c *Config) bool {
		return mutFou(c, func(f *Fou) { f.Family = map[string]string{"ipv4": "ipv6", "ipv6": "ipv4"}[f.Family] })
	}},
	"fou[].gue":     {byFou, needFou, func(c *Config) bool { return mutFou(c, func(f *Fou) { f.GUE = !f.GUE }) }},
	"fou[].ipproto": {byFou, needFou, func(c *Config) bool { return mutFou(c, func(f *Fou) { f.GUE, f.IPProto = false, 47 }) }},
	"fou[].port":    {byFou, needFou, func(c *Config) bool { return mutFou(c, func(f *Fou) { f.Port = 7000 }) }},

	"links.*.addresses[].address": {byAddr, nil, withAddr(static, func(a *Addr) {
		a.CIDR, a.Peer = netip.PrefixFrom(netip.MustParseAddr(otherAddr(a.CIDR)), netip.MustParsePrefix(a.CIDR).Bits()).String(), ""
	})},
	"links.*.addresses[].noprefixroute": {byAddr, nil, withAddr(static, func(a *Addr) { a.NoPrefixRoute = !a.NoPrefixRoute })},
	"links.*.addresses[].peer": {byAddr, nil, withAddr(func(_ *Link, a *Addr) bool { return a.Peer != "" }, func(a *Addr) {
		p := netip.MustParsePrefix(a.Peer)
		a.Peer = netip.PrefixFrom(p.Addr().Next().Next().Next(), p.Bits()).String()
	})},
	"links.*.addresses[].scope": {byAddr, nil, withAddr(func(_ *Link, a *Addr) bool { return static(nil, a) && !strings.Contains(a.CIDR, ":") }, func(a *Addr) {
		a.Scope = map[string]string{"": "host", "host": "link", "link": ""}[a.Scope]
	})},
	"links.*.addresses[].pool": {byAddr, nil, func(c *Config) bool {
		// Another pool of c, of a family the link's entry has too.
		for _, n := range c.LinkNames() {
			for _, a := range c.Links[n].Addrs {
				for _, p := range c.Pools {
					if a.Pool != "" && p.Name != a.Pool && p.Subnet6 == "" && !strings.Contains(p.Subnet, ":") && a.PrefixLen4 == 0 && a.PrefixLen6 == 0 && a.PrefixLen == 0 {
						a.Pool = p.Name
						return true
					}
				}
			}
		}
		return false
	}},
	"links.*.addresses[].prefix-length": {byAddr, nil, withAddr(func(_ *Link, a *Addr) bool { return a.Pool == "pw" || a.Pool == "pv" }, func(a *Addr) {
		a.PrefixLen = map[string]int{"pw": 29, "pv": 125}[a.Pool]
	})},
	"links.*.addresses[].ipv4-prefix-length": {byAddr, nil, withAddr(func(_ *Link, a *Addr) bool { return a.Pool == dualPool[0] }, func(a *Addr) { a.PrefixLen4 = 29 })},
	"links.*.addresses[].ipv6-prefix-length": {byAddr, nil, withAddr(func(_ *Link, a *Addr) bool { return a.Pool == dualPool[0] }, func(a *Addr) { a.PrefixLen6 = 125 })},

	"links.*.alias": {byLink, nil, withLink(func(l *Link) bool { return l.Kind != "device" }, func(_ *Config, l *Link) { l.Alias = "mutated" })},
	"links.*.kind": {byLink, nil, withLink(func(l *Link) bool { return l.Kind == "bridge" || l.Kind == "vxlan" }, func(_ *Config, l *Link) {
		if l.Kind == "vxlan" {
			l.Kind, l.VXLAN = "bridge", nil
			return
		}
		l.Kind, l.VXLAN = "vxlan", &VXLAN{ID: 777, Remote: "192.0.2.254"}
	})},
	"links.*.master": {byLink, nil, withLink(func(l *Link) bool { return l.Kind != "device" }, func(_ *Config, l *Link) {
		l.Master = map[bool]string{true: "", false: "b9"}[l.Master != ""]
	})},
	"links.*.mtu": {byLink, nil, withLink(func(l *Link) bool { return l.Kind != "device" }, func(_ *Config, l *Link) { l.MTU = 1234 })},
	"links.*.state": {byLink, nil, withLink(func(l *Link) bool { return l.Kind != "device" || l.Up }, func(_ *Config, l *Link) {
		l.Down = !l.Down
		if l.Kind == "device" {
			l.Up = false
		}
	})},
	"links.*.sysctls.*": {bySysctl, nil, withLink(func(l *Link) bool { return len(l.Sysctls) > 0 }, func(_ *Config, l *Link) {
		k := sortedKeys(l.Sysctls)[0]
		l.Sysctls[k] = "7"
	})},
	"links.*.veth.peer": {byLink, nil, withLink(func(l *Link) bool { return l.Kind == "veth" && l.PeerNS == "" }, func(_ *Config, l *Link) { l.Peer = "p9x" })},
	"links.*.veth.peer-netns": {byPeerNS, nil, withLink(func(l *Link) bool { return l.PeerNS != "" }, func(_ *Config, l *Link) {
		l.PeerNS = "walk-nowhere"
	})},

	"links.*.bond.miimon": {byLink, needBond, withLink(func(l *Link) bool { return l.Kind == "bond" }, func(_ *Config, l *Link) { l.Miimon = 333 })},
	"links.*.bond.mode": {byLink, needBond, withLink(func(l *Link) bool { return l.Kind == "bond" }, func(_ *Config, l *Link) {
		l.Mode = map[bool]string{true: "balance-xor", false: "broadcast"}[l.Mode != "balance-xor"]
	})},
	"links.*.ipvlan.mode": {byLink, needIPVlan, withLink(func(l *Link) bool { return l.Kind == "ipvlan" }, func(_ *Config, l *Link) {
		l.Mode = map[string]string{"": "l3", "l2": "l3", "l3": "l3s", "l3s": "l2"}[l.Mode]
	})},
	"links.*.ipvlan.parent": {byLink, needIPVlan, withLink(func(l *Link) bool { return l.Kind == "ipvlan" }, func(_ *Config, l *Link) { l.Parent = "d9" })},
	"links.*.macvlan.mode": {byLink, nil, withLink(func(l *Link) bool { return l.Kind == "macvlan" }, func(_ *Config, l *Link) {
		l.Mode = map[string]string{"": "vepa", "bridge": "vepa", "vepa": "private", "private": "bridge", "passthru": "bridge"}[l.Mode]
	})},
	"links.*.macvlan.parent": {byLink, nil, withLink(func(l *Link) bool { return l.Kind == "macvlan" }, func(_ *Config, l *Link) { l.Parent = "p9x" })},
	"links.*.vlan.id":        {byLink, needVLAN, withLink(func(l *Link) bool { return l.Kind == "vlan" }, func(_ *Config, l *Link) { l.VlanID = 999 })},
	"links.*.vlan.parent":    {byLink, needVLAN, withLink(func(l *Link) bool { return l.Kind == "vlan" }, func(_ *Config, l *Link) { l.Parent = "p9x" })},
	"links.*.vlan.protocol": {byLink, needVLAN, withLink(func(l *Link) bool { return l.Kind == "vlan" }, func(_ *Config, l *Link) {
		l.Mode = map[string]string{"": "802.1ad", "802.1q": "802.1ad", "802.1ad": ""}[l.Mode]
	})},
	"links.*.vrf.table": {byLink, needVRF, withLink(func(l *Link) bool { return l.Kind == "vrf" }, func(_ *Config, l *Link) { l.Table = 4444 })},

	"links.*.vxlan.dev":      {byLink, nil, withLink(vxlanLink, func(_ *Config, l *Link) { l.VXLAN.Dev = map[bool]string{true: "", false: "b9"}[l.VXLAN.Dev != ""] })},
	"links.*.vxlan.group":    {byLink, nil, withLink(func(l *Link) bool { return vxlanLink(l) && l.VXLAN.Group != "" }, func(_ *Config, l *Link) { l.VXLAN.Group = "239.9.9.9" })},
	"links.*.vxlan.id":       {byLink, nil, withLink(vxlanLink, func(_ *Config, l *Link) { l.VXLAN.ID = 777 })},
	"links.*.vxlan.learning": {byLink, nil, withLink(vxlanLink, func(_ *Config, l *Link) { l.VXLAN.NoLearning = !l.VXLAN.NoLearning })},
	"links.*.vxlan.local":    {byLink, nil, withLink(vxlanLink, func(_ *Config, l *Link) { l.VXLAN.Local = otherAddr(l.VXLAN.Remote + l.VXLAN.Group) })},
	"links.*.vxlan.port":     {byLink, nil, withLink(vxlanLink, func(_ *Config, l *Link) { l.VXLAN.Port = 5999 })},
	"links.*.vxlan.remote":   {byLink, nil, withLink(func(l *Link) bool { return vxlanLink(l) && l.VXLAN.Remote != "" }, func(_ *Config, l *Link) { l.VXLAN.Remote = otherAddr(l.VXLAN.Remote) })},
	"links.*.vxlan.ttl":      {byLink, nil, withLink(vxlanLink, func(_ *Config, l *Link) { l.VXLAN.TTL = 99 })},

	"links.*.ipip.encap.dport":   {byLink, needIPIP, withLink(encapOf("ipip"), func(_ *Config, l *Link) { l.Tunnel.EncapDport = 7001 })},
	"links.*.ipip.encap.sport":   {byLink, needIPIP, withLink(encapOf("ipip"), func(_ *Config, l *Link) { l.Tunnel.EncapSport = 7002 })},
	"links.*.ipip.encap.type":    {byLink, needIPIP, withLink(encapOf("ipip"), func(_ *Config, l *Link) { l.Tunnel.EncapType = flipEncap(l.Tunnel.EncapType) })},
	"links.*.ipip.external":      {byLink, needIPIP, withLink(tunnel("ipip"), func(_ *Config, l *Link) { l.Tunnel.External = true })},
	"links.*.ipip.local":         {byLink, needIPIP, withLink(tunnel("ipip"), func(_ *Config, l *Link) { l.Tunnel.Local = "192.0.2.251" })},
	"links.*.ipip.remote":        {byLink, needIPIP, withLink(tunnel("ipip"), func(_ *Config, l *Link) { l.Tunnel.Remote = "192.0.2.252" })},
	"links.*.ipip.ttl":           {byLink, needIPIP, withLink(tunnel("ipip"), func(_ *Config, l *Link) { l.Tunnel.TTL = 99 })},
	"links.*.ip6tnl.encap.dport": {byLink, needIP6Tnl, withLink(encapOf("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.EncapDport = 7001 })},
	"links.*.ip6tnl.encap.sport": {byLink, needIP6Tnl, withLink(encapOf("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.EncapSport = 7002 })},
	"links.*.ip6tnl.encap.type":  {byLink, needIP6Tnl, withLink(encapOf("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.EncapType = flipEncap(l.Tunnel.EncapType) })},
	"links.*.ip6tnl.external":    {byLink, needIP6Tnl, withLink(tunnel("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.External = true })},
	"links.*.ip6tnl.local":       {byLink, needIP6Tnl, withLink(tunnel("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.Local = "2001:db8:eeee::1" })},
	"links.*.ip6tnl.remote":      {byLink, needIP6Tnl, withLink(tunnel("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.Remote = "2001:db8:eeee::2" })},
	"links.*.ip6tnl.ttl":         {byLink, needIP6Tnl, withLink(tunnel("ip6tnl"), func(_ *Config, l *Link) { l.Tunnel.TTL = 99 })},
	// ip prints nothing but "external" of an external tunnel (iproute2's
	// ip6tunnel_print_opt returns there), so its mode is proven on a
	// tunnel that is not; the show round trip still holds an external
	// one's.
	"links.*.ip6tnl.mode": {byLink, needIP6Tnl, withLink(tunnel("ip6tnl"), func(_ *Config, l *Link) {
		l.Tunnel.Mode = map[string]string{"": "any", "ip6ip6": "any", "any": "ipip6", "ipip6": "ip6ip6"}[l.Tunnel.Mode]
	})},

	"links.*.wireguard.fwmark":      {byWG, needWG, withLink(wgLink, func(_ *Config, l *Link) { l.WG.Fwmark = 0x99 })},
	"links.*.wireguard.listen-port": {byWG, needWG, withLink(wgLink, func(_ *Config, l *Link) { l.WG.ListenPort = 40999 })},
	"links.*.wireguard.private-key-file": {byWG, needWG, withLink(func(l *Link) bool { return wgLink(l) && !l.WG.Keep && !l.WG.Credential }, func(_ *Config, l *Link) {
		l.WG.PublicKey = "other"
	})},
	"links.*.wireguard.private-key-credential": {byWG, needWG, withLink(func(l *Link) bool { return wgLink(l) && !l.WG.Keep && l.WG.Credential }, func(_ *Config, l *Link) {
		l.WG.PublicKey = "other"
	})},
	"links.*.wireguard.public-key": {byWG, needWG, withLink(func(l *Link) bool { return wgLink(l) && (l.WG.Keep || l.WG.ShowPublic) }, func(_ *Config, l *Link) {
		l.WG.PublicKey = "other"
	})},
	"links.*.wireguard.peers[].allowed-ips":          {byWG, needWG, withPeer(func(*WGPeer) bool { return true }, func(p *WGPeer) { p.AllowedIPs = []string{"10.249.9.0/24"} })},
	"links.*.wireguard.peers[].endpoints":            {byWG, needWG, withPeer(func(*WGPeer) bool { return true }, func(p *WGPeer) { p.Endpoints = []string{"192.0.2.99:9999"} })},
	"links.*.wireguard.peers[].persistent-keepalive": {byWG, needWG, withPeer(func(*WGPeer) bool { return true }, func(p *WGPeer) { p.Keepalive = 77 })},
	"links.*.wireguard.peers[].preshared-key-file": {byWG, needWG, withPeer(func(p *WGPeer) bool { return p.PSKFile != "" && !p.KeepPSK }, func(p *WGPeer) {
		p.PSKFile, p.PSK = "", ""
	})},
	"links.*.wireguard.peers[].keep-preshared-key": {byWG, needWG, withPeer(func(p *WGPeer) bool { return p.KeepPSK }, func(p *WGPeer) {
		p.PSK = map[bool]string{true: "", false: "other"}[p.PSK != ""]
	})},
	"links.*.wireguard.peers[].public-key": {byWG, needWG, withPeer(func(*WGPeer) bool { return true }, func(p *WGPeer) { p.PublicKey = "other" })},

	"nftables.*.chains.*.device": {byNft, nil, withChain(func(_ *Table, ch *Chain) bool { return ch.Device != "" }, func(ch *Chain) { ch.Device = "elsewhere" })},
	"nftables.*.chains.*.hook": {byNft, nil, withChain(func(_ *Table, ch *Chain) bool { return ch.Hook != "" && ch.Hook != "ingress" }, func(ch *Chain) {
		ch.Hook = map[bool]string{true: "output", false: "input"}[ch.Hook != "output"]
	})},
	"nftables.*.chains.*.policy": {byNft, nil, withChain(func(_ *Table, ch *Chain) bool { return ch.Hook != "" }, func(ch *Chain) {
		ch.Policy = map[string]string{"accept": "drop", "drop": "accept"}[ch.Policy]
	})},
	"nftables.*.chains.*.priority": {byNft, nil, withChain(func(_ *Table, ch *Chain) bool { return ch.Hook != "" }, func(ch *Chain) { ch.Priority = "-77" })},
	"nftables.*.chains.*.rules":    {byNft, nil, withChain(func(*Table, *Chain) bool { return true }, func(ch *Chain) { ch.Rules = append(ch.Rules, "counter drop") })},
	"nftables.*.chains.*.type": {byNft, nil, withChain(func(_ *Table, ch *Chain) bool { return ch.Hook != "" }, func(ch *Chain) {
		ch.Type = map[bool]string{true: "filter", false: "route"}[ch.Type == "nat" || ch.Type == "route"]
	})},
	"nftables.*.sets.*.elements": {byNft, nil, withSet(func(_ *Table, s *Set) bool { return s.FromWG == "" }, func(s *Set) {
		s.Elements = append(s.Elements, map[string]string{"ipv4_addr": "192.0.2.77", "ipv6_addr": "2001:db8:77::1", "inet_service": "7777", "mark": "0x00000777"}[s.Type])
	})},
	"nftables.*.sets.*.elements-file": {byNft, nil, withSet(func(_ *Table, s *Set) bool { return s.ElemFile != "" && s.FromWG == "" }, func(s *Set) {
		s.FileElements = append(s.FileElements, map[string]string{"ipv4_addr": "192.0.2.78", "ipv6_addr": "2001:db8:78::1", "inet_service": "7778", "mark": "0x00000778"}[s.Type])
	})},
	"nftables.*.sets.*.elements-from.peers": {byNft, nil, withEverySet(func(_ *Table, s *Set) bool { return s.FromWG != "" }, func(s *Set) {
		s.FromPeers = map[string]string{"": "all", "up": "all", "all": "up"}[s.FromPeers]
	})},
	"nftables.*.sets.*.elements-from.wireguard": {byNft, nil, withEverySet(func(_ *Table, s *Set) bool { return s.FromWG != "" }, func(s *Set) { s.FromWG = "wg-nowhere" })},
	"nftables.*.sets.*.flags": {byNft, nil, withSet(func(_ *Table, s *Set) bool { return s.FromWG == "" && (s.Interval || s.Timeout == "flag") }, func(s *Set) {
		s.Interval, s.Timeout = false, map[bool]string{true: "flag", false: ""}[s.Interval]
	})},
	"nftables.*.sets.*.timeout": {byNft, nil, withSet(func(_ *Table, s *Set) bool { return s.Timeout != "" && s.Timeout != "flag" }, func(s *Set) { s.Timeout = "77s" })},
	"nftables.*.sets.*.type": {byNft, nil, withSet(func(_ *Table, s *Set) bool { return s.Type == "inet_service" || s.Type == "mark" }, func(s *Set) {
		s.Type = map[string]string{"inet_service": "mark", "mark": "inet_service"}[s.Type]
	})},

	"pools.*.block-size-bits": {byExports, nil, withPool(poolInUse, func(_ *Config, p *Pool) { p.Bits = map[int]int{0: 2, 2: 0, 5: 2}[p.Bits] })},
	"pools.*.blocks":          {byBlocks, nil, withPool(poolInUse, func(_ *Config, p *Pool) { p.Blocks = "200" })},
	"pools.*.export-table":    {byExports, nil, withPool(poolInUse, func(_ *Config, p *Pool) { p.Table = 177 })},
	"pools.*.subnets[].ipv4": {byAddr, nil, withPool(func(c *Config, p *Pool) bool { return poolInUse(c, p) && !strings.Contains(p.Subnet, ":") }, func(_ *Config, p *Pool) {
		p.Subnet = subnetAlt[p.Subnet]
	})},
	"pools.*.subnets[].ipv6": {byAddr, nil, withPool(func(c *Config, p *Pool) bool {
		return poolInUse(c, p) && (p.Subnet6 != "" || strings.Contains(p.Subnet, ":"))
	}, func(_ *Config, p *Pool) {
		if p.Subnet6 != "" {
			p.Subnet6 = subnetAlt[p.Subnet6]
		} else {
			p.Subnet = subnetAlt[p.Subnet]
		}
	})},

	"routes-files[].file": {byRoute, nil, func(c *Config) bool {
		for i, f := range c.RouteFiles {
			for _, r := range c.Routes {
				if r.Side == f.Name {
					c.RouteFiles = append(c.RouteFiles[:i], c.RouteFiles[i+1:]...)
					c.Routes = dropSide(c.Routes, f.Name)
					return true
				}
			}
		}
		return false
	}},
	"routes-files[].table": {byRoute, nil, func(c *Config) bool {
		for _, r := range c.Routes {
			if r.Side != "" && r.Table == "" {
				r.Table = "177"
				return true
			}
		}
		return false
	}},
	"routes[].dev": {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && r.Dev != "" }, func(r *Route) { r.Dev = "b9" })},
	"routes[].family": {byRoute, nil, withRoute(func(r *Route) bool { return r.Family != "" }, func(r *Route) {
		r.Family = map[string]string{"ipv4": "both", "both": "ipv6", "ipv6": "ipv4"}[r.Family]
	})},
	"routes[].metric": {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" }, func(r *Route) { r.Metric = 777 })},
	"routes[].mtu":    {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" }, func(r *Route) { r.MTU = 1111 })},
	"routes[].onlink": {byRoute, nil, withEveryRoute(func(r *Route) bool { return r.Via != "" && r.Dev != "" && (r.Type == "" || r.Type == "unicast") }, func(r *Route) { r.Onlink = !r.Onlink })},
	"routes[].scope": {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && !strings.Contains(r.To, ":") && r.Family == "" }, func(r *Route) {
		// Another scope than the one the route has, its default included
		// (a local route's is host).
		r.Scope = map[bool]string{true: "link", false: "host"}[r.Scope == "host" || r.Scope == "" && r.Type == "local"]
	})},
	"routes[].src":               {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && r.Src != "" }, func(r *Route) { r.Src = "192.0.2.253" })},
	"routes[].table":             {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" }, func(r *Route) { r.Table = "177" })},
	"routes[].to":                {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && r.To != "default" }, func(r *Route) { r.To = mutPrefix(r.To) })},
	"routes[].tos":               {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && !strings.Contains(r.To, ":") && r.Family == "" }, func(r *Route) { r.TOS = 28 })},
	"routes[].type":              {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" }, func(r *Route) { r.Type = map[bool]string{true: "prohibit", false: "throw"}[r.Type != "prohibit"] })},
	"routes[].via":               {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && r.Via != "" }, func(r *Route) { r.Via = otherAddr(r.Via) })},
	"routes[].nexthops[].dev":    {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && len(r.Hops) > 0 }, func(r *Route) { r.Hops[0].Dev = "b9" })},
	"routes[].nexthops[].via":    {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && len(r.Hops) > 0 }, func(r *Route) { r.Hops[0].Via = otherAddr(r.Hops[0].Via) })},
	"routes[].nexthops[].weight": {byRoute, nil, withRoute(func(r *Route) bool { return r.Side == "" && len(r.Hops) > 0 }, func(r *Route) { r.Hops[0].Weight = 77 })},

	"rules[].action": {byRule, nil, withRule(func(*Rule) bool { return true }, func(r *Rule) {
		r.Action = map[bool]string{true: "prohibit", false: "blackhole"}[r.Action != "prohibit"]
	})},
	"rules[].family":                {byRule, nil, withRule(func(r *Rule) bool { return r.From == "" && r.To == "" }, func(r *Rule) { r.Family = map[string]string{"ipv4": "ipv6", "ipv6": "ipv4"}[r.Family] })},
	"rules[].from":                  {byRule, nil, withRule(func(r *Rule) bool { return r.Family == "ipv4" }, func(r *Rule) { r.From = "10.77.0.0/16" })},
	"rules[].fwmark":                {byRule, nil, withRule(func(*Rule) bool { return true }, func(r *Rule) { r.Fwmark = "0x777" })},
	"rules[].iif":                   {byRule, nil, withRule(func(*Rule) bool { return true }, func(r *Rule) { r.IIF = "b9" })},
	"rules[].not":                   {byRule, nil, withRule(func(*Rule) bool { return true }, func(r *Rule) { r.Not = !r.Not })},
	"rules[].oif":                   {byRule, nil, withRule(func(*Rule) bool { return true }, func(r *Rule) { r.OIF = "b9" })},
	"rules[].priority":              {byRule, nil, withRule(func(*Rule) bool { return true }, func(r *Rule) { r.Priority = 7777 })},
	"rules[].suppress-prefixlength": {byRule, nil, withRule(func(r *Rule) bool { return r.HasSuppress }, func(r *Rule) { r.Suppress = 17 })},
	"rules[].table":                 {byRule, nil, withRule(func(r *Rule) bool { return r.Action == "lookup" }, func(r *Rule) { r.Table = "177" })},
	"rules[].to":                    {byRule, nil, withRule(func(r *Rule) bool { return r.Family == "ipv4" }, func(r *Rule) { r.To = "172.31.0.0/16" })},

	"settings.protocol": {byRoute + "; " + byRule, nil, func(c *Config) bool {
		if len(c.Routes) == 0 && len(c.Rules) == 0 {
			return false
		}
		c.Protocol = 177
		return true
	}},
	"sysctls.*": {bySysctl, nil, func(c *Config) bool {
		keys := sortedKeys(c.Sysctls)
		if len(keys) == 0 {
			return false
		}
		k := keys[0]
		c.Sysctls[k] = map[bool]string{true: "0", false: "1"}[c.Sysctls[k] != "0"]
		if k == "net.ipv4.ip_local_port_range" {
			c.Sysctls[k] = "10000 11000"
		}
		return true
	}},
}

func mutFou(c *Config, f func(*Fou)) bool {
	if len(c.Fou) == 0 {
		return false
	}
	f(c.Fou[0])
	return true
}

func encapOf(kind string) func(*Link) bool {
	return func(l *Link) bool { return tunnel(kind)(l) && l.Tunnel.EncapDport != 0 }
}

func flipEncap(t string) string {
	if t == "gue" {
		return "fou"
	}
	return "gue"
}

// dropSide drops the routes of a routes file.
func dropSide(rs []*Route, file string) []*Route {
	var out []*Route
	for _, r := range rs {
		if r.Side != file {
			out = append(out, r)
		}
	}
	return out
}

// mutPrefix is another prefix of a route's family.
func mutPrefix(p string) string {
	if strings.Contains(p, ":") {
		return "2001:db8:eeee::/64"
	}
	return "192.0.2.0/28"
}

// oracleExceptions are the keys the oracle does not read back, and why.
var oracleExceptions = map[string]string{
	"version":                                    "the schema's version: no kernel state",
	"settings.protocol-override":                 "a permission the loader checks (a protocol another program may name): no kernel state",
	"settings.max-disruption":                    "the service's limit, not kernel state: the walk's service pass (heldPass) holds the ops above it and checks with ip -d -j link and nft -a that what it holds is as the kernel had it",
	"links.*.adopt":                              "an instruction to take a foreign link over: adopted, it is compared as any link of ours (compareLink's marker), and the foreign check holds it unchanged before",
	"nftables.*.adopt":                           "an instruction to take a foreign table over: adopted, it is compared as the walk's (CompareNft), and the foreign check holds it unchanged before",
	"links.*.ipip.mode":                          "ipip has one mode: nothing to compare it with",
	"links.*.wireguard.userspace":                "a permission (fall back to wireguard-go where the module is missing): on a kernel without the module compareLink sees the device or its absence, and with the module it changes nothing",
	"links.*.wireguard.rotation.connect-timeout": "the daemon's timing of endpoint rotation, not kernel state: a one-shot apply sets the first candidate (peers[].endpoints is compared)",
	"links.*.wireguard.rotation.down-after":      "the daemon's timing of endpoint rotation, not kernel state",
	"links.*.wireguard.rotation.interval":        "the daemon's timing of endpoint rotation, not kernel state",
	"pools.*.reuse-delay":                        "the registry's timing: which address comes next, not what the kernel holds (its export routes and addresses are compared)",
}

// oracleFinds says whether the oracle finds a difference between the
// kernel (a reading the walk's checks passed on) and the mutant of c.
func (r *runner) oracleFinds(c *Config, k *Kernel, skip map[string]bool) (bool, error) {
	var diffs []string
	bad := func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) }
	diffs = append(diffs, Compare(r.ns, c, k, skip)...)
	nd, err := CompareNft(c, k, skip, r.foreignTables)
	if err != nil {
		return false, err
	}
	diffs = append(diffs, nd...)
	compareExports(c, k, r.othersByPool(), skip, r.poolAddrs, bad)
	compareNewBlocks(c, k, skip, r.poolAddrs, bad)
	diffs = append(diffs, comparePeerNS(r.g.PeerNS, c, skip)...)
	diffs = append(diffs, comparePeerNS(r.g.PeerNS2, c, skip)...)
	if len(diffs) > 0 {
		return true, nil
	}
	if r.g.Caps.WireGuard {
		wd, err := CompareWG(r.ns, c)
		if err != nil {
			return false, err
		}
		diffs = append(diffs, wd...)
	}
	if r.g.Caps.Fou {
		fd, err := CompareFou(r.ns, c, r.fou0)
		if err != nil {
			return false, err
		}
		diffs = append(diffs, fd...)
	}
	sd, err := CompareSysctls(r.ns, c, r.sysctl0, skip, r.pinned)
	if err != nil {
		return false, err
	}
	diffs = append(diffs, sd...)
	return len(diffs) > 0, nil
}

// proveOracle mutates each key not yet proven in a copy of c and checks
// that the oracle sees the change in the kernel reading k (which it found
// equal to c). A key whose mutation goes unseen is a failure: its
// comparison is lost.
//
// Objects in conflict (skip) are out of the comparison: a mutant that
// changes one is not seen, and proves nothing either way, so a step with
// conflicts proves keys but fails none.
func (r *runner) proveOracle(c *Config, k *Kernel, skip map[string]bool) error {
	for _, key := range sortedKeys(oracleChecks) {
		oc := oracleChecks[key]
		if r.proven[key] || oc.needs != nil && !oc.needs(r.g.Caps) {
			continue
		}
		m := c.Clone()
		// The mutant is judged against the same kernel: what it keeps
		// below 1280 from before the step stays so.
		m.KeptLow = c.KeptLow
		if !oc.mutate(m) {
			continue
		}
		found, err := r.oracleFindsSafely(m, k, skip)
		if err != nil {
			// The mutant is no file nft takes (a route chain in an arp
			// table): it proves nothing. The configuration itself went
			// through the oracle before.
			continue
		}
		if !found && (len(skip) > 0 || maybeUnseen[key] != "") {
			continue
		}
		if !found {
			return fmt.Errorf("%s: the oracle (%s) does not see the key changed; the kernel holds:\n%s\nthe mutant:\n%s", key, oc.by, c.YAML(), m.YAML())
		}
		r.proven[key] = true
	}
	return nil
}

// oracleFindsSafely is oracleFinds, with a panic of the oracle on a mutant
// (one it was not written for) an error that names the mutant.
func (r *runner) oracleFindsSafely(m *Config, k *Kernel, skip map[string]bool) (found bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the oracle panics on the mutant: %v\n%s", p, m.YAML())
		}
	}()
	return r.oracleFinds(m, k, skip)
}

func static(_ *Link, a *Addr) bool { return a.Pool == "" }
func wgLink(l *Link) bool          { return l.WG != nil }
func tunnel(kind string) func(*Link) bool {
	return func(l *Link) bool { return l.Kind == kind && l.Tunnel != nil && !l.Tunnel.External }
}
func vxlanLink(l *Link) bool { return l.VXLAN != nil }

// byNftWords compares the sets, maps and objects in nft's words.
const byNftWords = "CompareNft: nft -j list ruleset and nft list ruleset, against nft -f of the file's words in a namespace of its own"

// withNSet mutates the first set (isMap false) or map in nft's words that
// ok accepts.
func withNSet(isMap bool, ok func(*NSet) bool, f func(*Table, *NSet)) func(*Config) bool {
	return func(c *Config) bool {
		for _, t := range c.Tables {
			for _, s := range t.NSets {
				if s.Map == isMap && ok(s) {
					f(t, s)
					return true
				}
			}
		}
		return false
	}
}

// nsetType writes a set's or map's type as the typeof of the same data
// type: nft keeps the typeof's expressions in the set (nft list shows them),
// so the kernel's set is another; the rules that use it still compile.
func nsetType(_ *Table, s *NSet) {
	s.Type, s.Typeof = "", nsetTypes[s.Name][s.Kind][1]
}

func nsetTypeOK(s *NSet) bool { return s.Type != "" }

// nsetFlags turns a set's or map's flag interval on or off.
func nsetFlags(_ *Table, s *NSet) {
	if s.has("interval") {
		s.Flags, s.Merge = nil, false
		s.Elements, s.FileElements = withoutRanges(s.Elements), withoutRanges(s.FileElements)
	} else {
		s.Flags = []string{"interval"}
	}
}

func nsetFlagsOK(s *NSet) bool { return s.Timeout == "" }

// The comparisons of the sets, maps and objects in nft's words: each
// mutant is a file nft takes (a typeof of the same data type).
func init() {
	every := func(*NSet) bool { return true }
	for _, isMap := range []bool{false, true} {
		p := map[bool]string{false: "nftables.*.sets.*.", true: "nftables.*.maps.*."}[isMap]
		add := func(key string, ok func(*NSet) bool, f func(*Table, *NSet)) {
			oracleChecks[p+key] = oracleCheck{byNftWords, nil, withNSet(isMap, ok, f)}
		}
		add("typeof", func(s *NSet) bool { return s.Typeof != "" }, func(_ *Table, s *NSet) {
			// Another expression of the same data type, or the type twin.
			if s.Kind == 0 {
				s.Typeof = strings.Replace(s.Typeof, "meta mark", "ct mark", 1)
			} else {
				s.Type, s.Typeof = nsetTypes[s.Name][s.Kind][0], ""
			}
		})
		add("size", every, func(_ *Table, s *NSet) {
			s.Size, s.Policy = 77, map[bool]string{true: "", false: s.Policy}[s.Policy == "memory"]
		})
		add("policy", func(s *NSet) bool { return s.Size == 0 }, func(_ *Table, s *NSet) {
			s.Policy = map[bool]string{true: "performance", false: "memory"}[s.Policy == "memory"]
		})
		add("counter", every, func(_ *Table, s *NSet) { s.Counter = !s.Counter })
		if !isMap {
			add("auto-merge", func(s *NSet) bool { return s.has("interval") }, func(_ *Table, s *NSet) { s.Merge = !s.Merge })
		}
		add("comment", every, func(_ *Table, s *NSet) { s.Comment = "mutant" })
		if !isMap {
			// The keys own sets share: their comparisons mutate an own
			// set where the file has one, else a set in nft's words.
			for key, f := range map[string]func(*Table, *NSet){"type": nsetType, "flags": nsetFlags} {
				own := oracleChecks[p+key]
				nset := withNSet(false, map[string]func(*NSet) bool{"type": nsetTypeOK, "flags": nsetFlagsOK}[key], f)
				oracleChecks[p+key] = oracleCheck{own.by + "; " + byNftWords, nil, func(c *Config) bool { return own.mutate(c) || nset(c) }}
			}
			continue
		}
		add("type", nsetTypeOK, nsetType)
		add("elements", func(s *NSet) bool { return s.Timeout == "" }, func(_ *Table, s *NSet) {
			s.Elements = append(s.Elements, map[string]string{"vm": "0x00000777 : drop", "dm": "0x00000777 : 0x00000001"}[s.Name])
			if s.Kind == 1 {
				s.Elements[len(s.Elements)-1] = map[string]string{"vm": "7:7 : drop", "dm": "7:7 : 0x00000001"}[s.Name]
			}
		})
		add("elements-file", func(s *NSet) bool { return s.ElemFile != "" }, func(_ *Table, s *NSet) {
			s.FileElements = append(s.FileElements, map[string]string{"vm": "0x00000778 : drop", "dm": "0x00000778 : 0x00000001"}[s.Name])
			if s.Kind == 1 {
				s.FileElements[len(s.FileElements)-1] = map[string]string{"vm": "7:8 : drop", "dm": "7:8 : 0x00000001"}[s.Name]
			}
		})
		add("flags", nsetFlagsOK, nsetFlags)
		add("timeout", func(s *NSet) bool { return s.Timeout != "" }, func(_ *Table, s *NSet) { s.Timeout = "77s" })
	}
	oracleChecks["nftables.*.objects"] = oracleCheck{byNftWords, nil, func(c *Config) bool {
		for _, t := range c.Tables {
			if len(t.Objects) > 0 {
				t.Objects = append(t.Objects, &Obj{Name: "ox", Decl: "quota 7 mbytes"})
				return true
			}
		}
		return false
	}}
	for _, k := range []string{"nftables.*.maps.*.elements-from.peers", "nftables.*.maps.*.elements-from.wireguard"} {
		oracleExceptions[k] = exMapFrom
	}
	oracleExceptions["nftables.*.maps.*.auto-merge"] = exMapMerge
}
