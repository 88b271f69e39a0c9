package render

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// renderSysctls writes sysctls as a mapping of keys to values: the full
// keys at the top of the file, a link's short ones (ipv4.rp_filter) under
// it (perLink).
func renderSysctls(ss []model.Sysctl, perLink bool) *yaml.Node {
	m := mapping()
	for _, s := range ss {
		if model.SysctlSecret(s.Key) {
			// Never printed, and no file declares one: one the ledger
			// owns from before is given back by the next apply.
			continue
		}
		k := s.Key
		if perLink {
			_, k, _, _ = model.SysctlLink(s.Key)
		}
		add(m, k, sysctlValue(s.Value))
	}
	return m
}

// sysctlValue is a value as the file reads it back: a decimal number
// plain, anything else quoted (a plain 0x10, true or 1.5 would be read as
// another type, which the file refuses).
func sysctlValue(v string) *yaml.Node {
	n := yscalar(v)
	t := strings.TrimPrefix(v, "-")
	if t == "" || strings.Trim(t, "0123456789") != "" || (len(t) > 1 && t[0] == '0') {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// splitSysctls separates the global keys from the per-link ones, by link.
func splitSysctls(ss []model.Sysctl) (global []model.Sysctl, byLink map[string][]model.Sysctl) {
	byLink = map[string][]model.Sysctl{}
	for _, s := range ss {
		if s.Link != "" {
			byLink[s.Link] = append(byLink[s.Link], s)
		} else {
			global = append(global, s)
		}
	}
	return global, byLink
}
