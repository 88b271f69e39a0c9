package desired

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// genYAML builds a configuration file from choice bytes: the schema's keys
// (read from the conf structs, so new keys are covered without edits here),
// values of the right kind and of the wrong kind, and every YAML device the
// loader must read as yaml.v3 does: block and flow styles mixed, comments
// anywhere a comment may go, each line break YAML knows, document markers,
// directives, anchors, aliases, tags, quoting styles, and keys and scalars
// from empty to long. The fuzzer's byte mutator works on the choices, so it
// explores structure instead of mostly breaking the syntax.
func genYAML(choices []byte) []byte {
	g := &gen{b: choices}
	g.nl = []string{"\n", "\n", "\n", "\r\n", "\r", "\u0085", "\u2028", "\u2029"}[g.pick(8)]
	var w strings.Builder
	if g.chance(8) {
		w.WriteString("\ufeff")
	}
	switch g.pick(8) {
	case 0:
		w.WriteString("%YAML 1.1" + g.nl + "---" + g.nl)
	case 1:
		w.WriteString("---" + g.nl)
	case 2:
		w.WriteString("--- # start" + g.nl)
	case 3:
		w.WriteString(g.comment() + g.nl)
	}
	if !g.chance(16) {
		w.WriteString(g.lead() + "version: " + []string{"1", "1", "1", "2", "!!int 1", "'1'", "~"}[g.pick(7)] + g.trail() + g.nl)
	}
	g.mapping(&w, reflect.TypeOf(fileConf{}), 0, 0)
	switch g.pick(10) {
	case 0:
		w.WriteString("..." + g.nl)
	case 1:
		w.WriteString("..." + g.nl + "# after" + g.nl)
	case 2:
		w.WriteString("..." + g.nl + "links: {}" + g.nl)
	case 3:
		w.WriteString("---" + g.nl + "version: 1" + g.nl)
	case 4:
		w.WriteString(" trailing: 1" + g.nl)
	case 5:
		w.WriteString(g.comment())
	}
	return []byte(w.String())
}

type gen struct {
	b       []byte
	i       int
	nl      string
	anchors []string
	nodes   int
}

// pick returns a choice from 0 to n-1; past the end of the bytes, 0: the
// simplest choice, so that short inputs make small files.
func (g *gen) pick(n int) int {
	if g.i >= len(g.b) || n <= 1 {
		return 0
	}
	c := int(g.b[g.i])
	g.i++
	return c % n
}

func (g *gen) chance(n int) bool { return g.i < len(g.b) && g.pick(n) == n-1 }

func (g *gen) comment() string {
	return []string{"#", "# a comment", "#: [x] {y} &z *w", "# " + strings.Repeat("c", g.pick(200))}[g.pick(4)]
}

// lead is what may start a line before a key: nothing, or rarely a space
// (which ends the document in yaml.v3 if the key was at column 1).
func (g *gen) lead() string {
	if g.chance(32) {
		return " "
	}
	return ""
}

// trail is what may follow a value on its line.
func (g *gen) trail() string {
	switch g.pick(12) {
	case 0:
		return " # note"
	case 1:
		return "   "
	case 2:
		return "\t# tab"
	}
	return ""
}

// commentLine is an optional comment line between entries.
func (g *gen) commentLine(indent int) string {
	switch g.pick(10) {
	case 0:
		return strings.Repeat(" ", indent) + g.comment() + g.nl
	case 1:
		return g.nl
	case 2:
		return strings.Repeat(" ", g.pick(12)) + g.comment() + g.nl
	}
	return ""
}

func (g *gen) props() string {
	var s string
	if g.chance(10) {
		a := "a" + strconv.Itoa(len(g.anchors))
		g.anchors = append(g.anchors, a)
		s += "&" + a + " "
	}
	if g.chance(14) {
		s += []string{"!!str ", "!!int ", "!!map ", "!!seq ", "!!null ", "!custom ", "!<tag:yaml.org,2002:str> ", "! "}[g.pick(8)]
	}
	return s
}

func (g *gen) alias() (string, bool) {
	if len(g.anchors) == 0 || !g.chance(8) {
		return "", false
	}
	return "*" + g.anchors[g.pick(len(g.anchors))], true
}

var wordValues = []string{
	"bridge", "device", "veth", "vxlan", "ipvlan", "macvlan", "vlan", "vrf", "bond", "ipip", "ip6tnl", "wireguard", "up", "down", "br0", "eth0", "wg0", "veth0",
	"blackhole", "unreachable", "local", "main", "default", "ipv4", "ipv6", "both", "link", "host", "global", "accept", "drop",
	"filter", "nat", "input", "output", "forward", "ipv4_addr", "ipv6_addr", "inet_service", "interval", "timeout", "l2", "l3",
	"fou", "gue", "auto", "any", "ip6ip6", "true", "false", "yes", "~", "null", "", "0", "1", "4", "41", "100", "1500", "65535",
	"0x40", "0x40/0x60", "-1", "4294967296", "30s", "5m", "25", "10.0.0.1", "10.0.0.1/24", "10.0.0.0/24", "10.1.0.0/16",
	"fd00::1", "fd00::/64", "fd00::1/64", "2001:db8::/32", "192.0.2.1:51820", "10.0.0.0/33", "yO/W+1rA6/xDsIaPbtDBR7A3YUD3AjTQAxgWUdYqbWc=",
	"/etc/netreconcile/key", "ip saddr 10.0.0.1 accept", "tcp dport 22 accept", "meta mark set 0x1", "inet filter", "ip nat", "net", "bench0",
}

// scalar returns a scalar value in some style.
func (g *gen) scalar(flow bool) string {
	v := wordValues[g.pick(len(wordValues))]
	switch g.pick(16) {
	case 0:
		v = strings.Repeat("x", g.pick(256)) + strconv.Itoa(g.pick(10))
	case 1:
		return `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
	case 2:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case 3:
		return `"` + v + `\t\u00e9"`
	case 4:
		v += []string{":", " #", ",", "]", "}", "-", "?", "&x", "*x", "é", "\t"}[g.pick(11)]
	case 5:
		if !flow {
			return []string{"|", ">", "|-", ">+"}[g.pick(4)] + g.nl + "  " + v + g.nl + " "
		}
	}
	return v
}

// keyOf returns a key of a struct type: a field's name, mostly.
func (g *gen) keyOf(t reflect.Type) string {
	_, names, _ := fieldsOf(t)
	switch {
	case g.chance(20):
		return []string{"unknown", "<<", "", "\"kind\"", "? kind", strings.Repeat("k", g.pick(300))}[g.pick(6)]
	case len(names) == 0:
		return "x"
	}
	return names[g.pick(len(names))]
}

var mapKeys = []string{"br0", "eth0", "wg0", "veth0", "vx0", "net", "inet filter", "ip nat", "s", "input", "p", "\"quoted name\"", "bench0", "a.b", "1"}

// value writes the value of type t: inline (flow or scalar, returned) or as
// a block on the following lines (written to w, returning "").
func (g *gen) value(t reflect.Type, indent, depth int, flow bool) (inline string, block func(w *strings.Builder)) {
	g.nodes++
	if a, ok := g.alias(); ok {
		return a, nil
	}
	props := g.props()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if depth > 6 || g.nodes > 400 || g.chance(16) {
		return props + g.scalar(flow), nil
	}
	_, isNode := reflect.New(t).Interface().(nodeDecoder)
	isScalar := reflect.PointerTo(t).Implements(scalarType) || t == reflect.TypeOf(posText{})
	switch {
	case isScalar || t.Kind() != reflect.Struct && t.Kind() != reflect.Map && t.Kind() != reflect.Slice:
		return props + g.scalar(flow), nil
	case isNode && g.pick(2) == 0:
		return props + g.scalar(flow), nil
	}
	n := g.pick(4)
	if g.chance(20) {
		n = 0
	}
	if flow || g.pick(3) == 0 {
		var parts []string
		for range n {
			switch t.Kind() {
			case reflect.Slice:
				v, _ := g.value(t.Elem(), indent, depth+1, true)
				parts = append(parts, v)
			default:
				k := g.flowKey(t)
				v, _ := g.value(elemOrField(t, k), indent, depth+1, true)
				parts = append(parts, k+": "+v)
			}
		}
		sep := []string{", ", ",", " , ", "," + g.nl + strings.Repeat(" ", indent+2), ", # in a flow" + g.nl + strings.Repeat(" ", indent+2)}[g.pick(5)]
		open, close := "{", "}"
		if t.Kind() == reflect.Slice {
			open, close = "[", "]"
		}
		return props + open + strings.Join(parts, sep) + close, nil
	}
	return strings.TrimSuffix(props, " "), func(w *strings.Builder) {
		if t.Kind() == reflect.Slice {
			for range max(n, 1) {
				w.WriteString(g.commentLine(indent))
				w.WriteString(strings.Repeat(" ", indent) + "-")
				v, blk := g.value(t.Elem(), indent+2, depth+1, false)
				if blk == nil {
					w.WriteString(" " + v + g.trail() + g.nl)
					continue
				}
				if v != "" {
					w.WriteString(" " + v)
				}
				w.WriteString(g.trail() + g.nl)
				blk(w)
			}
			return
		}
		g.mapping(w, t, indent, depth+1)
	}
}

func (g *gen) flowKey(t reflect.Type) string {
	if t.Kind() == reflect.Map {
		return mapKeys[g.pick(len(mapKeys))]
	}
	return g.keyOf(t)
}

// elemOrField is the type of key k's value in a map or struct type t.
func elemOrField(t reflect.Type, k string) reflect.Type {
	if t.Kind() == reflect.Map {
		return t.Elem()
	}
	fields, _, _ := fieldsOf(t)
	if f, ok := fields[k]; ok {
		return t.FieldByIndex(f.index).Type
	}
	return reflect.TypeOf("")
}

// mapping writes the entries of a block mapping of type t.
func (g *gen) mapping(w *strings.Builder, t reflect.Type, indent, depth int) {
	n := 1 + g.pick(5)
	var keys []string
	seen := map[string]bool{"version": depth == 0}
	for range n {
		var k string
		if t.Kind() == reflect.Map {
			k = mapKeys[g.pick(len(mapKeys))]
		} else {
			k = g.keyOf(t)
		}
		if seen[k] && !g.chance(12) {
			// Mostly distinct keys: a key given twice stops little.
			continue
		}
		seen[k] = true
		if depth == 0 && k == "routes" && g.pick(2) == 0 {
			// Routes a line each, in flow or block style, with variations.
			w.WriteString("routes:" + g.trail() + g.nl)
			for i := range 1 + g.pick(8) {
				w.WriteString(g.commentLine(2))
				ind := 2 + g.pick(2)*g.pick(3)
				fields := []string{"to: 10." + strconv.Itoa(g.pick(256)) + ".0.0/16"}
				for range g.pick(4) {
					fields = append(fields, []string{"dev: eth0", "via: 10.0.0.1", "table: 100", "metric: 0x10", "onlink: true", "dev: null", "type: blackhole", "to: default", "src: fd00::1", "scope: link", "tos: 300", "mtu: 1400", "dve: x", "family: ipv4", "dev:", "metric: 1 2"}[g.pick(16)])
				}
				if g.pick(2) == 0 {
					// Block style: "- key: value" then the keys below.
					w.WriteString(strings.Repeat(" ", ind) + "-")
					for j, f := range fields {
						if j > 0 || g.chance(8) {
							w.WriteString(g.nl + g.commentLine(ind+2) + strings.Repeat(" ", ind+2+g.pick(2)*g.pick(2)))
						} else {
							w.WriteString(" ")
						}
						w.WriteString(f + g.trail())
					}
					w.WriteString(g.nl)
					continue
				}
				w.WriteString(strings.Repeat(" ", ind) + "- {" + fields[0])
				for _, f := range fields[1:] {
					w.WriteString([]string{", ", ",", " ,  "}[g.pick(3)] + f)
				}
				w.WriteString("}" + g.trail() + g.nl)
				_ = i
			}
			continue
		}
		keys = append(keys, k)
	}
	if g.chance(4) {
		sort.Strings(keys)
	}
	for _, k := range keys {
		w.WriteString(g.commentLine(indent))
		sep := ": "
		if g.chance(20) {
			sep = []string{":  ", ":\t", " : ", ":" + g.nl + strings.Repeat(" ", indent+2)}[g.pick(4)]
		}
		v, blk := g.value(elemOrField(t, strings.Trim(k, "\"")), indent+2, depth, false)
		if indent == 0 {
			w.WriteString(g.lead())
		}
		w.WriteString(strings.Repeat(" ", indent) + k)
		if blk == nil {
			w.WriteString(sep + v + g.trail() + g.nl)
			continue
		}
		w.WriteString(":")
		if v != "" {
			w.WriteString(" " + v)
		}
		w.WriteString(g.trail() + g.nl)
		if g.chance(6) && t.Kind() != reflect.Struct {
			// A block sequence may sit at its key's indentation.
			blk(w)
			continue
		}
		blk(w)
	}
}
