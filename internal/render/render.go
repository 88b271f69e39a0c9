// Package render writes a model.State back as a configuration file in the current schema, with
// every default spelled out: what `show` prints. One file per kind: link.go (with its addresses),
// route.go, rule.go, fou.go, nft.go, wireguard.go, pool.go (pools with their usage as comments).
package render

import (
	"fmt"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
)

// State writes a state as a configuration file in the current schema, with
// every default spelled out: what `show` prints, and what a user may copy
// into a file.
func State(st *model.State) ([]byte, error) {
	root := mapping()
	add(root, "version", yscalar(strconv.Itoa(desired.CurrentVersion)))
	set := mapping()
	add(set, "protocol", yscalar(strconv.Itoa(st.Protocol)))
	add(root, "settings", set)
	if refs := undeclaredRefs(st); len(st.Links) > 0 || len(refs) > 0 {
		links := mapping()
		addrs := map[string][]model.Address{}
		for _, a := range st.Addresses {
			addrs[a.Link] = append(addrs[a.Link], a)
		}
		// Links the state references but does not hold (lo under an IPv6
		// local route, a bridge someone else made above an owned port) are
		// declared as devices, which the file never changes, so the output
		// is itself a valid file that diffs empty.
		names := append(st.SortedLinkNames(), refs...)
		sort.Strings(names)
		for _, name := range names {
			if l := st.Links[name]; l != nil {
				add(links, name, renderLink(l, addrs[name]))
			} else {
				dev := flow()
				add(dev, "kind", yscalar(model.KindDevice))
				add(links, name, dev)
			}
		}
		add(root, "links", links)
	}
	if len(st.FouPorts) > 0 {
		seq := sequence()
		for _, f := range st.FouPorts {
			m := flow()
			add(m, "port", yscalar(strconv.Itoa(int(f.Port))))
			if f.GUE {
				add(m, "gue", yscalar("true"))
			} else {
				add(m, "ipproto", yscalar(strconv.Itoa(int(f.IPProto))))
			}
			add(m, "family", yscalar(famWord(f.IPv6)))
			seq.Content = append(seq.Content, m)
		}
		add(root, "fou", seq)
	}
	if len(st.Routes) > 0 {
		seq := sequence()
		for _, r := range st.Routes {
			seq.Content = append(seq.Content, renderRoute(&r))
		}
		add(root, "routes", seq)
	}
	if len(st.Rules) > 0 {
		seq := sequence()
		for _, r := range st.Rules {
			seq.Content = append(seq.Content, renderRule(&r))
		}
		add(root, "rules", seq)
	}
	if len(st.NFTables) > 0 {
		add(root, "nftables", renderNFT(st.NFTables))
	}
	return yaml.Marshal(root)
}

// undeclaredRefs lists the link names that the rendered state references
// (a master, a vxlan dev, an ipvlan parent, a route's dev) but does not hold.
func undeclaredRefs(st *model.State) []string {
	seen := map[string]bool{}
	var out []string
	ref := func(n string) {
		if n != "" && st.Links[n] == nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, name := range st.SortedLinkNames() {
		l := st.Links[name]
		ref(l.Master)
		if l.VXLAN != nil {
			ref(l.VXLAN.Dev)
		}
		if l.IPVlan != nil {
			ref(l.IPVlan.Parent)
		}
	}
	for i := range st.Routes {
		if r := &st.Routes[i]; routeTakesDev(r) {
			ref(r.Dev)
		}
	}
	return out
}

// routeTakesDev says whether the file may give the route a via and a dev:
// only unicast and local routes (route.go). The kernel hangs IPv6
// blackhole, unreachable, prohibit and throw routes on lo, which a file
// cannot say.
func routeTakesDev(r *model.Route) bool {
	return r.Type == model.RouteUnicast || r.Type == model.RouteLocal || r.Type == 0
}

func renderLink(l *model.Link, addrs []model.Address) *yaml.Node {
	m := mapping()
	add(m, "kind", yscalar(l.Kind))
	if l.MTU != 0 {
		add(m, "mtu", yscalar(strconv.Itoa(l.MTU)))
	}
	add(m, "state", yscalar(map[bool]string{true: "up", false: "down"}[l.Up]))
	if l.Master != "" {
		add(m, "master", yscalar(l.Master))
	}
	if l.Alias != "" {
		add(m, "alias", yscalar(l.Alias))
	}
	switch {
	case l.Veth != nil && l.Veth.Peer != "":
		v := flow()
		add(v, "peer", yscalar(l.Veth.Peer))
		if l.Veth.PeerNetNS != "" {
			add(v, "peer-netns", yscalar(l.Veth.PeerNetNS))
		}
		add(m, "veth", v)
	case l.VXLAN != nil:
		x := l.VXLAN
		v := flow()
		add(v, "id", yscalar(strconv.Itoa(int(x.ID))))
		if x.Local.IsValid() {
			add(v, "local", yscalar(x.Local.String()))
		}
		if x.Remote.IsValid() {
			key := "remote"
			if x.Remote.IsMulticast() {
				key = "group"
			}
			add(v, key, yscalar(x.Remote.String()))
		}
		add(v, "port", yscalar(strconv.Itoa(int(x.Port))))
		if x.Dev != "" {
			add(v, "dev", yscalar(x.Dev))
		}
		if x.TTL != 0 {
			add(v, "ttl", yscalar(strconv.Itoa(int(x.TTL))))
		}
		add(v, "learning", yscalar(strconv.FormatBool(x.Learning)))
		add(m, "vxlan", v)
	case l.IPVlan != nil:
		v := flow()
		add(v, "parent", yscalar(l.IPVlan.Parent))
		add(v, "mode", yscalar(l.IPVlan.Mode))
		add(m, "ipvlan", v)
	case l.Tunnel != nil:
		t := l.Tunnel
		v := flow()
		if l.Kind == model.KindIP6Tnl {
			add(v, "mode", yscalar(t.Mode))
		}
		if t.External {
			add(v, "external", yscalar("true"))
		}
		if t.Local.IsValid() {
			add(v, "local", yscalar(t.Local.String()))
		}
		if t.Remote.IsValid() {
			add(v, "remote", yscalar(t.Remote.String()))
		}
		if t.TTL != 0 {
			add(v, "ttl", yscalar(strconv.Itoa(int(t.TTL))))
		}
		if e := t.Encap; e != nil {
			em := flow()
			add(em, "type", yscalar(e.Type))
			sport := "auto"
			if e.Sport != 0 {
				sport = strconv.Itoa(int(e.Sport))
			}
			add(em, "sport", yscalar(sport))
			add(em, "dport", yscalar(strconv.Itoa(int(e.Dport))))
			add(v, "encap", em)
		}
		add(m, l.Kind, v)
	case l.WireGuard != nil:
		add(m, "wireguard", renderWireGuard(l.WireGuard))
	}
	if len(addrs) > 0 {
		seq := sequence()
		for _, a := range addrs {
			if a.Scope == model.ScopeUniverse && !a.Peer.IsValid() && !a.NoPrefixRoute {
				seq.Content = append(seq.Content, yscalar(a.Prefix.String()))
				continue
			}
			am := flow()
			add(am, "address", yscalar(a.Prefix.String()))
			if a.Peer.IsValid() {
				add(am, "peer", yscalar(a.Peer.String()))
			}
			add(am, "scope", yscalar(model.ScopeName(a.Scope)))
			if a.NoPrefixRoute {
				add(am, "noprefixroute", yscalar("true"))
			}
			seq.Content = append(seq.Content, am)
		}
		add(m, "addresses", seq)
	}
	return m
}

func renderRoute(r *model.Route) *yaml.Node {
	m := flow()
	to := r.Dst.String()
	if r.Dst.Bits() == 0 {
		to = "default"
	}
	add(m, "to", yscalar(to))
	if r.Dst.Bits() == 0 {
		add(m, "family", yscalar(famWord(r.IsIPv6())))
	}
	if r.Type != model.RouteUnicast && r.Type != 0 {
		add(m, "type", yscalar(model.RouteTypeName(r.Type)))
	}
	if r.Gateway.IsValid() && routeTakesDev(r) {
		add(m, "via", yscalar(r.Gateway.String()))
	}
	if r.Dev != "" && routeTakesDev(r) {
		add(m, "dev", yscalar(r.Dev))
	}
	if r.Src.IsValid() {
		add(m, "src", yscalar(r.Src.String()))
	}
	add(m, "table", yscalar(model.TableName(r.Table)))
	if r.Metric != 0 {
		add(m, "metric", yscalar(strconv.Itoa(r.Metric)))
	}
	if r.TOS != 0 {
		add(m, "tos", yscalar(fmt.Sprintf("%#x", r.TOS)))
	}
	if !r.IsIPv6() {
		add(m, "scope", yscalar(model.ScopeName(r.Scope)))
	}
	if r.OnLink {
		add(m, "onlink", yscalar("true"))
	}
	if r.MTU != 0 {
		add(m, "mtu", yscalar(strconv.Itoa(r.MTU)))
	}
	if r.Protocol != 0 {
		m.HeadComment = ""
		m.LineComment = fmt.Sprintf("proto %d", r.Protocol)
	}
	return m
}

func renderRule(r *model.Rule) *yaml.Node {
	m := flow()
	add(m, "priority", yscalar(strconv.Itoa(r.Priority)))
	add(m, "family", yscalar(famWord(r.IPv6)))
	if r.Invert {
		add(m, "not", yscalar("true"))
	}
	if r.From.IsValid() {
		add(m, "from", yscalar(r.From.String()))
	}
	if r.To.IsValid() {
		add(m, "to", yscalar(r.To.String()))
	}
	if r.FwMark != 0 || r.FwMask != 0 {
		v := fmt.Sprintf("%#x", r.FwMark)
		if r.FwMask != 0xffffffff {
			v += fmt.Sprintf("/%#x", r.FwMask)
		}
		add(m, "fwmark", yscalar(v))
	}
	if r.IIF != "" {
		add(m, "iif", yscalar(r.IIF))
	}
	if r.OIF != "" {
		add(m, "oif", yscalar(r.OIF))
	}
	if r.Action == model.RuleLookup {
		add(m, "table", yscalar(model.TableName(r.Table)))
	} else {
		names := make([]string, 0)
		for n, v := range model.RuleActionNames {
			if v == r.Action {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			add(m, "action", yscalar(names[0]))
		} else {
			add(m, "action", yscalar(strconv.Itoa(r.Action)))
		}
	}
	if r.SuppressPrefixLen >= 0 {
		add(m, "suppress-prefixlength", yscalar(strconv.Itoa(r.SuppressPrefixLen)))
	}
	if r.Protocol != 0 {
		m.LineComment = fmt.Sprintf("proto %d", r.Protocol)
	}
	return m
}

func famWord(v6 bool) string {
	if v6 {
		return "ipv6"
	}
	return "ipv4"
}

func mapping() *yaml.Node  { return &yaml.Node{Kind: yaml.MappingNode} }
func flow() *yaml.Node     { return &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle} }
func sequence() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode} }
func yscalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: s}
}
func add(m *yaml.Node, k string, v *yaml.Node) { m.Content = append(m.Content, yscalar(k), v) }
