package integration

import (
	"strings"
	"testing"
)

// A vxlan that joins an IPv6 multicast group on a device the same apply
// raised from below 1280 failed the apply ("set up on x2: invalid
// argument"): the kernel has no IPv6 on a device below IPv6's minimum MTU,
// a vxlan set up joins its group on its device, and the vxlan was set up in
// its create, before the device's MTU update. It is made down now and set
// up after the raise; one the plan sets up waits for it likewise. A file
// that keeps the device below 1280 is refused (validation, or the plan
// where the kernel keeps the MTU) rather than failing every apply. Host
// soak seed 1560892518273, step 15 (found on an older tree).
func TestWalkFindingVXLANJoinsItsIPv6GroupAfterTheRaise(t *testing.T) {
	const low = "version: 1\nlinks:\n  d0: {kind: bridge, mtu: 1200}\n"
	for _, c := range []struct{ name, before, after string }{{
		name:   "made",
		before: low,
		after:  "version: 1\nlinks:\n  d0: {kind: bridge, mtu: 1500}\n  x2: {kind: vxlan, vxlan: {id: 5, group: \"ff05::100\", dev: d0}}\n",
	}, {
		name:   "made with an mtu",
		before: low,
		after:  "version: 1\nlinks:\n  d0: {kind: bridge, mtu: 1500}\n  x2: {kind: vxlan, mtu: 1400, vxlan: {id: 5, group: \"ff05::100\", dev: d0}}\n",
	}, {
		// The vxlan's update comes before its device's in name order.
		name:   "set up",
		before: "version: 1\nlinks:\n  d0: {kind: bridge}\n  zd: {kind: bridge, mtu: 1200}\n  x2: {kind: vxlan, state: down, vxlan: {id: 5, group: \"ff05::100\", dev: zd}}\n",
		after:  "version: 1\nlinks:\n  d0: {kind: bridge}\n  zd: {kind: bridge, mtu: 1500}\n  x2: {kind: vxlan, master: d0, vxlan: {id: 5, group: \"ff05::100\", dev: zd}}\n",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", c.before))
			f := e.file("b.yaml", c.after)
			e.apply(f)
			e.converged(f)
			if l := linkLine(e.links(), "x2"); !strings.Contains(l, " up") {
				t.Errorf("x2 is not up: %s", l)
			}
			dev := "d0"
			if strings.Contains(c.after, "zd:") {
				dev = "zd"
			}
			if out := e.ip("-6", "maddr", "show", "dev", dev); !strings.Contains(out, "ff05::100") {
				t.Errorf("%s has not joined ff05::100:\n%s", dev, out)
			}
		})
	}
	t.Run("kept below", func(t *testing.T) {
		e := newEnv(t)
		group := "  x2: {kind: vxlan, vxlan: {id: 5, group: \"ff05::100\", dev: d0}}\n"
		r := e.cli("apply", "-c", e.file("a.yaml", low+group))
		if r.Code == 0 || !strings.Contains(r.Stderr, "links.x2.vxlan.group: the vxlan joins IPv6 group ff05::100 on its device d0, which the kernel gives MTU 1200") {
			t.Errorf("the file holding d0 at 1200: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		e.apply(e.file("b.yaml", low))
		r = e.cli("apply", "-c", e.file("c.yaml", "version: 1\nlinks:\n  d0: {kind: bridge}\n"+group))
		if r.Code == 0 || !strings.Contains(r.Stderr, "link d0 has no IPv6: the kernel holds it at MTU 1200") || !strings.Contains(r.Stderr, "vxlan x2's IPv6 group ff05::100") {
			t.Errorf("the kernel keeping d0 at 1200: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if strings.Contains(e.links(), "x2 ") {
			t.Errorf("a refused plan made x2:\n%s", e.links())
		}
	})
}

// The same order with IPv6 turned back on by a key: a vxlan over IPv6 made
// on a device whose ipv6.disable_ipv6 the same apply takes from 1 to 0
// (given 0, or taken out of the file and given back) failed its create
// with EPERM (the kernel refuses a vxlan over IPv6 on a device with IPv6
// disabled), the sysctls being written after the links; the next pass
// converged. The key's write now goes before the vxlan's create. Found
// with walk finding 179's class.
func TestWalkFindingVXLANMadeAfterItsDeviceGetsIPv6Back(t *testing.T) {
	const vxlan = "  x2: {kind: vxlan, vxlan: {id: 5, remote: \"2001:db8::5\", dev: d0}}\n"
	for _, c := range []struct{ name, after string }{
		{"given 0", "version: 1\nlinks:\n  d0: {kind: bridge, sysctls: {ipv6.disable_ipv6: 0}}\n" + vxlan},
		{"given back", "version: 1\nlinks:\n  d0: {kind: bridge}\n" + vxlan},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\nlinks:\n  d0: {kind: bridge, sysctls: {ipv6.disable_ipv6: 1}}\n"))
			f := e.file("b.yaml", c.after)
			e.apply(f)
			e.converged(f)
			if !strings.Contains(e.links(), "x2 vxlan") {
				t.Errorf("x2 not made:\n%s", e.links())
			}
		})
	}
}
