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

// A link that goes down under one next hop of a multipath route leaves the
// route to the kernel's judgement (paths dead, dropped, or the route
// deleted, by family and event): the route is written again after the
// link, or deleted when the file no longer has it; only when every path's
// link goes is it taken as gone.
func TestMultipathRouteThroughALinkGoingDown(t *testing.T) {
	k := func() *kernel {
		return newKernel().
			link(model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}).
			link(model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}).
			route(model.Route{Table: 254, Dst: pfx("2001:db8:1::/48"), Metric: 1024, Protocol: ours, NextHops: []model.NextHop{
				{Gateway: ip("fe80::1"), Dev: "br0", Weight: 1}, {Gateway: ip("fe80::2"), Dev: "eth0", Weight: 1}}})
	}
	// Kept in the file, the route is refused at validation: the kernel
	// refuses a next hop through a link that is down, in either family.
	run(t, []tc{{
		name: "gone from the file: deleted (the kernel keeps it with a dead path)",
		file: `
links:
  eth0: {kind: device}
  br0: {kind: bridge, state: down}
`,
		kernel: k(),
		plan: `
~ link br0
    state: up -> down
- route 2001:db8:1::/48 table main metric 1024 (nexthop via fe80::1 dev br0 weight 1 nexthop via fe80::2 dev eth0 weight 1)
`,
	}})
}
