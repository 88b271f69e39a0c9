package diff_test

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// TestWalkFinding103IPv6KeptBelow1280 holds the plan's judgement of the MTU
// a link ends at where the file gives none (walk finding 103): the
// kernel's, a bond's, a macvlan's parent's, a vxlan's device's less the
// encapsulation. IPv6 on a link left below 1280 refuses the plan, with
// the link, what it declares and what to give; a link the plan recreates,
// or raises, takes it.
func TestWalkFinding103IPv6KeptBelow1280(t *testing.T) {
	veth := func(name, peer string, mtu int) model.Link {
		return model.Link{Name: name, Kind: model.KindVeth, Owned: true, Up: true, MTU: mtu, Veth: &model.Veth{Peer: peer}}
	}
	pair := "  v0: {kind: veth, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n"
	for _, c := range []struct {
		name, file string
		kernel     *kernel
		want       string // "" plans
	}{
		// A macvlan without an mtu is at its parent's: raised to it.
		{"below its parent", "links:\n" + pair + "  m0: {kind: macvlan, macvlan: {parent: v0}, addresses: [\"fd00::1/64\"]}\n",
			newKernel().link(veth("v0", "v1", 1500)).link(veth("v1", "v0", 1500)).
				link(model.Link{Name: "m0", Kind: model.KindMACVlan, Owned: true, Up: true, MTU: 1200, MACVlan: &model.MACVlan{Parent: "v0", Mode: "bridge"}}),
			""},
		{"made on a parent kept low", "links:\n" + pair + "  m0: {kind: macvlan, macvlan: {parent: v0}, addresses: [\"fd00::1/64\"]}\n",
			newKernel().link(veth("v0", "v1", 1200)).link(veth("v1", "v0", 1500)),
			"link m0 has no IPv6: the kernel makes it at MTU 1200, below 1280, IPv6's minimum (it has its parent v0's); the file declares IPv6 address fd00::1/64 (declared at t.yaml:5:"},
		{"vxlan made on a device kept low", "links:\n" + pair + "  x0: {kind: vxlan, vxlan: {id: 5, remote: \"2001:db8::2\", dev: v0}, sysctls: {ipv6.accept_ra: 0}}\n",
			newKernel().link(veth("v0", "v1", 1300)).link(veth("v1", "v0", 1500)),
			"link x0 has no IPv6: the kernel makes it at MTU 1230, below 1280, IPv6's minimum (it has its device v0's 1300 less the 70 bytes of VXLAN encapsulation); the file declares key ipv6.accept_ra (declared at t.yaml:5:"},
		{"raised by the file", "links:\n  v0: {kind: veth, mtu: 1500, veth: {peer: v1}, sysctls: {ipv6.accept_ra: 0}}\n  v1: {kind: veth, veth: {peer: v0}}\n",
			newKernel().link(veth("v0", "v1", 1200)).link(veth("v1", "v0", 1500)), ""},
		{"recreated", "links:\n  v0: {kind: bridge, sysctls: {ipv6.accept_ra: 0}}\n",
			newKernel().link(veth("v0", "v1", 1200)).link(veth("v1", "v0", 1500)), ""},
		{"route", "links:\n" + pair + "routes:\n  - {to: \"2001:db8:5::/48\", dev: v0}\n",
			newKernel().link(veth("v0", "v1", 1000)).link(veth("v1", "v0", 1500)),
			"link v0 has no IPv6: the kernel holds it at MTU 1000, below 1280, IPv6's minimum (the file gives it no mtu, so it stays there); the file declares IPv6 route to 2001:db8:5::/48 (declared at t.yaml:6:5) on it: give v0 an mtu of 1280 or more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := c.kernel.st
			d := parse(t, c.file)
			for _, s := range d.Sysctls {
				// The kernel has the template, not the link's key.
				_, _, tmpl, _ := model.SysctlLink(s.Key)
				k.Sysctls = append(k.Sysctls, model.Sysctl{Key: tmpl, Value: "1"})
			}
			p, err := diff.Compute(d, k)
			if c.want == "" {
				if err != nil || p == nil {
					t.Fatalf("plan %v, err %v", p, err)
				}
				return
			}
			if p != nil || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("plan %v, err %v\nwant %q", p, err, c.want)
			}
		})
	}
}
