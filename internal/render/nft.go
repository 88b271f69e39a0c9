package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

func renderNFT(ts []model.NftTable) *yaml.Node {
	tables := mapping()
	for _, t := range ts {
		tm := mapping()
		sets, maps := mapping(), mapping()
		if len(t.Sets) > 0 {
			for _, s := range t.Sets {
				if s.Raw != nil {
					// A set nft declares, as nft lists it.
					if m, isMap := listedSet(&s); isMap {
						add(maps, s.Name, m)
					} else {
						add(sets, s.Name, m)
					}
					continue
				}
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
		}
		if len(sets.Content) > 0 {
			add(tm, "sets", sets)
		}
		if len(maps.Content) > 0 {
			add(tm, "maps", maps)
		}
		if len(t.Objects) > 0 {
			objs := mapping()
			for _, o := range t.Objects {
				d := o.Decl
				if d == "" {
					d = "# not listed by nft"
				}
				add(objs, o.Name, yscalar(d))
			}
			add(tm, "objects", objs)
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

// listedSet renders a set nft declares from nft's listing of it; it
// reports whether it is a map.
// dynsetSize is the size the kernel gives a set a rule fills without one.
const dynsetSize = "65535"

func listedSet(s *model.NftSet) (*yaml.Node, bool) {
	l := s.Listed
	m := mapping()
	if l == nil {
		add(m, "type", yscalar("# not listed by nft"))
		return m, s.Map
	}
	if l.Typeof != "" {
		add(m, "typeof", yscalar(l.Typeof))
	} else {
		add(m, "type", yscalar(l.Type))
	}
	if len(l.Flags) > 0 {
		fs := sequence()
		fs.Style = yaml.FlowStyle
		for _, f := range l.Flags {
			fs.Content = append(fs.Content, yscalar(f))
		}
		add(m, "flags", fs)
	}
	if l.Timeout != "" {
		add(m, "timeout", yscalar(goDuration(l.Timeout)))
	}
	// The kernel gives a set that a rule fills from the packet path a size
	// of 65535 when it has none (the reader takes it as none): declared,
	// the size makes the kernel pick a set type that the rule cannot
	// update, and nft refuses the rule (EOPNOTSUPP).
	if l.Size != "" && !(s.FromPackets && l.Size == dynsetSize) {
		add(m, "size", yscalar(l.Size))
	}
	if l.Policy != "" {
		add(m, "policy", yscalar(l.Policy))
	}
	if l.Counter {
		add(m, "counter", yscalar("true"))
	}
	if l.AutoMerge {
		add(m, "auto-merge", yscalar("true"))
	}
	if l.Comment != "" {
		add(m, "comment", yscalar(strings.Trim(l.Comment, "\"")))
	}
	es := sequence()
	es.Style = yaml.FlowStyle
	for _, e := range l.Elements {
		if l.Timeout != "" || expires(e) {
			// The kernel deletes it when its timeout (the set's default
			// or its own) runs out: it is not the file's to declare
			// (docs/config.md, "State the kernel changes by itself").
			continue
		}
		es.Content = append(es.Content, yscalar(e))
	}
	add(m, "elements", es)
	if len(l.Other) > 0 {
		// No key of the file stands for these: applied, the set is made
		// without them.
		m.FootComment = "nft lists also: " + strings.Join(l.Other, "; ")
	}
	return m, l.Map
}

// expires reports whether an element as nft lists it has a timeout of
// its own ("10.0.0.1 timeout 30s", and "expires 29s904ms" in a listing
// that is not stateless): either word outside a string.
func expires(elem string) bool {
	quoted := false
	for _, w := range strings.Fields(elem) {
		if strings.Count(w, "\"")%2 == 1 {
			quoted = !quoted
			continue
		}
		if !quoted && (w == "timeout" || w == "expires") {
			return true
		}
	}
	return false
}

// goDuration turns nft's way of writing a duration ("1d2h", "500ms") into
// Go's, which the file reads.
func goDuration(s string) string {
	var d time.Duration
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"ms", time.Millisecond}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return s
		}
		n, _ := strconv.Atoi(rest[:i])
		rest = rest[i:]
		found := false
		for _, u := range units {
			if strings.HasPrefix(rest, u.suffix) {
				d += time.Duration(n) * u.unit
				rest = rest[len(u.suffix):]
				found = true
				break
			}
		}
		if !found {
			return s
		}
	}
	return d.String()
}
