package integration

import (
	"fmt"
	"testing"
	"time"
)

// 161. The kernel sets a link's net.ipv6.conf.LINK.mtu to its MTU when the
// link becomes ready, and a link that is up without carrier becomes ready
// when it gets one: a veth whose peer comes up, a bridge whose port does.
// The plan wrote the key again only for a link that itself came up or
// changed its MTU, so the peer (or the bridge) kept the file's value until
// the peer came up, and the next pass wrote it back (a second pass of the
// service made one write). Host soak seed 55735475716617, step 60: p2b up
// at MTU 1450 with ipv6.mtu 1400, its peer p2c toggled from down to up.
func TestWalkFinding161IPv6MTUOfALinkThatGetsItsCarrier(t *testing.T) {
	// Each file in turn; the link whose key is declared is up without
	// carrier before the last, which gives it one. A bridge that comes up
	// with a port already holding carrier is ready at once, hence the
	// bridge first down.
	for _, c := range []struct {
		name, key string
		files     []string
	}{
		{"veth peer", "net.ipv6.conf.v0.mtu", []string{
			"  v0: {kind: veth, mtu: 1450, veth: {peer: v1}, sysctls: {ipv6.mtu: 1400}}\n" +
				"  v1: {kind: veth, mtu: 1450, veth: {peer: v0}, state: down}\n",
			"  v0: {kind: veth, mtu: 1450, veth: {peer: v1}, sysctls: {ipv6.mtu: 1400}}\n" +
				"  v1: {kind: veth, mtu: 1450, veth: {peer: v0}}\n",
		}},
		{"bridge port's peer", "net.ipv6.conf.br0.mtu", []string{
			"  br0: {kind: bridge, mtu: 1450, state: down, sysctls: {ipv6.mtu: 1400}}\n" +
				"  v0: {kind: veth, mtu: 1450, master: br0, veth: {peer: v1}}\n" +
				"  v1: {kind: veth, mtu: 1450, veth: {peer: v0}, state: down}\n",
			"  br0: {kind: bridge, mtu: 1450, sysctls: {ipv6.mtu: 1400}}\n" +
				"  v0: {kind: veth, mtu: 1450, master: br0, veth: {peer: v1}}\n" +
				"  v1: {kind: veth, mtu: 1450, veth: {peer: v0}, state: down}\n",
			"  br0: {kind: bridge, mtu: 1450, sysctls: {ipv6.mtu: 1400}}\n" +
				"  v0: {kind: veth, mtu: 1450, master: br0, veth: {peer: v1}}\n" +
				"  v1: {kind: veth, mtu: 1450, veth: {peer: v0}}\n",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			for i, links := range c.files {
				f := e.file(fmt.Sprintf("%d.yaml", i), "version: 1\nlinks:\n"+links)
				e.apply(f)
				// The kernel's linkwatch takes a carrier in within a second.
				time.Sleep(1200 * time.Millisecond)
				e.wantSysctl(c.key, "1400")
				e.converged(f)
			}
		})
	}
}
