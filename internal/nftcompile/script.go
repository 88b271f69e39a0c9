// Package nftcompile compiles the file's nftables rules with nft itself: a
// rule means what nft makes of its text, and no grammar of ours stands in
// between. The rules of a pass go into one nft script, beside their tables'
// declarations (every set, object and chain, chains with their real type,
// hook and priority, so that nft's evaluator checks the same context), and
// `nft -f -` runs it in a network namespace made for the purpose and thrown
// away after; the kernel's dump of each rule there is its compiled form
// (package nftwire), carried as is into netreconcile's own batch. A rule nft
// refuses is refused with nft's own message, at the rule's position in the
// file.
package nftcompile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Rule is one rule to compile, in its table and chain.
type Rule struct {
	Table *model.NftTable
	Chain *model.NftChain
	Rule  *model.NftRule
}

// origin is what a line of the script comes from.
type origin struct {
	table int    // index in the script's tables
	what  string // "table", "chain", "set", "object"; "rule"; "element"
	name  string
	rule  int // index in the request's rules, for "rule"; the element's
	// prefix is the length of the line before the text.
	prefix int
}

// script is what one run of the compile child gives nft: parts, each run by
// `nft -f` in turn in the same namespace, and where each line of each part
// comes from. A part is one transaction, of which nft in a user namespace
// may send no more than net.core.wmem_max (about 200 KiB: only a process
// with CAP_NET_ADMIN over the host may raise its send buffer past it), so
// rules go by rulesPerPart, the elements of a big set by elemsPerPart.
//
// A table is named nrcN in the script, N its index: a rule's bytecode does
// not hold its table's name, and nft cannot write some names (a table
// named like a keyword, "rt", "ct", "meta"…, is a syntax error). Nor does
// it hold its own chain's name: a chain nft refused to declare by its name
// is declared as nrcN_cM (renamed), and its rules compiled there. Set and
// object names stay: the bytecode refers to them.
type script struct {
	parts   []*part
	tables  []*model.NftTable
	renamed map[*model.NftTable]map[string]string
}

// part is one nft -f of a script.
type part struct {
	text  strings.Builder
	lines []origin // lines[i] is line i+1
	// rules are the request's rules the part adds.
	rules []int
}

// Bounds of a part: a rule of the tests' corpus takes up to a few hundred
// bytes of batch, an element a few dozen.
const (
	rulesPerPart = 200
	elemsPerPart = 2000
)

// elements counts the part's element lines.
func (p *part) elements() int {
	n := 0
	for _, o := range p.lines {
		if o.what == "element" {
			n++
		}
	}
	return n
}

// newPart starts a part.
func (s *script) newPart() *part {
	p := &part{}
	s.parts = append(s.parts, p)
	return p
}

// cur is the part being written.
func (s *script) cur() *part {
	if len(s.parts) == 0 {
		return s.newPart()
	}
	return s.parts[len(s.parts)-1]
}

// texts are the parts' texts.
func (s *script) texts() []string {
	out := make([]string, len(s.parts))
	for i, p := range s.parts {
		out[i] = p.text.String()
	}
	return out
}

// tableName is a table's name in the script.
func tableName(ti int) string { return "nrc" + strconv.Itoa(ti) }

// chainName is a chain's name in the script.
func (s *script) chainName(t *model.NftTable, name string) string {
	if r, ok := s.renamed[t][name]; ok {
		return r
	}
	return name
}

func (s *script) line(o origin, text string) {
	p := s.cur()
	p.text.WriteString(text)
	p.text.WriteByte('\n')
	p.lines = append(p.lines, o)
}

// nftString quotes a name or a device as nft reads strings: they hold no
// quote (names are checked when the file is read).
func nftString(s string) string { return `"` + s + `"` }

// declare writes a table's declarations: its sets, maps and objects, its
// chains empty. The elements of the sets nft declares go in only with
// elems (the rules do not need them). Base chains keep their type, hook
// and priority, which nft and the kernel check rules against; the device
// of a netdev chain is lo, in the throwaway namespace the only one there
// is (the device does not change what a rule compiles to).
func (s *script) declare(t *model.NftTable, elems bool) {
	ti := len(s.tables)
	s.tables = append(s.tables, t)
	o := origin{table: ti, what: "table"}
	s.line(o, "table "+t.Family+" "+tableName(ti)+" {")
	for i := range t.Objects {
		ob := &t.Objects[i]
		oo := origin{table: ti, what: "object", name: ob.Name}
		kind, body := objectParts(ob.Decl)
		s.line(oo, "\t"+kind+" "+ob.Name+" {")
		if body != "" {
			s.line(oo, "\t\t"+body)
		}
		s.line(oo, "\t}")
	}
	for i := range t.Sets {
		set := &t.Sets[i]
		so := origin{table: ti, what: "set", name: set.Name}
		if set.Decl == "" {
			s.line(so, "\tset "+set.Name+" { "+setDecl(set)+" }")
			continue
		}
		kind := "set"
		if set.Map {
			kind = "map"
		}
		s.line(so, "\t"+kind+" "+set.Name+" {")
		s.line(so, "\t\t"+set.Decl)
		if elems && len(set.ElemTexts) > 0 && len(set.ElemTexts) <= elemsPerPart {
			s.line(so, "\t\telements = {")
			s.elements(ti, set, 0, len(set.ElemTexts), "\t\t\t")
			s.line(so, "\t\t}")
		}
		s.line(so, "\t}")
	}
	for i := range t.Chains {
		c := &t.Chains[i]
		decl := "\tchain " + s.chainName(t, c.Name) + " {"
		if c.Base() {
			dev := ""
			if t.Family == "netdev" {
				dev = " device " + nftString("lo")
			}
			decl += fmt.Sprintf(" type %s hook %s%s priority %d;", c.Type, c.Hook, dev, c.Priority)
		}
		s.line(origin{table: ti, what: "chain", name: c.Name}, decl+" }")
	}
	s.line(o, "}")
}

// elements writes elements [from, to) of a set, one a line.
func (s *script) elements(ti int, set *model.NftSet, from, to int, indent string) {
	for j := from; j < to; j++ {
		sep := ","
		if j == to-1 {
			sep = ""
		}
		s.line(origin{table: ti, what: "element", name: set.Name, rule: j, prefix: len(indent)}, indent+set.ElemTexts[j]+sep)
	}
}

// bigSets adds, in parts of their own, the elements of a table's sets too
// many to be declared with them.
func (s *script) bigSets(ti int) {
	t := s.tables[ti]
	for i := range t.Sets {
		set := &t.Sets[i]
		if set.Decl == "" || len(set.ElemTexts) <= elemsPerPart {
			continue
		}
		for from := 0; from < len(set.ElemTexts); from += elemsPerPart {
			to := min(from+elemsPerPart, len(set.ElemTexts))
			s.newPart()
			so := origin{table: ti, what: "set", name: set.Name}
			s.line(so, fmt.Sprintf("add element %s %s %s {", t.Family, tableName(ti), set.Name))
			s.elements(ti, set, from, to, "\t")
			s.line(so, "}")
		}
	}
}

// objectParts splits an object's text into nft's kind ("ct helper") and
// the body of its block, braces taken off ("type \"ftp\" protocol tcp;").
func objectParts(decl string) (kind, body string) {
	for _, k := range []string{"ct helper", "ct timeout", "ct expectation"} {
		if decl == k || strings.HasPrefix(decl, k+" ") {
			kind, body = k, strings.TrimSpace(decl[len(k):])
		}
	}
	if kind == "" {
		kind, body, _ = strings.Cut(decl, " ")
		body = strings.TrimSpace(body)
	}
	if strings.HasPrefix(body, "{") && strings.HasSuffix(body, "}") {
		body = strings.TrimSpace(body[1 : len(body)-1])
	}
	return kind, body
}

// setDecl is a set's declaration without elements.
func setDecl(set *model.NftSet) string {
	if set.Decl != "" {
		return set.Decl
	}
	d := "type " + set.Type + ";"
	var flags []string
	if set.Interval {
		flags = append(flags, "interval")
	}
	if set.Timeout {
		flags = append(flags, "timeout")
	}
	if len(flags) > 0 {
		d += " flags " + strings.Join(flags, ",") + ";"
	}
	if set.DefaultTimeout != 0 {
		d += " timeout " + model.NftTime(set.DefaultTimeout) + ";"
	}
	return d
}

// declElemsWithRules bounds the elements a part of declarations may hold and
// still take rules after them: the part stays one batch under wmem_max
// (rulesPerPart rules and these elements), and a change of a few rules
// costs one nft run instead of two.
const declElemsWithRules = 500

// rule writes a rule to compile on a line of its own, in a new part every
// rulesPerPart rules, after declarations with more than declElemsWithRules
// elements, and at a rule that must start a nft of its own (alone).
func (s *script) rule(ti int, chain string, ri int, text string, alone bool) {
	t := s.tables[ti]
	if p := s.cur(); len(p.rules) == rulesPerPart || alone && len(p.lines) > 0 ||
		len(p.rules) == 0 && len(p.lines) > 0 && p.lines[len(p.lines)-1].what != "rule" && p.elements() > declElemsWithRules {
		s.newPart()
	}
	p := s.cur()
	p.rules = append(p.rules, ri)
	prefix := "add rule " + t.Family + " " + tableName(ti) + " " + s.chainName(t, chain) + " "
	s.line(origin{table: ti, what: "rule", name: chain, rule: ri, prefix: len(prefix)}, prefix+text)
}
