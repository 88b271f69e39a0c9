package diff

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Warning is something the plan makes the kernel do silently that the file
// may not mean: it names the file's keys (with their positions) and the
// fix. A plan is made and applied with warnings; apply --strict and diff
// --strict refuse one.
type Warning struct {
	// Keys are the declarations concerned, each "KEY (FILE:LINE:COL)"
	// where the position is known.
	Keys    []string `json:"keys"`
	Message string   `json:"message"`
	Fix     string   `json:"fix"`
}

func (w Warning) String() string {
	return strings.Join(w.Keys, ", ") + ": " + w.Message + "; fix: " + w.Fix
}

// WriteWarnings renders warnings one per line, as "warning: KEYS: message;
// fix: …".
func WriteWarnings(w interface{ Write([]byte) (int, error) }, ws []Warning) {
	for _, x := range ws {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
}

// warnings looks at the finished plan for what the kernel does silently:
// router advertisements turned off by forwarding, an MTU above a lower
// device's, a route through a gateway that no declared address reaches.
// Only what the plan changes is looked at: a plan that changes nothing
// warns about nothing, so the daemon's steady state and a second apply are
// quiet.
func (c *computer) warnings() {
	c.written, c.touched = map[string]string{}, map[string]bool{}
	for i := range c.plan.Ops {
		op := &c.plan.Ops[i]
		switch {
		case op.Kind == KindSysctl && op.Sysctl != nil && op.Action != Delete:
			c.written[op.Sysctl.Key] = op.Sysctl.Value
		case op.Kind == KindLink && (op.Action == Create || op.Action == Replace || op.LinkFields.MTU || op.LinkFields.Master):
			c.touched[op.ID] = true
		}
	}
	c.warnRA()
	c.warnMTU()
	c.warnGateways()
}

func at(key, origin string) string {
	if origin == "" {
		return key
	}
	return key + " (" + origin + ")"
}

// sysctlAfter is the value a key has once the plan is applied, and whether
// it is known: the file's, else what a forwarding master key this plan
// writes sets (net.ipv6.conf.all.forwarding sets every link's and the
// default's), else the kernel's, else for a link this plan creates, the
// value its "default" key has now (the plan makes links before it writes
// sysctls).
func (c *computer) sysctlAfter(key string) (string, bool) {
	if d := model.FindSysctl(c.d.Sysctls, key); d != nil {
		return d.Value, true
	}
	link, _, tmpl, perLink := model.SysctlLink(key)
	if fam := forwardingFamily(key); fam != "" {
		for m, mf := range forwardingMasters {
			if mf != fam || m == key {
				continue
			}
			if v, written := c.sysctlWritten(m); written {
				return v, true
			}
		}
	}
	if perLink && (c.a.Links[link] == nil || c.recreated[link]) {
		// Made before the sysctls are written: it starts with the
		// template's value as the kernel has it now.
		return c.sysctlBeforeKnown(tmpl)
	}
	if h := model.FindSysctl(c.a.Sysctls, key); h != nil {
		return h.Value, true
	}
	return "", false
}

// sysctlWritten returns the value the plan writes to key, if it writes one.
func (c *computer) sysctlWritten(key string) (string, bool) {
	v, ok := c.written[key]
	return v, ok
}

// sysctlBeforeKnown is the kernel's value of key now, if it was read.
func (c *computer) sysctlBeforeKnown(key string) (string, bool) {
	if h := model.FindSysctl(c.a.Sysctls, key); h != nil {
		return h.Value, true
	}
	return "", false
}

// raIgnored is the kernel's rule for router advertisements on a link
// (net/ipv6/ndisc.c, ipv6_accept_ra): accept_ra 0 takes none, 2 takes
// them whatever forwarding says, 1 (the default) only while forwarding is
// off.
func raIgnored(forwarding, acceptRA string) bool { return acceptRA == "1" && forwarding == "1" }

// warnRA warns where the plan makes the kernel ignore router
// advertisements on a link that took them: forwarding turned on while
// accept_ra is 1. A link this plan creates is named only when the file
// turns forwarding on for it (its own key, or all or default).
func (c *computer) warnRA() {
	fwdDeclared := func(link string) *model.Sysctl {
		for _, k := range []string{"net.ipv6.conf." + strings.ReplaceAll(link, ".", "/") + ".forwarding", "net.ipv6.conf.all.forwarding", "net.ipv6.conf.default.forwarding"} {
			if d := model.FindSysctl(c.d.Sysctls, k); d != nil && d.Value == "1" {
				return d
			}
		}
		return nil
	}
	names := map[string]bool{}
	for n := range c.a.Links {
		names[n] = true
	}
	for n := range c.d.Links {
		names[n] = true
	}
	byCause := map[string][]string{}
	causes := map[string]*model.Sysctl{}
	for _, link := range slices.Sorted(maps.Keys(names)) {
		if link == "lo" || c.blocked[link] {
			continue
		}
		l := strings.ReplaceAll(link, ".", "/")
		fk, rk := "net.ipv6.conf."+l+".forwarding", "net.ipv6.conf."+l+".accept_ra"
		fa, ok1 := c.sysctlAfter(fk)
		ra, ok2 := c.sysctlAfter(rk)
		if !ok1 || !ok2 || !raIgnored(fa, ra) {
			continue
		}
		cause := fwdDeclared(link)
		if c.a.Links[link] != nil && !c.recreated[link] {
			fb, ok1 := c.sysctlBeforeKnown(fk)
			rb, ok2 := c.sysctlBeforeKnown(rk)
			if !ok1 || !ok2 || raIgnored(fb, rb) {
				continue
			}
			if cause == nil {
				// accept_ra set to 1 by the file on a forwarding link.
				cause = model.FindSysctl(c.d.Sysctls, rk)
			}
		}
		if cause == nil {
			continue
		}
		byCause[cause.Key] = append(byCause[cause.Key], link)
		causes[cause.Key] = cause
	}
	for _, k := range slices.Sorted(maps.Keys(byCause)) {
		links := byCause[k]
		cause := causes[k]
		keys := []string{at(k, cause.Origin)}
		for _, link := range links {
			if d := model.FindSysctl(c.d.Sysctls, "net.ipv6.conf."+strings.ReplaceAll(link, ".", "/")+".accept_ra"); d != nil {
				keys = append(keys, at(d.Key, d.Origin))
			}
		}
		c.plan.Warnings = append(c.plan.Warnings, Warning{
			Keys: keys,
			Message: fmt.Sprintf("with IPv6 forwarding on, the kernel ignores router advertisements on %s (accept_ra 1 takes them only while forwarding is off): "+
				"addresses and default routes learnt from them expire", strings.Join(links, ", ")),
			Fix: "set ipv6.accept_ra: 2 in the sysctls of each link that takes its address or default route from router advertisements (links.LINK.sysctls), or 0 where none is wanted",
		})
	}
}

// mtuAfter is a link's MTU once the plan is applied, 0 when unknown: the
// file's, else the kernel's (a link the plan creates without an MTU gets
// the kernel's choice, which follows its lower device).
func (c *computer) mtuAfter(name string) int {
	if w := c.d.Links[name]; w != nil && w.MTU != 0 {
		return w.MTU
	}
	if h := c.a.Links[name]; h != nil && !c.recreated[name] {
		return h.MTU
	}
	return 0
}

// mtuTouched reports whether the plan creates the link or writes its MTU
// or master.
func (c *computer) mtuTouched(name string) bool { return c.touched[name] }

// VXLAN's encapsulation over its lower device (drivers/net/vxlan:
// VXLAN_HEADROOM, VXLAN6_HEADROOM): the outer IP, UDP and VXLAN headers and
// the inner Ethernet header.
const (
	vxlanHeadroom4 = 50
	vxlanHeadroom6 = 70
)

// warnMTU warns where a declared MTU is above what a lower device carries:
// a vlan, macvlan or ipvlan above its parent's (the kernel refuses it, or
// lowers it silently when the parent's goes down), a vxlan above its
// device's less the encapsulation, a bridge above a port's (the bridge
// drops, silently, a frame too big for the port it leaves by). Only links
// whose MTU or master the plan touches, or whose lower device's it does.
func (c *computer) warnMTU() {
	for _, name := range c.d.SortedLinkNames() {
		w := c.d.Links[name]
		if c.blocked[name] || w.MTU == 0 {
			continue
		}
		lower, headroom, what := "", 0, ""
		switch {
		case w.VLAN != nil || w.MACVlan != nil || w.IPVlan != nil:
			lower, what = w.Parent(), "its parent"
		case w.VXLAN != nil && w.VXLAN.Dev != "":
			lower, what, headroom = w.VXLAN.Dev, "its device", vxlanHeadroom4
			if w.VXLAN.Remote.Is6() || w.VXLAN.Local.Is6() {
				headroom = vxlanHeadroom6
			}
		}
		if lower != "" && (c.mtuTouched(name) || c.mtuTouched(lower)) {
			if pm := c.mtuAfter(lower); pm != 0 && w.MTU > pm-headroom {
				keys := []string{at("links."+name+".mtu", w.Origin)}
				if d := c.d.Links[lower]; d != nil && d.MTU != 0 {
					keys = append(keys, at("links."+lower+".mtu", d.Origin))
				}
				msg := fmt.Sprintf("link %s's MTU %d is above %s %s's %d", name, w.MTU, what, lower, pm)
				if headroom > 0 {
					// vxlan_config_apply clamps a new link's MTU,
					// vxlan_change_mtu refuses a change, and a lower
					// device's change moves nothing.
					msg += fmt.Sprintf(" less the %d bytes of VXLAN encapsulation: the kernel lowers it when it makes the link, refuses it as a change, "+
						"and leaves it above when %s's goes down, where an encapsulated packet too big for %s is fragmented or dropped", headroom, lower, lower)
				} else {
					// macvlan_common_newlink, vlan_dev_change_mtu...
					// refuse; a parent's change lowers its children
					// (macvlan_device_event, vlan_device_event).
					msg += ": the kernel refuses it, or lowers it when " + lower + "'s goes down"
				}
				c.plan.Warnings = append(c.plan.Warnings, Warning{Keys: keys, Message: msg,
					Fix: fmt.Sprintf("set links.%s.mtu to at most %d, or raise %s's", name, pm-headroom, lower)})
			}
		}
		if w.Kind != model.KindBridge || !(c.mtuTouched(name)) {
			continue
		}
		var small []string
		for _, p := range c.d.SortedLinkNames() {
			if pl := c.d.Links[p]; pl.Master == name && !c.blocked[p] {
				if pm := c.mtuAfter(p); pm != 0 && pm < w.MTU {
					small = append(small, fmt.Sprintf("%s (%d)", p, pm))
				}
			}
		}
		if len(small) > 0 {
			c.plan.Warnings = append(c.plan.Warnings, Warning{Keys: []string{at("links."+name+".mtu", w.Origin)},
				Message: fmt.Sprintf("bridge %s's MTU %d is above its ports %s: the bridge drops, silently, a frame too big for the port it leaves by", name, w.MTU, strings.Join(small, ", ")),
				Fix:     fmt.Sprintf("give links.%s.mtu the smallest of its ports' MTUs, or raise theirs", name)})
		}
	}
}

// reach is where a declared address or route lets the kernel reach a
// gateway: its subnet, on a link; while the link is down the kernel holds
// no route to that subnet, so it reaches nothing, but it names the cause
// of a gateway's refusal better than "no address".
type reach struct {
	p    netip.Prefix
	link string
	up   bool
}

// localAddr is a declared address's link, and whether that is up.
type localAddr struct {
	link string
	up   bool
}

// reaches lists the declared subnets through which the kernel resolves a
// gateway: those of addresses (with a prefix route: the kernel takes a
// prefix route of any scope), a point-to-point address's peer, the
// subnets of the pools a link takes addresses from, and the declared
// routes without a gateway (a device route); each marked with whether its
// link will be up, which the kernel needs of it.
func (c *computer) reaches() []reach {
	up := c.upAfter
	var out []reach
	for i := range c.d.Addresses {
		a := &c.d.Addresses[i]
		u := up(a.Link)
		if a.Peer.IsValid() {
			out = append(out, reach{a.Peer.Masked(), a.Link, u})
		}
		if !a.NoPrefixRoute {
			out = append(out, reach{a.Prefix.Masked(), a.Link, u})
		}
	}
	pools := map[string]*model.Pool{}
	for i := range c.d.Pools {
		pools[c.d.Pools[i].Name] = &c.d.Pools[i]
	}
	for _, pa := range c.d.PoolAddresses {
		if p := pools[pa.Pool]; p != nil && !pa.NoPrefixRoute {
			for _, s := range p.Subnets {
				for _, pr := range []netip.Prefix{s.IPv4, s.IPv6} {
					if pr.IsValid() {
						out = append(out, reach{pr, pa.Link, up(pa.Link)})
					}
				}
			}
		}
	}
	for i := range c.d.Routes {
		r := &c.d.Routes[i]
		if (r.Type == model.RouteUnicast || r.Type == 0) && !r.Gateway.IsValid() && len(r.NextHops) == 0 && r.Dev != "" {
			out = append(out, reach{r.Dst, r.Dev, up(r.Dev)})
		}
	}
	return out
}

// upAfter reports whether a link is up once the plan is applied.
func (c *computer) upAfter(link string) bool {
	if w := c.d.Links[link]; w != nil && (w.Kind != model.KindDevice || w.StateSet) {
		return w.Up
	}
	h := c.a.Links[link]
	return h != nil && h.Up
}

// gatewayReached reports whether the kernel can resolve gateway g, on link
// dev when the route names one: an IPv6 link-local gateway by its link
// alone; an IPv6 gateway that is an address of the host never (the kernel
// refuses it: ip6_validate_gw); an IPv4 one that is an address of the host
// by the local route the kernel adds for every address, whatever its flags
// (fib_add_ifaddr; fib_check_nh takes RTN_LOCAL), when its link is up
// (else ENETDOWN); another through a declared subnet that holds it, on a
// link that will be up. When a declared subnet holds it on a link that
// will be down, down names that link: the gateway is declared, the link's
// state is what the kernel refuses.
func gatewayReached(g netip.Addr, dev string, rs []reach, local map[netip.Addr]localAddr, bcast map[netip.Addr]bool) (ok bool, down string) {
	if g.Is6() && g.IsLinkLocalUnicast() {
		return dev != "", ""
	}
	if l, ok := local[g]; ok && (dev == "" || dev == l.link || g.Is6()) {
		if g.Is4() && !l.up {
			return false, l.link
		}
		return g.Is4() && l.up, ""
	}
	// An IPv4 address of another link, given with dev: the kernel's
	// lookup through dev passes over that link's local route and finds
	// dev's own subnet, as for any gateway.

	if bcast[g] {
		// The broadcast route the kernel adds with an IPv4 address
		// (fib_add_ifaddr): a gateway that is broadcast is refused.
		return false, ""
	}
	for _, r := range rs {
		if (dev == "" || r.link == dev) && r.p.Contains(g) {
			if r.up {
				return true, ""
			}
			if down == "" {
				down = r.link
			}
		}
	}
	return false, down
}

// warnGateways warns about the routes the plan writes through a gateway
// that no declared address (or pool, or device route) reaches: the kernel
// resolves a gateway through the routes it holds when the route is written
// (fib_check_nh, ip6_route_check_nh) and refuses it when none reaches it,
// so the route depends on an address or route not in the file (one DHCP
// gave, someone else's), which may not be there at boot. A route with
// onlink is taken at its word.
func (c *computer) warnGateways() {
	var rs []reach
	var local map[netip.Addr]localAddr
	var bcast map[netip.Addr]bool
	type hop struct {
		g   netip.Addr
		dev string
	}
	type verdict struct {
		ok   bool
		down string
	}
	// A big host's routes share a few gateways: each is judged once.
	known := map[hop]verdict{}
	for i := range c.plan.Ops {
		op := &c.plan.Ops[i]
		if op.Kind != KindRoute || op.Route == nil || op.Action == Delete || op.Route.OnLink {
			continue
		}
		r := op.Route
		var hops []hop
		if r.Gateway.IsValid() {
			hops = append(hops, hop{r.Gateway, r.Dev})
		}
		for _, h := range r.NextHops {
			if h.Gateway.IsValid() {
				hops = append(hops, hop{h.Gateway, h.Dev})
			}
		}
		if len(hops) == 0 {
			continue
		}
		if rs == nil {
			rs = c.reaches()
			local, bcast = map[netip.Addr]localAddr{}, map[netip.Addr]bool{}
			for j := range c.d.Addresses {
				a := &c.d.Addresses[j]
				up := c.upAfter(a.Link)
				local[a.Prefix.Addr()] = localAddr{a.Link, up}
				if p := a.Prefix; up && p.Addr().Is4() && p.Bits() < 31 && !a.Peer.IsValid() {
					bcast[lastAddr(p.Masked())] = true
				}
			}
		}
		var bad, downs, downGws []string
		for _, h := range hops {
			v, seen := known[h]
			if !seen {
				v.ok, v.down = gatewayReached(h.g, h.dev, rs, local, bcast)
				known[h] = v
			}
			switch {
			case v.ok:
			case v.down != "":
				downs = append(downs, h.g.String()+" on "+v.down)
				downGws = append(downGws, h.g.String())
			default:
				bad = append(bad, h.g.String())
			}
		}
		if len(bad) == 0 && len(downs) == 0 {
			continue
		}
		key := func(gws []string) []string {
			return []string{at("route "+r.Key().String()+" via "+strings.Join(gws, ", "), r.Origin.String())}
		}
		if len(downs) > 0 {
			// A gateway in a declared subnet of a link that stays down: the
			// kernel holds no route to that subnet while the link is down,
			// and refuses the route (network is unreachable).
			sort.Strings(downs)
			sort.Strings(downGws)
			var links []string
			for _, d := range downs {
				links = append(links, d[strings.LastIndex(d, " ")+1:])
			}
			slices.Sort(links)
			links = slices.Compact(links)
			c.plan.Warnings = append(c.plan.Warnings, Warning{
				Keys:    key(downGws),
				Message: "gateway " + strings.Join(downs, ", ") + " is in a subnet of a link that will be down: the kernel holds no route to a down link's subnets, and refuses the route (network is unreachable)",
				Fix:     "bring " + strings.Join(links, ", ") + " up (state: up), or route through a link that is up",
			})
		}
		if len(bad) == 0 {
			continue
		}
		sort.Strings(bad)
		gw := strings.Join(bad, ", ")
		on := ""
		if r.Dev != "" {
			on = " on " + r.Dev
		}
		c.plan.Warnings = append(c.plan.Warnings, Warning{
			Keys: key(bad),
			Message: "no address the file declares" + on + " reaches gateway " + gw +
				": the kernel takes the route only while an address or route that is not in the file (one DHCP gave, someone else's) reaches it, and refuses it otherwise",
			Fix: "declare an address" + on + " in a subnet that holds " + gw + ", a device route to it, or onlink: true if it is on the link without a subnet",
		})
	}
}

// lastAddr is the last address of an IPv4 prefix: its broadcast.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
