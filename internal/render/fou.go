package render

import (
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// renderFou writes the FoU ports, one flow mapping each.
func renderFou(ports []model.FouPort) *yaml.Node {
	seq := sequence()
	for _, f := range ports {
		m := flow()
		add(m, "port", yscalar(strconv.Itoa(int(f.Port))))
		if f.GUE {
			add(m, "gue", yscalar("true"))
		} else {
			add(m, "ipproto", yscalar(strconv.Itoa(int(f.IPProto))))
		}
		add(m, "family", yscalar(famWord(f.IPv6)))
		seq.Content = append(seq.Content, m)
	}
	return seq
}
