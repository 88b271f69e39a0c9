package integration

import (
	"fmt"
	"os"
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

// 164. A key that leaves the file is owed the value it would have had had
// netreconcile never written it, and a family-wide key netreconcile writes
// sets it: net.ipv4.ip_forward every link's forwarding and default's,
// net.ipv6.conf.all.ignore_routes_with_linkdown (and the other all. keys
// of diff's forwardingMasters) that key. The ledger kept the value the
// kernel had when netreconcile first wrote the link's key, which the
// master's write had made stale: a link the walk made went back to all's
// old 1 after all's was given back to 0 (the read left out default's key,
// which such a link goes back to), and a device to its old forwarding
// under ip_forward: 1. A link's key dropped with its master went back
// after the master's, and default's force_forwarding, which all's does not
// set, was left at all's. Host walk seed 128820325505437, step 79, shrunk
// to 20 steps: all.ignore_routes_with_linkdown: 1 with the veth pair
// p0b/p0c, p0c's key 0, all's dropped, p0c's dropped.
func TestWalkFinding168KeyOwedTheMastersValue(t *testing.T) {
	const linkdown = "ipv6.ignore_routes_with_linkdown"
	t.Run("a link netreconcile made: default's, which all's given back set", func(t *testing.T) {
		e := newEnv(t)
		file := func(name, global, own string) string {
			return e.file(name, "version: 1\n"+global+"links:\n  p0b: {kind: veth, veth: {peer: p0c}}\n  p0c: {kind: veth, veth: {peer: p0b}"+own+"}\n")
		}
		all := "sysctls: {net.ipv6.conf.all.ignore_routes_with_linkdown: 1}\n"
		for _, f := range []string{file("all.yaml", all, ""), file("own.yaml", all, ", sysctls: {"+linkdown+": 0}"),
			file("no-all.yaml", "", ", sysctls: {"+linkdown+": 0}"), file("none.yaml", "", "")} {
			e.apply(f)
			e.converged(f)
		}
		e.wantSysctl("net.ipv6.conf.default.ignore_routes_with_linkdown", "0")
		e.wantSysctl("net.ipv6.conf.p0c.ignore_routes_with_linkdown", "0")
	})
	t.Run("a link netreconcile made, dropped with all's: all's value given back", func(t *testing.T) {
		e := newEnv(t)
		file := func(name, global, own string) string {
			return e.file(name, "version: 1\n"+global+"links:\n  p0b: {kind: veth, veth: {peer: p0c}}\n  p0c: {kind: veth, veth: {peer: p0b}"+own+"}\n")
		}
		all := "sysctls: {net.ipv6.conf.all.ignore_routes_with_linkdown: 1}\n"
		for _, f := range []string{file("all.yaml", all, ""), file("own.yaml", all, ", sysctls: {"+linkdown+": 0}"), file("none.yaml", "", "")} {
			e.apply(f)
			e.converged(f)
		}
		e.wantSysctl("net.ipv6.conf.p0c.ignore_routes_with_linkdown", "0")
	})
	t.Run("a link netreconcile made: default's, as someone else set it", func(t *testing.T) {
		e := newEnv(t)
		file := func(name, own string) string {
			return e.file(name, "version: 1\nlinks:\n  p0b: {kind: veth, veth: {peer: p0c}}\n  p0c: {kind: veth, veth: {peer: p0b}"+own+"}\n")
		}
		own, none := file("own.yaml", ", sysctls: {"+linkdown+": 1}"), file("none.yaml", "")
		e.apply(own)
		e.converged(own)
		e.setSysctl("net.ipv6.conf.default.ignore_routes_with_linkdown", "1")
		e.apply(none)
		e.converged(none)
		e.wantSysctl("net.ipv6.conf.p0c.ignore_routes_with_linkdown", "1")
	})
	t.Run("a device: ip_forward's value", func(t *testing.T) {
		e := newEnv(t)
		own := e.file("own.yaml", "version: 1\nsysctls: {net.ipv4.ip_forward: 1}\nlinks:\n  lo: {kind: device, sysctls: {ipv4.forwarding: 0}}\n")
		dropped := e.file("dropped.yaml", "version: 1\nsysctls: {net.ipv4.ip_forward: 1}\nlinks:\n  lo: {kind: device}\n")
		for _, f := range []string{own, dropped} {
			e.apply(f)
			e.converged(f)
		}
		e.wantSysctl("net.ipv4.conf.lo.forwarding", "1")
	})
	t.Run("default's force_forwarding, which all's does not set: given back", func(t *testing.T) {
		if _, err := os.Stat("/proc/sys/net/ipv6/conf/all/force_forwarding"); err != nil {
			t.Skip("the kernel has no net.ipv6.conf.all.force_forwarding (Linux 6.17)")
		}
		e := newEnv(t)
		dflt := e.file("default.yaml", "version: 1\nsysctls: {net.ipv6.conf.default.force_forwarding: 1}\n")
		all := e.file("all.yaml", "version: 1\nsysctls: {net.ipv6.conf.all.force_forwarding: 1}\n")
		for _, f := range []string{dflt, all} {
			e.apply(f)
			e.converged(f)
		}
		e.wantSysctl("net.ipv6.conf.default.force_forwarding", "0")
	})
}

// 165. A link's net.ipv6.conf.LINK.mtu is the kernel's to move: it sets it
// to the link's MTU when the link is made, its MTU changes or it becomes
// ready, so the key left alone holds the link's MTU. One the file drops was
// given back the value recorded when netreconcile first wrote it: on a
// link made with the key, default's 1280, not the link's MTU; on a link
// whose MTU went down since, more than the MTU, which the kernel refuses
// (invalid argument, every apply). It now goes back to the link's MTU on
// a link netreconcile made and after a change of the MTU that set it; on
// another, to the recorded value, at most the MTU, and a link raised to
// IPv6's minimum records its MTU, where its IPv6 starts (host soak seed
// 76397317913050, step 6: the adopted fa0 from 1000 to 1500 with ipv6.mtu
// 1400 went back to 1280). Host soak seed
// 108882589530111, step 23 (found with the oracle of 164, which now
// compares an undeclared key with the link's MTU), shrunk to 7 steps: the
// vxlan x0 at 1380, then mtu 1350 with ipv6.mtu 1280, then without the key.
func TestWalkFinding169IPv6MTUOwedTheLinksMTU(t *testing.T) {
	t.Run("a link netreconcile made", func(t *testing.T) {
		e := newEnv(t)
		file := func(name, own string) string {
			return e.file(name, "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}"+own+"}\n  v1: {kind: veth, veth: {peer: v0}}\n")
		}
		for _, c := range []struct{ file, want string }{
			{file("key.yaml", ", mtu: 1500, sysctls: {ipv6.mtu: 1400}"), "1400"},
			{file("none.yaml", ", mtu: 1500"), "1500"},
			{file("key.yaml", ", mtu: 1500, sysctls: {ipv6.mtu: 1400}"), "1400"},
			{file("lower.yaml", ", mtu: 1450, sysctls: {ipv6.mtu: 1400}"), "1400"},
			{file("lower-none.yaml", ", mtu: 1450"), "1450"},
		} {
			e.apply(c.file)
			e.converged(c.file)
			e.wantSysctl("net.ipv6.conf.v0.mtu", c.want)
		}
	})
	t.Run("an adopted link raised to IPv6's minimum", func(t *testing.T) {
		e := newEnv(t)
		e.ip("link", "add", "fa0", "mtu", "1000", "type", "bridge")
		for _, c := range []struct{ file, want string }{
			{e.file("key.yaml", "version: 1\nlinks:\n  fa0: {kind: bridge, adopt: true, mtu: 1500, sysctls: {ipv6.mtu: 1400}}\n"), "1400"},
			{e.file("none.yaml", "version: 1\nlinks:\n  fa0: {kind: bridge, adopt: true, mtu: 1500}\n"), "1500"},
		} {
			e.apply(c.file)
			e.converged(c.file)
			e.wantSysctl("net.ipv6.conf.fa0.mtu", c.want)
		}
	})
	t.Run("a device whose MTU went down", func(t *testing.T) {
		e := newEnv(t)
		for _, c := range []struct{ file, want string }{
			{e.file("key.yaml", "version: 1\nlinks:\n  lo: {kind: device, sysctls: {ipv6.mtu: 1400}}\n"), "1400"},
			{e.file("lower.yaml", "version: 1\nlinks:\n  lo: {kind: device, mtu: 1500, sysctls: {ipv6.mtu: 1400}}\n"), "1400"},
			{e.file("none.yaml", "version: 1\nlinks:\n  lo: {kind: device, mtu: 1500}\n"), "1500"},
		} {
			e.apply(c.file)
			e.converged(c.file)
			e.wantSysctl("net.ipv6.conf.lo.mtu", c.want)
		}
	})
}
