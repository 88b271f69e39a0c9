package desired

import (
	"reflect"
	"regexp"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrPos returns where a yaml.v3 syntax error is. yaml.v3 gives only a
// line: the column is that of the line's first character that is not a
// space, where the construct it could not parse starts (1 on an empty line
// or when the line is unknown).
func yamlErrPos(file string, data []byte, err error) Pos {
	p := Pos{File: file, Line: 1, Col: 1}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		if n, _ := strconv.Atoi(m[1]); n > 0 {
			p.Line = n
		}
	}
	line := nthLine(data, p.Line)
	for len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		line = line[1:]
		p.Col++
	}
	return p
}

// nthLine returns line n (from 1) of data as yaml.v3 counts lines: "\r\n",
// "\r", "\n" and the Unicode breaks NEL, LS and PS each end one.
func nthLine(data []byte, n int) []byte {
	start, line := 0, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		brk := size
		switch {
		case r == '\r' && i+1 < len(data) && data[i+1] == '\n':
			brk = 2
		case r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029:
		default:
			i += size
			continue
		}
		if line == n {
			return data[start:i]
		}
		line++
		i += brk
		start = i
	}
	if line == n {
		return data[start:]
	}
	return nil
}

// The alias budget (checkAliases): how many nodes, counted with every alias
// expanded, a file may make per node it holds (aliasFactor), plus a constant
// for small files (aliasSlack). An alias
// costs the size of what it names each time the decoder walks it: without
// a bound, nine levels of ten aliases each (a "billion laughs" of 11 KB)
// take minutes and gigabytes. Every node expanded costs its decoding and
// checks (a megabyte holds half a million one-character items, each of
// which can be an error), so the factor multiplies the worst case of any
// file: two, aliases adding at most as much as the file holds, while
// anchors used as intended (a few shared mappings) stay far below it.
const (
	aliasFactor = 2
	aliasSlack  = 10000
)

// checkAliases refuses aliases that refer to themselves (yaml.v3 builds such
// a node as a cycle, and walking it would never end) and a document that
// expands to more than the budget. It reports at the alias concerned and
// returns false on failure.
func (d *decoder) checkAliases(root *yaml.Node) bool {
	own, hasAlias := 0, false
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		own++
		if n.Kind == yaml.AliasNode {
			hasAlias = true
		}
		for _, c := range n.Content {
			count(c)
		}
	}
	count(root)
	if !hasAlias {
		d.release = true
		return true
	}
	budget := aliasFactor*own + aliasSlack
	const inProgress = -1
	size := map[*yaml.Node]int{}
	var bad *yaml.Node
	// expanded is the node count of n with aliases expanded, capped at
	// budget+1 (so that sums cannot overflow); memoised, so linear.
	var expanded func(n *yaml.Node) int
	expanded = func(n *yaml.Node) int {
		if n.Kind != yaml.AliasNode && len(n.Content) == 0 {
			// A leaf is one node and in no cycle: not memoised, for a
			// megabyte of "[x,x,…]" is half a million of them.
			return 1
		}
		if s, ok := size[n]; ok {
			if s == inProgress {
				return -1
			}
			return s
		}
		size[n] = inProgress
		t := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			s := expanded(n.Alias)
			if s < 0 {
				return -1
			}
			t += s
		}
		for _, c := range n.Content {
			s := expanded(c)
			if s < 0 {
				return -1
			}
			t = min(t+s, budget+1)
		}
		size[n] = t
		return t
	}
	// Walk the document in order, without following aliases, adding what
	// each alias costs: the first alias past the budget is the one named.
	total := 0
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		total++
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			s := expanded(n.Alias)
			if s < 0 {
				d.fail(n, "", "alias *%s refers to a node that contains it; an alias must name a node defined before it and outside it", n.Value)
				bad = n
				return false
			}
			total += s
			if total > budget {
				d.fail(n, "", "aliases expand this file to more than %d nodes (%d times its %d nodes plus %d); refused: write the values out, or share less", budget, aliasFactor, own, aliasSlack)
				bad = n
				return false
			}
		}
		for _, c := range n.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	walk(root)
	return bad == nil
}
