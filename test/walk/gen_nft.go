package walk

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
)

// The walk's sets, maps and objects in nft's words: keys of marks, which
// every family matches (meta mark), so each table may hold them. Each key
// of docs/config.md's sets.NAME.typeof... is set, changed and removed on
// an object that stays; a rule of the table uses each object where one is
// drawn.

// nftWordsUse are the rules that use each of the walk's sets, maps (by
// NSet.Kind) and objects in nft's words.
var nftWordsUse = map[string][2]string{
	"nd": {"meta mark @nd accept", "meta priority @nd accept"},
	"vm": {"meta mark vmap @vm", "meta priority vmap @vm"},
	"dm": {"meta mark set meta mark map @dm", "meta mark set meta priority map @dm"},
	"oc": {`counter name "oc"`},
	"oq": {`quota name "oq"`},
	"ol": {`limit name "ol" accept`},
}

// objDecls are the declarations each object is drawn from.
var objDecls = map[string][]string{
	"oc": {"counter"},
	"oq": {"quota 100 mbytes", "quota over 25 mbytes", "quota 1000 kbytes"},
	"ol": {"limit rate 10/second", "limit rate over 5/minute burst 3 packets", "limit rate 1 mbytes/second"},
}

// nsetElements are the elements each set or map is drawn from, by kind;
// ranges go in an interval set only.
var nsetElements = map[string][2][]string{
	"nd": {{"0x00000020", "0x00000040", "0x00000060", "0x00000100-0x000001ff"}, {"1:2", "1:3", "2:1"}},
	"vm": {{"0x00000020 : accept", "0x00000030 : drop", "0x00000050 : continue", "0x00000100-0x000001ff : accept", "0x00000060 : jump helper", "0x00000070 : goto helper"},
		{"1:2 : accept", "1:3 : drop", "1:4 : jump helper", "2:2 : goto helper"}},
	"dm": {{"0x00000020 : 0x00000021", "0x00000040 : 0x00000041", "0x00000100-0x000001ff : 0x00000007"}, {"1:2 : 0x00000021", "2:1 : 0x00000041"}},
}

// nsetTypes are each one's type and typeof, by kind.
var nsetTypes = map[string][2][2]string{
	"nd": {{"mark", "meta mark"}, {"classid", "meta priority"}},
	"vm": {{"mark : verdict", "meta mark : verdict"}, {"classid : verdict", "meta priority : verdict"}},
	"dm": {{"mark : mark", "meta mark : meta mark"}, {"classid : mark", "meta priority : meta mark"}},
}

func (g *Gen) w() *rand.Rand {
	if g.W == nil {
		g.W = rand.New(rand.NewSource(1))
	}
	return g.W
}

func (g *Gen) wchance(p float64) bool { return g.w().Float64() < p }

func (g *Gen) wpick(s []string) string { return s[g.w().Intn(len(s))] }

func (s *NSet) has(flag string) bool { return slices.Contains(s.Flags, flag) }

// declared reports whether the set is one nft declares: a set of type mark
// with no key of nft's own is netreconcile's (docs/config.md).
func (s *NSet) declared() bool {
	return s.Map || s.Typeof != "" || s.Size != 0 || s.Policy == "memory" || s.Counter || s.Merge || s.Comment != "" ||
		slices.ContainsFunc(s.Flags, func(f string) bool { return f != "interval" && f != "timeout" })
}

func (t *Table) nset(name string) (int, *NSet) {
	for i, s := range t.NSets {
		if s.Name == name {
			return i, s
		}
	}
	return -1, nil
}

func (t *Table) obj(name string) (int, *Obj) {
	for i, o := range t.Objects {
		if o.Name == name {
			return i, o
		}
	}
	return -1, nil
}

// changeNftWords adds, changes or removes one of a table's sets, maps and
// objects in nft's words, or one key of one.
func (g *Gen) changeNftWords(c *Config) string {
	t := c.Tables[g.w().Intn(len(c.Tables))]
	d := g.changeTableWords(c, t)
	if _, vm := t.nset("vm"); vm != nil && g.wchance(0.7) && slices.ContainsFunc(append(slices.Clone(vm.Elements), vm.FileElements...), func(e string) bool { return len(jumpTargets(e)) > 0 }) {
		// The map's jumps go to the regular chain helper: made where the
		// table lacks it, else they are dropped (repairTable).
		if !slices.ContainsFunc(t.Chains, func(ch *Chain) bool { return ch.Name == "helper" }) {
			t.Chains = append(t.Chains, &Chain{Name: "helper", Rules: []string{"counter"}})
			d += "; add chain helper to " + t.Family + " " + t.Name + " for vm's jumps"
		}
	}
	return d
}

// changeTableWords is changeNftWords on table t.
func (g *Gen) changeTableWords(c *Config, t *Table) string {
	id := t.Family + " " + t.Name
	if g.wchance(0.3) {
		return g.changeLinkRules(c, t, id)
	}
	if g.wchance(0.3) {
		return g.changeObjects(t, id)
	}
	name := g.wpick([]string{"nd", "vm", "dm"})
	i, s := t.nset(name)
	if s == nil {
		s = &NSet{Name: name, Map: name != "nd", Kind: g.w().Intn(2)}
		g.nsetType(s)
		if g.wchance(0.3) {
			s.Flags = []string{"interval"}
			s.Merge = g.wchance(0.5)
		}
		s.Size = []int{0, 0, 64, 256}[g.w().Intn(4)]
		// performance is nft's default: the kernel holds nothing of it
		// and show prints none.
		s.Policy = g.wpick([]string{"", "", "memory", "memory", "performance"})
		s.Counter = g.wchance(0.3)
		s.Comment = g.wpick([]string{"", "", "walk " + name})
		s.Elements = g.nsetElements(s)
		if name == "dm" && !s.has("interval") && g.wchance(0.3) {
			g.nsetTimeout(s)
		}
		g.nsetFix(s)
		t.NSets = append(t.NSets, s)
		g.use(t, name)
		return "add " + map[bool]string{true: "map ", false: "set "}[s.Map] + name + " to " + id
	}
	switch g.w().Intn(13) {
	case 0:
		t.NSets = append(t.NSets[:i], t.NSets[i+1:]...)
		return "remove " + name + " of " + id
	case 1, 2:
		// type or typeof, and sometimes the kind: the rules that use
		// it change with it.
		old := s.Kind
		if g.wchance(0.5) {
			s.Kind = 1 - s.Kind
		}
		g.nsetType(s)
		if s.Kind != old {
			s.Elements, s.FileElements = g.nsetElements(s), nil
			for _, ch := range t.Chains {
				for j, r := range ch.Rules {
					if r == nftWordsUse[name][old] {
						ch.Rules[j] = nftWordsUse[name][s.Kind]
					}
				}
			}
		}
	case 3:
		// Flags, and the keys that need them: auto-merge an interval
		// set, a timeout the timeout flag.
		if s.has("interval") {
			s.Flags, s.Merge = nil, false
		} else {
			s.Flags = []string{"interval"}
			s.Timeout = ""
		}
		if name == "dm" && !s.has("interval") && g.wchance(0.5) {
			s.Flags = []string{"timeout"}
		}
		s.Elements = g.nsetElements(s)
	case 4:
		s.Size = []int{0, 64, 256, 1024}[g.w().Intn(4)]
	case 5:
		switch {
		case s.Policy != "" && g.wchance(0.6):
			s.Policy = map[string]string{"memory": "performance", "performance": "memory"}[s.Policy]
		default:
			s.Policy = g.wpick([]string{"", "memory", "performance"})
		}
		if s.Policy == "memory" {
			s.Size = 0
		}
	case 6:
		s.Counter = !s.Counter
	case 7:
		if s.has("interval") {
			s.Merge = !s.Merge
		} else {
			s.Flags, s.Timeout, s.Merge = []string{"interval"}, "", true
			s.Elements = g.nsetElements(s)
		}
	case 8:
		switch {
		case s.Comment != "" && g.wchance(0.5):
			s.Comment = map[bool]string{true: "walk " + name + " again", false: "walk " + name}[s.Comment == "walk "+name]
		case s.Comment != "":
			s.Comment = ""
		default:
			s.Comment = g.wpick([]string{"", "walk " + name, "walk " + name + " again"})
		}
	case 9:
		if name != "dm" || s.has("interval") {
			s.Elements = g.nsetElements(s)
			break
		}
		if s.Timeout == "" && g.wchance(0.5) {
			// Interval off: a data map may expire its elements.
			s.Flags, s.Merge = nil, false
		}
		g.nsetTimeout(s)
	case 10:
		// An elements file, or none.
		if s.ElemFile != "" && g.wchance(0.6) {
			s.Elements = append(s.Elements, s.FileElements...)
			s.ElemFile, s.FileElements = "", nil
			break
		}
		s.Timeout = ""
		s.ElemFile = strings.ReplaceAll(id, " ", "-") + "-" + name + map[bool]string{true: ".2", false: ""}[s.ElemFile != "" && !strings.HasSuffix(s.ElemFile, ".2.elems")] + ".elems"
		all := append(s.Elements, s.FileElements...)
		s.Elements, s.FileElements = nil, nil
		for _, e := range all {
			if g.wchance(0.5) {
				s.FileElements = append(s.FileElements, e)
			} else {
				s.Elements = append(s.Elements, e)
			}
		}
	case 11:
		g.use(t, name)
		return "a rule of " + id + " uses " + name
	default:
		s.Elements = g.nsetElements(s)
		if s.ElemFile != "" {
			s.Elements, s.FileElements = s.Elements[:len(s.Elements)/2], s.Elements[len(s.Elements)/2:]
		}
	}
	g.nsetFix(s)
	return fmt.Sprintf("change %s of %s: %s", name, id, strings.Join(s.fields(-1), ", "))
}

// nsetType draws the set's type or typeof of its kind.
func (g *Gen) nsetType(s *NSet) {
	s.Type, s.Typeof = nsetTypes[s.Name][s.Kind][0], ""
	if g.wchance(0.5) {
		s.Type, s.Typeof = "", nsetTypes[s.Name][s.Kind][1]
	}
}

// nsetTimeout gives the data map a default timeout, or takes it away: a
// map whose elements expire declares none (they would expire, and every
// pass add them back).
func (g *Gen) nsetTimeout(s *NSet) {
	if s.Timeout != "" && g.wchance(0.6) {
		s.Timeout = map[string]string{"1h": "90s", "90s": "1h"}[s.Timeout]
		return
	}
	if s.Timeout != "" {
		s.Timeout = ""
		if g.wchance(0.5) {
			s.Flags = nil
		}
		s.Elements = g.nsetElements(s)
		return
	}
	s.Timeout = g.wpick([]string{"1h", "90s"})
	s.Flags = nil
	if g.wchance(0.5) {
		s.Flags = []string{"timeout"}
	}
	s.Elements, s.FileElements, s.ElemFile = nil, nil, ""
}

// nsetFix keeps a set's keys a file the kernel takes: a timeout with no
// declared elements, auto-merge only in an interval set, no size with
// policy memory (the kernel's fixed-size hash of a 32-bit key refuses
// distinct elements: "File exists"), and the set one nft declares.
func (g *Gen) nsetFix(s *NSet) {
	if s.Timeout != "" {
		s.Elements, s.FileElements, s.ElemFile = nil, nil, ""
	}
	if !s.has("interval") || s.Map {
		// nft 1.0.6 takes auto-merge in no map ("syntax error,
		// unexpected auto-merge").
		s.Merge = false
		s.Elements, s.FileElements = withoutRanges(s.Elements), withoutRanges(s.FileElements)
	}
	// An element in both lists is given twice (validation refuses it).
	s.FileElements = slices.DeleteFunc(s.FileElements, func(e string) bool { return slices.Contains(s.Elements, e) })
	if s.ElemFile == "" {
		s.FileElements = nil
	}
	if s.Size != 0 && s.Policy == "memory" {
		s.Policy = ""
	}
	if !s.declared() {
		s.Type, s.Typeof = "", nsetTypes[s.Name][s.Kind][1]
	}
}

func withoutRanges(es []string) []string {
	var out []string
	for _, e := range es {
		if !strings.Contains(e, "-") {
			out = append(out, e)
		}
	}
	return out
}

func (g *Gen) nsetElements(s *NSet) []string {
	var out []string
	for _, e := range nsetElements[s.Name][s.Kind] {
		if g.wchance(0.5) && (s.has("interval") || !strings.Contains(e, "-")) {
			out = append(out, e)
		}
	}
	if s.Timeout != "" {
		return nil
	}
	return out
}

// changeObjects adds, changes or removes one of a table's objects, or all
// of them.
func (g *Gen) changeObjects(t *Table, id string) string {
	if len(t.Objects) > 1 && g.wchance(0.15) {
		t.Objects = nil
		return "remove the objects of " + id
	}
	name := g.wpick([]string{"oc", "oq", "ol"})
	i, o := t.obj(name)
	switch {
	case o == nil:
		t.Objects = append(t.Objects, &Obj{Name: name, Decl: g.wpick(objDecls[name])})
		g.use(t, name)
		return "add object " + name + " to " + id
	case g.wchance(0.3) || len(objDecls[name]) == 1:
		t.Objects = append(t.Objects[:i], t.Objects[i+1:]...)
		return "remove object " + name + " of " + id
	}
	o.Decl = g.wpick(objDecls[name])
	return "object " + name + " of " + id + ": " + o.Decl
}

// use adds, sometimes, a rule that uses a set, map or object to a chain of
// the table (not the regular chain helper).
func (g *Gen) use(t *Table, name string) {
	if len(t.Chains) == 0 || g.wchance(0.3) {
		return
	}
	ch := t.Chains[g.w().Intn(len(t.Chains))]
	k := 0
	if _, s := t.nset(name); s != nil {
		k = s.Kind
	}
	ch.Rules = append(ch.Rules, nftWordsUse[name][k])
}

// linkRules are rules that name a link of the file, %s its name: iif and
// oif compile to the link's index where the rules are applied, iifname and
// oifname match its name. A link the file renames or drops takes its rules
// with it (repairTable), and a link it recreates gets another index, which
// the rules must follow.
var linkRules = []string{
	`iif "%s" accept`,
	`oif "%s" counter accept`,
	`meta iif "%s" counter drop`,
	`meta oif != "%s" counter`,
	`iif { "%s", "lo" } counter accept`,
	`iifname "%s" accept`,
	`oifname "%s" counter drop`,
	`iif "%s" jump helper`,
	`iifname vmap { "%s" : jump helper, "lo" : accept }`,
	`oif vmap { "%s" : goto helper, "lo" : continue }`,
}

// changeLinkRules adds a rule naming one of the file's links to a chain of
// the table, or removes one.
func (g *Gen) changeLinkRules(c *Config, t *Table, id string) string {
	if len(t.Chains) == 0 {
		return "noop"
	}
	ch := t.Chains[g.w().Intn(len(t.Chains))]
	for i, r := range ch.Rules {
		if linkRuleName(r) != "" && g.wchance(0.3) {
			ch.Rules = append(ch.Rules[:i:i], ch.Rules[i+1:]...)
			return "remove rule " + r + " of " + id + " chain " + ch.Name
		}
	}
	// Not lo, which the rules' sets and maps name beside it.
	names := slices.DeleteFunc(c.LinkNames(), func(n string) bool { return n == "lo" })
	if len(names) == 0 {
		return "noop"
	}
	r := fmt.Sprintf(g.wpick(linkRules), g.wpick(names))
	ch.Rules = append(ch.Rules, r)
	return "add rule " + r + " to " + id + " chain " + ch.Name
}

// linkRuleName is the link a rule of linkRules names, or "".
func linkRuleName(r string) string {
	for _, f := range linkRules {
		pre, post, _ := strings.Cut(f, "%s")
		if strings.HasPrefix(r, pre) && strings.HasSuffix(r, post) && len(r) > len(pre)+len(post) {
			return r[len(pre) : len(r)-len(post)]
		}
	}
	return ""
}

// WordsSeed turns a walk's seed into the seed of its W sequence.
const WordsSeed = 0x6e667477
