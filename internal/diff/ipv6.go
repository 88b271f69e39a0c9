package diff

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Below IPv6's minimum MTU (1280) the kernel has no IPv6 on a link: no
// addresses, routes or net.ipv6.conf keys (addrconf_notify takes them with
// the MTU change, and gives the keys back from "default"'s at 1280 or
// more). Validation refuses IPv6 on a link the file holds below it; what
// the file alone cannot say is the MTU the kernel holds a link at when the
// file gives it none: "kernel's choice" keeps what an earlier file or the
// kernel left (an mtu an earlier file gave, a vxlan made when its device
// was smaller, a bridge whose MTU was set once). The plan judges that MTU
// here, for the links it keeps.

// ipv6MinMTU is IPv6's minimum MTU (IPV6_MIN_MTU).
const ipv6MinMTU = 1280

// keptMTU is the MTU the kernel holds the declared link name at once the
// plan has run, for a link the kernel holds; 0 when the plan creates or
// recreates it. The file's mtu, which the plan writes; a bond member's
// bond's, which the kernel sets on every member; else the kernel's, which
// no write of the plan moves, but where the kernel lowers it by itself: a
// macvlan, vlan or ipvlan goes down with its parent (macvlan_device_event,
// vlan_device_event; above its parent's the kernel refuses it). A bridge
// keeps its MTU when its ports join, leave or change (the kernel layer puts
// it back: keepBridgeMTU), and a vxlan when its device's changes.
func (c *computer) keptMTU(name string, seen map[string]bool) int {
	w, h := c.d.Links[name], c.a.Links[name]
	if w == nil || h == nil || c.recreated[name] || seen[name] {
		return 0
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[name] = true
	if w.MTU != 0 {
		return w.MTU
	}
	if m := c.d.Links[w.Master]; m != nil && m.Kind == model.KindBond {
		if b := c.keptMTU(w.Master, seen); b != 0 {
			return b
		}
		return h.MTU
	}
	if p := w.Parent(); p != "" {
		if m := c.keptMTU(p, seen); m != 0 && m < h.MTU {
			return m
		}
		return h.MTU
	}
	return h.MTU
}

// ipv6Crossing is 1 when the plan takes the kernel's link name from below
// IPv6's minimum MTU to it or above, -1 when it takes it below, else 0 (a
// link the plan creates or recreates included).
func (c *computer) ipv6Crossing(name string) int {
	h := c.a.Links[name]
	after := c.keptMTU(name, nil)
	if h == nil || after == 0 {
		return 0
	}
	switch {
	case h.MTU < ipv6MinMTU && after >= ipv6MinMTU:
		return 1
	case h.MTU >= ipv6MinMTU && after < ipv6MinMTU:
		return -1
	}
	return 0
}

// ipv6Kept refuses IPv6 on a link the plan keeps below IPv6's minimum MTU:
// a link the kernel holds at such an MTU, that the plan neither recreates
// nor raises, and on which the file declares an IPv6 address (given, or
// from a pool with IPv6 subnets), an ipv6 key or an IPv6 route. The file
// alone cannot say it (validation judges the MTUs the file gives), and
// apply would fail on each, after the plan's other writes: the plan is
// refused instead, saying what to give. A link left out for a conflict or
// held keeps everything of its own out of the plan, and is not judged.
func (c *computer) ipv6Kept(unallocated []model.PoolAddress) []error {
	var errs []error
	for _, name := range c.d.SortedLinkNames() {
		h := c.a.Links[name]
		if h == nil || c.recreated[name] || c.blocked[name] || h.MTU >= ipv6MinMTU {
			continue
		}
		after := c.keptMTU(name, nil)
		if after == 0 || after >= ipv6MinMTU {
			continue
		}
		what := c.ipv6On(name, unallocated)
		if len(what) == 0 {
			continue
		}
		fix := "give " + name + " an mtu of 1280 or more"
		if m := c.d.Links[c.d.Links[name].Master]; m != nil && m.Kind == model.KindBond {
			fix = "give bond " + m.Name + " an mtu of 1280 or more"
		}
		errs = append(errs, fmt.Errorf("link %s has no IPv6: the kernel holds it at MTU %d, below 1280, IPv6's minimum, where this plan leaves it (the file gives it no mtu of 1280 or more), and the file declares %s on it; %s, or take IPv6 off it",
			name, after, strings.Join(what, ", "), fix))
	}
	return errs
}

// ipv6On lists what the file declares on link name that needs IPv6 there:
// its ipv6 keys, IPv6 addresses, and the routes through it of IPv6 or by an
// IPv6 gateway on it.
func (c *computer) ipv6On(name string, unallocated []model.PoolAddress) []string {
	var what []string
	at := func(s, origin string) string {
		if origin != "" {
			return s + " (declared at " + origin + ")"
		}
		return s
	}
	for i := range c.d.Sysctls {
		w := &c.d.Sysctls[i]
		if _, short, _, ok := model.SysctlLink(w.Key); ok && w.Link == name && strings.HasPrefix(short, "ipv6.") {
			what = append(what, at("key "+short, w.Origin))
		}
	}
	for i := range c.d.Addresses {
		a := &c.d.Addresses[i]
		if a.Link == name && a.Prefix.Addr().Is6() {
			what = append(what, at("IPv6 address "+a.Prefix.String(), a.Origin))
		}
	}
	for _, pa := range unallocated {
		if pa.Link == name && c.poolIs6(pa.Pool) {
			what = append(what, at("an IPv6 address from pool "+pa.Pool, pa.Origin))
		}
	}
	for i := range c.d.Routes {
		r := &c.d.Routes[i]
		v6 := r.IsIPv6() || r.Gateway.Is6() && r.Dev == name
		for _, h := range r.NextHops {
			v6 = v6 || h.Gateway.Is6() && h.Dev == name
		}
		if v6 && slices.Contains(r.Devs(), name) {
			what = append(what, at("IPv6 route to "+r.Dst.String(), r.Origin.String()))
		}
	}
	return what
}

// poolIs6 reports whether the declared pool name hands out IPv6 addresses.
func (c *computer) poolIs6(name string) bool {
	for i := range c.d.Pools {
		if p := &c.d.Pools[i]; p.Name == name && len(p.Subnets) > 0 && p.Subnets[0].IPv6.IsValid() {
			return true
		}
	}
	return false
}

// refusals is the error that refuses the whole plan: keys the kernel does
// not have, and IPv6 on links the plan keeps below IPv6's minimum MTU.
func (c *computer) refusals(unallocated []model.PoolAddress) error {
	keys := c.checkSysctls()
	kept := c.ipv6Kept(unallocated)
	if len(kept) == 0 {
		return keys
	}
	err := fmt.Errorf("%d link(s) below IPv6's minimum MTU with IPv6 declared on them, nothing was changed: %w", len(kept), errors.Join(kept...))
	return errors.Join(keys, err)
}
