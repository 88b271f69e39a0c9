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
	Maps   map[string]*nftSetConf   `yaml:"maps"`
	Chains map[string]*nftChainConf `yaml:"chains"`
	// Objects are named stateful objects, each in nft's words without
	// its name ("quota over 25 mbytes").
	Objects map[string]*posText `yaml:"objects"`
}

type nftSetConf struct {
	Meta
	Type string `yaml:"type"`
	// Typeof, Size, Policy and Counter are nft's set keys that only a set
	// nft declares has (see nftDeclared).
	Typeof    string    `yaml:"typeof"`
	Flags     []string  `yaml:"flags" schema:"enum=nftSetFlags"`
	Timeout   *Duration `yaml:"timeout"`
	Size      *int      `yaml:"size"`
	Policy    string    `yaml:"policy"`
	Counter   bool      `yaml:"counter"`
	AutoMerge bool      `yaml:"auto-merge"`
	Comment   string    `yaml:"comment"`
	Elements  []posText `yaml:"elements" schema:"unique"`
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
	Shift int8 // 1 for quoted scalars: the text starts after the quote
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
// index-th item of the list.
func (t *posText) source(list *textList, index int) model.NftSource {
	return model.NftSource{Of: list.in(t.Pos.File), Line: clamp32(t.Pos.Line), Col: clamp32(t.Pos.Col + int(t.Shift)),
		Flat: !t.Escaped && !strings.Contains(t.Text, "\n"), Index: clamp32(index)}
}

// textList makes the model.NftList the texts of one list share: one for
// the list's file, made again only if a text is in another.
type textList struct {
	path string
	cur  *model.NftList
}

func (l *textList) in(file string) *model.NftList {
	if l.cur == nil || l.cur.File != file {
		l.cur = &model.NftList{File: file, Path: l.path}
	}
	return l.cur
}

// at returns the position of a byte offset inside the text.
func (t *posText) at(off int) Pos {
	p := t.Pos
	if !strings.Contains(t.Text, "\n") {
		p.Col += int(t.Shift) + off
	}
	return p
}

// Well-known chain priorities (nft(8) "PRIORITY"): the bridge family numbers
// some of them differently.
var nftPriorities = map[string]int{"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}
var nftBridgePriorities = map[string]int{"dstnat": -300, "filter": -200, "out": 100, "srcnat": 300}

// The words of a chain's type and its policy: the builder checks with
// these lists, and the schema lists them (schema.go).
var (
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
		var set *model.NftSet
		if nftDeclared(sc) {
			set = b.nftDeclaredSet(sp, name, sc, false)
		} else {
			set = b.nftSet(sp, name, sc)
		}
		if set != nil {
			t.Sets = append(t.Sets, *set)
		}
	}
	for _, name := range inFileOrder(tc.Maps, func(s *nftSetConf) Pos { return s.Pos }) {
		sc := tc.Maps[name]
		sp := path + ".maps." + name
		switch {
		case !validNftName(name):
			b.errs.add(tc.at("maps"), sp, "expected a map name of letters, digits, _ - and ., starting with a letter")
		case tc.Sets[name] != nil:
			b.errs.add(tc.at("maps"), sp, "a set of this name is declared too; sets and maps share names")
		case sc == nil:
			b.errs.add(tc.at("maps"), sp, "empty map; expected at least \"type\" (such as \"ipv4_addr : verdict\") or \"typeof\"")
		default:
			if m := b.nftDeclaredSet(sp, name, sc, true); m != nil {
				t.Sets = append(t.Sets, *m)
			}
		}
	}
	for _, name := range inFileOrder(tc.Objects, func(o *posText) Pos { return o.Pos }) {
		if o := b.nftObject(tc, path+".objects."+name, name, tc.Objects[name]); o != nil {
			if t.Set(name) != nil {
				b.errs.add(o0(tc.Objects[name], tc), path+".objects."+name, "a set or map of this name is declared too")
				continue
			}
			t.Objects = append(t.Objects, *o)
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
		rl := cp + ".rules"
		list := &textList{path: rl}
		c.Rules = make([]model.NftRule, 0, len(cc.Rules))
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
			c.Rules = append(c.Rules, model.NftRule{Text: rt.Text, Source: rt.source(list, j)})
		}
	}
	if b.errs.count() != nerr {
		return nil
	}
	return t
}

// nftDeclared reports whether a set is one nft declares and compiles: any
// but the five types netreconcile makes itself (ipv4_addr, ipv6_addr,
// inet_service, mark, inet_proto) with flags interval and timeout at most,
// and whose elements do not include nft's catch-all element `*` (one the
// kernel holds apart from the others, which netreconcile's own element
// path does not write).
func nftDeclared(sc *nftSetConf) bool {
	for _, e := range sc.Elements {
		if strings.TrimSpace(e.Text) == "*" {
			return true
		}
	}
	// policy performance is nft's default: the kernel holds nothing of it.
	if sc.Typeof != "" || sc.Size != nil || sc.Policy != "" && sc.Policy != "performance" || sc.Counter || sc.AutoMerge || sc.Comment != "" ||
		!contains(model.NftSetTypes, sc.Type) {
		return true
	}
	for _, f := range sc.Flags {
		if f != "interval" && f != "timeout" {
			return true
		}
	}
	return false
}

// nftSetFlags are the set flags nft's declarations take.
var nftSetFlags = []string{"constant", "dynamic", "interval", "timeout"}

// nftDeclaredSet builds a set (or map) nft declares: its declaration in
// nft's words and its elements' texts, which nft compiles. Only that each
// text is one piece of nft is checked here.
func (b *builder) nftDeclaredSet(path, name string, sc *nftSetConf, isMap bool) *model.NftSet {
	s := &model.NftSet{Name: name, Map: isMap, Origin: sc.Pos.String()}
	nerr := b.errs.count()
	text := func(key, v string) bool {
		off, msg := model.NftTextProblem(v)
		if off < 0 && strings.ContainsAny(v, "{}") {
			msg = "a type takes no braces"
		}
		if msg != "" {
			b.errs.add(sc.at(key), path+"."+key, "%s", msg)
			return false
		}
		return true
	}
	var decl []string
	switch {
	case sc.Type != "" && sc.Typeof != "":
		b.errs.add(sc.at("typeof"), path+".typeof", "a set has a type or a typeof, not both")
	case sc.Type != "":
		if text("type", sc.Type) {
			decl = append(decl, "type "+sc.Type+";")
		}
	case sc.Typeof != "":
		if text("typeof", sc.Typeof) {
			decl = append(decl, "typeof "+sc.Typeof+";")
		}
	default:
		b.errs.add(sc.Pos, path+".type", "missing; expected \"type\" (as nft writes it: \"ipv4_addr . inet_service\"%s) or \"typeof\"",
			map[bool]string{true: ", \"ipv4_addr : verdict\"", false: ""}[isMap])
	}
	for i, f := range sc.Flags {
		if !contains(nftSetFlags, f) {
			b.errs.add(sc.at("flags"), fmt.Sprintf("%s.flags[%d]", path, i), "expected one of %s, found %q", strings.Join(nftSetFlags, ", "), f)
		}
	}
	if len(sc.Flags) > 0 {
		decl = append(decl, "flags "+strings.Join(sc.Flags, ",")+";")
	}
	if sc.Timeout != nil {
		if d := sc.Timeout.D; d%time.Millisecond != 0 || d <= 0 {
			b.errs.add(sc.at("timeout"), path+".timeout", "expected a positive whole number of milliseconds, found %s", d)
		}
		decl = append(decl, "timeout "+model.NftTime(sc.Timeout.D)+";")
	}
	if sc.Size != nil {
		if *sc.Size <= 0 {
			b.errs.add(sc.at("size"), path+".size", "expected a positive number, found %d", *sc.Size)
		}
		decl = append(decl, "size "+strconv.Itoa(*sc.Size)+";")
	}
	switch sc.Policy {
	case "":
	case "performance", "memory":
		decl = append(decl, "policy "+sc.Policy+";")
	default:
		b.errs.add(sc.at("policy"), path+".policy", "expected performance or memory, found %q", sc.Policy)
	}
	if sc.Counter {
		decl = append(decl, "counter;")
	}
	if sc.AutoMerge {
		decl = append(decl, "auto-merge;")
	}
	if sc.Comment != "" {
		if strings.ContainsAny(sc.Comment, "\"\n") {
			b.errs.add(sc.at("comment"), path+".comment", "a comment holds no \" and no line break")
		}
		decl = append(decl, "comment \""+sc.Comment+"\";")
	}
	if sc.ElementsFrom != nil {
		b.errs.add(sc.at("elements-from"), path+".elements-from", "elements-from feeds a set of type ipv4_addr or ipv6_addr with flags [interval] only")
	}
	elems, _ := b.nftElemTexts(path, sc)
	inline, side := &textList{path: path + ".elements"}, &textList{path: path + ".elements-file"}
	// An element written twice is refused, as in a set of netreconcile's
	// own types (by its text here: nft alone knows what it means).
	seen := make(map[string]int, len(elems))
	for i := range elems {
		et := &elems[i]
		list, at := inline, i
		if i >= len(sc.Elements) {
			// A line of the elements-file: its position is the file's.
			list, at = side, i-len(sc.Elements)
		}
		if off, msg := model.NftTextProblem(et.Text); off >= 0 {
			b.errs.add(et.at(off), fmt.Sprintf("%s[%d]", list.path, at), "%s", msg)
			continue
		}
		if j, dup := seen[et.Text]; dup {
			b.errs.add(et.Pos, fmt.Sprintf("%s[%d]", list.path, at), "element given twice (also at %s)", elems[j].Pos)
			continue
		}
		seen[et.Text] = i
		s.ElemTexts = append(s.ElemTexts, et.Text)
		s.ElemSources = append(s.ElemSources, et.source(list, at))
	}
	if b.errs.count() != nerr {
		return nil
	}
	s.Decl = strings.Join(decl, " ")
	return s
}

// nftObjectKinds are nft's named object kinds.
var nftObjectKinds = []string{"counter", "quota", "limit", "ct helper", "ct timeout", "ct expectation", "synproxy", "secmark"}

// nftObject builds a named object from its text in nft's words, without
// its name: its kind ("quota") then its body ("over 25 mbytes"), the body
// of the kinds nft writes in braces given in braces or not.
func (b *builder) nftObject(tc *nftTableConf, path, name string, ot *posText) *model.NftObject {
	if !validNftName(name) {
		b.errs.add(tc.at("objects"), path, "expected an object name of letters, digits, _ - and ., starting with a letter")
		return nil
	}
	if ot == nil {
		b.errs.add(tc.at("objects"), path, "empty object; expected one of %s, then its settings (\"quota over 25 mbytes\")", strings.Join(nftObjectKinds, ", "))
		return nil
	}
	if off, msg := model.NftDeclProblem(ot.Text); off >= 0 {
		b.errs.add(ot.at(off), path, "%s", msg)
		return nil
	}
	kind := ""
	for _, k := range nftObjectKinds {
		if ot.Text == k || strings.HasPrefix(ot.Text, k+" ") {
			kind = k
		}
	}
	if kind == "" {
		b.errs.add(ot.Pos, path, "expected one of %s, then its settings (\"quota over 25 mbytes\"), found %q", strings.Join(nftObjectKinds, ", "), ot.Text)
		return nil
	}
	return &model.NftObject{Name: name, Decl: ot.Text, Origin: ot.Pos.String()}
}

// o0 is where an object is, for errors about it.
func o0(ot *posText, tc *nftTableConf) Pos {
	if ot == nil {
		return tc.at("objects")
	}
	return ot.Pos
}

func (b *builder) nftSet(path, name string, sc *nftSetConf) *model.NftSet {
	s := &model.NftSet{Name: name, Type: sc.Type, Origin: sc.Pos.String()}
	if !contains(model.NftSetTypes, sc.Type) {
		b.errs.add(sc.at("type"), path+".type", "expected one of %s, found %q", strings.Join(model.NftSetTypes, ", "), sc.Type)
		return nil
	}
	for i, f := range sc.Flags {
		switch f {
		case "interval":
			s.Interval = true
		case "timeout":
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
		// nft takes the pair, but the kernel holds an interval as two
		// elements, a start and an end, and the element path's rule for
		// expiring elements (others' are left alone) works element by
		// element: tried, the end of an interval someone else added with
		// a timeout was planned for deletion.
		b.errs.add(sc.at("flags"), path+".flags", "flags interval and timeout together are not supported (nft takes them): an interval is two kernel elements, a start and an end, and expiring intervals others add are not told apart from stale ones; use one of the two")
		return nil
	}
	if sc.Timeout != nil && (len(sc.Elements) > 0 || sc.ElementsFile != "") {
		// A declared element takes the set's default timeout: the kernel
		// deletes it when that runs out and the next pass adds it back, for
		// ever. An element cannot be added without one (nft's "timeout
		// never" is not in every kernel this runs on).
		key := "elements"
		if !sc.has("elements") {
			key = "elements-file"
		}
		b.errs.add(sc.at(key), path+"."+key, "a set with a default timeout cannot declare elements: the kernel would expire them and every pass add them back; declare them in a set without timeout (flags: [timeout] alone keeps the elements it declares and lets others add elements with a timeout), or drop timeout")
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
