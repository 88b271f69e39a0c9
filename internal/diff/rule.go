package diff

import (
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
		w := &c.d.Rules[i]
		k := w.Key()
		want[k] = true
		if ours[k] {
			continue
		}
		if proto, ok := foreign[k]; ok {
			c.conflict("rule %s exists with protocol %d, not ours (%d); remove it or change the file's rule", k, proto, c.d.Protocol)
			continue
		}
		c.add(Op{Action: Create, Kind: KindRule, ID: k.String(), Rule: w})
	}
	for i := range c.a.Rules {
		h := &c.a.Rules[i]
		if h.Protocol == c.d.Protocol && !want[h.Key()] {
			c.del(Op{Action: Delete, Kind: KindRule, ID: h.Key().String(), Rule: h})
		}
	}
}
