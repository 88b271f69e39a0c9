// Package walk is the randomized convergence walk (issue 10): a seeded
// generator of valid configurations and of foreign objects, a runner that
// applies a sequence of configurations to a fresh network namespace and
// checks after every step that netreconcile converged and left foreign
// objects alone, an oracle that reads the kernel with ip(8), nft(8) and wg(8)
// (independently of internal/actual), and a shrinker that cuts a failing
// sequence down to files a person can apply by hand.
//
// The generator has its own small model of a configuration (Config) instead of
// desired's: the walk must not share the code it checks.
package walk

import (
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// Config is one configuration of the walk, in the generator's own terms.
type Config struct {
	Protocol int
	// ProtocolOverride says settings.protocol-override: true (a
	// Protocol that the kernel's list names).
	ProtocolOverride bool
	// Explicit spells the settings out (protocol: 245,
	// protocol-override: false).
	Explicit bool
	// MaxDisruption is settings.max-disruption ("" none): the service's
	// limit, which the runner's service pass keeps (heldPass).
	MaxDisruption string
	Links         map[string]*Link
	Routes        []*Route
	// RouteFiles are the routes-files (side files of routes): a route
	// whose Side names one is a line of it.
	RouteFiles []*RouteFile
	Rules      []*Rule
	Fou        []*Fou
	Tables     []*Table
	Pools      []*Pool
	// Sysctls are the global keys (main file only), by full key.
	Sysctls map[string]string
	// Others are the addresses other owners hold in the pools (a CNI
	// plugin's `ipam allocate`): the runner allocates and releases them
	// before it applies the step.
	Others []*Other
	// Meddle is what the foreign actor ran in the namespace before this
	// step (shell commands), once Meddled says it was decided: a replay
	// runs the same commands instead of drawing new ones, so the shrinker
	// replays the walk that failed and repro.sh lists them. Clone leaves
	// them out: a mutation of this step is another step.
	Meddle  []string
	Meddled bool
	// MeddleTables are the nftables tables ("FAMILY NAME") Meddle
	// recreated as someone else's.
	MeddleTables []string
	// KeptLow are the links the kernel held below IPv6's minimum MTU
	// before this step and that this file keeps there, and those it keeps
	// on them, with their MTUs (keptBelowIPv6, from the runner's reading
	// of the kernel): what the file alone does not say (kernelMTU).
	// Clone leaves them out: the generator works from the files.
	KeptLow map[string]int
}

// Link is a declared link.
type Link struct {
	Name string
	Kind string // device, veth, bridge, vxlan, dummy, ipvlan, macvlan, vlan, vrf, bond, ipip, ip6tnl, wireguard
	MTU  int    // 0: not given
	Down bool
	// Up says `state: up` on a device link, whose state is otherwise left
	// as it is.
	Up     bool
	Master string
	Alias  string
	Addrs  []*Addr
	// Adopt takes over a foreign link of the name (adopt: true).
	Adopt bool
	// Explicit spells out the defaults the file may leave out (state: up,
	// learning: true, a vlan's protocol, adopt: false...): the same
	// link, said another way.
	Explicit bool
	// Frag is the file that declares the link: 0 the main file, 1 and 2
	// the drop-in fragments (conf.d/1.yaml, 2.yaml). Likewise for routes,
	// rules, FoU ports, tables and pools.
	Frag int

	Peer string // veth
	// PeerNS puts the veth's peer in that named namespace (peer-netns):
	// the peer is then not declared.
	PeerNS string

	VXLAN *VXLAN
	// Parent and Mode are an ipvlan's, a macvlan's, and a vlan's parent
	// and protocol; Mode is also a bond's mode ("" the default).
	Parent, Mode string
	// VlanID is a vlan's id, Table a vrf's, Miimon a bond's (-1: not given).
	VlanID, Table, Miimon int
	Tunnel                *Tunnel // ipip, ip6tnl
	WG                    *WG
	// Sysctls are the link's own keys, by short key (ipv4.rp_filter).
	Sysctls map[string]string
}

// VXLAN holds a vxlan's creation attributes.
type VXLAN struct {
	ID            int
	Local, Remote string
	// Group is a multicast group (instead of Remote); it needs Dev.
	Group      string
	Port       int // 0: default 4789
	Dev        string
	TTL        int
	NoLearning bool
}

// Tunnel holds an ipip or ip6tnl link's attributes.
type Tunnel struct {
	Local, Remote string
	TTL           int
	EncapDport    int // 0: no encap
	EncapSport    int // 0: auto
	// EncapType is fou or gue.
	EncapType string
	// Mode is ip6tnl's (ip6ip6, ipip6, any); "" the default.
	Mode string
	// External is a flow-based (collect_md) device: no endpoints, ttl or
	// encap.
	External bool
}

// WG is a WireGuard device.
type WG struct {
	KeyFile   string
	PublicKey string
	// Alt gives the device its name's other key (KeyFile and PublicKey
	// are then that one's).
	Alt bool
	// Credential names the key as a systemd credential
	// (private-key-credential, $CREDENTIALS_DIRECTORY is the key
	// directory) instead of its file.
	Credential bool
	// Kernel says userspace: false (the guest's kernel module).
	Kernel bool
	// Keep gives the public key alone (the device keeps the key it
	// holds: the walk's device of the name held it the step before);
	// ShowPublic gives it beside the key source, as a check.
	Keep, ShowPublic bool
	ListenPort       int
	Fwmark           int
	Peers            []*WGPeer
	// Rotation gives the endpoint rotation settings: 0 none, 1 and 2
	// two sets of them.
	Rotation int
}

// WGPeer is one peer of a WireGuard device.
type WGPeer struct {
	PublicKey  string
	AllowedIPs []string
	Keepalive  int
	// Endpoints are the candidates in order.
	Endpoints []string
	// PSKFile holds the preshared key PSK (base64).
	PSKFile, PSK string
	// KeepPSK says keep-preshared-key: the peer keeps PSK, the key the
	// device held for it the step before ("" none).
	KeepPSK bool
}

// Addr is one address entry of a link.
type Addr struct {
	CIDR          string // empty when Pool is set
	Peer          string // point-to-point far end, with CIDR's prefix length
	Scope         string // empty: global
	NoPrefixRoute bool
	Pool          string
	// PrefixLen is a pool address's prefix length (0: the default, a
	// host's), for a single-family pool; PrefixLen4 and PrefixLen6 are
	// a dual-stack pool's.
	PrefixLen, PrefixLen4, PrefixLen6 int
	// Explicit spells out the defaults (scope: global, noprefixroute:
	// false).
	Explicit bool
}

// Route is a declared route.
type Route struct {
	To, Type, Via, Dev, Src string
	// Hops, two or more, make the route multipath (Via and Dev unset).
	Hops   []Hop
	Table  string // "" is main
	Metric int
	Scope  string
	Onlink bool
	MTU    int
	TOS    int
	Frag   int
	// Family is a default route's family key: "" (from its gateways),
	// ipv4, ipv6 or both (two routes, To "default" only).
	Family string
	// Side is the routes file that holds the route as a line ("": the
	// YAML).
	Side string
	// Explicit spells out onlink: false.
	Explicit bool
}

// RouteFile is a side file of routes (routes-files).
type RouteFile struct {
	Name string
	// Table is the table of its lines that name none ("" main);
	// Short writes the item as its path alone (Table "").
	Table string
	Short bool
}

// Hop is a next hop of a multipath route: a gateway (of the route's family
// or, for an IPv4 route, a link-local IPv6 one: RFC 5549) on a device.
type Hop struct {
	Via, Dev string
	Weight   int // 0 is the default, 1
	// NoDev leaves dev out of the file: the kernel takes the link of
	// the gateway's connected subnet, Dev.
	NoDev bool
}

// Rule is a declared rule (one family).
type Rule struct {
	Priority int
	Family   string
	From, To string
	Fwmark   string
	IIF, OIF string
	Not      bool
	Action   string // lookup, blackhole, unreachable, prohibit
	Table    string
	Frag     int
	// Suppress is suppress-prefixlength, when HasSuppress.
	Suppress    int
	HasSuppress bool
	// Explicit spells out not: false.
	Explicit bool
	// NoFamily leaves family out where from or to gives it.
	NoFamily bool
}

// Fou is a FoU receive port.
type Fou struct {
	Port    int
	Family  string
	IPProto int
	GUE     bool
	Frag    int
	// Explicit spells out gue: false.
	Explicit bool
}

// Table is an nftables table.
type Table struct {
	Family, Name string
	Sets         []*Set
	// NSets are the sets and maps in nft's words (NSet), Objects the
	// named stateful objects.
	NSets   []*NSet
	Objects []*Obj
	Chains  []*Chain
	Adopt   bool
	Frag    int
	// Explicit spells out adopt: false.
	Explicit bool
}

// Set is an nftables set.
type Set struct {
	Name, Type string
	Interval   bool
	Elements   []string
	// FileElements are the elements of the set's elements-file (ElemFile,
	// "" none).
	FileElements []string
	ElemFile     string
	// Timeout is "" (none), "flag" (flags: [timeout], elements that never
	// expire) or a default element timeout ("1h").
	Timeout string
	// FromWG and FromPeers are elements-from: a WireGuard link of the
	// file and up or all ("" the default, up). The set sw without FromWG
	// is fed no more: its own elements alone.
	FromWG, FromPeers string
}

// NSet is a set or map in nft's words: nft declares it and compiles its
// elements (docs/config.md, sets.NAME.typeof...). The walk's are of marks,
// which every family takes: the set nd, the verdict map vm, the data map
// dm.
type NSet struct {
	Name string
	Map  bool
	// Type or Typeof, one of them, as nft writes them ("mark : verdict",
	// "meta mark : meta mark").
	Type, Typeof string
	Flags        []string
	// Timeout is a default element timeout ("1h"; "" none).
	Timeout         string
	Size            int
	Policy, Comment string
	Counter, Merge  bool
	// Kind is what the keys are: 0 marks (meta mark), 1 classids (meta
	// priority); a change of kind changes the type.
	Kind     int
	Elements []string
	// FileElements are the elements of ElemFile ("" none).
	FileElements []string
	ElemFile     string
}

// Obj is a named stateful object: its name, and its declaration in nft's
// words without the name ("quota over 25 mbytes").
type Obj struct {
	Name, Decl string
}

// Chain is an nftables chain; Hook empty is a regular chain.
type Chain struct {
	Name, Hook, Priority, Policy string
	// Type is filter, nat or route ("" filter); Device a netdev chain's.
	Type, Device string
	Rules        []string
}

// Other is an address another owner holds in a pool.
type Other struct {
	Pool, Owner string
}

// Pool is an IPAM pool whose single address goes to one link.
type Pool struct {
	Name   string
	Subnet string
	// Subnet6 makes the pool dual-stack: Subnet is then its IPv4 half.
	Subnet6 string
	Bits    int
	Table   int
	Frag    int
	// Blocks are the block indexes the host may take ("" every one),
	// as the file writes them: "0-3", "2".
	Blocks string
	// Delay is the reuse delay ("0s"...; "": the default, 60s).
	Delay string
	// Pair writes a single-family subnet as {ipv4: P} or {ipv6: P}.
	Pair bool
	// Explicit writes the block size and export table also at their
	// defaults (5, 119).
	Explicit bool
}

// Clone deep-copies c.
func (c *Config) Clone() *Config {
	n := &Config{Protocol: c.Protocol, ProtocolOverride: c.ProtocolOverride, Explicit: c.Explicit, MaxDisruption: c.MaxDisruption, Links: map[string]*Link{}, Sysctls: maps.Clone(c.Sysctls)}
	for _, f := range c.RouteFiles {
		x := *f
		n.RouteFiles = append(n.RouteFiles, &x)
	}
	for k, l := range c.Links {
		m := *l
		m.Sysctls = maps.Clone(l.Sysctls)
		m.Addrs = nil
		for _, a := range l.Addrs {
			b := *a
			m.Addrs = append(m.Addrs, &b)
		}
		if l.VXLAN != nil {
			v := *l.VXLAN
			m.VXLAN = &v
		}
		if l.Tunnel != nil {
			v := *l.Tunnel
			m.Tunnel = &v
		}
		if l.WG != nil {
			w := *l.WG
			w.Peers = nil
			for _, p := range l.WG.Peers {
				q := *p
				q.AllowedIPs = append([]string(nil), p.AllowedIPs...)
				q.Endpoints = append([]string(nil), p.Endpoints...)
				w.Peers = append(w.Peers, &q)
			}
			m.WG = &w
		}
		n.Links[k] = &m
	}
	for _, r := range c.Routes {
		x := *r
		x.Hops = append([]Hop(nil), r.Hops...)
		n.Routes = append(n.Routes, &x)
	}
	for _, r := range c.Rules {
		x := *r
		n.Rules = append(n.Rules, &x)
	}
	for _, f := range c.Fou {
		x := *f
		n.Fou = append(n.Fou, &x)
	}
	for _, t := range c.Tables {
		x := &Table{Family: t.Family, Name: t.Name, Adopt: t.Adopt, Frag: t.Frag, Explicit: t.Explicit}
		for _, s := range t.Sets {
			y := *s
			y.Elements = append([]string(nil), s.Elements...)
			y.FileElements = append([]string(nil), s.FileElements...)
			x.Sets = append(x.Sets, &y)
		}
		for _, s := range t.NSets {
			y := *s
			y.Flags = append([]string(nil), s.Flags...)
			y.Elements = append([]string(nil), s.Elements...)
			y.FileElements = append([]string(nil), s.FileElements...)
			x.NSets = append(x.NSets, &y)
		}
		for _, o := range t.Objects {
			y := *o
			x.Objects = append(x.Objects, &y)
		}
		for _, ch := range t.Chains {
			y := *ch
			y.Rules = append([]string(nil), ch.Rules...)
			x.Chains = append(x.Chains, &y)
		}
		n.Tables = append(n.Tables, x)
	}
	for _, p := range c.Pools {
		x := *p
		n.Pools = append(n.Pools, &x)
	}
	for _, o := range c.Others {
		x := *o
		n.Others = append(n.Others, &x)
	}
	return n
}

// LinkNames returns the declared link names, sorted.
func (c *Config) LinkNames() []string {
	var ns []string
	for n := range c.Links {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// q quotes a YAML scalar.
func q(s string) string { return fmt.Sprintf("%q", s) }

// Frags is the number of files a configuration is split over: the main
// file and the drop-in fragments conf.d/1.yaml, conf.d/2.yaml.
const Frags = 3

// YAML renders the whole configuration as one file netreconcile reads
// (its side files are still apart: SideFiles).
func (c *Config) YAML() string { return c.File(-1) }

// sideRef is how file frag names the side file name: the main file sits in
// the step's directory, the fragments in its conf.d, the side files in its
// side (writeFiles).
func sideRef(frag int, name string) string {
	if frag > 0 {
		return "../side/" + name
	}
	return "side/" + name
}

// SideFiles returns the content of the side files the configuration names,
// by name (in the step's side directory).
func (c *Config) SideFiles() map[string]string {
	out := map[string]string{}
	for _, f := range c.RouteFiles {
		var b strings.Builder
		b.WriteString("# walk routes\n")
		for _, r := range c.Routes {
			if r.Side == f.Name {
				b.WriteString(r.line(f.Table) + "\n")
			}
		}
		out[f.Name] = b.String()
	}
	for _, t := range c.Tables {
		for _, s := range t.Sets {
			if s.ElemFile != "" {
				out[s.ElemFile] = "# walk elements\n" + strings.Join(s.FileElements, "\n") + "\n"
			}
		}
		for _, s := range t.NSets {
			if s.ElemFile != "" {
				out[s.ElemFile] = "# walk elements\n" + strings.Join(s.FileElements, "\n") + "\n"
			}
		}
	}
	return out
}

// File renders the part of the configuration that file frag declares (0 the
// main file, 1 and 2 the fragments; -1 all of it in one file).
func (c *Config) File(frag int) string {
	in := func(f int) bool { return frag < 0 || f == frag }
	var b strings.Builder
	b.WriteString("version: 1\n")
	if frag <= 0 {
		var g []string
		if c.Protocol != 0 && c.Protocol != 245 || c.Explicit {
			g = append(g, fmt.Sprintf("protocol: %d", c.Protocol))
		}
		if c.ProtocolOverride || c.Explicit {
			g = append(g, fmt.Sprintf("protocol-override: %v", c.ProtocolOverride))
		}
		if c.MaxDisruption != "" {
			g = append(g, "max-disruption: "+c.MaxDisruption)
		}
		if len(g) > 0 {
			fmt.Fprintf(&b, "settings: {%s}\n", strings.Join(g, ", "))
		}
	}
	head := func(h string) func() {
		done := false
		return func() {
			if !done {
				b.WriteString(h)
				done = true
			}
		}
	}
	pools := head("pools:\n")
	for _, p := range c.Pools {
		if in(p.Frag) {
			pools()
			fmt.Fprintf(&b, "  %s: {subnets: [%s]", p.Name, p.subnetYAML())
			if p.Bits != 5 || p.Explicit {
				fmt.Fprintf(&b, ", block-size-bits: %d", p.Bits)
			}
			if p.Table != 119 || p.Explicit {
				fmt.Fprintf(&b, ", export-table: %d", p.Table)
			}
			if p.Delay != "" {
				fmt.Fprintf(&b, ", reuse-delay: %s", p.Delay)
			}
			if p.Blocks != "" {
				fmt.Fprintf(&b, ", blocks: %s", q(p.Blocks))
			}
			b.WriteString("}\n")
		}
	}
	links := head("links:\n")
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if !in(l.Frag) {
			continue
		}
		links()
		fmt.Fprintf(&b, "  %s: {%s}\n", q(n), strings.Join(l.fields(c), ", "))
	}
	if len(c.Sysctls) > 0 && frag <= 0 {
		b.WriteString("sysctls: {" + sysctlYAML(c.Sysctls) + "}\n")
	}
	routes := head("routes:\n")
	for _, r := range c.Routes {
		if in(r.Frag) && r.Side == "" {
			routes()
			fmt.Fprintf(&b, "  - %s\n", r.yaml())
		}
	}
	if len(c.RouteFiles) > 0 && frag <= 0 {
		b.WriteString("routes-files:\n")
		for _, f := range c.RouteFiles {
			if f.Short && f.Table == "" {
				fmt.Fprintf(&b, "  - %s\n", q(sideRef(0, f.Name)))
				continue
			}
			fmt.Fprintf(&b, "  - {file: %s", q(sideRef(0, f.Name)))
			if f.Table != "" {
				fmt.Fprintf(&b, ", table: %s", f.Table)
			}
			b.WriteString("}\n")
		}
	}
	rules := head("rules:\n")
	for _, r := range c.Rules {
		if in(r.Frag) {
			rules()
			fmt.Fprintf(&b, "  - %s\n", r.yaml())
		}
	}
	fou := head("fou:\n")
	for _, f := range c.Fou {
		if !in(f.Frag) {
			continue
		}
		fou()
		switch {
		case f.GUE:
			fmt.Fprintf(&b, "  - {port: %d, family: %s, gue: true}\n", f.Port, f.Family)
		case f.Explicit:
			fmt.Fprintf(&b, "  - {port: %d, family: %s, ipproto: %d, gue: false}\n", f.Port, f.Family, f.IPProto)
		default:
			fmt.Fprintf(&b, "  - {port: %d, family: %s, ipproto: %d}\n", f.Port, f.Family, f.IPProto)
		}
	}
	tables := head("nftables:\n")
	for _, t := range c.Tables {
		if !in(t.Frag) {
			continue
		}
		tables()
		fmt.Fprintf(&b, "  %s:\n", q(t.Family+" "+t.Name))
		if t.Adopt {
			b.WriteString("    adopt: true\n")
		} else if t.Explicit {
			b.WriteString("    adopt: false\n")
		}
		var nsets, nmaps []*NSet
		for _, s := range t.NSets {
			if s.Map {
				nmaps = append(nmaps, s)
			} else {
				nsets = append(nsets, s)
			}
		}
		if len(t.Sets)+len(nsets) > 0 {
			b.WriteString("    sets:\n")
			for _, s := range nsets {
				fmt.Fprintf(&b, "      %s: {%s}\n", s.Name, strings.Join(s.fields(frag), ", "))
			}
			for _, s := range t.Sets {
				var g []string
				g = append(g, "type: "+s.Type)
				var flags []string
				if s.Interval {
					flags = append(flags, "interval")
				}
				if s.Timeout == "flag" {
					flags = append(flags, "timeout")
				}
				if len(flags) > 0 {
					g = append(g, "flags: ["+strings.Join(flags, ", ")+"]")
				}
				if s.Timeout != "" && s.Timeout != "flag" {
					g = append(g, "timeout: "+s.Timeout)
				}
				if len(s.Elements) > 0 || s.ElemFile == "" {
					g = append(g, "elements: ["+quoteAll(s.Elements)+"]")
				}
				if s.ElemFile != "" {
					g = append(g, "elements-file: "+q(sideRef(frag, s.ElemFile)))
				}
				if s.FromWG != "" {
					from := "wireguard: " + q(s.FromWG)
					if s.FromPeers != "" {
						from += ", peers: " + s.FromPeers
					}
					g = append(g, "elements-from: {"+from+"}")
				}
				fmt.Fprintf(&b, "      %s: {%s}\n", s.Name, strings.Join(g, ", "))
			}
		}
		if len(nmaps) > 0 {
			b.WriteString("    maps:\n")
			for _, s := range nmaps {
				fmt.Fprintf(&b, "      %s: {%s}\n", s.Name, strings.Join(s.fields(frag), ", "))
			}
		}
		if len(t.Objects) > 0 {
			b.WriteString("    objects:\n")
			for _, o := range t.Objects {
				fmt.Fprintf(&b, "      %s: %s\n", o.Name, q(o.Decl))
			}
		}
		if len(t.Chains) > 0 {
			b.WriteString("    chains:\n")
			for _, ch := range t.Chains {
				var g []string
				if ch.Hook != "" {
					g = append(g, "type: "+ch.chainType(), "hook: "+ch.Hook, "priority: "+q(ch.Priority), "policy: "+ch.Policy)
					if ch.Device != "" {
						g = append(g, "device: "+q(ch.Device))
					}
				}
				if len(ch.Rules) > 0 || len(g) == 0 {
					g = append(g, "rules: ["+quoteAll(ch.Rules)+"]")
				}
				fmt.Fprintf(&b, "      %s: {%s}\n", ch.Name, strings.Join(g, ", "))
			}
		}
	}
	return b.String()
}

// fields are a set's or map's keys in nft's words, flow style.
func (s *NSet) fields(frag int) []string {
	var f []string
	if s.Typeof != "" {
		f = append(f, "typeof: "+q(s.Typeof))
	} else {
		f = append(f, "type: "+q(s.Type))
	}
	if len(s.Flags) > 0 {
		f = append(f, "flags: ["+strings.Join(s.Flags, ", ")+"]")
	}
	if s.Timeout != "" {
		f = append(f, "timeout: "+s.Timeout)
	}
	if s.Size != 0 {
		f = append(f, fmt.Sprintf("size: %d", s.Size))
	}
	if s.Policy != "" {
		f = append(f, "policy: "+s.Policy)
	}
	if s.Counter {
		f = append(f, "counter: true")
	}
	if s.Merge {
		f = append(f, "auto-merge: true")
	}
	if s.Comment != "" {
		f = append(f, "comment: "+q(s.Comment))
	}
	if len(s.Elements) > 0 {
		f = append(f, "elements: ["+quoteAll(s.Elements)+"]")
	}
	if s.ElemFile != "" {
		f = append(f, "elements-file: "+q(sideRef(frag, s.ElemFile)))
	}
	return f
}

// subnetYAML writes a pool's subnet list.
func (p *Pool) subnetYAML() string {
	switch {
	case p.Subnet6 != "":
		return fmt.Sprintf("{ipv4: %s, ipv6: %s}", q(p.Subnet), q(p.Subnet6))
	case p.Pair && strings.Contains(p.Subnet, ":"):
		return "{ipv6: " + q(p.Subnet) + "}"
	case p.Pair:
		return "{ipv4: " + q(p.Subnet) + "}"
	}
	return q(p.Subnet)
}

// fields are a link's keys in the file, flow style.
func (l *Link) fields(c *Config) []string {
	var f []string
	f = append(f, "kind: "+l.Kind)
	if l.MTU != 0 {
		f = append(f, fmt.Sprintf("mtu: %d", l.MTU))
	}
	switch {
	case l.Down:
		f = append(f, "state: down")
	case l.Up || l.Explicit && l.Kind != "device":
		f = append(f, "state: up")
	}
	if l.Master != "" {
		f = append(f, "master: "+q(l.Master))
	}
	if l.Alias != "" {
		f = append(f, "alias: "+q(l.Alias))
	}
	if l.Adopt {
		f = append(f, "adopt: true")
	} else if l.Explicit {
		f = append(f, "adopt: false")
	}
	switch l.Kind {
	case "veth":
		if l.PeerNS != "" {
			f = append(f, "veth: {peer: "+q(l.Peer)+", peer-netns: "+q(l.PeerNS)+"}")
			break
		}
		f = append(f, "veth: {peer: "+q(l.Peer)+"}")
	case "vxlan":
		v := l.VXLAN
		g := []string{fmt.Sprintf("id: %d", v.ID)}
		if v.Local != "" {
			g = append(g, "local: "+q(v.Local))
		}
		if v.Remote != "" {
			g = append(g, "remote: "+q(v.Remote))
		}
		if v.Group != "" {
			g = append(g, "group: "+q(v.Group))
		}
		if v.Port != 0 {
			g = append(g, fmt.Sprintf("port: %d", v.Port))
		}
		if v.Dev != "" {
			g = append(g, "dev: "+q(v.Dev))
		}
		if v.TTL != 0 {
			g = append(g, fmt.Sprintf("ttl: %d", v.TTL))
		}
		if v.NoLearning {
			g = append(g, "learning: false")
		} else if l.Explicit {
			g = append(g, "learning: true")
		}
		f = append(f, "vxlan: {"+strings.Join(g, ", ")+"}")
	case "ipvlan":
		g := []string{"parent: " + q(l.Parent)}
		if l.Mode != "" {
			g = append(g, "mode: "+l.Mode)
		} else if l.Explicit {
			g = append(g, "mode: l2")
		}
		f = append(f, "ipvlan: {"+strings.Join(g, ", ")+"}")
	case "macvlan":
		g := []string{"parent: " + q(l.Parent)}
		if l.Mode != "" {
			g = append(g, "mode: "+l.Mode)
		} else if l.Explicit {
			g = append(g, "mode: bridge")
		}
		f = append(f, "macvlan: {"+strings.Join(g, ", ")+"}")
	case "vlan":
		g := []string{"parent: " + q(l.Parent), fmt.Sprintf("id: %d", l.VlanID)}
		if l.Mode != "" {
			g = append(g, "protocol: "+l.Mode)
		} else if l.Explicit {
			g = append(g, "protocol: 802.1q")
		}
		f = append(f, "vlan: {"+strings.Join(g, ", ")+"}")
	case "vrf":
		f = append(f, fmt.Sprintf("vrf: {table: %d}", l.Table))
	case "bond":
		var g []string
		if l.Mode != "" {
			g = append(g, "mode: "+l.Mode)
		}
		if l.Miimon >= 0 {
			g = append(g, fmt.Sprintf("miimon: %d", l.Miimon))
		}
		if len(g) > 0 {
			f = append(f, "bond: {"+strings.Join(g, ", ")+"}")
		}
	case "ipip", "ip6tnl":
		t := l.Tunnel
		var g []string
		switch {
		case t.Mode != "":
			g = append(g, "mode: "+t.Mode)
		case l.Explicit && l.Kind == "ipip":
			g = append(g, "mode: ipip")
		}
		if t.External {
			g = append(g, "external: true")
		} else if l.Explicit {
			g = append(g, "external: false")
		}
		if t.Local != "" {
			g = append(g, "local: "+q(t.Local))
		}
		if t.Remote != "" {
			g = append(g, "remote: "+q(t.Remote))
		}
		if t.TTL != 0 {
			g = append(g, fmt.Sprintf("ttl: %d", t.TTL))
		}
		if t.EncapDport != 0 {
			sport := "auto"
			if t.EncapSport != 0 {
				sport = fmt.Sprint(t.EncapSport)
			}
			typ := t.EncapType
			if typ == "" {
				typ = "fou"
			}
			g = append(g, fmt.Sprintf("encap: {type: %s, sport: %s, dport: %d}", typ, sport, t.EncapDport))
		}
		f = append(f, l.Kind+": {"+strings.Join(g, ", ")+"}")
	case "wireguard":
		w := l.WG
		var g []string
		switch {
		case w.Keep:
		case w.Credential:
			g = append(g, "private-key-credential: "+q(filepath.Base(w.KeyFile)))
		default:
			g = append(g, "private-key-file: "+q(w.KeyFile))
		}
		if w.Keep || w.ShowPublic {
			g = append(g, "public-key: "+q(w.PublicKey))
		}
		if !w.Kernel || l.Explicit {
			g = append(g, "userspace: "+strconv.FormatBool(!w.Kernel))
		}
		if w.ListenPort != 0 {
			g = append(g, fmt.Sprintf("listen-port: %d", w.ListenPort))
		}
		if w.Fwmark != 0 {
			g = append(g, fmt.Sprintf("fwmark: %#x", w.Fwmark))
		}
		switch w.Rotation {
		case 1:
			g = append(g, "rotation: {connect-timeout: 5s, down-after: 60s, interval: 10s}")
		case 2:
			g = append(g, "rotation: {connect-timeout: 7s, down-after: 90s, interval: 15s}")
		}
		var ps []string
		for _, p := range w.Peers {
			h := []string{"public-key: " + q(p.PublicKey)}
			if len(p.AllowedIPs) > 0 {
				h = append(h, "allowed-ips: ["+quoteAll(p.AllowedIPs)+"]")
			}
			if p.Keepalive != 0 {
				h = append(h, fmt.Sprintf("persistent-keepalive: %ds", p.Keepalive))
			}
			if len(p.Endpoints) > 0 {
				h = append(h, "endpoints: ["+quoteAll(p.Endpoints)+"]")
			}
			if p.KeepPSK {
				h = append(h, "keep-preshared-key: true")
			} else if p.PSKFile != "" {
				h = append(h, "preshared-key-file: "+q(p.PSKFile))
			}
			ps = append(ps, "{"+strings.Join(h, ", ")+"}")
		}
		if len(ps) > 0 {
			g = append(g, "peers: ["+strings.Join(ps, ", ")+"]")
		}
		f = append(f, "wireguard: {"+strings.Join(g, ", ")+"}")
	}
	if len(l.Addrs) > 0 {
		var as []string
		for _, a := range l.Addrs {
			as = append(as, a.yaml())
		}
		f = append(f, "addresses: ["+strings.Join(as, ", ")+"]")
	}
	if len(l.Sysctls) > 0 {
		f = append(f, "sysctls: {"+sysctlYAML(l.Sysctls)+"}")
	}
	return f
}

// sysctlYAML renders keys and values in key order, values quoted.
func sysctlYAML(m map[string]string) string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, k+": "+q(m[k]))
	}
	return strings.Join(out, ", ")
}

func quoteAll(ss []string) string {
	var qs []string
	for _, s := range ss {
		qs = append(qs, q(s))
	}
	return strings.Join(qs, ", ")
}

// chainType is the chain's type as nft lists it.
func (ch *Chain) chainType() string {
	if ch.Type == "" {
		return "filter"
	}
	return ch.Type
}

func (a *Addr) yaml() string {
	if a.Pool != "" {
		g := []string{"pool: " + a.Pool}
		if a.PrefixLen != 0 {
			g = append(g, fmt.Sprintf("prefix-length: %d", a.PrefixLen))
		}
		if a.PrefixLen4 != 0 {
			g = append(g, fmt.Sprintf("ipv4-prefix-length: %d", a.PrefixLen4))
		}
		if a.PrefixLen6 != 0 {
			g = append(g, fmt.Sprintf("ipv6-prefix-length: %d", a.PrefixLen6))
		}
		return "{" + strings.Join(g, ", ") + "}"
	}
	if a.Scope == "" && !a.NoPrefixRoute && a.Peer == "" && !a.Explicit {
		return q(a.CIDR)
	}
	g := []string{"address: " + q(a.CIDR)}
	if a.Peer != "" {
		g = append(g, "peer: "+q(a.Peer))
	}
	if a.Scope != "" {
		g = append(g, "scope: "+a.Scope)
	} else if a.Explicit {
		g = append(g, "scope: global")
	}
	if a.NoPrefixRoute {
		g = append(g, "noprefixroute: true")
	} else if a.Explicit {
		g = append(g, "noprefixroute: false")
	}
	return "{" + strings.Join(g, ", ") + "}"
}

// dsts are the destinations the route makes in the kernel: one, or a
// default route of each family (family: both). "default" is IPv4's.
func (r *Route) dsts() []string {
	if r.To != "default" {
		return []string{r.To}
	}
	switch r.Family {
	case "ipv6":
		return []string{"::/0"}
	case "both":
		return []string{"default", "::/0"}
	}
	return []string{"default"}
}

// to is the route's destination as the file writes it.
func (r *Route) to() string {
	to := r.To
	if to == "default" && r.Family == "" {
		// The walk's "default" is IPv4 ("::/0" is its IPv6 one), which
		// the file spells "default" only where the gateways do not make
		// it IPv6 (docs/config.md, family): an IPv4 route through IPv6
		// ones only (RFC 5549) is written 0.0.0.0/0, as a person would.
		v6 := strings.Contains(r.Via, ":")
		vias := 0
		for _, h := range r.Hops {
			if h.Via != "" {
				vias++
			}
		}
		if vias > 0 {
			v6 = true
			for _, h := range r.Hops {
				v6 = v6 && !strings.Contains(h.Via, ".")
			}
		}
		if v6 {
			to = "0.0.0.0/0"
		}
	}
	return to
}

func (r *Route) yaml() string {
	g := []string{"to: " + q(r.to())}
	if r.Family != "" {
		g = append(g, "family: "+r.Family)
	}
	if r.Type != "" && r.Type != "unicast" {
		g = append(g, "type: "+r.Type)
	}
	if r.Via != "" {
		g = append(g, "via: "+q(r.Via))
	}
	if r.Dev != "" {
		g = append(g, "dev: "+q(r.Dev))
	}
	if len(r.Hops) > 0 {
		var hs []string
		for _, h := range r.Hops {
			x := []string{"via: " + q(h.Via)}
			if !h.NoDev {
				x = append(x, "dev: "+q(h.Dev))
			}
			if h.Weight != 0 {
				x = append(x, fmt.Sprintf("weight: %d", h.Weight))
			}
			hs = append(hs, "{"+strings.Join(x, ", ")+"}")
		}
		g = append(g, "nexthops: ["+strings.Join(hs, ", ")+"]")
	}
	if r.Src != "" {
		g = append(g, "src: "+q(r.Src))
	}
	if r.Table != "" {
		g = append(g, "table: "+r.Table)
	}
	if r.Metric != 0 {
		g = append(g, fmt.Sprintf("metric: %d", r.Metric))
	}
	if r.Scope != "" {
		g = append(g, "scope: "+r.Scope)
	}
	if r.Onlink {
		g = append(g, "onlink: true")
	} else if r.Explicit {
		g = append(g, "onlink: false")
	}
	if r.MTU != 0 {
		g = append(g, fmt.Sprintf("mtu: %d", r.MTU))
	}
	if r.TOS != 0 {
		g = append(g, fmt.Sprintf("tos: %d", r.TOS))
	}
	return "{" + strings.Join(g, ", ") + "}"
}

// line renders the route as a line of a routes file whose lines take
// table by default ("" main).
func (r *Route) line(table string) string {
	var w []string
	if r.Type != "" && r.Type != "unicast" {
		w = append(w, r.Type)
	}
	to := r.to()
	if to == "default" && strings.Contains(r.Via, ":") {
		to = "0.0.0.0/0"
	}
	w = append(w, to)
	if r.Via != "" {
		if strings.Contains(r.Via, ":") && !strings.Contains(to, ":") {
			w = append(w, "via", "inet6", r.Via)
		} else {
			w = append(w, "via", r.Via)
		}
	}
	if r.Dev != "" {
		w = append(w, "dev", r.Dev)
	}
	if r.Src != "" {
		w = append(w, "src", r.Src)
	}
	if tableName(r.Table) != tableName(table) {
		w = append(w, "table", tableName(r.Table))
	}
	if r.Metric != 0 {
		w = append(w, "metric", strconv.Itoa(r.Metric))
	}
	if r.Scope != "" {
		w = append(w, "scope", r.Scope)
	}
	if r.MTU != 0 {
		w = append(w, "mtu", strconv.Itoa(r.MTU))
	}
	if r.TOS != 0 {
		w = append(w, "tos", strconv.Itoa(r.TOS))
	}
	if r.Onlink {
		w = append(w, "onlink")
	}
	for _, h := range r.Hops {
		w = append(w, "nexthop", "via", h.Via)
		if !h.NoDev {
			w = append(w, "dev", h.Dev)
		}
		if h.Weight != 0 {
			w = append(w, "weight", strconv.Itoa(h.Weight))
		}
	}
	return strings.Join(w, " ")
}

func (r *Rule) yaml() string {
	g := []string{fmt.Sprintf("priority: %d", r.Priority)}
	if !r.NoFamily || r.From == "" && r.To == "" {
		g = append(g, "family: "+r.Family)
	}
	if r.From != "" {
		g = append(g, "from: "+q(r.From))
	}
	if r.To != "" {
		g = append(g, "to: "+q(r.To))
	}
	if r.Fwmark != "" {
		g = append(g, "fwmark: "+q(r.Fwmark))
	}
	if r.IIF != "" {
		g = append(g, "iif: "+q(r.IIF))
	}
	if r.OIF != "" {
		g = append(g, "oif: "+q(r.OIF))
	}
	if r.Not {
		g = append(g, "not: true")
	} else if r.Explicit {
		g = append(g, "not: false")
	}
	if r.HasSuppress {
		g = append(g, fmt.Sprintf("suppress-prefixlength: %d", r.Suppress))
	}
	if r.Action != "lookup" {
		g = append(g, "action: "+r.Action)
	} else {
		g = append(g, "table: "+r.Table)
	}
	return "{" + strings.Join(g, ", ") + "}"
}

// Sources are the configuration as one file, walk.yaml, and its side files
// (side/NAME), for desired.Parse: what writeFiles puts on disk, in memory.
func (c *Config) Sources() []desired.Source {
	srcs := []desired.Source{{Name: "walk.yaml", Data: []byte(c.YAML())}}
	for _, n := range sortedKeys(c.SideFiles()) {
		srcs = append(srcs, desired.Source{Name: "side/" + n, Data: []byte(c.SideFiles()[n]), Side: true})
	}
	return srcs
}
