package render

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

func renderNFT(ts []model.NftTable) *yaml.Node {
	tables := mapping()
	for _, t := range ts {
		tm := mapping()
		if len(t.Sets) > 0 {
			sets := mapping()
			for _, s := range t.Sets {
				sm := mapping()
				add(sm, "type", yscalar(s.Type))
				var flags []string
				if s.Interval {
					flags = append(flags, "interval")
				}
				if s.Timeout && s.DefaultTimeout == 0 {
					flags = append(flags, "timeout")
				}
				if len(flags) > 0 {
					fs := sequence()
					fs.Style = yaml.FlowStyle
					for _, f := range flags {
						fs.Content = append(fs.Content, yscalar(f))
					}
					add(sm, "flags", fs)
				}
				if s.DefaultTimeout != 0 {
					add(sm, "timeout", yscalar(s.DefaultTimeout.String()))
				}
				es := sequence()
				es.Style = yaml.FlowStyle
				for _, e := range s.Elems {
					es.Content = append(es.Content, yscalar(model.FormatNftElem(s.Type, s.Interval, e)))
				}
				add(sm, "elements", es)
				add(sets, s.Name, sm)
			}
			add(tm, "sets", sets)
		}
		if len(t.Chains) > 0 {
			chains := mapping()
			for _, c := range t.Chains {
				cm := mapping()
				if c.Base() {
					add(cm, "type", yscalar(c.Type))
					add(cm, "hook", yscalar(c.Hook))
					add(cm, "priority", yscalar(strconv.Itoa(c.Priority)))
					add(cm, "policy", yscalar(c.Policy))
					if c.Device != "" {
						add(cm, "device", yscalar(c.Device))
					}
				}
				rs := sequence()
				for _, r := range c.Rules {
					// show fills the text with the rule as nft lists it;
					// a rule it could not list keeps a comment.
					n := yscalar(r.Text)
					if r.Text == "" {
						n = yscalar(fmt.Sprintf("# handle %d: not listed by nft", r.Handle))
					}
					rs.Content = append(rs.Content, n)
				}
				add(cm, "rules", rs)
				add(chains, c.Name, cm)
			}
			add(tm, "chains", chains)
		}
		add(tables, t.Key().String(), tm)
	}
	return tables
}
