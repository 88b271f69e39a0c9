package kernel_test

import (
	"errors"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Deleting a link the kernel removed since the last dump (with its veth
// peer, or its lower link) is ErrNotFound, which a delete takes as done:
// the index the dump cached answers ENODEV.
func TestDeleteLinkGoneSinceTheDump(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "ga", "type", "veth", "peer", "name", "gb")
	nettest.IP(t, ns, "link", "add", "gvx", "type", "vxlan", "id", "3", "dstport", "4789", "dev", "gb")
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Links(); err != nil {
		t.Fatal(err)
	}
	if err := k.DeleteLink("ga"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gb", "gvx"} {
		if err := k.DeleteLink(name); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("delete %s, gone with the pair: %v, want ErrNotFound", name, err)
		}
	}
}
