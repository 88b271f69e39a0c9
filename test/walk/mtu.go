package walk

import (
	"net/netip"
	"strconv"
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
// link of another kind its own, or its kind's first. A bridge with no MTU
// of its own is one of those: apply sets it back when a port it adds,
// removes or changes moves it (br_mtu_auto_adjust), so it keeps the MTU it
// was made with. A link the runner found the
// kernel keeping below 1280 (Config.KeptLow) is at that MTU.
func kernelMTU(c *Config, n string) int { return kernelMTUSeen(c, n, map[string]bool{}) }

func kernelMTUSeen(c *Config, n string, seen map[string]bool) int {
	l := c.Links[n]
	if l == nil || seen[n] {
		return 0
	}
	seen[n] = true
	if m, ok := c.KeptLow[n]; ok {
		return m
	}
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
// MTU: by the file, or by what the runner found the kernel keeping before
// the step (kernelMTU, Config.KeptLow).
func belowIPv6(c *Config, n string) bool {
	m := kernelMTU(c, n)
	return m != 0 && m < ipv6MinMTU
}

// lowByKernel names the links of c on which the file declares IPv6 and
// that the kernel holds (or makes) below IPv6's minimum MTU only by what
// it keeps from before the step (Config.KeptLow), with that MTU: the file
// alone says 1280 or more, so validation passes them, and diff and apply
// must refuse them. Each with the kept links its MTU comes from (itself,
// or its lower devices).
func lowByKernel(c *Config) (map[string]int, map[string][]string) {
	low, from := map[string]int{}, map[string][]string{}
	if len(c.KeptLow) == 0 {
		return low, from
	}
	file := *c
	file.KeptLow = nil
	for _, n := range c.LinkNames() {
		if !wantsIPv6(c, n) || !belowIPv6(c, n) || belowIPv6(&file, n) {
			continue
		}
		low[n] = kernelMTU(c, n)
		for l, seen := n, map[string]bool{}; l != "" && !seen[l]; {
			seen[l] = true
			if m, ok := c.KeptLow[l]; ok && m < ipv6MinMTU {
				from[n] = append(from[n], l)
			}
			ll := c.Links[l]
			switch {
			case ll == nil:
				l = ""
			case c.Links[ll.Master] != nil && c.Links[ll.Master].Kind == "bond":
				l = ll.Master
			case ll.VXLAN != nil && ll.VXLAN.Dev != "":
				l = ll.VXLAN.Dev
			case ll.Kind == "macvlan" || ll.Kind == "vlan" || ll.Kind == "ipvlan":
				l = ll.Parent
			default:
				l = ""
			}
		}
	}
	return low, from
}

// repairMTUs takes out an MTU a link cannot have on its lower device (a
// vxlan's above its device's less the encapsulation, which the kernel
// lowers at creation and refuses as a change; a macvlan's, vlan's or
// ipvlan's above its parent's, which it refuses), then IPv6 off the links
// the kernel holds below IPv6's minimum: their IPv6 addresses and keys
// (validation refuses them); repairRoutes drops the IPv6 routes through
// them.
func repairMTUs(c *Config) {
	// Below 1280 only where nothing else follows the MTU: a link whose
	// ipvlans, macvlans or vlans, vxlans, bridge or bond take or are held by
	// it, when the kernel's MTU would depend on what came before (a
	// macvlan lowered with its parent stays low when the parent's goes
	// back up), is given 1500 instead.
	lower := map[string]bool{}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if v := l.VXLAN; v != nil && v.Dev != "" {
			lower[v.Dev] = true
		}
		if (l.Kind == "macvlan" || l.Kind == "vlan" || l.Kind == "ipvlan") && l.Parent != "" {
			lower[l.Parent] = true
		}
	}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if l.MTU != 0 && l.MTU < ipv6MinMTU && (!lowMTUKind(l) || lower[n] || l.Master != "" || l.Kind == "bond") {
			l.MTU = 1500
			if l.Kind == "device" {
				l.MTU = 0
			}
		}
	}
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
		if v, ok := l.Sysctls["ipv6.mtu"]; ok {
			// At most the link's MTU (the kernel refuses more), which
			// the walk knows only where the file gives it.
			if m, _ := strconv.Atoi(v); l.MTU == 0 || kernelMTU(c, n) < m {
				delete(l.Sysctls, "ipv6.mtu")
			}
		}
		if !noIPv6(c, n) {
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
			if strings.HasPrefix(k, "ipv6.") && belowIPv6(c, n) {
				delete(l.Sysctls, k)
			}
		}
	}
}

// noIPv6 reports whether link n can hold no IPv6 address or route: the
// kernel holds it below IPv6's minimum MTU, or the file turns IPv6 off on it.
func noIPv6(c *Config, n string) bool {
	return belowIPv6(c, n) || c.Links[n] != nil && c.Links[n].Sysctls["ipv6.disable_ipv6"] == "1"
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

// lowerOf is the link whose MTU holds l's, and what l's encapsulation takes
// of it: a vxlan's device, a macvlan's or vlan's parent ("" for other
// kinds; an ipvlan follows its parent's MTU both ways).
func lowerOf(l *Link) (string, int) {
	switch {
	case l.VXLAN != nil && l.VXLAN.Dev != "":
		return l.VXLAN.Dev, vxlanHeadroom(l.VXLAN)
	case (l.Kind == "macvlan" || l.Kind == "vlan") && l.Parent != "":
		return l.Parent, 0
	}
	return "", 0
}

// pinLowChildren gives an MTU to a vxlan, macvlan or vlan of n that has
// none and that the kernel holds (or makes, from its lower device's MTU
// before this step's updates) below 1280 while n's lower device would
// carry more: the kernel does not raise such a link with its lower device,
// so kernelMTU, which reads the file, would take it for 1280 or more.
func pinLowChildren(before, n *Config) {
	for _, name := range n.LinkNames() {
		l := n.Links[name]
		lower, headroom := lowerOf(l)
		if l.MTU != 0 || lower == "" || before.Links[lower] == nil {
			continue
		}
		was := 0
		if b := before.Links[name]; b != nil && b.Kind == l.Kind {
			if bl, _ := lowerOf(b); bl == lower {
				was = kernelMTU(before, name)
			}
		}
		if was == 0 {
			// Made by this step, before its lower device's update.
			if m := kernelMTU(before, lower); m != 0 {
				was = max(m-headroom, 68)
			}
		}
		if was != 0 && was < ipv6MinMTU && !belowIPv6(n, name) {
			l.MTU = ipv6MinMTU
		}
	}
}

// keptBelowIPv6 names the links of c that the kernel k (the walk's reading
// before the step) holds below IPv6's minimum MTU and that the step keeps
// there, with that MTU: links of the walk's, of the kind the file gives (a
// vxlan of the same VNI, a veth with the same peer, a macvlan on the same
// parent: the walk's other changes of a kind recreate it), to which the
// file gives no MTU. Such a link keeps the kernel's MTU, whatever the
// file's other links do (kernelMTU, which reads the file, cannot see it):
// an MTU an earlier step gave, or one a link kept by a conflict (its delete
// refused for someone else's port) had when it left the file. The links
// the step keeps on such a link (a vxlan on it, a macvlan above it) are
// named too, at the kernel's MTU, which a lower device does not raise.
func keptBelowIPv6(c *Config, k *Kernel) map[string]int {
	out := map[string]int{}
	if k == nil {
		return out
	}
	kept := func(n string) *kLink { return keptLink(c, k, n) }
	for _, n := range c.LinkNames() {
		if lower, _ := lowerOf(c.Links[n]); lower != "" && !c.Links[n].Adopt {
			// At its lower device's MTU, kept low only with it (below).
			continue
		}
		if kl := kept(n); kl != nil && kl.MTU < ipv6MinMTU {
			out[n] = kl.MTU
		}
	}
	for _, n := range c.LinkNames() {
		if lower, _ := lowerOf(c.Links[n]); lower != "" {
			if _, low := out[lower]; low {
				if kl := kept(n); kl != nil {
					out[n] = kl.MTU
				}
			}
		}
	}
	return out
}

// wantsIPv6 reports whether c declares on link n what needs IPv6 there: an
// ipv6 key, an IPv6 address (given or from a pool), or a route through it
// of IPv6 or by an IPv6 gateway on it (a next hop without dev is the
// kernel's to place).
func wantsIPv6(c *Config, n string) bool {
	l := c.Links[n]
	if l == nil {
		return false
	}
	for k := range l.Sysctls {
		if strings.HasPrefix(k, "ipv6.") {
			return true
		}
	}
	for _, a := range l.Addrs {
		if a.Pool == "" && strings.Contains(a.CIDR, ":") || a.Pool != "" && poolIs6(c, a.Pool) {
			return true
		}
	}
	// A vxlan up joins its IPv6 group on its device, which the kernel
	// refuses on a device without IPv6.
	for _, m := range c.LinkNames() {
		if v := c.Links[m].VXLAN; v != nil && v.Dev == n && strings.Contains(v.Group, ":") && !c.Links[m].Down {
			return true
		}
	}
	for _, r := range c.Routes {
		v6 := false
		for _, d := range r.dsts() {
			v6 = v6 || strings.Contains(d, ":")
		}
		if r.Dev == n && (v6 || strings.Contains(r.Via, ":")) {
			return true
		}
		for _, h := range r.Hops {
			if h.Dev == n && !h.NoDev && (v6 || strings.Contains(h.Via, ":")) {
				return true
			}
		}
	}
	return false
}

// keptLink is link n of the kernel k when the file c gives it no MTU and
// apply keeps it as it is (ours, of the same kind and identity): the
// kernel then keeps its MTU from before the step, which the file does not
// say. Nil otherwise.
func keptLink(c *Config, k *Kernel, n string) *kLink {
	l, kl := c.Links[n], k.Links[n]
	if l == nil || kl == nil || l.MTU != 0 || kl.kind() != l.Kind || !strings.HasPrefix(kl.Alias, "netreconcile") {
		return nil
	}
	switch {
	case l.VXLAN != nil && kl.data("id") != strconv.Itoa(l.VXLAN.ID),
		l.Kind == "veth" && kl.Link != l.Peer,
		l.Kind == "macvlan" && kl.Link != l.Parent:
		return nil
	}
	return kl
}

// fitKeptLowers lowers the MTU c gives a macvlan, vlan or ipvlan, or a
// vxlan on a device, to what its lower device will have when the file gives
// that device no MTU and the kernel keeps the one an earlier step gave it
// (an MTU key dropped from the file is not reset): the generator, working
// from the files, takes such a device for its kind's default (kernelMTU),
// and the kernel refuses a child above its parent, which the plan warns of
// (tested against the kernel apart). The runner calls it with the kernel
// it read before the step, before the step's file is written.
func fitKeptLowers(c *Config, k *Kernel) {
	if k == nil {
		return
	}
	view := *c
	view.KeptLow = map[string]int{}
	for _, n := range c.LinkNames() {
		if kl := keptLink(c, k, n); kl != nil && kl.MTU != 0 {
			view.KeptLow[n] = kl.MTU
		}
	}
	if len(view.KeptLow) == 0 {
		return
	}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		lower, headroom := lowerOf(l)
		if l.Kind == "ipvlan" {
			lower = l.Parent
		}
		if lower == "" || l.MTU == 0 {
			continue
		}
		if _, kept := view.KeptLow[lower]; !kept {
			continue
		}
		if most := kernelMTU(&view, lower) - headroom; most > 0 && l.MTU > most {
			l.MTU = most
			if most < ipv6MinMTU && wantsIPv6(c, n) {
				// Declared, such an MTU with IPv6 on the link is
				// refused by validation: left out, the kernel makes
				// the link below 1280 by itself, and lowByKernel
				// expects diff and apply to refuse it.
				l.MTU = 0
			}
		}
	}
}
