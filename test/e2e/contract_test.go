package e2e

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/contract"
)

// TestFakeContract runs every scenario of the fake kernel's contract on
// the guest's kernel, which has the kinds the host lacks (vrf, vlan,
// ipvlan, bond, dummy).
func TestFakeContract(t *testing.T) {
	requireModules(t, "dummy", "8021q", "vrf", "ipvlan", "bonding", "macvlan", "vxlan")
	contract.Run(t, model.Kinds, func(t *testing.T) kernel.Interface {
		ns := newNetNS(t, "")
		k, err := kernel.Open("/run/netns/" + ns.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k
	})
}
