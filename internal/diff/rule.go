package diff

import (
	"sort"

	"github.com/netreconcile/netreconcile/internal/model"
)

// rules: a rule's identity is all of it, so a rule is only ever added or
// deleted. The kernel lets identical rules of different protocols coexist;
// a foreign rule identical to one the file declares is a conflict rather than
// a silent duplicate.
func (c *computer) rules() {
	ours := map[model.RuleKey]bool{}
	foreign := map[model.RuleKey]int{}
	for i := range c.a.Rules {
		r := &c.a.Rules[i]
		if r.Protocol == c.d.Protocol {
			ours[r.Key()] = true
		} else {
			foreign[r.Key()] = r.Protocol
		}
	}
	want := map[model.RuleKey]bool{}
	for i := range c.d.Rules {
		want[c.d.Rules[i].Key()] = true
	}
	// A rule the kernel would take a new one for (model.Rule.AddClashes:
	// from and to are compared only where the new rule sets them) makes
	// its add fail with "file exists": someone else's is a conflict; a
	// stale one of ours is deleted before the creates, not after.
	byGroup := map[model.RuleKey][]*model.Rule{}
	for i := range c.a.Rules {
		r := &c.a.Rules[i]
		byGroup[r.ClashGroup()] = append(byGroup[r.ClashGroup()], r)
	}
	early := map[*model.Rule]bool{}
	var earlyOrder []*model.Rule
	for i := range c.d.Rules {
		w := &c.d.Rules[i]
		k := w.Key()
		if ours[k] {
			continue
		}
		if proto, ok := foreign[k]; ok {
			c.conflict("rule %s exists with protocol %d, not ours (%d); remove it or change the file's rule", k, proto, c.d.Protocol)
			continue
		}
		clash := false
		for _, o := range byGroup[w.ClashGroup()] {
			if o.Key() == k || !w.AddClashes(o) {
				continue
			}
			if o.Protocol != c.d.Protocol {
				c.conflict("rule %s cannot be added: the kernel takes it for the rule %s of protocol %d, not ours (%d), which differs only in from or to that the new rule leaves unset; remove that rule or give the file's another priority", k, o.Key(), o.Protocol, c.d.Protocol)
				clash = true
				break
			}
			if !want[o.Key()] && !early[o] {
				early[o] = true
				earlyOrder = append(earlyOrder, o)
			}
		}
		if clash {
			continue
		}
		c.add(Op{Action: Create, Kind: KindRule, ID: k.String(), Rule: w})
	}
	// The early deletes go before every create of the plan's rules.
	if len(earlyOrder) > 0 {
		var pre []Op
		for _, o := range earlyOrder {
			pre = append(pre, Op{Action: Delete, Kind: KindRule, ID: o.Key().String(), Reason: "a new rule of the same priority would be taken for it", Rule: o})
		}
		c.insertBeforeRuleCreates(pre)
	}
	// Stale rules, and every rule of ours that the kernel could delete in
	// their place. A delete request cannot name one rule: unset selectors
	// are wildcards (see model.Rule.DeleteMatches), and the kernel deletes
	// the first match in its list, whose order the diff does not know. So
	// a kept rule that a stale rule's delete matches is deleted too and
	// added again after, and the deletes run from the most specific
	// request to the least: by then every rule a request could match but
	// its own is gone, and each delete takes the rule it names.
	var dels []*model.Rule
	gone := map[*model.Rule]bool{}
	for i := range c.a.Rules {
		h := &c.a.Rules[i]
		if h.Protocol == c.d.Protocol && !want[h.Key()] {
			dels = append(dels, h)
			gone[h] = true
		}
	}
	// The early ones are deleted already, but what their delete could take
	// in their place is still found below.
	var readd []*model.Rule
	for q := 0; q < len(dels); q++ {
		x := dels[q]
		for i := range c.a.Rules {
			o := &c.a.Rules[i]
			if gone[o] || o.Protocol != c.d.Protocol || !x.DeleteMatches(o) {
				continue
			}
			gone[o] = true
			dels = append(dels, o)
			readd = append(readd, o)
		}
	}
	sort.SliceStable(dels, func(i, j int) bool { return dels[i].Selectors() > dels[j].Selectors() })
	for _, h := range dels {
		if early[h] {
			continue
		}
		c.del(Op{Action: Delete, Kind: KindRule, ID: h.Key().String(), Rule: h})
	}
	// The re-adds go with the deletes (c.del keeps their order), after
	// them; they take the desired rule, which carries no actual protocol.
	for _, o := range readd {
		w := o
		for i := range c.d.Rules {
			if c.d.Rules[i].Key() == o.Key() {
				w = &c.d.Rules[i]
			}
		}
		c.del(Op{Action: Create, Kind: KindRule, ID: o.Key().String(), Rule: w})
	}
}

// insertBeforeRuleCreates puts ops in the plan before its first rule
// create (at the end when it has none yet).
func (c *computer) insertBeforeRuleCreates(ops []Op) {
	i := len(c.plan.Ops)
	for j, op := range c.plan.Ops {
		if op.Kind == KindRule && op.Action == Create {
			i = j
			break
		}
	}
	c.plan.Ops = append(c.plan.Ops[:i], append(ops, c.plan.Ops[i:]...)...)
}
