package walk

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// The schema's reach: which leaf keys of the configuration (desired.SchemaKeys)
// the walk's files set, change and remove, read from the files themselves
// (the YAML the walk writes, not the generator's model), so that a field the
// generator holds but never writes does not count.

// Reach is what a sequence of files did to each schema key.
type Reach map[string]*KeyReach

// KeyReach counts the events of one key.
type KeyReach struct {
	// Set: the key appears on an object (created with it, or given it).
	// Changed: an object's value of the key changes. Removed: the key
	// leaves an object that stays.
	Set, Changed, Removed int
	// Shown: show printed the key.
	Shown int
}

// NewReach starts a Reach over every key of the schema.
func NewReach() Reach {
	r := Reach{}
	for _, k := range desired.SchemaKeys() {
		r[k] = &KeyReach{}
	}
	return r
}

// schemaLeaves is the set of leaf keys, and schemaInner the paths that
// lead to one ("links.*", "links.*.vxlan").
var schemaLeaves, schemaInner = func() (map[string]bool, map[string]bool) {
	leaves, inner := map[string]bool{}, map[string]bool{}
	for _, k := range desired.SchemaKeys() {
		leaves[k] = true
		for i := range k {
			if k[i] == '.' || k[i] == '[' {
				inner[k[:i]] = true
			}
		}
	}
	return leaves, inner
}()

// shorthand turns a scalar where the schema has an object into the key it
// stands for (docs/config.md): an address, a subnet.
func shorthand(path string, n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.ScalarNode {
		return n
	}
	key := ""
	switch path {
	case "links.*.addresses[]":
		key = "address"
	case "pools.*.subnets[]":
		key = "ipv6"
		if p, err := netip.ParsePrefix(n.Value); err == nil && p.Addr().Is4() {
			key = "ipv4"
		}
	case "routes-files[]":
		key = "file"
	default:
		return n
	}
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, n}}
}

// DocRoot parses a YAML document into its root mapping (nil for an empty
// document).
func DocRoot(text string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// mergeParsed joins the top-level mappings of several files' parsed roots
// (the main file and its fragments; nil for an empty file) as the loader
// does: a map's entries from every file, a list's items in file order. It
// does not change them.
func mergeParsed(roots []*yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
	at := map[string]*yaml.Node{}
	for _, root := range roots {
		if root == nil {
			continue
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i].Value, root.Content[i+1]
			prev := at[k]
			switch {
			case prev == nil:
				c := *v
				c.Content = append([]*yaml.Node(nil), v.Content...)
				at[k] = &c
				out.Content = append(out.Content, root.Content[i], &c)
			case prev.Kind == v.Kind && (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode):
				prev.Content = append(prev.Content, v.Content...)
			}
		}
	}
	return out
}

// render gives a leaf's value as one comparable string.
func leafText(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	b, _ := yaml.Marshal(n)
	return strings.TrimSpace(string(b))
}

// sameNode reports whether two values read the same: scalars by their
// text (as leafText, so 22 and "22" are one value), lists and maps by
// their children in order. It answers what comparing two leafTexts
// would, without marshalling both: matchItems compares every pair of
// items, and the marshalling was a quarter of the schema-reach test's CPU.
func sameNode(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind == yaml.AliasNode && a.Alias != nil {
		a = a.Alias
	}
	if b.Kind == yaml.AliasNode && b.Alias != nil {
		b = b.Alias
	}
	if a.Kind != b.Kind || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// Keys returns the schema keys a document holds (in the schema's words:
// "links.*.mtu"), and the unknown paths it met (a key the schema lacks).
func Keys(root *yaml.Node) (keys map[string]bool, unknown []string) {
	keys = map[string]bool{}
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		n = shorthand(path, n)
		if n == nil {
			return
		}
		if schemaLeaves[path] {
			keys[path] = true
			return
		}
		if !schemaInner[path] && path != "" {
			unknown = append(unknown, path)
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			entries := schemaInner[path+".*"] || schemaLeaves[path+".*"]
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if entries {
					k = "*"
				}
				walk(join(path, k), n.Content[i+1])
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(path+"[]", c)
			}
		}
	}
	walk("", root)
	return keys, unknown
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// Add adds another Reach's events (set, changed, removed) to r.
func (r Reach) Add(o Reach) {
	for k, x := range o {
		if y := r[k]; y != nil {
			y.Set, y.Changed, y.Removed = y.Set+x.Set, y.Changed+x.Changed, y.Removed+x.Removed
		}
	}
}

// Diff records the events of the step from one document to the next.
func (r Reach) Diff(old, new *yaml.Node) {
	r.diff("", old, new, old != nil && new != nil)
}

// objectPath says whether the schema path names an object of its own: an
// entry of a map of objects (a link, a table, a chain, a set, a pool) or
// an item of a list (a route, a rule, an address, a peer, a next hop).
// The keys of a struct inside one (vxlan:, encap:, rotation:) are the
// object's.
func objectPath(path string) bool {
	return strings.HasSuffix(path, "[]") || strings.HasSuffix(path, ".*") && schemaInner[path]
}

// diff compares two nodes at schema path path; stays says the object that
// holds them is in both documents (a key that leaves it counts as removed;
// one that leaves with its object does not).
func (r Reach) diff(path string, old, new *yaml.Node, stays bool) {
	old, new = shorthand(path, old), shorthand(path, new)
	if schemaLeaves[path] {
		k := r[path]
		k.count(old, new, stays)
		return
	}
	if !schemaInner[path] && path != "" {
		return
	}
	if objectPath(path) {
		stays = old != nil && new != nil
	}
	if old != nil && new != nil && old.Kind != new.Kind {
		// A shape changed (a list became a scalar): as a removal and
		// a creation.
		r.diff(path, old, nil, stays)
		r.diff(path, nil, new, stays)
		return
	}
	kind := yaml.Kind(0)
	if old != nil {
		kind = old.Kind
	} else if new != nil {
		kind = new.Kind
	}
	switch kind {
	case yaml.MappingNode:
		entries := schemaInner[path+".*"] || schemaLeaves[path+".*"]
		om, nm := pairs(old), pairs(new)
		var names []string
		for k := range om {
			names = append(names, k)
		}
		for k := range nm {
			if _, ok := om[k]; !ok {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			sub := k
			if entries {
				sub = "*"
			}
			r.diff(join(path, sub), om[k], nm[k], stays)
			if path == "sysctls" || path == "links.*.sysctls" {
				r.named(join(path, sub), k, om[k], nm[k], stays)
			}
		}
	case yaml.SequenceNode:
		var oi, ni []*yaml.Node
		if old != nil {
			oi = old.Content
		}
		if new != nil {
			ni = new.Content
		}
		for _, p := range matchItems(path, oi, ni) {
			r.diff(path+"[]", p[0], p[1], stays)
		}
	}
}

// named records the events of one sysctl by its name (NamedKey), beside
// the schema's "sysctls.*": which keys of the kernel the walk reaches.
func (r Reach) named(path, name string, old, new *yaml.Node, stays bool) {
	k := r[NamedKey(path, name)]
	if k == nil {
		k = &KeyReach{}
		r[NamedKey(path, name)] = k
	}
	k.count(old, new, stays)
}

// NamedKey is the row of a Reach for the entry name of the map at schema
// path ("sysctls.*", "links.*.sysctls.*").
func NamedKey(path, name string) string { return path + " " + name }

// pairs maps a mapping's keys to their values.
func pairs(n *yaml.Node) map[string]*yaml.Node {
	m := map[string]*yaml.Node{}
	if n == nil || n.Kind != yaml.MappingNode {
		return m
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		m[n.Content[i].Value] = n.Content[i+1]
	}
	return m
}

// itemIdentity is what names an item of a list at path, where the file
// has a name for it: a peer's public key, a route's key, an address, a FoU
// port ("" when the list has none).
func itemIdentity(path string, n *yaml.Node) string {
	m := pairs(n)
	v := func(k string) string { return leafText(m[k]) }
	switch path {
	case "links.*.wireguard.peers[]":
		return v("public-key")
	case "routes[]":
		return strings.Join([]string{v("to"), v("family"), v("table"), v("metric"), v("tos")}, " ")
	case "links.*.addresses[]":
		return v("address") + v("pool")
	case "fou[]":
		return v("port") + " " + v("family")
	}
	return ""
}

// matchItems pairs the items of two lists that are the same object: equal
// items first, then items of the same identity (itemIdentity); of the
// rest, by position when as many are left on both sides (an item changed
// in place), else none (items added and removed).
func matchItems(path string, old, new []*yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	usedOld, usedNew := make([]bool, len(old)), make([]bool, len(new))
	pair := func(same func(o, n *yaml.Node) bool) {
		for i, o := range old {
			if usedOld[i] {
				continue
			}
			for j, n := range new {
				if !usedNew[j] && same(o, n) {
					usedOld[i], usedNew[j] = true, true
					out = append(out, [2]*yaml.Node{o, n})
					break
				}
			}
		}
	}
	pair(sameNode)
	pair(func(o, n *yaml.Node) bool {
		id := itemIdentity(path, shorthand(path, o))
		return id != "" && id == itemIdentity(path, shorthand(path, n))
	})
	var restOld, restNew []*yaml.Node
	for i, o := range old {
		if !usedOld[i] {
			restOld = append(restOld, o)
		}
	}
	for j, n := range new {
		if !usedNew[j] {
			restNew = append(restNew, n)
		}
	}
	if len(restOld) == len(restNew) {
		for i := range restOld {
			out = append(out, [2]*yaml.Node{restOld[i], restNew[i]})
		}
		return out
	}
	for _, o := range restOld {
		out = append(out, [2]*yaml.Node{o, nil})
	}
	for _, n := range restNew {
		out = append(out, [2]*yaml.Node{nil, n})
	}
	return out
}

// Shown counts the keys a document show printed holds, and returns the
// paths the schema lacks.
func (r Reach) Shown(root *yaml.Node) []string {
	keys, unknown := Keys(root)
	for k := range keys {
		r[k].Shown++
	}
	return unknown
}

// String renders the counts, a key a line.
func (r Reach) String() string {
	var b strings.Builder
	for _, k := range sortedKeys(r) {
		x := r[k]
		fmt.Fprintf(&b, "%-50s set %5d changed %5d removed %5d shown %5d\n", k, x.Set, x.Changed, x.Removed, x.Shown)
	}
	return b.String()
}

// docCache holds a walk's files as last parsed, so that a step parses
// only the files it changed: parsing every file at every step was most
// of the schema-reach test's CPU. The zero value is ready.
type docCache struct {
	texts []string
	roots []*yaml.Node
}

// fileDoc is a configuration's files joined as the loader joins them.
func (d *docCache) fileDoc(c *Config) (*yaml.Node, error) {
	if d.roots == nil {
		d.texts, d.roots = make([]string, Frags), make([]*yaml.Node, Frags)
	}
	for f := range Frags {
		t := c.File(f)
		if t == d.texts[f] && d.roots[f] != nil {
			continue
		}
		root, err := DocRoot(t)
		if err != nil {
			return nil, err
		}
		d.texts[f], d.roots[f] = t, root
	}
	return mergeParsed(d.roots), nil
}

// count counts one step's change of a key: set where it was absent,
// removed (only where its object stays), or given another value.
func (k *KeyReach) count(old, new *yaml.Node, stays bool) {
	switch {
	case old == nil && new != nil:
		k.Set++
	case old != nil && new == nil && stays:
		k.Removed++
	case old != nil && new != nil && !sameNode(old, new):
		k.Changed++
	}
}
