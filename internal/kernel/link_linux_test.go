package kernel_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Deleting a link the kernel removed since the last dump (with its veth
// peer, or its lower link) is ErrNotFound, which a delete takes as done:
// the index the dump cached answers ENODEV.
func TestDeleteLinkGoneSinceTheDump(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "ga", "type", "veth", "peer", "name", "gb")
	nettest.IP(t, ns, "link", "add", "gvx", "type", "vxlan", "id", "3", "dstport", "4789", "dev", "gb")
	k := openLinks(t, ns)
	if err := k.DeleteLink("ga"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gb", "gvx"} {
		if err := k.DeleteLink(name); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("delete %s, gone with the pair: %v, want ErrNotFound", name, err)
		}
	}
}

// The kernel refuses a passthru macvlan beside another macvlan with a bare
// EINVAL; the error says what it refuses on a parent, for a link made there
// between the plan's read and its write.
func TestAddMACVlanRefusedOnItsParentSaysWhy(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "e11", "type", "veth", "peer", "name", "e11p")
	nettest.IP(t, ns, "link", "add", "fm", "link", "e11", "type", "macvlan", "mode", "vepa")
	k := openLinks(t, ns)
	err := k.AddLink(&model.Link{Name: "pt", Kind: model.KindMACVlan, Up: true, MACVlan: &model.MACVlan{Parent: "e11", Mode: model.MACVlanPassthru}})
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "a passthru macvlan is the only macvlan on its parent") {
		t.Errorf("add a passthru macvlan beside another: %v, want EINVAL saying why", err)
	}
}

// The kernel refuses a macvlan above its parent's MTU with a bare EINVAL
// too; with an MTU declared, the error names that cause first.
func TestAddMACVlanAboveItsParentsMTUSaysWhy(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "e12", "mtu", "1280", "type", "veth", "peer", "name", "e12p")
	k := openLinks(t, ns)
	err := k.AddLink(&model.Link{Name: "m0", Kind: model.KindMACVlan, MTU: 1300, Up: true, MACVlan: &model.MACVlan{Parent: "e12", Mode: model.MACVlanBridge}})
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "its MTU 1300 is above e12's") {
		t.Errorf("add a macvlan above its parent's MTU: %v, want EINVAL saying why", err)
	}
}

// openLinks opens the kernel of namespace ns, closed with the test, and
// reads its links, as a plan does before it writes.
func openLinks(t *testing.T, ns string) *kernel.Netlink {
	t.Helper()
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	if _, err := k.Links(); err != nil {
		t.Fatal(err)
	}
	return k
}
