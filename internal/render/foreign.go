package render

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// rtprotKernel is the protocol the kernel gives the routes and rules it
// makes itself (RTPROT_KERNEL): prefix, local and broadcast routes, and the
// default rules.
const rtprotKernel = 2

// sections are the top-level keys of a rendered state, in the order State
// writes them; foreign objects go under the first five.
var sections = []string{"version", "settings", "links", "fou", "routes", "rules", "nftables", "sysctls"}

// All writes what show --all prints: owned exactly as State writes it, and
// under the section each belongs to, the objects of foreign
// (model.State.Foreign) as YAML comments, each saying why it is not a
// declaration. Declared, a foreign object would be a conflict (a route or
// rule of another protocol, a link without adopt), a write (adopt, an
// address stamped as ours) or invalid (a broadcast route, a default rule):
// as comments the output validates, plans nothing and applies with zero
// writes, and a user may uncomment what the file should take over.
func All(owned, foreign *model.State) ([]byte, error) {
	out, err := State(owned)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(out), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	fn := foreignNode(foreign)
	for i := 0; i+1 < len(fn.Content); i += 2 {
		key := fn.Content[i].Value
		sec := mapping()
		sec.Content = fn.Content[i : i+2]
		text, err := yaml.Marshal(sec)
		if err != nil {
			return nil, err
		}
		start, end := sectionAt(lines, key)
		var block []string
		if start < 0 {
			// The file has no such section: its key is a comment too.
			block = append(block, "# "+key+":\n")
		}
		for _, l := range strings.SplitAfter(strings.TrimSuffix(string(text), "\n"), "\n")[1:] {
			l = strings.TrimSuffix(l, "\n")
			if body, ok := strings.CutPrefix(l, "    "); ok {
				l = body
			} else {
				l = strings.TrimLeft(l, " ")
			}
			block = append(block, strings.TrimRight("    # "+l, " ")+"\n")
		}
		lines = append(lines[:end], append(block, lines[end:]...)...)
	}
	return []byte(strings.Join(lines, "")), nil
}

// sectionAt finds the section key in lines: where it starts (-1 when it is
// absent) and where it ends, or where it would go in State's order.
func sectionAt(lines []string, key string) (start, end int) {
	order := map[string]int{}
	for i, s := range sections {
		order[s] = i
	}
	topKey := func(l string) (string, bool) {
		if l == "" || l[0] == ' ' || l[0] == '#' || l[0] == '\n' {
			return "", false
		}
		k, _, ok := strings.Cut(l, ":")
		return k, ok
	}
	start = -1
	for i, l := range lines {
		k, ok := topKey(l)
		if !ok {
			continue
		}
		if start >= 0 {
			return start, i
		}
		if k == key {
			start = i
			continue
		}
		if o, known := order[k]; !known || o > order[key] {
			return -1, i
		}
	}
	return start, len(lines)
}

// Foreign writes the objects of foreign (model.State.Foreign) as the
// sections of a configuration, each object with why it is not a
// declaration as a comment: what `show -o json --all` gives as "foreign".
func Foreign(foreign *model.State) ([]byte, error) {
	return yaml.Marshal(foreignNode(foreign))
}

// foreignNode is the sections of Foreign's document. Nothing in it is
// netreconcile's, and some of it is free text that others wrote (a link's
// alias, an nftables rule's comment): every value and comment passes
// through redaction, but public keys.
func foreignNode(st *model.State) *yaml.Node {
	root := mapping()
	addrs := map[string][]model.Address{}
	for _, a := range st.Addresses {
		addrs[a.Link] = append(addrs[a.Link], a)
	}
	names := st.SortedLinkNames()
	for n := range addrs {
		if st.Links[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		links := mapping()
		for _, name := range names {
			var node *yaml.Node
			var why string
			if l := st.Links[name]; l != nil {
				node, why = renderLink(st, l), linkReason(l)
			} else {
				// A link of netreconcile's holding addresses that are
				// not (the kernel's IPv6 link-local one).
				node, why = mapping(), "netreconcile's link: its addresses here are not"
			}
			if as := renderAddresses(addrs[name], nil, nil); as != nil {
				for j := range addrs[name] {
					if model.IsLinkLocal6(&addrs[name][j]) {
						n := as.Content[j]
						n.LineComment = strings.TrimPrefix(n.LineComment+", the kernel's (IPv6 link-local)", ", ")
					}
				}
				add(node, "addresses", as)
			}
			add(links, name, node)
			keyComment(links.Content[len(links.Content)-2:], why)
		}
		add(root, "links", links)
	}
	if len(st.FouPorts) > 0 {
		seq := renderFou(st.FouPorts)
		for _, n := range seq.Content {
			n.LineComment = "not netreconcile's: opened by someone else"
		}
		add(root, "fou", seq)
	}
	if len(st.Routes) > 0 {
		seq := sequence()
		for i := range st.Routes {
			n := renderRoute(&st.Routes[i])
			n.LineComment = protoReason(int(st.Routes[i].Protocol), st.Protocol)
			seq.Content = append(seq.Content, n)
		}
		add(root, "routes", seq)
	}
	if len(st.Rules) > 0 {
		seq := sequence()
		for i := range st.Rules {
			n := renderRule(&st.Rules[i])
			n.LineComment = protoReason(st.Rules[i].Protocol, st.Protocol)
			seq.Content = append(seq.Content, n)
		}
		add(root, "rules", seq)
	}
	if len(st.NFTables) > 0 {
		tables := renderNFT(st.NFTables)
		for i := 0; i < len(tables.Content); i += 2 {
			why := "not netreconcile's: add `adopt: true` to take it over"
			if u := st.NFTables[i/2].Unread; u != "" {
				why = "not netreconcile's, and could not be read: " + u
			}
			keyComment(tables.Content[i:i+2], why)
		}
		add(root, "nftables", tables)
	}
	redactNode(root)
	return root
}

// keyComment puts why on a mapping's entry (its key and value nodes). An
// empty mapping is written "{}" on the key's line: yaml.v3 writes a key's
// comment before it ("name: # why" then "{}" on the next line), which does
// not parse, so the comment goes after the "{}" instead.
func keyComment(kv []*yaml.Node, why string) {
	if v := kv[1]; v.Kind == yaml.MappingNode && len(v.Content) == 0 {
		v.Style, v.LineComment = yaml.FlowStyle, why
		return
	}
	kv[0].LineComment = why
}

// linkReason says why a link is not declared: a kind netreconcile creates
// may be adopted; a device (lo, a NIC, a kind the schema has no word for)
// is never owned, only given the keys a file sets.
func linkReason(l *model.Link) string {
	if l.Kind == model.KindDevice {
		return "not netreconcile's: a device, never owned; declared, it gets only the keys the file gives"
	}
	return "not netreconcile's: add `adopt: true` to take it over"
}

// protoReason says why a route or rule of protocol p is not declared: the
// kernel made it, or another program did. Either way only a route or rule
// of netreconcile's protocol (ours) may be declared.
func protoReason(p, ours int) string {
	if p == rtprotKernel {
		return "proto " + model.ProtocolName(p) + ": the kernel's"
	}
	return fmt.Sprintf("proto %s: not netreconcile's (%d)", model.ProtocolName(p), ours)
}

// redactNode passes every scalar and comment below n through redaction,
// but the values of public-key, which are keys meant to be printed.
func redactNode(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = redact.String(n.HeadComment), redact.String(n.LineComment), redact.String(n.FootComment)
	switch n.Kind {
	case yaml.ScalarNode:
		n.Value = redact.String(n.Value)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			redactNode(n.Content[i])
			if n.Content[i].Value == "public-key" {
				continue
			}
			redactNode(n.Content[i+1])
		}
	default:
		for _, c := range n.Content {
			redactNode(c)
		}
	}
}
