package desired

import (
	"bytes"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
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

type flowKey struct{ line, col int }

// flowCut is a cut collection.
type flowCut struct {
	line, col int    // of "[" or "{"
	text      []byte // the collection as written
	// plain holds the items of a list of plain scalars, as byte ranges of text.
	plain [][2]int
	found bool // in the parsed tree
	used  bool // given back by the decoder
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
		if open := flowStart(line); open >= 0 {
			if fc, ok := scanFlow(line[open:]); ok {
				if cuts == nil {
					out = make([]byte, 0, len(data))
					cuts = map[flowKey]*flowCut{}
				}
				fc.line, fc.col = lineNo, open+1
				cuts[flowKey{fc.line, fc.col}] = fc
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
// "key: " or "- " of a line with nothing before it that could make it
// text, or -1.
func flowStart(line []byte) int {
	i := bytes.IndexAny(line, "[{")
	if i < 2 || line[i-1] != ' ' || line[i-2] != ':' && line[i-2] != '-' {
		return -1
	}
	for _, c := range line[:i] {
		switch c {
		case '"', '\'', '#', '|', '>', '&', '*', '!', '?', '%', '@', '`', '\t', '\r':
			return -1
		}
		if c >= 0x80 {
			// yaml.v3 counts columns in characters.
			return -1
		}
	}
	return i
}

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
	fc := &flowCut{text: s[:p.i]}
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
	start := p.i
	for p.i < len(p.s) && flowPlainChar(p.s[p.i]) {
		if p.s[p.i] == ':' && (p.i+1 == len(p.s) || p.s[p.i+1] == ' ') {
			break
		}
		p.i++
	}
	if p.i == start || !alnum(p.s[start]) && p.s[start] != '+' && p.s[start] != '/' || p.s[p.i-1] == ':' {
		return nil, false
	}
	switch string(p.s[start:p.i]) {
	case "null", "Null", "NULL":
		// Not a string: for posText an error, left to the decoder.
		return nil, false
	}
	if !p.build {
		return nil, true
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Line: p.line, Column: p.col + start}
	if tag, ok := p.tags[string(p.s[start:p.i])]; ok {
		n.Value, n.Tag = string(p.s[start:p.i]), tag
		return n, true
	}
	n.Value = string(p.s[start:p.i])
	if strings.ContainsAny(n.Value, "/=") {
		// No YAML int, float, bool, null or timestamp has these (prefixes,
		// base64 keys): what yaml.v3 would find after trying every parse.
		n.Tag = "!!str"
		return n, true
	}
	n.Tag = n.ShortTag()
	if p.tags != nil && len(p.tags) < 1024 {
		p.tags[n.Value] = n.Tag
	}
	return n, true
}

// flowPlainChar: base64 keys ("+", "/", "=") besides names, addresses and numbers.
func flowPlainChar(c byte) bool { return plainChar(c) || c == '+' || c == '=' }

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// node builds the yaml.Node of a cut.
func (fc *flowCut) node(tags map[string]string) *yaml.Node {
	p := flowParser{s: fc.text, build: true, line: fc.line, col: fc.col, tags: tags}
	n, _, _ := p.value(0)
	return n
}

// markFlows marks the cuts found as empty flow collections in the tree; it
// reports whether all were.
func markFlows(n *yaml.Node, cuts map[flowKey]*flowCut) bool {
	found, shared := 0, false
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			// An alias makes the decoder visit a node twice, and a cut
			// is given back once: the aliased copy would be empty.
			// Anchors are rare in large files; the general decoder takes
			// the file.
			shared = true
			return
		}
		if (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && len(n.Content) == 0 && n.Style&yaml.FlowStyle != 0 {
			if fc := cuts[flowKey{n.Line, n.Column}]; fc != nil && !fc.found {
				fc.found = true
				found++
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return !shared && found == len(cuts)
}

var posTextsType = reflect.TypeOf([]posText(nil))

// restore returns the node of a cut, or n when n is none; it gives a list
// of plain scalars to a []posText itself, and then returns nil.
func (d *decoder) restore(n *yaml.Node, v reflect.Value) *yaml.Node {
	if len(n.Content) != 0 || n.Style&yaml.FlowStyle == 0 {
		return n
	}
	fc := d.flows[flowKey{n.Line, n.Column}]
	if fc == nil || fc.used {
		return n
	}
	fc.used = true
	if fc.plain != nil && v.Type() == posTextsType {
		ts := make([]posText, len(fc.plain))
		// One string for the whole list; the items are slices of it.
		text := string(fc.text)
		for i, it := range fc.plain {
			ts[i] = posText{Text: text[it[0]:it[1]], Pos: Pos{d.file, fc.line, fc.col + it[0]}}
		}
		v.Set(reflect.ValueOf(ts))
		return nil
	}
	if d.tags == nil {
		d.tags = map[string]string{}
	}
	return fc.node(d.tags)
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
