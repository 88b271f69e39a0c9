package render

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/model"
)

// PoolStatus is what a pool holds now, printed by show as comments beside its definition.
type PoolStatus struct {
	Usage  ipam.Usage
	Blocks []ipam.Block
}

// Pools writes the pools section of a configuration, with every default spelled out and
// each pool's held blocks and allocation count as comments. status is by pool name; a pool
// without status gets no comments.
func Pools(pools []model.Pool, status map[string]PoolStatus) ([]byte, error) {
	if len(pools) == 0 {
		return nil, nil
	}
	ps := mapping()
	for _, p := range pools {
		m := mapping()
		subnets := sequence()
		for _, s := range p.Subnets {
			switch {
			case s.IPv4.IsValid() && s.IPv6.IsValid():
				f := flow()
				add(f, "ipv4", yscalar(s.IPv4.String()))
				add(f, "ipv6", yscalar(s.IPv6.String()))
				subnets.Content = append(subnets.Content, f)
			default:
				subnets.Content = append(subnets.Content, yscalar(s.String()))
			}
		}
		add(m, "subnets", subnets)
		add(m, "block-size-bits", yscalar(strconv.Itoa(p.BlockSizeBits)))
		add(m, "export-table", yscalar(strconv.FormatUint(uint64(p.ExportTable), 10)))
		add(m, "reuse-delay", yscalar(p.ReuseDelay.String()))
		if len(p.AllowedBlocks) > 0 {
			rs := sequence()
			rs.Style = yaml.FlowStyle
			for _, r := range p.AllowedBlocks {
				rs.Content = append(rs.Content, yscalar(fmt.Sprintf("%d-%d", r.First, r.Last)))
			}
			add(m, "blocks", rs)
		}
		key := yscalar(p.Name)
		if st, ok := status[p.Name]; ok {
			u := st.Usage
			c := fmt.Sprintf("%d addresses allocated, %d waiting out the reuse delay; %d of %d allowed blocks held",
				u.Allocated, u.Cooling, u.BlocksHeld, u.BlocksAllowed)
			var held []string
			for _, b := range st.Blocks {
				held = append(held, fmt.Sprintf("%d %s", b.Index, strings.Join(prefixStrings(b.Prefixes()), "+")))
			}
			if len(held) > 0 {
				c += "\nheld blocks: " + strings.Join(held, ", ")
			}
			key.HeadComment = c
		}
		ps.Content = append(ps.Content, key, m)
	}
	root := mapping()
	add(root, "pools", ps)
	return yaml.Marshal(root)
}

func prefixStrings[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}
