package desired

import (
	"bytes"
	"reflect"

	"gopkg.in/yaml.v3"
)

// A 100k-element nftables set is written as one flow sequence of plain
// scalars ("elements: [10.0.0.0/30, 10.0.0.16/30, ...]"); yaml.v3 spends most
// of the load scanning it and building a node per item. Such sequences are
// cut out of the text here ("[]" and spaces in their place, so every other
// position is unchanged) and their items kept as byte ranges; the decoder
// takes them back when it meets the empty sequence at that line and column.
// Only sequences on one line, whose items are plain scalars of safe
// characters that are not null, qualify; the parsed tree must then hold an
// empty flow sequence at each cut, or the cut was not a sequence (inside a
// comment, a quoted or block scalar) and the file goes through the general
// decoder, as it does on any error, so messages are the decoder's.

// minFlowItems is the shortest sequence worth cutting: below it the copy
// and the bookkeeping cost about what yaml.v3 would.
const minFlowItems = 16

type flowKey struct{ line, col int }

// flowSeq is a cut sequence: its text on its line, and its items.
type flowSeq struct {
	line, col int    // of "["
	text      []byte // "[...]" as written
	items     [][2]int
	found     bool // in the parsed tree
	used      bool // given back by the decoder
}

// cutFlows returns data with the qualifying flow sequences cut out, or nil
// when there are none.
func cutFlows(data []byte) ([]byte, map[flowKey]*flowSeq) {
	var out []byte
	var flows map[flowKey]*flowSeq
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
			if fs, ok := scanFlow(line[open:]); ok {
				if flows == nil {
					out = make([]byte, 0, len(data))
					flows = map[flowKey]*flowSeq{}
				}
				fs.line, fs.col = lineNo, open+1
				flows[flowKey{fs.line, fs.col}] = fs
				out = append(out, data[last:off+open]...)
				out = append(out, '[', ']')
				for range len(fs.text) - 2 {
					out = append(out, ' ')
				}
				last = off + open + len(fs.text)
			}
		}
		off = end + 1
	}
	if flows == nil {
		return nil, nil
	}
	return append(out, data[last:]...), flows
}

// flowStart returns the offset of a "[" that follows "key: " or "- " on a
// line with nothing before it that could make it text, or -1.
func flowStart(line []byte) int {
	i := bytes.Index(line, []byte(": ["))
	if i >= 0 {
		i += 2
	} else {
		i = bytes.Index(line, []byte("- ["))
		if i < 0 {
			return -1
		}
		i += 2
	}
	if bytes.ContainsAny(line[:i], "\"'#|>{[&*!\t") {
		return -1
	}
	return i
}

// scanFlow reads "[item, item, ...]" followed by nothing but spaces.
func scanFlow(s []byte) (*flowSeq, bool) {
	end := bytes.IndexByte(s, ']')
	if end < 0 {
		return nil, false
	}
	fs := &flowSeq{items: make([][2]int, 0, bytes.Count(s[:end], []byte{','})+1)}
	i := 1
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		start := i
		for i < len(s) && plainChar(s[i]) {
			i++
		}
		if i == start || !alnum(s[start]) || s[i-1] == ':' || i >= len(s) {
			return nil, false
		}
		switch string(s[start:i]) {
		case "null", "Null", "NULL":
			return nil, false
		}
		fs.items = append(fs.items, [2]int{start, i})
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return nil, false
		}
		if s[i] == ']' {
			i++
			break
		}
		if s[i] != ',' {
			return nil, false
		}
		i++
	}
	for j := i; j < len(s); j++ {
		if s[j] != ' ' {
			return nil, false
		}
	}
	if len(fs.items) < minFlowItems {
		return nil, false
	}
	fs.text = s[:i]
	return fs, true
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// markFlows marks the cuts found as empty flow sequences in the tree; it
// reports whether all were.
func markFlows(n *yaml.Node, flows map[flowKey]*flowSeq) bool {
	found := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.SequenceNode && len(n.Content) == 0 && n.Style&yaml.FlowStyle != 0 {
			if fs := flows[flowKey{n.Line, n.Column}]; fs != nil && !fs.found {
				fs.found = true
				found++
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return found == len(flows)
}

var posTextsType = reflect.TypeOf([]posText(nil))

// restore gives v the items of a cut sequence; it reports false when n is
// not a cut.
func (d *decoder) restore(n *yaml.Node, path string, v reflect.Value) bool {
	fs := d.flows[flowKey{n.Line, n.Column}]
	if fs == nil || n.Kind != yaml.SequenceNode || len(n.Content) != 0 {
		return false
	}
	if v.Type() == posTextsType {
		ts := make([]posText, len(fs.items))
		// One string for the whole sequence; the items are slices of it.
		text := string(fs.text)
		for i, it := range fs.items {
			ts[i] = posText{Text: text[it[0]:it[1]], Pos: Pos{d.file, fs.line, fs.col + it[0]}}
		}
		v.Set(reflect.ValueOf(ts))
		fs.used = true
		return true
	}
	// Any other type: the sequence parsed alone, columns moved back.
	var doc yaml.Node
	if err := yaml.Unmarshal(fs.text, &doc); err != nil || len(doc.Content) != 1 {
		// Not left empty: the file is decoded again without cuts.
		fs.used = false
		d.flowsBroken = true
		return true
	}
	seq := doc.Content[0]
	shift(seq, fs.line-1, fs.col-1)
	fs.used = true
	d.decode(seq, path, v)
	return true
}

// allUsed reports whether the decoder gave back every cut.
func (d *decoder) allUsed() bool {
	if d.flowsBroken {
		return false
	}
	for _, fs := range d.flows {
		if !fs.used {
			return false
		}
	}
	return true
}

func shift(n *yaml.Node, lines, cols int) {
	n.Line += lines
	n.Column += cols
	for _, c := range n.Content {
		shift(c, lines, cols)
	}
}
