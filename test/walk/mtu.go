package walk

import (
	"net/netip"
	"strings"
)

// ipv6MinMTU is IPv6's minimum MTU: below it the kernel takes IPv6 off a
// link (its addresses, routes and net.ipv6 keys), and validation refuses
// IPv6 on a link the file holds below it.
const ipv6MinMTU = 1280

// kernelMTU is the largest MTU the kernel gives link n of c, from what the
// walk knows of the kernel (0: not known): a vxlan on a device at most that
// device's MTU less its encapsulation (50 bytes over IPv4, 70 over IPv6),
// whatever the file says; a macvlan, vlan or ipvlan at most its parent's,
// and its parent's when the file gives none; a bond's member the bond's; a
// bridge with no MTU of its own the smallest of its ports'; a link of
// another kind its own, or its kind's first.
func kernelMTU(c *Config, n string) int { return kernelMTUSeen(c, n, map[string]bool{}) }

func kernelMTUSeen(c *Config, n string, seen map[string]bool) int {
	l := c.Links[n]
	if l == nil || seen[n] {
		return 0
	}
	seen[n] = true
	if m := c.Links[l.Master]; m != nil && m.Kind == "bond" {
		return kernelMTUSeen(c, l.Master, seen)
	}
	switch {
	case l.VXLAN != nil && l.VXLAN.Dev != "":
		d := kernelMTUSeen(c, l.VXLAN.Dev, seen)
		if d == 0 {
			return l.MTU
		}
		most := max(d-vxlanHeadroom(l.VXLAN), 68)
		if l.MTU == 0 || l.MTU > most {
			return most
		}
		return l.MTU
	case (l.Kind == "macvlan" || l.Kind == "vlan" || l.Kind == "ipvlan") && l.Parent != "":
		p := kernelMTUSeen(c, l.Parent, seen)
		if p != 0 && (l.MTU == 0 || l.MTU > p) {
			return p
		}
		return l.MTU
	case l.Kind == "bridge" && l.MTU == 0:
		small := 0
		for _, pn := range c.LinkNames() {
			if c.Links[pn].Master == n {
				if m := kernelMTUSeen(c, pn, seen); m != 0 && (small == 0 || m < small) {
					small = m
				}
			}
		}
		if small != 0 {
			return small
		}
	}
	if l.MTU != 0 {
		return l.MTU
	}
	switch l.Kind {
	case "veth", "dummy", "bridge", "vxlan":
		return 1500
	case "wireguard":
		return 1420
	}
	return 0
}

// vxlanHeadroom is what a vxlan's encapsulation takes of its device's MTU.
func vxlanHeadroom(v *VXLAN) int {
	for _, a := range []string{v.Local, v.Remote, v.Group} {
		if strings.Contains(a, ":") {
			return 70
		}
	}
	return 50
}

// belowIPv6 reports whether the kernel holds link n below IPv6's minimum
// MTU.
func belowIPv6(c *Config, n string) bool {
	m := kernelMTU(c, n)
	return m != 0 && m < ipv6MinMTU
}

// repairMTUs takes out an MTU a link cannot have on its lower device (a
// vxlan's above its device's less the encapsulation, which the kernel
// lowers at creation and refuses as a change; a macvlan's, vlan's or
// ipvlan's above its parent's, which it refuses), then IPv6 off the links
// the kernel holds below IPv6's minimum: their IPv6 addresses and keys
// (validation refuses them); repairRoutes drops the IPv6 routes through
// them.
func repairMTUs(c *Config) {
	for changed := true; changed; {
		changed = false
		for _, n := range c.LinkNames() {
			l := c.Links[n]
			if l.MTU == 0 {
				continue
			}
			lower, headroom := "", 0
			switch {
			case l.VXLAN != nil && l.VXLAN.Dev != "":
				lower, headroom = l.VXLAN.Dev, vxlanHeadroom(l.VXLAN)
			case l.Kind == "macvlan" || l.Kind == "vlan" || l.Kind == "ipvlan":
				lower = l.Parent
			}
			if lower == "" {
				continue
			}
			if m := kernelMTU(c, lower); m != 0 && l.MTU > m-headroom {
				l.MTU, changed = 0, true
			}
		}
	}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if !belowIPv6(c, n) {
			continue
		}
		var kept []*Addr
		for _, a := range l.Addrs {
			if a.Pool == "" && netip.MustParsePrefix(a.CIDR).Addr().Is6() || a.Pool != "" && poolIs6(c, a.Pool) {
				continue
			}
			kept = append(kept, a)
		}
		l.Addrs = kept
		for k := range l.Sysctls {
			if strings.HasPrefix(k, "ipv6.") {
				delete(l.Sysctls, k)
			}
		}
	}
}

// poolIs6 reports whether pool name hands out IPv6 addresses.
func poolIs6(c *Config, name string) bool {
	for _, p := range c.Pools {
		if p.Name == name {
			return p.Subnet6 != "" || strings.Contains(p.Subnet, ":")
		}
	}
	return false
}
