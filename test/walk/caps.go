package walk

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
)

// NSPrefix starts the names of the walk's network namespaces
// (WALK_NETNS_PREFIX, default nrw): jobs sharing a machine, a soak beside a
// test, tell theirs apart by it.
var NSPrefix = cmp.Or(os.Getenv("WALK_NETNS_PREFIX"), "nrw")

// Detect finds what the kernel at hand supports, by trying it in a scratch
// namespace: the generator makes only what the kernel can hold.
func Detect() (Caps, error) {
	var c Caps
	ns := fmt.Sprintf("%s-caps-%d-%d", NSPrefix, os.Getpid(), nsSeq.Add(1))
	if _, err := run("ip", "netns", "add", ns); err != nil {
		return c, err
	}
	defer func() { _, _ = run("ip", "netns", "del", ns) }()
	try := func(args ...string) bool {
		_, err := run("ip", append([]string{"-n", ns}, args...)...)
		return err == nil
	}
	c.Dummy = try("link", "add", "cd0", "type", "dummy")
	c.IPVlan = c.Dummy && try("link", "add", "ci0", "link", "cd0", "type", "ipvlan", "mode", "l2")
	c.IPIP = try("link", "add", "ct0", "type", "ipip", "remote", "192.0.2.1", "local", "192.0.2.2")
	c.IP6Tnl = try("link", "add", "cs0", "type", "ip6tnl", "remote", "2001:db8::1", "local", "2001:db8::2")
	c.Fou = try("fou", "add", "port", "7777", "ipproto", "4")
	if try("link", "add", "cv0", "type", "veth", "peer", "name", "cv1") {
		c.VLAN = try("link", "add", "link", "cv0", "name", "cvl0", "type", "vlan", "id", "5")
		c.MACVlan = try("link", "add", "link", "cv1", "name", "cm0", "type", "macvlan", "mode", "bridge")
	}
	c.VRF = try("link", "add", "cr0", "type", "vrf", "table", "1099")
	c.Bond = try("link", "add", "cb0", "type", "bond")
	c.WireGuard = try("link", "add", "cw0", "type", "wireguard")
	c.WireGuardModule = c.WireGuard
	if !c.WireGuard {
		_, errGo := exec.LookPath("wireguard-go")
		_, errTun := os.Stat("/dev/net/tun")
		c.WireGuard = errGo == nil && errTun == nil
	}
	return c, nil
}

// String lists the capabilities.
func (c Caps) String() string {
	return fmt.Sprintf("kinds %v fou %v", c.Kinds(), c.Fou)
}
