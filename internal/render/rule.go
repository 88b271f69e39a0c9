package render

import (
	"fmt"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

func renderRule(r *model.Rule) *yaml.Node {
	m := flow()
	add(m, "priority", yscalar(strconv.Itoa(r.Priority)))
	add(m, "family", yscalar(famWord(r.IPv6)))
	if r.Invert {
		add(m, "not", yscalar("true"))
	}
	if r.From.IsValid() {
		add(m, "from", yscalar(r.From.String()))
	}
	if r.To.IsValid() {
		add(m, "to", yscalar(r.To.String()))
	}
	if r.FwMark != 0 || r.FwMask != 0 {
		v := fmt.Sprintf("%#x", r.FwMark)
		if r.FwMask != 0xffffffff {
			v += fmt.Sprintf("/%#x", r.FwMask)
		}
		add(m, "fwmark", yscalar(v))
	}
	if r.IIF != "" {
		add(m, "iif", yscalar(r.IIF))
	}
	if r.OIF != "" {
		add(m, "oif", yscalar(r.OIF))
	}
	if r.Action == model.RuleLookup {
		add(m, "table", yscalar(model.TableName(r.Table)))
	} else {
		names := make([]string, 0)
		for n, v := range model.RuleActionNames {
			if v == r.Action {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			add(m, "action", yscalar(names[0]))
		} else {
			add(m, "action", yscalar(strconv.Itoa(r.Action)))
		}
	}
	if r.SuppressPrefixLen >= 0 {
		add(m, "suppress-prefixlength", yscalar(strconv.Itoa(r.SuppressPrefixLen)))
	}
	if r.Protocol != 0 {
		m.LineComment = fmt.Sprintf("proto %d", r.Protocol)
	}
	return m
}
