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

// mtuHeld is the MTU the kernel gives the declared link name once the plan
// has run, as far as the kernel and the file say (0: they do not), and the
// link that holds it there ("" when it is the link's own MTU), with what
// an encapsulation takes of that link's MTU. The file's mtu, which the plan
// writes; for a link the plan keeps and the file gives none, the kernel's,
// which no write of the plan moves: a bridge keeps its MTU when its ports
// join, leave or change (the kernel layer puts it back: keepBridgeMTU).
// Where the kernel moves it by itself: a bond member takes the bond's; a
// macvlan, vlan or ipvlan is lowered with its parent and made at its
// parent's (macvlan_device_event, vlan_device_event; above the parent's
// the kernel refuses it); a vxlan is made at most its device's less the
// encapsulation (vxlan_config_apply). One of those four without an mtu in
// the file is at its lower device's MTU (less the encapsulation), made or
// kept: the plan writes it where the kernel holds it elsewhere
// (uppersFollow), so that it does not depend on what the lower device had
// when the link was made; but for an adopted link, which keeps its own.
// A link whose MTU write waits (mtuWritesWait) keeps the kernel's.
func (c *computer) mtuHeld(name string, seen map[string]bool) (mtu int, lower string, headroom int) {
	w, h := c.d.Links[name], c.a.Links[name]
	if w == nil || seen[name] {
		return 0, "", 0
	}
	if c.mtuWaited[name] && h != nil && !c.recreated[name] {
		return h.MTU, "", 0
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[name] = true
	own := w.MTU
	if own == 0 && h != nil && !c.recreated[name] {
		own = h.MTU
	}
	if m := c.d.Links[w.Master]; m != nil && m.Kind == model.KindBond {
		if b, _, _ := c.mtuHeld(w.Master, seen); b != 0 {
			return b, w.Master, 0
		}
		return own, "", 0
	}
	follows := w.MTU == 0 && !w.Adopt
	if v := w.VXLAN; v != nil && v.Dev != "" && (h == nil || c.recreated[name] || follows) {
		d, _, _ := c.mtuHeld(v.Dev, seen)
		if d == 0 {
			return own, "", 0
		}
		headroom = vxlanHeadroom4
		if v.Remote.Is6() || v.Local.Is6() {
			headroom = vxlanHeadroom6
		}
		if most := max(d-headroom, 68); own == 0 || follows || own > most {
			return most, v.Dev, headroom
		}
		return own, "", 0
	}
	if p := w.Parent(); p != "" {
		if m, _, _ := c.mtuHeld(p, seen); m != 0 && (own == 0 || follows || own > m) {
			return m, p, 0
		}
	}
	return own, "", 0
}

// ipv6Crossing is 1 when the plan takes the kernel's link name from below
// IPv6's minimum MTU to it or above, -1 when it takes it below, else 0 (a
// link the plan creates or recreates included).
func (c *computer) ipv6Crossing(name string) int {
	h := c.a.Links[name]
	if h == nil || c.recreated[name] {
		return 0
	}
	after, _, _ := c.mtuHeld(name, nil)
	if after == 0 {
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

// ipv6Kept refuses IPv6 on a link the plan leaves below IPv6's minimum
// MTU, where the file alone does not say it (validation judges the MTUs
// the file gives): a link the kernel holds at such an MTU and the file
// gives none, or one the kernel makes at such an MTU from a lower device
// it holds there; and the file declares on it an IPv6 address (given, or
// from a pool with IPv6 subnets), an ipv6 key or an IPv6 route. Apply
// would fail on each, after the plan's other writes: the plan is refused
// instead, saying what to give. A link left out for a conflict or held
// keeps everything of its own out of the plan, and is not judged.
func (c *computer) ipv6Kept(unallocated []model.PoolAddress) []error {
	var errs []error
	for _, name := range c.d.SortedLinkNames() {
		if c.blocked[name] || c.mtuWaited[name] {
			// A link whose MTU write waits is not where the file puts
			// it: not a mistake of the file's to refuse.
			continue
		}
		mtu, lower, headroom := c.mtuHeld(name, nil)
		if mtu == 0 || mtu >= ipv6MinMTU {
			continue
		}
		what := c.ipv6On(name, unallocated)
		if len(what) == 0 {
			continue
		}
		verb := "makes"
		if h := c.a.Links[name]; h != nil && !c.recreated[name] {
			verb = "holds"
		}
		why, fix := "the file gives it no mtu, so it stays there", fmt.Sprintf("give %s an mtu of %d or more", name, ipv6MinMTU)
		if lower != "" {
			whose := "its parent " + lower + "'s"
			switch l := c.d.Links[name]; {
			case l.VXLAN != nil && l.VXLAN.Dev == lower:
				d, _, _ := c.mtuHeld(lower, nil)
				whose = fmt.Sprintf("its device %s's %d less the %d bytes of VXLAN encapsulation", lower, d, headroom)
			case l.Master == lower:
				whose = "bond " + lower + "'s"
			}
			why, fix = "it has "+whose, fmt.Sprintf("give %s an mtu of %d or more", lower, ipv6MinMTU+headroom)
		}
		errs = append(errs, fmt.Errorf("link %s has no IPv6: the kernel %s it at MTU %d, below 1280, IPv6's minimum (%s); the file declares %s on it: %s, or take IPv6 off it",
			name, verb, mtu, why, strings.Join(what, ", "), fix))
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
	// A vxlan joins its IPv6 group on its device when it comes up, which
	// the kernel refuses on a device without IPv6.
	for _, n := range c.d.SortedLinkNames() {
		if l := c.d.Links[n]; l.VXLAN != nil && l.VXLAN.Dev == name && l.Up && l.VXLAN.Remote.Is6() && l.VXLAN.Remote.IsMulticast() && !c.blocked[n] {
			what = append(what, "vxlan "+n+"'s IPv6 group "+l.VXLAN.Remote.String())
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
