package contract

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// hostKinds are the link kinds this host's kernel has; the guest's suite
// (test/e2e, TestFakeContract) runs every scenario.
var hostKinds = []string{model.KindVeth, model.KindBridge, model.KindVXLAN, model.KindMACVlan}

func TestFakeContract(t *testing.T) {
	nettest.SkipIfShort(t)
	Run(t, hostKinds, func(t *testing.T) kernel.Interface {
		ns := nettest.NewNetNS(t)
		k, err := kernel.Open("/run/netns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k
	})
}
