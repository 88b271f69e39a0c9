package desired

import (
	"net/netip"
	"strconv"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The schema of this kind (see conf.go): what the file holds, before the
// builder below checks it.

type ruleConf struct {
	Meta
	Priority          *int    `yaml:"priority" schema:"required,limits=rulePriority"`
	Family            *Family `yaml:"family"`
	From              *Prefix `yaml:"from"`
	To                *Prefix `yaml:"to"`
	FwMark            *Mark   `yaml:"fwmark"`
	IIF               string  `yaml:"iif"`
	OIF               string  `yaml:"oif"`
	Not               bool    `yaml:"not"`
	Action            string  `yaml:"action" schema:"enum=ruleActions"`
	Table             *Table  `yaml:"table"`
	SuppressPrefixLen *int    `yaml:"suppress-prefixlength" schema:"limits=suppressPrefixLen"`
}

func (b *builder) rule(i int, rc *ruleConf) {
	// The path is only built for an error, as for routes.
	path := func() string { return "rules[" + strconv.Itoa(i) + "]" }
	if rc.Priority == nil {
		// The kernel would pick one, and the rule's identity would then depend on
		// what else is in the list: refuse rather than guess.
		b.errs.addLazy(rc.Pos, func() (string, string) {
			return path() + ".priority", "missing; expected a rule priority from 1 to 32765 or 32768 to 4294967295"
		})
		return
	}
	for _, p := range []*Prefix{rc.From, rc.To} {
		if p != nil && !p.Default && !p.P.IsValid() {
			return // the decoder reported the bad prefix
		}
	}
	prio := *rc.Priority
	for _, r := range model.ReservedRulePriorities {
		if prio == r {
			b.errs.add(rc.at("priority"), path()+".priority", "priority %d belongs to the kernel's default rules (0 local, 32766 main, 32767 default); choose another", prio)
			return
		}
	}
	if prio < 0 || prio > 1<<32-1 {
		b.errs.add(rc.at("priority"), path()+".priority", "expected a rule priority from 1 to 4294967295, found %d", prio)
		return
	}
	action := model.RuleLookup
	if rc.Action != "" || rc.has("action") {
		a, ok := model.RuleActionNames[rc.Action]
		if !ok {
			b.errs.add(rc.at("action"), path()+".action", "expected lookup, blackhole, unreachable or prohibit; found %q", rc.Action)
			return
		}
		action = a
	}
	r := model.Rule{Priority: prio, Action: action, IIF: rc.IIF, OIF: rc.OIF, Invert: rc.Not, SuppressPrefixLen: -1, Origin: rc.Pos.String()}
	switch {
	case action == model.RuleLookup && rc.Table == nil:
		b.errs.add(rc.Pos, path()+".table", "missing; a lookup rule needs the table to look up")
		return
	case action == model.RuleLookup:
		r.Table = rc.Table.N
	case rc.Table != nil:
		b.errs.add(rc.at("table"), path()+".table", "a %s rule takes no table", rc.Action)
	}
	if rc.FwMark != nil {
		r.FwMark, r.FwMask = rc.FwMark.Value, 0xffffffff
		if rc.FwMark.HasMask {
			r.FwMask = rc.FwMark.Mask
		}
		// A mask of 0 matches every packet: the kernel stores "x/0" as
		// it is and "0/0" as no mark at all, and a delete of either would
		// match rules with any mark. Refused, so the file says what it
		// means (no fwmark).
		if rc.FwMark.HasMask && rc.FwMark.Mask == 0 {
			b.errs.add(rc.at("fwmark"), path()+".fwmark", "a mask of 0 matches every packet; leave fwmark out, or give a non-zero mask like 0x40/0xff")
		}
	}
	for _, n := range []struct{ key, name string }{{"iif", rc.IIF}, {"oif", rc.OIF}} {
		if n.name != "" && !validIfname(n.name) {
			b.errs.add(rc.at(n.key), path()+"."+n.key, "%q is not a valid interface name; expected %s", n.name, ifnameRule)
		}
	}
	if rc.SuppressPrefixLen != nil {
		if *rc.SuppressPrefixLen < 0 || *rc.SuppressPrefixLen > 128 {
			b.errs.add(rc.at("suppress-prefixlength"), path()+".suppress-prefixlength", "expected 0 to 128, found %d", *rc.SuppressPrefixLen)
		}
		r.SuppressPrefixLen = *rc.SuppressPrefixLen
	}
	// Family: from the prefixes when given, else from family, else both.
	v4, v6 := true, true
	for _, p := range []struct {
		key string
		p   *Prefix
	}{{"from", rc.From}, {"to", rc.To}} {
		if p.p == nil || p.p.Default {
			continue
		}
		if p.p.P.Addr().Is4() {
			v6 = false
		} else {
			v4 = false
		}
	}
	if !v4 && !v6 {
		b.errs.add(rc.at("to"), path()+".to", "from and to are of different families")
		return
	}
	if rc.Family != nil {
		if (rc.Family.V4 && !v4) || (rc.Family.V6 && !v6) {
			b.errs.add(rc.at("family"), path()+".family", "does not match the family of from/to")
			return
		}
		v4, v6 = rc.Family.V4, rc.Family.V6
	}
	for _, fam6 := range []bool{false, true} {
		if fam6 && !v6 || !fam6 && !v4 {
			continue
		}
		x := r
		x.IPv6 = fam6
		// A /0 prefix is the kernel's "all": it stores no FRA_SRC/FRA_DST
		// for a length of 0, so it is the rule without from/to, and the
		// identity must be that one or the rule never reads back equal.
		if rc.From != nil && !rc.From.Default && rc.From.P.Bits() > 0 {
			x.From = rc.From.P
		}
		if rc.To != nil && !rc.To.Default && rc.To.P.Bits() > 0 {
			x.To = rc.To.P
		}
		if prev, dup := b.ruleAt[x.Key()]; dup {
			b.errs.add(rc.Pos, path(), "rule %s is declared twice (first at %s)", x.Key(), prev)
			continue
		}
		// The kernel compares no flags when it looks for an existing rule
		// (rule_exists in net/core/fib_rules.c): "not from X" and "from X"
		// of one priority are one rule to it, and the second add fails
		// with "file exists" on every pass.
		other := x.Key()
		other.Invert = !other.Invert
		if prev, dup := b.ruleAt[other]; dup {
			b.errs.add(rc.Pos, path(), "rule %s differs from the rule at %s only in not; the kernel takes them for the same rule: give one another priority", x.Key(), prev)
			continue
		}
		// Nor from and to where the rule being added leaves them unset
		// (model.Rule.AddClashes): "from all" of one priority and action
		// is the rule "to X" to it, whichever comes second.
		if prev, clash := b.ruleClash(&x, rc.Pos); clash {
			b.errs.add(rc.Pos, path(), "rule %s and the rule at %s differ only in from or to, which one of them leaves unset; the kernel takes the one without for the other (file exists): give one another priority", x.Key(), prev)
			continue
		}
		b.ruleAt[x.Key()] = rc.Pos
		b.st.Rules = append(b.st.Rules, x)
	}
}

// clashIndex holds the from/to of the rules of one model.Rule.ClashGroup,
// so that a clash is found without comparing every pair (a file may hold
// many rules of one priority).
type clashIndex struct {
	pairs    map[[2]netip.Prefix]Pos // from and to, the zero Prefix for unset
	from, to map[netip.Prefix]Pos    // a rule that sets this from (to)
	any      *Pos                    // the first rule of the group
}

// ruleClash records x and reports a declared rule the kernel would take x
// for, or x for it (model.Rule.AddClashes): one whose from and to are those
// of x where it sets them, and x's where x sets them.
func (b *builder) ruleClash(x *model.Rule, at Pos) (Pos, bool) {
	norm := func(p netip.Prefix) netip.Prefix {
		if !p.IsValid() || p.Bits() == 0 {
			return netip.Prefix{}
		}
		return p
	}
	f, t := norm(x.From), norm(x.To)
	g := x.ClashGroup()
	if b.ruleClashes == nil {
		b.ruleClashes = map[model.RuleKey]*clashIndex{}
	}
	ix := b.ruleClashes[g]
	if ix == nil {
		ix = &clashIndex{pairs: map[[2]netip.Prefix]Pos{}, from: map[netip.Prefix]Pos{}, to: map[netip.Prefix]Pos{}}
		b.ruleClashes[g] = ix
	}
	var zero netip.Prefix
	// Rules with fewer selectors than x, on x's values.
	for _, k := range [][2]netip.Prefix{{f, zero}, {zero, t}, {zero, zero}} {
		if k != [2]netip.Prefix{f, t} {
			if p, ok := ix.pairs[k]; ok {
				return p, true
			}
		}
	}
	// Rules with more selectors than x, on x's values.
	switch {
	case f == zero && t == zero && ix.any != nil:
		return *ix.any, true
	case f == zero && t != zero:
		if p, ok := ix.to[t]; ok && ix.pairs[[2]netip.Prefix{zero, t}] != p {
			return p, true
		}
	case f != zero && t == zero:
		if p, ok := ix.from[f]; ok && ix.pairs[[2]netip.Prefix{f, zero}] != p {
			return p, true
		}
	}
	if _, ok := ix.pairs[[2]netip.Prefix{f, t}]; !ok {
		ix.pairs[[2]netip.Prefix{f, t}] = at
	}
	if f != zero {
		if _, ok := ix.from[f]; !ok {
			ix.from[f] = at
		}
	}
	if t != zero {
		if _, ok := ix.to[t]; !ok {
			ix.to[t] = at
		}
	}
	if ix.any == nil {
		ix.any = &at
	}
	return Pos{}, false
}
