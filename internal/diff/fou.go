package diff

import (
	"github.com/netreconcile/netreconcile/internal/model"
)

// fou: a port that exists already with the same protocol satisfies the file
// whoever opened it; only ports marked Owned (recorded by netreconcile when it
// opened them) are changed or deleted.
func (c *computer) fou() {
	have := map[model.FouKey]*model.FouPort{}
	for i := range c.a.FouPorts {
		have[c.a.FouPorts[i].Key()] = &c.a.FouPorts[i]
	}
	want := map[model.FouKey]bool{}
	for i := range c.d.FouPorts {
		w := &c.d.FouPorts[i]
		want[w.Key()] = true
		h, ok := have[w.Key()]
		switch {
		case !ok:
			c.add(Op{Action: Create, Kind: KindFou, ID: w.Key().String(), Summary: w.String(), Fou: w})
		case h.IPProto != w.IPProto || h.GUE != w.GUE:
			if c.holds(KindFou, w.Key().String()) {
				continue
			}
			if !h.Owned {
				c.conflict("%s exists with %s, opened by someone else", w.Key(), h)
				continue
			}
			c.add(Op{Action: Replace, Kind: KindFou, ID: w.Key().String(), Summary: w.String(), Reason: "was " + h.String(), Fou: w})
		}
	}
	for i := range c.a.FouPorts {
		h := &c.a.FouPorts[i]
		if h.Owned && !want[h.Key()] {
			c.del(Op{Action: Delete, Kind: KindFou, ID: h.Key().String(), Fou: h})
		}
	}
}
