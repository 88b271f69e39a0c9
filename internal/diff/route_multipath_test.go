package diff_test

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

func TestMultipathRoutes(t *testing.T) {
	links := func() *kernel {
		return newKernel().
			link(model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}).
			link(model.Link{Name: "eth1", Kind: model.KindDevice, Up: true})
	}
	hops := func(hs ...model.NextHop) []model.NextHop { model.SortNextHops(hs); return hs }
	const file = `
links:
  eth0: {kind: device}
  eth1: {kind: device}
routes:
  - {to: 10.1.0.0/16, nexthops: [{via: 10.0.1.1}, {via: 10.0.0.1, dev: eth0, weight: 2}]}
`
	run(t, []tc{{
		name:   "created",
		file:   file,
		kernel: links(),
		plan: `
+ route 10.1.0.0/16 table main (nexthop via 10.0.0.1 dev eth0 weight 2 nexthop via 10.0.1.1 weight 1)
`,
	}, {
		name: "the same set, another order, the dev the kernel picked: nothing to do",
		file: file,
		kernel: links().route(model.Route{Table: 254, Dst: pfx("10.1.0.0/16"), Protocol: ours,
			NextHops: hops(model.NextHop{Gateway: ip("10.0.1.1"), Dev: "eth1", Weight: 1}, model.NextHop{Gateway: ip("10.0.0.1"), Dev: "eth0", Weight: 2})}),
	}, {
		name: "a weight changed: replaced in place",
		file: file,
		kernel: links().route(model.Route{Table: 254, Dst: pfx("10.1.0.0/16"), Protocol: ours,
			NextHops: hops(model.NextHop{Gateway: ip("10.0.1.1"), Dev: "eth1", Weight: 1}, model.NextHop{Gateway: ip("10.0.0.1"), Dev: "eth0", Weight: 1})}),
		plan: `
~ route 10.1.0.0/16 table main
    nexthops: [via 10.0.0.1 dev eth0 weight 1] [via 10.0.1.1 dev eth1 weight 1] -> [via 10.0.0.1 dev eth0 weight 2] [via 10.0.1.1 weight 1]
`,
	}, {
		name:   "a single path becomes multipath in place",
		file:   file,
		kernel: links().route(model.Route{Table: 254, Dst: pfx("10.1.0.0/16"), Protocol: ours, Gateway: ip("10.0.0.1"), Dev: "eth0"}),
		plan: `
~ route 10.1.0.0/16 table main
    via: 10.0.0.1 -> none
    nexthops: none -> [via 10.0.0.1 dev eth0 weight 2] [via 10.0.1.1 weight 1]
`,
	}, {
		name: "multipath becomes a single path in place (RFC 5549 gateway)",
		file: "links:\n  eth0: {kind: device}\n  eth1: {kind: device}\nroutes:\n  - {to: 10.1.0.0/16, via: 'fe80::1', dev: eth0}\n",
		kernel: links().route(model.Route{Table: 254, Dst: pfx("10.1.0.0/16"), Protocol: ours,
			NextHops: hops(model.NextHop{Gateway: ip("10.0.1.1"), Dev: "eth1", Weight: 1}, model.NextHop{Gateway: ip("10.0.0.1"), Dev: "eth0", Weight: 2})}),
		plan: `
~ route 10.1.0.0/16 table main
    via: none -> fe80::1
    dev: none -> eth0
    nexthops: [via 10.0.0.1 dev eth0 weight 2] [via 10.0.1.1 dev eth1 weight 1] -> none
`,
	}, {
		name:     "a foreign route with the key is a conflict",
		file:     file,
		kernel:   links().route(model.Route{Table: 254, Dst: pfx("10.1.0.0/16"), Protocol: 4, Gateway: ip("10.0.0.1"), Dev: "eth0"}),
		conflict: "route 10.1.0.0/16 table main exists with protocol 4 (static), not ours",
	}, {
		name: "ours, no longer in the file: deleted",
		file: "links:\n  eth0: {kind: device}\n  eth1: {kind: device}\n",
		kernel: links().route(model.Route{Table: 254, Dst: pfx("10.1.0.0/16"), Protocol: ours,
			NextHops: hops(model.NextHop{Gateway: ip("10.0.1.1"), Dev: "eth1", Weight: 1}, model.NextHop{Gateway: ip("10.0.0.1"), Dev: "eth0", Weight: 2})}),
		plan: `
- route 10.1.0.0/16 table main (nexthop via 10.0.0.1 dev eth0 weight 2 nexthop via 10.0.1.1 dev eth1 weight 1)
`,
	}})
}
