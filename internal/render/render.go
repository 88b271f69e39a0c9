// Package render writes a model.State back as a configuration file in the current schema, with
// every default spelled out: what `show` prints. One file per kind: link.go (with its addresses),
// route.go, rule.go, fou.go, nft.go, wireguard.go, sysctl.go, pool.go (pools with their usage as
// comments).
package render

import (
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
)

// State writes a state as a configuration file in the current schema, with
// every default spelled out: what `show` prints, and what a user may copy
// into a file.
func State(st *model.State) ([]byte, error) {
	return yaml.Marshal(stateNode(st))
}

// stateNode is State's document, before it is written.
func stateNode(st *model.State) *yaml.Node {
	root := mapping()
	add(root, "version", yscalar(strconv.Itoa(desired.CurrentVersion)))
	set := mapping()
	add(set, "protocol", yscalar(strconv.Itoa(st.Protocol)))
	if desired.ProtocolNamed(st.Protocol) {
		// The state's protocol is netreconcile's here whoever names
		// it: the file that set it said so.
		add(set, "protocol-override", yscalar("true"))
	}
	add(root, "settings", set)
	globalSysctls, linkSysctls := splitSysctls(st.Sysctls)
	if refs := undeclaredRefs(st); len(st.Links) > 0 || len(refs) > 0 {
		links := mapping()
		addrs := map[string][]model.Address{}
		for _, a := range st.Addresses {
			addrs[a.Link] = append(addrs[a.Link], a)
		}
		pools := map[string][]model.PoolAddress{}
		for _, pa := range st.PoolAddresses {
			pools[pa.Link] = append(pools[pa.Link], pa)
		}
		// Links the state references but does not hold (lo under an IPv6
		// local route, a bridge someone else made above an owned port) are
		// declared as devices, which the file never changes, so the output
		// is itself a valid file that diffs empty.
		names := append(st.SortedLinkNames(), refs...)
		sort.Strings(names)
		for _, name := range names {
			var node *yaml.Node
			if l := st.Links[name]; l != nil {
				node = renderLink(st, l)
			} else {
				node = flow()
				add(node, "kind", yscalar(model.KindDevice))
			}
			if as := renderAddresses(addrs[name], pools[name], st.Pools); as != nil {
				if node.Style == yaml.FlowStyle {
					node.Style = 0
				}
				add(node, "addresses", as)
			}
			if ss := linkSysctls[name]; len(ss) > 0 {
				add(node, "sysctls", renderSysctls(ss, true))
			}
			add(links, name, node)
		}
		add(root, "links", links)
	}
	if len(st.FouPorts) > 0 {
		add(root, "fou", renderFou(st.FouPorts))
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
	if len(globalSysctls) > 0 {
		add(root, "sysctls", renderSysctls(globalSysctls, false))
	}
	return root
}

// undeclaredRefs lists the link names that the rendered state references
// (a master, a vxlan dev, an ipvlan, macvlan or vlan parent, a route's dev) but does not hold.
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
		ref(l.Parent())
	}
	for i := range st.Routes {
		if r := &st.Routes[i]; routeTakesDev(r) {
			ref(r.Dev)
		}
	}
	// A per-link sysctl of a link shown as it is not (show without
	// --all lists only owned links) is written under a device, and so is
	// an address of ours on such a link (lo, eth0: the kernel marks it
	// ours), which applying the output would otherwise delete.
	for _, s := range st.Sysctls {
		ref(s.Link)
	}
	for _, a := range st.Addresses {
		ref(a.Link)
	}
	for _, pa := range st.PoolAddresses {
		ref(pa.Link)
	}
	return out
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
