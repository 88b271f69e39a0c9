package kernel

import (
	"net/netip"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// TestEveryKindHasACreate: the kernel stage can make every kind of the model
// (but device, which exists already), and reads it back as that kind. A
// kind added to the model needs a sample here, a create in netlinkOf and a
// case in fromLink; the guest's walk and e2e suite prove it on a kernel.
func TestEveryKindHasACreate(t *testing.T) {
	a := netip.MustParseAddr
	samples := map[string]*model.Link{
		model.KindVeth:      {Veth: &model.Veth{Peer: "peer"}},
		model.KindBridge:    {},
		model.KindVXLAN:     {VXLAN: &model.VXLAN{ID: 7, Remote: a("192.0.2.1"), Port: 4789, Dev: "parent", TTL: 64}},
		model.KindDummy:     {},
		model.KindIPVlan:    {IPVlan: &model.IPVlan{Parent: "parent", Mode: model.IPVlanL3}},
		model.KindIPIP:      {Tunnel: &model.Tunnel{Mode: "ipip", Local: a("192.0.2.1"), Remote: a("192.0.2.2"), TTL: 64}},
		model.KindIP6Tnl:    {Tunnel: &model.Tunnel{Mode: "ip6ip6", Local: a("2001:db8::1"), Remote: a("2001:db8::2"), TTL: 64}},
		model.KindWireGuard: {},
		model.KindVLAN:      {VLAN: &model.VLAN{Parent: "parent", ID: 10, Protocol: model.VLAN8021Q}},
		model.KindMACVlan:   {MACVlan: &model.MACVlan{Parent: "parent", Mode: model.MACVlanBridge}},
		model.KindVRF:       {VRF: &model.VRF{Table: 100}},
		model.KindBond:      {Bond: &model.Bond{Mode: "active-backup", Miimon: 100}},
	}
	k := &Netlink{byName: map[string]int{"parent": 2}, byIndex: map[int]string{2: "parent"}}
	for _, kind := range model.Kinds {
		if kind == model.KindDevice {
			continue
		}
		s, ok := samples[kind]
		if !ok {
			t.Errorf("kind %s: no sample here: add one, and its create", kind)
			continue
		}
		l := *s
		l.Name, l.Kind, l.MTU = "x", kind, 1400
		nl, err := k.netlinkOf(&l)
		if err != nil {
			t.Errorf("kind %s: %v", kind, err)
			continue
		}
		if got := k.fromLink(nl); got.Kind != kind || got.MTU != 1400 {
			t.Errorf("kind %s: read back as kind %s, mtu %d", kind, got.Kind, got.MTU)
		}
	}
}
