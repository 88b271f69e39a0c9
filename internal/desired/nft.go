package desired

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The nftables section: tables keyed "FAMILY NAME" as nft writes them
// ("inet talos_kubespan"), each with named sets and chains; rules are nft
// lines, which nft compiles (package nftcompile): here a rule's text is only
// checked to be one line of nft and no more.

type nftTableConf struct {
	Meta
	// Adopt takes over a table of this name and family that exists and
	// that netreconcile did not create (see docs/config.md).
	Adopt  bool                     `yaml:"adopt"`
	Sets   map[string]*nftSetConf   `yaml:"sets"`
	Chains map[string]*nftChainConf `yaml:"chains"`
}

type nftSetConf struct {
	Meta
	Type     string    `yaml:"type" schema:"required,enum=nftSetTypes"`
	Flags    []string  `yaml:"flags" schema:"enum=nftSetFlags"`
	Timeout  *Duration `yaml:"timeout"`
	Elements []posText `yaml:"elements" schema:"unique"`
	// ElementsFile is a side file of elements, one a line (sidefile.go).
	ElementsFile string `yaml:"elements-file"`
	// ElementsFrom: see nft_peers.go.
	ElementsFrom *nftElemsFromConf `yaml:"elements-from"`
}

type nftChainConf struct {
	Meta
	Type     string    `yaml:"type" schema:"enum=nftChainTypes"`
	Hook     string    `yaml:"hook" schema:"enum=nftHooks"`
	Priority *posText  `yaml:"priority"`
	Policy   string    `yaml:"policy" schema:"enum=nftPolicies"`
	Device   string    `yaml:"device"`
	Rules    []posText `yaml:"rules"`
}

// posText is a scalar with where it is, so that errors inside it (a word of
// a rule) point at the word's column.
type posText struct {
	Text  string
	Pos   Pos
	Shift int // 1 for quoted scalars: the text starts after the quote
	// Escaped says a quoted scalar may hold escapes ('' or \"), after
	// which offsets in the text are no longer columns.
	Escaped bool
}

func (t *posText) decodeNode(d *decoder, n *yaml.Node, path string) {
	t.Pos = d.pos(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.fail(n, path, "expected a string, found %s", kindWord(n))
		return
	}
	t.Text, t.Pos = n.Value, d.pos(n)
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		t.Shift = 1
		t.Escaped = strings.ContainsAny(t.Text, "\"'\\")
	}
}

// source is where the text is, for errors of nft at an offset in it: the
// index-th rule of the chain of path chain.
func (t *posText) source(chain string, index int) model.NftSource {
	return model.NftSource{File: t.Pos.File, Line: t.Pos.Line, Col: t.Pos.Col + t.Shift,
		Flat: !t.Escaped && !strings.Contains(t.Text, "\n"), Chain: chain, Index: index}
}

// at returns the position of a byte offset inside the text.
func (t *posText) at(off int) Pos {
	p := t.Pos
	if !strings.Contains(t.Text, "\n") {
		p.Col += t.Shift + off
	}
	return p
}

// Well-known chain priorities (nft(8) "PRIORITY"): the bridge family numbers
// some of them differently.
var nftPriorities = map[string]int{"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}
var nftBridgePriorities = map[string]int{"dstnat": -300, "filter": -200, "out": 100, "srcnat": 300}

// The words of a set's flags, a chain's type and its policy: the builder
// checks with these lists, and the schema lists them (schema.go).
var (
	nftSetFlags   = []string{"interval", "timeout"}
	nftChainTypes = []string{"filter", "nat", "route"}
	nftPolicies   = []string{"accept", "drop"}
)

var nftHooks = map[string][]string{
	"ip":     {"prerouting", "input", "forward", "output", "postrouting"},
	"ip6":    {"prerouting", "input", "forward", "output", "postrouting"},
	"inet":   {"prerouting", "input", "forward", "output", "postrouting"},
	"bridge": {"prerouting", "input", "forward", "output", "postrouting"},
	"arp":    {"input", "output"},
	"netdev": {"ingress", "egress"},
}

func (b *builder) nftables(confs []*fileConf) {
	type declared struct {
		key  model.NftTableKey
		conf *nftTableConf
		at   Pos
	}
	var tables []declared
	seen := map[model.NftTableKey]Pos{}
	for _, fc := range confs {
		for _, k := range sortedKeys(fc.NFTables) {
			tc := fc.NFTables[k]
			path := "nftables." + k
			at := fc.at("nftables")
			if tc != nil {
				at = tc.Pos
			}
			fam, name, ok := strings.Cut(strings.TrimSpace(k), " ")
			name = strings.TrimSpace(name)
			if !ok || !contains(model.NftFamilies, fam) || !validNftName(name) {
				b.errs.add(at, path, "expected a table as \"FAMILY NAME\" with FAMILY one of %s (like \"inet filter\"), found %q", strings.Join(model.NftFamilies, ", "), k)
				continue
			}
			key := model.NftTableKey{Family: fam, Name: name}
			if prev, dup := seen[key]; dup {
				b.errs.add(at, path, "table %s declared again (first at %s); a table belongs to one fragment", key, prev)
				continue
			}
			seen[key] = at
			if tc == nil {
				tc = &nftTableConf{Meta: Meta{Pos: at}}
			}
			tables = append(tables, declared{key, tc, at})
		}
	}
	for _, d := range tables {
		t := b.nftTable(d.key, d.conf)
		if t != nil {
			b.st.NFTables = append(b.st.NFTables, *t)
		}
	}
	model.SortNftTables(b.st.NFTables)
}

// validNftName: model.ValidNftName.
func validNftName(s string) bool { return model.ValidNftName(s) }

// inFileOrder returns map keys in the order they appear in the file (then by
// name): the kernel lists sets and chains in creation order.
func inFileOrder[V any](m map[string]*V, pos func(*V) Pos) []string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := m[keys[i]], m[keys[j]]
		if a == nil || b == nil {
			return a != nil
		}
		pa, pb := pos(a), pos(b)
		if pa.Line != pb.Line {
			return pa.Line < pb.Line
		}
		return pa.Col < pb.Col
	})
	return keys
}

func (b *builder) nftTable(key model.NftTableKey, tc *nftTableConf) *model.NftTable {
	path := "nftables." + key.String()
	t := &model.NftTable{Family: key.Family, Name: key.Name, Adopt: tc.Adopt, Origin: tc.Pos.String()}
	nerr := b.errs.count()
	for _, name := range inFileOrder(tc.Sets, func(s *nftSetConf) Pos { return s.Pos }) {
		sc := tc.Sets[name]
		sp := path + ".sets." + name
		if !validNftName(name) {
			b.errs.add(tc.at("sets"), sp, "expected a set name of letters, digits, _ - and ., starting with a letter")
			continue
		}
		if sc == nil {
			b.errs.add(tc.at("sets"), sp, "empty set; expected at least \"type\" (%s)", strings.Join(model.NftSetTypes, ", "))
			continue
		}
		if s := b.nftSet(sp, name, sc); s != nil {
			t.Sets = append(t.Sets, *s)
		}
	}
	chainConfs := map[string]*nftChainConf{}
	for _, name := range inFileOrder(tc.Chains, func(c *nftChainConf) Pos { return c.Pos }) {
		cc := tc.Chains[name]
		cp := path + ".chains." + name
		if !validNftName(name) {
			b.errs.add(tc.at("chains"), cp, "expected a chain name of letters, digits, _ - and ., starting with a letter")
			continue
		}
		if cc == nil {
			cc = &nftChainConf{Meta: Meta{Pos: tc.at("chains")}}
		}
		c := b.nftChain(cp, key.Family, name, cc)
		if c == nil {
			continue
		}
		t.Chains = append(t.Chains, *c)
		chainConfs[name] = cc
	}
	// The checks by rule text: a megabyte of one-character rules
	// ("[x,x,…]", aliased) is half a million to a million copies of a few
	// texts. Only the failures are remembered.
	type problem struct {
		off int
		msg string
	}
	bad := map[string]problem{}
	for i := range t.Chains {
		c := &t.Chains[i]
		cc := chainConfs[c.Name]
		cp := path + ".chains." + c.Name
		for j := range cc.Rules {
			rt := &cc.Rules[j]
			p, known := bad[rt.Text]
			if !known {
				if off, msg := model.NftTextProblem(rt.Text); off >= 0 {
					p, known = problem{off, msg}, true
					bad[rt.Text] = p
				}
			}
			if known {
				// The path is built for a kept error only: a chain of
				// 500k bad rules keeps MaxKeptErrors.
				b.errs.addLazy(rt.at(p.off), func() (string, string) {
					return cp + ".rules[" + strconv.Itoa(j) + "]", p.msg
				})
				continue
			}
			c.Rules = append(c.Rules, model.NftRule{Text: rt.Text, Origin: rt.Pos.String(), Source: rt.source(cp, j)})
		}
	}
	if b.errs.count() != nerr {
		return nil
	}
	return t
}

func (b *builder) nftSet(path, name string, sc *nftSetConf) *model.NftSet {
	s := &model.NftSet{Name: name, Type: sc.Type, Origin: sc.Pos.String()}
	if !contains(model.NftSetTypes, sc.Type) {
		b.errs.add(sc.at("type"), path+".type", "expected one of %s, found %q", strings.Join(model.NftSetTypes, ", "), sc.Type)
		return nil
	}
	for i, f := range sc.Flags {
		switch f {
		case nftSetFlags[0]:
			s.Interval = true
		case nftSetFlags[1]:
			s.Timeout = true
		default:
			b.errs.add(sc.at("flags"), fmt.Sprintf("%s.flags[%d]", path, i), "expected %s, found %q", orList(nftSetFlags), f)
			return nil
		}
	}
	if s.Interval && (s.Type == model.NftMark || s.Type == model.NftProto) {
		b.errs.add(sc.at("flags"), path+".flags", "interval sets of %s are not supported; use single values", s.Type)
		return nil
	}
	if sc.Timeout != nil {
		s.DefaultTimeout, s.Timeout = sc.Timeout.D, true
		// NFTA_SET_TIMEOUT counts milliseconds: a finer timeout would be
		// cut, read back different, and the set rebuilt on every pass.
		if d := sc.Timeout.D; d%time.Millisecond != 0 {
			b.errs.add(sc.at("timeout"), path+".timeout", "expected a whole number of milliseconds (the kernel counts in milliseconds), found %s", d)
		}
	}
	if s.Timeout && s.Interval {
		// The kernel's interval sets expire the start and end elements
		// separately; nft refuses the pair as well.
		b.errs.add(sc.at("flags"), path+".flags", "a set cannot have both interval and timeout")
		return nil
	}
	// Two passes: the elements are parsed first, and the duplicate set
	// sized by the elements that parsed. Sized by the list,
	// a megabyte of "[x,x,…]" (aliased: twice) made room for a million
	// elements of which none parsed. Each element has its own position
	// (one node's aliases share one, and then the same text and outcome),
	// so the order of the two kinds of error does not matter to errList.
	//
	// The parse errors by text, as for rules (nftTable): a megabyte of
	// "[x,x,…]" is half a million copies of one bad element.
	elems, ok := b.nftElemTexts(path, sc)
	if !ok {
		return nil
	}
	// where says where elems[i] is, in errors: the YAML's list, or the
	// side file (its position gives the line).
	where := func(i int) string {
		if i < len(sc.Elements) {
			return "elements[" + strconv.Itoa(i) + "]"
		}
		return "elements-file"
	}
	unparsable := map[string]error{}
	var parsed []model.NftElem
	var at []int // parsed[k] is elems[at[k]]
	for i := range elems {
		et := &elems[i]
		var e model.NftElem
		err, known := unparsable[et.Text]
		if !known {
			text := et.Text
			if s.Type == model.NftProto {
				if p, ok := protocolNumber(text); ok {
					text = strconv.Itoa(int(p))
				}
			}
			if e, err = model.ParseNftElem(s.Type, s.Interval, text); err != nil {
				unparsable[et.Text] = err
			}
		}
		if err != nil {
			// Lazily, as for rules: a set can hold 500k bad elements.
			b.errs.addLazy(et.Pos, func() (string, string) {
				return path + "." + where(i), err.Error()
			})
			continue
		}
		parsed = append(parsed, e)
		at = append(at, i)
	}
	seen := make(map[model.NftElem]int, len(parsed))
	if len(parsed) > 0 {
		s.Elems = parsed[:0] // compacted in place: the kth kept is at most the kth parsed
	}
	for k, e := range parsed {
		i := at[k]
		if j, dup := seen[e]; dup {
			b.errs.addLazy(elems[i].Pos, func() (string, string) {
				also := where(j)
				if j >= len(sc.Elements) {
					also = "at " + elems[j].Pos.String()
				}
				return path + "." + where(i), "element given twice (also " + also + ")"
			})
			continue
		}
		seen[e] = i
		s.Elems = append(s.Elems, e)
	}
	model.SortNftElems(s.Elems)
	if sc.ElementsFrom != nil && !b.nftElemsFrom(path, s, sc) {
		return nil
	}
	if s.Interval {
		if i := model.NftElemsOverlap(s.Elems); i >= 0 {
			at, key := sc.at("elements"), ".elements"
			if !sc.has("elements") && sc.has("elements-file") {
				at, key = sc.at("elements-file"), ".elements-file"
			}
			b.errs.add(at, path+key, "%s overlaps %s; the kernel refuses overlapping intervals: merge them",
				model.FormatNftElem(s.Type, true, s.Elems[i]), model.FormatNftElem(s.Type, true, s.Elems[i-1]))
			return nil
		}
	}
	return s
}

func (b *builder) nftChain(path, family, name string, cc *nftChainConf) *model.NftChain {
	c := &model.NftChain{Name: name, Origin: cc.Pos.String()}
	base := cc.has("hook") || cc.has("type") || cc.has("priority") || cc.has("policy")
	if !base {
		if cc.has("device") {
			b.errs.add(cc.at("device"), path+".device", "a regular chain (no hook) takes no device")
			return nil
		}
		return c
	}
	hooks := nftHooks[family]
	switch {
	case !cc.has("hook"):
		b.errs.add(cc.Pos, path+".hook", "missing; a base chain needs a hook (%s)", strings.Join(hooks, ", "))
		return nil
	case !contains(hooks, cc.Hook):
		b.errs.add(cc.at("hook"), path+".hook", "expected one of %s for family %s, found %q", strings.Join(hooks, ", "), family, cc.Hook)
		return nil
	}
	c.Hook = cc.Hook
	c.Type = cc.Type
	if !cc.has("type") {
		c.Type = nftChainTypes[0]
	}
	l3 := family == "ip" || family == "ip6" || family == "inet"
	switch {
	case !contains(nftChainTypes, c.Type) || c.Type == "nat" && !l3:
		b.errs.add(cc.at("type"), path+".type", "expected filter, nat (ip, ip6, inet) or route (hook output), found %q", cc.Type)
		return nil
	case c.Type == "route" && (!l3 || c.Hook != "output"):
		b.errs.add(cc.at("type"), path+".type", "type route needs hook output in an ip, ip6 or inet table")
		return nil
	}
	if family == "netdev" {
		if cc.Device == "" {
			b.errs.add(cc.Pos, path+".device", "missing; a netdev chain hooks one device")
			return nil
		}
		c.Device = cc.Device
	} else if cc.has("device") {
		b.errs.add(cc.at("device"), path+".device", "only netdev chains take a device")
		return nil
	}
	if cc.Priority == nil {
		b.errs.add(cc.Pos, path+".priority", "missing; expected a number or one of raw, mangle, dstnat, filter, security, srcnat (optionally + or - a number)")
		return nil
	}
	prio, err := nftPriority(family, cc.Priority.Text)
	if err != nil {
		b.errs.add(cc.Priority.Pos, path+".priority", "%v", err)
		return nil
	}
	c.Priority = prio
	switch {
	case !cc.has("policy"):
		c.Policy = nftPolicies[0]
	case contains(nftPolicies, cc.Policy):
		c.Policy = cc.Policy
	default:
		b.errs.add(cc.at("policy"), path+".policy", "expected %s, found %q", orList(nftPolicies), cc.Policy)
		return nil
	}
	return c
}

func nftPriority(family, s string) (int, error) {
	bad := fmt.Errorf("expected a number or one of raw, mangle, dstnat, filter, security, srcnat (optionally + or - a number), found %q", s)
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 32); err == nil {
		return int(n), nil
	}
	names := nftPriorities
	if family == "bridge" {
		names = nftBridgePriorities
	}
	word, delta := strings.TrimSpace(s), 0
	if i := strings.IndexAny(word, "+-"); i > 0 {
		d, err := strconv.Atoi(strings.ReplaceAll(word[i:], " ", ""))
		if err != nil {
			return 0, bad
		}
		word, delta = strings.TrimSpace(word[:i]), d
	}
	base, ok := names[word]
	if !ok {
		return 0, bad
	}
	// NFTA_HOOK_PRIORITY is a signed 32-bit number: a larger sum would be
	// cut, and the chain read back with another priority on every pass.
	if n := base + delta; n >= math.MinInt32 && n <= math.MaxInt32 {
		return n, nil
	}
	return 0, fmt.Errorf("%q is out of range: a chain priority is from %d to %d", s, math.MinInt32, math.MaxInt32)
}

// nftElemTexts returns a set's elements as written: the YAML's, then the
// lines of its elements-file, one element a line. false when the file
// could not be read (reported).
func (b *builder) nftElemTexts(path string, sc *nftSetConf) ([]posText, bool) {
	if sc.ElementsFile == "" {
		if sc.has("elements-file") {
			b.errs.add(sc.at("elements-file"), path+".elements-file", "expected the path of a file of elements, one a line (relative to this file's directory)")
			return nil, false
		}
		return sc.Elements, true
	}
	f := b.sides.get(sidePath(sc.Pos.File, sc.ElementsFile))
	if f.err != nil {
		b.errs.add(sc.at("elements-file"), path+".elements-file", "%s", readError(f.err))
		return nil, false
	}
	elems := make([]posText, len(sc.Elements), len(sc.Elements)+lineCount(f.text))
	copy(elems, sc.Elements)
	eachLine(f.text, func(no int, line string) {
		text := strings.TrimLeft(line, " \t")
		elems = append(elems, posText{Text: text, Pos: Pos{f.path, no, col(line, len(line)-len(text))}})
	})
	return elems, true
}
