package diff_test

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// On a kernel that records address protocols, an address of ours on a
// device link is pruned when it leaves the file; one of another protocol,
// or none, is kept; the file's addresses found without one are stamped in
// place. On an older kernel, today's behaviour: nothing on a device is
// deleted or stamped.
func TestAddressProtocol(t *testing.T) {
	dev := func(records bool, addrs ...model.Address) *kernel {
		k := newKernel().link(model.Link{Name: "eth0", Kind: model.KindDevice, Up: true})
		k.st.AddressProtocols = records
		for _, a := range addrs {
			a.Link = "eth0"
			k.st.Addresses = append(k.st.Addresses, a)
		}
		model.SortAddresses(k.st.Addresses)
		return k
	}
	a := func(p string, proto int) model.Address { return model.Address{Prefix: pfx(p), Protocol: proto} }
	// sec is a secondary: the kernel's flag on every IPv4 address of a
	// subnet but its first.
	sec := func(p string, proto int) model.Address {
		return model.Address{Prefix: pfx(p), Protocol: proto, Secondary: true}
	}
	const file = "links:\n  eth0: {kind: device, addresses: [10.0.0.5/24]}\n"
	run(t, []tc{{
		name:   "ours pruned, foreign and unmarked kept",
		file:   file,
		kernel: dev(true, a("10.0.0.5/24", ours), sec("10.0.0.6/24", ours), sec("10.0.0.7/24", 0), sec("10.0.0.8/24", 16), a("2001:db8::6/64", ours)),
		plan: `
- address 10.0.0.6/24 dev eth0
- address 2001:db8::6/64 dev eth0
`,
	}, {
		name:   "the file's address without a protocol is stamped in place; another program's is left with its own",
		file:   "links:\n  eth0: {kind: device, addresses: [10.0.0.5/24, 10.0.0.8/24]}\n",
		kernel: dev(true, a("10.0.0.5/24", 0), sec("10.0.0.8/24", 16)),
		plan: `
~ address 10.0.0.5/24 dev eth0: stamped as ours
    protocol: none -> 245
`,
	}, {
		name:   "a kernel without address protocols: nothing pruned or stamped",
		file:   file,
		kernel: dev(false, a("10.0.0.5/24", 0), sec("10.0.0.6/24", 0)),
	}, {
		name:     "ours, but the primary of foreign secondaries: a conflict, not a delete",
		file:     "links:\n  eth0: {kind: device}\n",
		kernel:   dev(true, a("10.0.0.5/24", ours), model.Address{Prefix: pfx("10.0.0.9/24"), Secondary: true}),
		conflict: "address 10.0.0.5/24 dev eth0 is ours (protocol 245) and no longer in the file, but deleting it would delete the other addresses of its subnet",
	}, {
		name: "the last IPv4 address of a device goes first: our routes through it are written again after it",
		file: "links:\n  eth0: {kind: device}\nroutes:\n  - {to: 10.9.0.0/16, dev: eth0}\n",
		kernel: func() *kernel {
			k := dev(true, a("10.0.0.5/24", ours))
			return k.route(model.Route{Table: 254, Dst: pfx("10.9.0.0/16"), Dev: "eth0", Scope: model.ScopeLink, Protocol: ours})
		}(),
		plan: `
- address 10.0.0.5/24 dev eth0
+ route 10.9.0.0/16 table main (dev eth0 scope link)
`,
	}})
}
