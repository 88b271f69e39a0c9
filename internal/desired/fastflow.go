package desired

import (
	"bytes"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Large files are mostly one-line flow collections: a 100k-element nftables
// set ("elements: [10.0.0.0/30, 10.0.0.16/30, ...]"), a thousand WireGuard
// peers ("- {public-key: ..., allowed-ips: [...]}"). yaml.v3 spends most of
// a load scanning them. Such collections are cut out of the text here ("[]"
// or "{}" and spaces in their place, so every other position is unchanged)
// and parsed by a small parser that accepts only what it can parse exactly
// as yaml.v3 does: plain scalars of safe ASCII characters, quoted scalars
// without escapes, nested collections, all on the line. The decoder takes
// a cut back when it meets the empty collection at its line and column: a
// list of plain scalars into []posText directly, anything else as the
// yaml.Nodes yaml.v3 would have built. The parsed tree must hold an empty
// flow collection at each cut, or the cut was not one (it was inside a
// comment, a quoted or block scalar) and the file goes through the general
// decoder, as it does on any error, so messages are the decoder's.
//
// A collection may carry an anchor ("elements: &e [...]") and be aliased:
// the decoder walks an aliased node once per alias, and a cut is given
// back each time, the same node or list; the alias budget counts a cut as
// the nodes yaml.v3 makes of it. A megabyte of aliased items was parsed by
// yaml.v3 whole, two thirds of its time.

type flowKey struct{ line, col int }

// flowCut is a cut collection.
type flowCut struct {
	line, col int    // of "[" or "{"
	text      []byte // the collection as written
	// anchor is the collection's anchor ("key: &a [...]"), and nodeCol the
	// column of its "&": yaml.v3 places an anchored node at its anchor.
	anchor  string
	nodeCol int
	// nodes is how many nodes yaml.v3 makes of the collection, for the
	// alias budget (checkAliases).
	nodes int
	// plain holds the items of a list of plain scalars, as byte ranges of text.
	plain [][2]int
	found bool // in the parsed tree
	used  bool // given back by the decoder
	// What the decoder was given back, kept for the next visit through an
	// alias: the general decoder walks the same node again.
	node  *yaml.Node
	texts []posText
}

// cutFlows returns data with the one-line flow collections cut out, or nil
// when there are none.
func cutFlows(data []byte) ([]byte, map[flowKey]*flowCut) {
	var out []byte
	var cuts map[flowKey]*flowCut
	last, lineNo := 0, 0
	for off := 0; off < len(data); {
		lineNo++
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		line := data[off:end]
		if open, anchor := flowStart(line); open >= 0 {
			// An anchored collection is cut only when it is a list of
			// plain scalars, built in one slice when it is not given
			// back as texts: the nodes of any other shape, built one by
			// one and aliased, took more memory than yaml.v3's.
			if fc, ok := scanFlow(line[open:]); ok && (anchor < 0 || fc.plain != nil) {
				if cuts == nil {
					out = make([]byte, 0, len(data))
					cuts = map[flowKey]*flowCut{}
				}
				fc.line, fc.col, fc.nodeCol = lineNo, open+1, open+1
				if anchor >= 0 {
					fc.anchor, fc.nodeCol = string(line[anchor+1:open-1]), anchor+1
				}
				cuts[flowKey{fc.line, fc.nodeCol}] = fc
				out = append(out, data[last:off+open]...)
				out = append(out, fc.text[0], fc.text[len(fc.text)-1])
				for range len(fc.text) - 2 {
					out = append(out, ' ')
				}
				last = off + open + len(fc.text)
			}
		}
		off = end + 1
	}
	if cuts == nil {
		return nil, nil
	}
	return append(out, data[last:]...), cuts
}

// flowStart returns the offset of a "[" or "{" that follows the first
// "key: " or "- " of a line, or an anchor after them ("key: &a ["), with
// nothing before it that could make it text, or -1; and the offset of the
// anchor's "&", or -1.
func flowStart(line []byte) (open, anchor int) {
	i := bytes.IndexAny(line, "[{")
	if i < 2 || line[i-1] != ' ' {
		return -1, -1
	}
	// The anchor: "&", then what yaml.v3 takes for an anchor's name
	// (letters, digits, "_" and "-"), then one space.
	j, anchor := i-1, -1
	for j > 0 && anchorChar(line[j-1]) {
		j--
	}
	if j > 0 && j < i-1 && line[j-1] == '&' {
		anchor = j - 1
		j = anchor
		if j < 2 || line[j-1] != ' ' {
			return -1, -1
		}
	} else {
		j = i
	}
	if line[j-2] != ':' && line[j-2] != '-' {
		return -1, -1
	}
	for _, c := range line[:j] {
		switch c {
		case '"', '\'', '#', '|', '>', '&', '*', '!', '?', '%', '@', '`', '\t', '\r':
			return -1, -1
		}
		if c >= 0x80 {
			// yaml.v3 counts columns in characters.
			return -1, -1
		}
	}
	return i, anchor
}

func anchorChar(c byte) bool { return alnum(c) || c == '_' || c == '-' }

// scanFlow checks that s starts with a collection the flow parser accepts,
// followed by nothing but spaces.
func scanFlow(s []byte) (*flowCut, bool) {
	p := flowParser{s: s}
	if _, _, ok := p.value(0); !ok || p.i == 2 {
		return nil, false
	}
	for j := p.i; j < len(s); j++ {
		if s[j] != ' ' {
			return nil, false
		}
	}
	fc := &flowCut{text: s[:p.i], nodes: p.nodes}
	if s[0] == '[' && !p.mixed {
		fc.plain = p.items
	}
	return fc, true
}

// flowParser reads one flow collection of the restricted grammar.
type flowParser struct {
	s     []byte
	i     int
	items [][2]int // the top-level list's plain items
	mixed bool     // the top-level list holds other items
	nodes int      // read so far, as yaml.v3 counts them
	// build makes nodes (positions from line and col, of s[0]) when set.
	build     bool
	line, col int
	tags      map[string]string // yaml.v3's tag of a plain scalar, by value: keys repeat
}

func (p *flowParser) spaces() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

// value reads a collection or a scalar; isPlain reports a plain scalar.
func (p *flowParser) value(depth int) (n *yaml.Node, isPlain bool, ok bool) {
	if p.i >= len(p.s) || depth > 8 {
		return nil, false, false
	}
	start := p.i
	switch c := p.s[p.i]; c {
	case '[', '{':
		p.nodes++
		seq := c == '['
		if p.build {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle, Line: p.line, Column: p.col + start}
			if seq {
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			}
		}
		p.i++
		p.spaces()
		if p.i < len(p.s) && (p.s[p.i] == ']' && seq || p.s[p.i] == '}' && !seq) {
			p.i++
			return n, false, true
		}
		for {
			if !seq {
				k, ok := p.plainScalar()
				if !ok || p.i+1 >= len(p.s) || p.s[p.i] != ':' || p.s[p.i+1] != ' ' {
					return nil, false, false
				}
				p.i += 2
				p.spaces()
				if n != nil {
					n.Content = append(n.Content, k)
				}
			}
			itemStart := p.i
			c, itemPlain, ok := p.value(depth + 1)
			if !ok {
				return nil, false, false
			}
			if depth == 0 && seq {
				if itemPlain {
					p.items = append(p.items, [2]int{itemStart, p.i})
				} else {
					p.mixed = true
				}
			}
			if n != nil {
				n.Content = append(n.Content, c)
			}
			p.spaces()
			if p.i >= len(p.s) {
				return nil, false, false
			}
			if p.s[p.i] == ']' && seq || p.s[p.i] == '}' && !seq {
				p.i++
				return n, false, true
			}
			if p.s[p.i] != ',' {
				return nil, false, false
			}
			p.i++
			p.spaces()
		}
	case '"', '\'':
		p.i++
		for p.i < len(p.s) && p.s[p.i] != c {
			if b := p.s[p.i]; b == '\\' || b < ' ' || b >= 0x7f {
				return nil, false, false
			}
			p.i++
		}
		if p.i >= len(p.s) {
			return nil, false, false
		}
		p.i++
		p.nodes++
		if p.build {
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: string(p.s[start+1 : p.i-1]), Line: p.line, Column: p.col + start}
			if c == '\'' {
				n.Style = yaml.SingleQuotedStyle
			}
		}
		return n, false, true
	}
	n, ok = p.plainScalar()
	return n, ok, ok
}

// plainScalar reads a plain scalar that yaml.v3 reads the same in a flow
// collection; it is a YAML null, bool, number or string by yaml.v3's rules.
func (p *flowParser) plainScalar() (*yaml.Node, bool) {
	var n *yaml.Node
	if p.build {
		n = &yaml.Node{}
	}
	if !p.plainScalarInto(n) {
		return nil, false
	}
	return n, true
}

// plainScalarInto is plainScalar, filling n when not nil.
func (p *flowParser) plainScalarInto(n *yaml.Node) bool {
	start := p.i
	for p.i < len(p.s) && flowPlainChar(p.s[p.i]) {
		if p.s[p.i] == ':' && (p.i+1 == len(p.s) || p.s[p.i+1] == ' ') {
			break
		}
		p.i++
	}
	if p.i == start || !alnum(p.s[start]) && p.s[start] != '+' && p.s[start] != '/' || p.s[p.i-1] == ':' {
		return false
	}
	switch string(p.s[start:p.i]) {
	case "null", "Null", "NULL":
		// Not a string: for posText an error, left to the decoder.
		return false
	}
	p.nodes++
	if n == nil {
		return true
	}
	*n = yaml.Node{Kind: yaml.ScalarNode, Line: p.line, Column: p.col + start}
	if tag, ok := p.tags[string(p.s[start:p.i])]; ok {
		n.Value, n.Tag = string(p.s[start:p.i]), tag
		return true
	}
	n.Value = string(p.s[start:p.i])
	if strings.ContainsAny(n.Value, "/=") {
		// No YAML int, float, bool, null or timestamp has these (prefixes,
		// base64 keys): what yaml.v3 would find after trying every parse.
		n.Tag = "!!str"
		return true
	}
	n.Tag = n.ShortTag()
	if p.tags != nil && len(p.tags) < 1024 {
		p.tags[n.Value] = n.Tag
	}
	return true
}

// flowPlainChar: base64 keys ("+", "/", "=") besides names, addresses and numbers.
func flowPlainChar(c byte) bool { return plainChar(c) || c == '+' || c == '=' }

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// build makes the yaml.Node of a cut. A list of plain scalars is made at
// once, its items in one slice: a megabyte of "[x,x,…]" is half a million
// of them, allocated one by one and appended to a growing list otherwise.
func (fc *flowCut) build(tags map[string]string) *yaml.Node {
	p := flowParser{s: fc.text, build: true, line: fc.line, col: fc.col, tags: tags}
	var n *yaml.Node
	if fc.plain != nil {
		n = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle, Line: fc.line}
		items := make([]yaml.Node, len(fc.plain))
		n.Content = make([]*yaml.Node, len(fc.plain))
		for i, it := range fc.plain {
			p.i = it[0]
			p.plainScalarInto(&items[i])
			n.Content[i] = &items[i]
		}
	} else {
		n, _, _ = p.value(0)
	}
	n.Column, n.Anchor = fc.nodeCol, fc.anchor
	return n
}

// markFlows marks the cuts found as empty flow collections in the tree; it
// reports whether all were. Anchors and aliases are welcome: the decoder
// gives a cut back as often as it walks it (restore), and the alias budget
// counts a cut as the nodes it stands for (cutNodes).
func markFlows(n *yaml.Node, cuts map[flowKey]*flowCut) bool {
	found := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && len(n.Content) == 0 && n.Style&yaml.FlowStyle != 0 {
			if fc := cuts[flowKey{n.Line, n.Column}]; fc != nil && !fc.found && fc.anchor == n.Anchor {
				fc.found = true
				found++
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return found == len(cuts)
}

// cutNodes returns how many nodes n stands for: those of the collection
// cut out at n, or 1.
func (d *decoder) cutNodes(n *yaml.Node) int {
	if d.flows != nil && len(n.Content) == 0 && (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && n.Style&yaml.FlowStyle != 0 {
		if fc := d.flows[flowKey{n.Line, n.Column}]; fc != nil && fc.found {
			return fc.nodes
		}
	}
	return 1
}

var posTextsType = reflect.TypeOf([]posText(nil))

// restore returns the node of a cut, or n when n is none; it gives a list
// of plain scalars to a []posText itself, and then returns nil. A cut
// walked again (through an alias) is given back the same again: one
// node, or one list the confs share (the builder only reads them).
func (d *decoder) restore(n *yaml.Node, v reflect.Value) *yaml.Node {
	if len(n.Content) != 0 || n.Style&yaml.FlowStyle == 0 {
		return n
	}
	fc := d.flows[flowKey{n.Line, n.Column}]
	if fc == nil || !fc.found {
		return n
	}
	fc.used = true
	if fc.plain != nil && v.Type() == posTextsType {
		if fc.texts == nil {
			fc.texts = make([]posText, len(fc.plain))
			// One string for the whole list; the items are slices of it.
			text := string(fc.text)
			for i, it := range fc.plain {
				fc.texts[i] = posText{Text: text[it[0]:it[1]], Pos: Pos{d.file, fc.line, fc.col + it[0]}}
			}
		}
		v.Set(reflect.ValueOf(fc.texts))
		return nil
	}
	if fc.node == nil {
		if d.tags == nil {
			d.tags = map[string]string{}
		}
		fc.node = fc.build(d.tags)
	}
	return fc.node
}

// skip tells that the decoder leaves n, a value it reports the key of, as
// the general decoder does: when n is a cut, it counts as given back, so
// that a megabyte of items under an unknown key is not decoded again by
// the general decoder (which would not walk them either).
func (d *decoder) skip(n *yaml.Node) {
	if d.flows == nil || len(n.Content) != 0 || n.Style&yaml.FlowStyle == 0 {
		return
	}
	if fc := d.flows[flowKey{n.Line, n.Column}]; fc != nil && fc.found {
		fc.used = true
	}
}

// allUsed reports whether the decoder took back every cut.
func (d *decoder) allUsed() bool {
	for _, fc := range d.flows {
		if !fc.used {
			return false
		}
	}
	return true
}
