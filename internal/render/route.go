package render

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// routeTakesDev says whether the file may give the route a via and a dev:
// only unicast and local routes (desired/route.go). The kernel hangs IPv6
// blackhole, unreachable, prohibit and throw routes on lo, which a file
// cannot say.
func routeTakesDev(r *model.Route) bool {
	return r.Type == model.RouteUnicast || r.Type == model.RouteLocal || r.Type == 0
}

func renderRoute(r *model.Route) *yaml.Node {
	m := flow()
	to := r.Dst.String()
	if r.Dst.Bits() == 0 {
		to = "default"
	}
	add(m, "to", yscalar(to))
	if r.Dst.Bits() == 0 {
		add(m, "family", yscalar(famWord(r.IsIPv6())))
	}
	if r.Type != model.RouteUnicast && r.Type != 0 {
		add(m, "type", yscalar(model.RouteTypeName(int(r.Type))))
	}
	if r.Gateway.IsValid() && routeTakesDev(r) {
		add(m, "via", yscalar(r.Gateway.String()))
	}
	if r.Dev != "" && routeTakesDev(r) {
		add(m, "dev", yscalar(r.Dev))
	}
	if len(r.NextHops) > 0 {
		hs := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, h := range r.NextHops {
			n := flow()
			if h.Gateway.IsValid() {
				add(n, "via", yscalar(h.Gateway.String()))
			}
			if h.Dev != "" {
				add(n, "dev", yscalar(h.Dev))
			}
			if h.Weight != 1 {
				add(n, "weight", yscalar(strconv.Itoa(h.Weight)))
			}
			hs.Content = append(hs.Content, n)
		}
		add(m, "nexthops", hs)
	}
	if r.Src.IsValid() {
		add(m, "src", yscalar(r.Src.String()))
	}
	add(m, "table", yscalar(model.TableName(int(r.Table))))
	if r.Metric != 0 {
		add(m, "metric", yscalar(strconv.FormatUint(uint64(r.Metric), 10)))
	}
	if r.TOS != 0 {
		add(m, "tos", yscalar(fmt.Sprintf("%#x", r.TOS)))
	}
	if !r.IsIPv6() {
		add(m, "scope", yscalar(model.ScopeName(int(r.Scope))))
	}
	if r.OnLink {
		add(m, "onlink", yscalar("true"))
	}
	if r.MTU != 0 {
		add(m, "mtu", yscalar(strconv.FormatUint(uint64(r.MTU), 10)))
	}
	if r.Protocol != 0 {
		m.HeadComment = ""
		m.LineComment = fmt.Sprintf("proto %d", r.Protocol)
	}
	return m
}
