package desired

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The schema of this kind (see conf.go): what the file holds, before the
// builder below checks it.

type routeConf struct {
	Meta
	To     *Prefix `yaml:"to" schema:"required"`
	Family *Family `yaml:"family"`
	Via    *Addr   `yaml:"via"`
	Dev    string  `yaml:"dev"`
	Src    *Addr   `yaml:"src"`
	Table  *Table  `yaml:"table"`
	Metric int     `yaml:"metric" schema:"limits=metric"`
	Scope  *Scope  `yaml:"scope"`
	MTU    int     `yaml:"mtu" schema:"limits=routeMTU"`
	// Side by side: one word for both (a megabyte of "[{},{},…]" is
	// 350k of these).
	TOS    uint8  `yaml:"tos" schema:"limits=tos"`
	OnLink bool   `yaml:"onlink"`
	Type   string `yaml:"type" schema:"enum=routeTypes"`
	// NextHops make a multipath route (in place of via and dev).
	NextHops []*nextHopConf `yaml:"nexthops" schema:"unique"`
}

// nextHopConf is one path of a multipath route.
type nextHopConf struct {
	Meta
	Via    *Addr  `yaml:"via"`
	Dev    string `yaml:"dev"`
	Weight *int   `yaml:"weight" schema:"limits=weight"`
}

// Limits of a route's attributes.
const (
	// maxTOS is the largest DS field without ECN bits (the low two).
	maxTOS = 0xfc
	// A next hop's weight: rtnh_hops is a u8 holding the weight less one.
	minWeight, maxWeight = 1, 256
)

func (b *builder) route(rp routePath, rc *routeConf) {
	// The path is only built for an error: a file of 100k routes has none.
	path := func(field string) string { return rp.at(field) }
	if rc.To == nil {
		// Lazily: every list item that is not a mapping ends here, half a
		// million in a megabyte of "[x,x,…]", at a position already reported.
		b.errs.addLazy(rc.Pos, func() (string, string) {
			return path(".to"), "missing; expected a destination prefix like 10.0.0.0/24 or default"
		})
		return
	}
	if !rc.To.Default && !rc.To.P.IsValid() {
		return // the decoder reported the bad prefix
	}
	typ := model.RouteUnicast
	if rc.Type != "" || rc.has("type") {
		t, ok := model.RouteTypeNames[rc.Type]
		if !ok {
			b.errs.add(rc.at("type"), path(".type"), "expected one of: %s; found %q", strings.Join(routeTypeWords(), ", "), rc.Type)
			return
		}
		typ = t
	}
	// The family comes from the destination; "default" takes it from
	// family (which may also ask for both), else from via or the next
	// hops, else ipv4.
	var fams []bool // true = IPv6
	switch {
	case !rc.To.Default:
		fams = []bool{rc.To.P.Addr().Is6()}
		if rc.Family != nil && (rc.Family.V4 && rc.Family.V6 || rc.Family.V6 != fams[0]) {
			b.errs.add(rc.at("family"), path(".family"), "does not match the destination %s", rc.To.P)
		}
	case rc.Family != nil:
		if rc.Family.V4 {
			fams = append(fams, false)
		}
		if rc.Family.V6 {
			fams = append(fams, true)
		}
	case rc.Via != nil:
		fams = []bool{rc.Via.A.Is6()}
	case hopsVia(rc.NextHops) > 0:
		// IPv4 when any next hop is: an IPv6 route has no IPv4 next hop,
		// while an IPv4 one may have IPv6 ones (RFC 5549), listed first
		// or not; IPv6 when every next hop with a via is.
		v6 := true
		for _, h := range rc.NextHops {
			if h != nil && h.Via != nil && h.Via.A.Is4() {
				v6 = false
			}
		}
		fams = []bool{v6}
	default:
		fams = []bool{false}
	}
	for _, v6 := range fams {
		r := model.Route{Table: model.TableMain, Type: uint8(typ), Dev: b.devName(rc.Dev), TOS: rc.TOS, OnLink: rc.OnLink, Origin: b.origins.Origin(rc.Pos)}
		if rc.To.Default {
			r.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
			if v6 {
				r.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			}
		} else {
			r.Dst = rc.To.P
		}
		if rc.Table != nil {
			r.Table = uint32(rc.Table.N)
		}
		if rc.Via != nil {
			r.Gateway = rc.Via.A
			if r.Gateway.Is4() && v6 {
				b.errs.add(rc.at("via"), path(".via"), "gateway %s is not of the destination's family (%s)", r.Gateway, familyWord(v6))
				continue
			}
			// An IPv6 gateway of an IPv4 route (RFC 5549) is written as
			// RTA_VIA, as `ip route add … via inet6 fe80::1 dev X` does.
		}
		if rc.Src != nil {
			r.Src = rc.Src.A
			if r.Src.Is6() != v6 {
				b.errs.add(rc.at("src"), path(".src"), "source %s is not of the destination's family (%s)", r.Src, familyWord(v6))
			}
		}
		if rc.MTU < 0 || rc.MTU > maxMTU || (rc.MTU != 0 && rc.MTU < minMTU) {
			b.errs.add(rc.at("mtu"), path(".mtu"), "expected a route MTU from %d to %d, found %d", minMTU, maxMTU, rc.MTU)
		} else {
			r.MTU = uint32(rc.MTU)
		}
		badMetric := rc.Metric < 0 || rc.Metric > math.MaxUint32
		if badMetric {
			// RTA_PRIORITY is a u32: a larger number would be cut to
			// its low 32 bits and the route flap on every pass.
			b.errs.add(rc.at("metric"), path(".metric"), "expected a metric from 0 to 4294967295, found %d", rc.Metric)
		} else {
			r.Metric = uint32(rc.Metric)
		}
		// The kernel takes a route's tos as a DS field without ECN bits, and
		// none for IPv6 ("Invalid dsfield (tos)"): refused here, with the
		// file's position, rather than at apply.
		switch {
		case rc.TOS != 0 && v6:
			b.errs.add(rc.at("tos"), path(".tos"), "IPv6 routes take no tos; remove it")
		case rc.TOS&3 != 0:
			b.errs.add(rc.at("tos"), path(".tos"), "expected a DS field without ECN bits (a multiple of 4, 0 to %d, like 0x10), found %d", maxTOS, rc.TOS)
		}
		// The kernel stores IPv6 metric 0 as 1024: normalise so the diff compares like with like.
		if v6 && r.Metric == 0 {
			r.Metric = model.IPv6DefaultMetric
		}
		switch {
		case rc.Scope != nil:
			r.Scope = uint8(rc.Scope.N)
		case v6:
			// IPv6 routes have no scope: the kernel reports universe whatever is sent.
		case typ == model.RouteLocal:
			r.Scope = model.ScopeHost
		case typ == model.RouteUnicast && len(rc.NextHops) > 0:
			// The kernel wants scope link at most for a route whose next
			// hops are devices only, and universe when one has a gateway.
			r.Scope = model.ScopeLink
			for _, h := range rc.NextHops {
				if h != nil && h.Via != nil {
					r.Scope = model.ScopeUniverse
				}
			}
		case typ == model.RouteUnicast && rc.Via == nil:
			// What `ip route add ... dev X` does: a route without a gateway is on-link.
			r.Scope = model.ScopeLink
		}
		if len(rc.NextHops) > 0 || rc.has("nexthops") {
			if !b.nextHops(rc, &r, path) {
				continue
			}
		} else if typ == model.RouteUnicast || typ == model.RouteLocal {
			if rc.Dev == "" && rc.Via == nil {
				b.errs.add(rc.Pos, path(""), "a %s route needs via, dev or both", model.RouteTypeName(typ))
				continue
			}
		} else if rc.Dev != "" || rc.Via != nil {
			b.errs.add(rc.Pos, path(""), "a %s route takes neither via nor dev", rc.Type)
			continue
		}
		if rc.Via != nil && rc.Dev == loopback && r.Gateway.Is6() {
			b.errs.add(rc.at("dev"), path(".dev"), "the kernel refuses lo as the link of an IPv6 gateway (\"Egress device can not be loopback device\"); give another link")
			continue
		}
		if rc.Via != nil && rc.Dev == "" && r.Gateway.Is6() && (r.Gateway.IsLinkLocalUnicast() || r.Gateway.IsLinkLocalMulticast()) {
			// A link-local address means nothing without its link: the
			// kernel refuses the route ("Egress device not specified").
			b.errs.add(rc.at("via"), path(".via"), "gateway %s is link-local; give dev, the link it is on", r.Gateway)
			continue
		}
		if rc.OnLink && rc.Via == nil && len(rc.NextHops) == 0 {
			b.errs.add(rc.at("onlink"), path(".onlink"), "onlink applies to a gateway; give via")
		}
		if rc.OnLink && rc.Dev == "" && len(rc.NextHops) == 0 {
			b.errs.add(rc.at("onlink"), path(".onlink"), "onlink needs dev: the gateway is taken as on-link on that device")
		}
		if rc.OnLink && rc.Via != nil && r.Gateway.Is4() {
			if why := b.notUnicastGateway(r.Gateway, rc.Dev); why != "" {
				b.errs.add(rc.at("via"), path(".via"), "gateway %s %s: the kernel takes an on-link gateway only where its local table has no route of another type for it (\"Nexthop has invalid gateway\"); give another gateway", r.Gateway, why)
				continue
			}
		}
		if mtu, why, _ := b.kernelMTU(rc.Dev, nil); v6 && mtu != 0 && mtu < ipv6MinMTU {
			b.errs.add(rc.at("dev"), path(".dev"), "link %s has MTU %d%s, below %d: the kernel takes IPv6 off such a link and refuses IPv6 routes through it", rc.Dev, mtu, whyMTU(why), ipv6MinMTU)
		}
		if lc := b.links[rc.Dev]; lc != nil && lc.State == "down" && (typ == model.RouteUnicast || typ == model.RouteLocal) {
			// IPv6 too: "Nexthop device is not up" (fib6_nh_init), or no
			// route to its gateway, whose connected route is gone.
			b.errs.add(rc.at("dev"), path(".dev"), "link %s is declared state: down; the kernel refuses routes through a link that is down", rc.Dev)
			continue
		}
		if rc.Dev != "" && !b.declared(rc.Dev) {
			b.errs.add(rc.at("dev"), path(".dev"), "link %q is not declared; declare it (kind device for an existing NIC)", rc.Dev)
			continue
		}
		if r.Src.IsValid() && r.Src.Is4() {
			if link, vrf, table, ok := b.vrfOfSource(r.Src); ok && table != int(r.Table) {
				b.errs.add(rc.at("src"), path(".src"), "source %s is an address of %s, in VRF %s (table %d); the kernel takes an IPv4 source only from the route's table's local addresses or table local's, and a VRF's are in its table: give this route table %d, or a source outside the VRF", r.Src, link, vrf, table, table)
				continue
			}
		}
		if badMetric {
			// Reported: its key, without the metric, would be another
			// route's and read as declared twice.
			continue
		}
		if kr, ok := b.kernelRouteOf(r.Key()); ok {
			fix := "remove it from the file, or give it another metric"
			if kr.what == "prefix route" {
				fix += ", or give the address noprefixroute: true and declare the route yourself"
			}
			b.errs.add(rc.Pos, path(""), "route %s is the %s the kernel makes for address %s of link %s: the kernel adds it with the address (protocol kernel) and refuses another with its identity (table, destination, tos and metric); %s", r.Key(), kr.what, kr.addr, kr.link, fix)
			continue
		}
		if prev, dup := b.routeAt.find(b.st.Routes, r.Key()); dup {
			b.errs.add(rc.Pos, path(""), "route %s is declared twice (first at %s); a route is identified by table, destination, tos and metric", r.Key(), b.st.Routes[prev].Origin)
			continue
		}
		b.routeAt.add(b.st.Routes, r.Key())
		b.st.Routes = append(b.st.Routes, r)
	}
}

// devName is name, as one string per name: the decoder makes a string
// of each route's dev, and the model keeps them as long as it enforces
// the file (16 bytes a route; a routes file's are one per name already).
func (b *builder) devName(name string) string {
	if name == "" {
		return ""
	}
	if s, ok := b.devNames[name]; ok {
		return s
	}
	if b.devNames == nil {
		b.devNames = map[string]string{}
	}
	b.devNames[name] = name
	return name
}

// nextHops checks a multipath route's next hops and puts them in r; false
// when the route is not to be kept.
func (b *builder) nextHops(rc *routeConf, r *model.Route, path func(string) string) bool {
	if len(rc.NextHops) == 0 {
		b.errs.add(rc.at("nexthops"), path(".nexthops"), "is empty; remove it (via and dev on the route give one path) or list two or more next hops")
		return false
	}
	ok := true
	if rc.Via != nil || rc.Dev != "" {
		b.errs.add(rc.at("nexthops"), path(".nexthops"), "a route with nexthops takes neither via nor dev of its own; give them in each next hop")
		ok = false
	}
	if r.Type != model.RouteUnicast {
		b.errs.add(rc.at("nexthops"), path(".nexthops"), "a %s route takes no nexthops; only a unicast route has several paths", model.RouteTypeName(int(r.Type)))
		return false
	}
	if len(rc.NextHops) < 2 {
		b.errs.add(rc.at("nexthops"), path(".nexthops"), "expected two or more next hops, found %d; for one path give via and dev on the route", len(rc.NextHops))
		return false
	}
	if rc.OnLink {
		b.errs.add(rc.at("onlink"), path(".onlink"), "onlink is not supported with nexthops; remove it")
		ok = false
	}
	v6 := r.IsIPv6()
	hs := make([]model.NextHop, 0, len(rc.NextHops))
	for j, hc := range rc.NextHops {
		hp := func(field string) string { return path(".nexthops[" + strconv.Itoa(j) + "]" + field) }
		if hc == nil || hc.notMapping {
			ok = false // reported by the decoder
			continue
		}
		h := model.NextHop{Dev: b.devName(hc.Dev), Weight: 1}
		if hc.Weight != nil {
			h.Weight = *hc.Weight
			if h.Weight < minWeight || h.Weight > maxWeight {
				b.errs.add(hc.at("weight"), hp(".weight"), "expected a weight from %d to %d, found %d", minWeight, maxWeight, h.Weight)
				ok = false
			}
		}
		if hc.Via == nil && hc.Dev == "" {
			b.errs.add(hc.Pos, hp(""), "a next hop needs via, dev or both")
			ok = false
			continue
		}
		if hc.Via != nil {
			h.Gateway = hc.Via.A
			switch {
			case h.Gateway.Is4() && v6:
				b.errs.add(hc.at("via"), hp(".via"), "gateway %s is not of the destination's family (IPv6)", h.Gateway)
				ok = false
			case h.Gateway.Is6() && hc.Dev == loopback:
				b.errs.add(hc.at("dev"), hp(".dev"), "the kernel refuses lo as the link of an IPv6 gateway (\"Egress device can not be loopback device\"); give another link")
				ok = false
			case h.Gateway.IsLinkLocalUnicast() && h.Gateway.Is6() && hc.Dev == "":
				b.errs.add(hc.at("via"), hp(".via"), "gateway %s is link-local; give dev, the link it is on", h.Gateway)
				ok = false
			}
		}
		if hc.Dev != "" {
			if !b.declared(hc.Dev) {
				b.errs.add(hc.at("dev"), hp(".dev"), "link %q is not declared; declare it (kind device for an existing NIC)", hc.Dev)
				ok = false
			} else if mtu, why, _ := b.kernelMTU(hc.Dev, nil); v6 && mtu != 0 && mtu < ipv6MinMTU {
				b.errs.add(hc.at("dev"), hp(".dev"), "link %s has MTU %d%s, below %d: the kernel takes IPv6 off such a link and refuses IPv6 routes through it", hc.Dev, mtu, whyMTU(why), ipv6MinMTU)
				ok = false
			} else if lc := b.links[hc.Dev]; lc != nil && lc.State == "down" {
				b.errs.add(hc.at("dev"), hp(".dev"), "link %s is declared state: down; the kernel refuses routes through a link that is down", hc.Dev)
				ok = false
			}
		}
		for k, o := range hs {
			// Without a dev the kernel picks the gateway's link: the same
			// gateway twice may be the same path twice.
			if o.Gateway == h.Gateway && (o.Dev == h.Dev || o.Dev == "" || h.Dev == "") {
				b.errs.add(hc.Pos, hp(""), "the same next hop as nexthops[%d]; each path is given once (use weight for a larger share)", k)
				ok = false
			}
		}
		hs = append(hs, h)
	}
	model.SortNextHops(hs)
	r.NextHops = hs
	return ok
}

// routeIndex finds a route by its key among the routes built so far (the
// duplicate check). Routes mostly come in key order (a generated file, a
// table dumped and pasted), and those need no hashing: the indexes of the
// routes whose keys increase are in asc, found by binary search, the
// others in at. Every key in at is below the last of asc, so a key above
// that is new. A map of every key was a fifth of the time of 100k routes.
type routeIndex struct {
	asc []int
	at  map[model.RouteKey]int
}

func newRouteIndex(n int) routeIndex {
	return routeIndex{asc: make([]int, 0, n)}
}

// find returns the index in routes of the route with key k.
func (x *routeIndex) find(routes []model.Route, k model.RouteKey) (int, bool) {
	if n := len(x.asc); n > 0 {
		switch c := k.Compare(routes[x.asc[n-1]].Key()); {
		case c > 0:
			return 0, false
		case c == 0:
			return x.asc[n-1], true
		}
		if i, ok := slices.BinarySearchFunc(x.asc, k, func(j int, k model.RouteKey) int { return routes[j].Key().Compare(k) }); ok {
			return x.asc[i], true
		}
	}
	i, ok := x.at[k]
	return i, ok
}

// add records that the route with key k, not in x, is the next one
// appended to routes.
func (x *routeIndex) add(routes []model.Route, k model.RouteKey) {
	if n := len(x.asc); n == 0 || k.Compare(routes[x.asc[n-1]].Key()) > 0 {
		x.asc = append(x.asc, len(routes))
		return
	}
	if x.at == nil {
		x.at = map[model.RouteKey]int{}
	}
	x.at[k] = len(routes)
}

// loopback is the name of a namespace's loopback link, which the kernel
// refuses as the link of an IPv6 gateway (fib6_nh_init).
const loopback = "lo"

func familyWord(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

func routeTypeWords() []string {
	var ws []string
	for w := range model.RouteTypeNames {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	return ws
}

// hopsVia counts the next hops that give a via.
func hopsVia(hops []*nextHopConf) int {
	n := 0
	for _, h := range hops {
		if h != nil && h.Via != nil {
			n++
		}
	}
	return n
}

// vrfOfSource finds the declared link holding src as a static address and,
// when that link is a VRF or one's port, the VRF and its table. The index
// of addresses is made on the first route with a source.
func (b *builder) vrfOfSource(src netip.Addr) (link, vrf string, table int, ok bool) {
	if b.srcLinks == nil {
		b.srcLinks = make(map[netip.Addr]string, len(b.st.Addresses))
		for _, a := range b.st.Addresses {
			b.srcLinks[a.Prefix.Addr()] = a.Link
		}
	}
	link, ok = b.srcLinks[src]
	if !ok {
		return "", "", 0, false
	}
	vrf = link
	lc := b.links[link]
	if lc != nil && lc.Kind != "vrf" {
		vrf, lc = lc.Master, b.links[lc.Master]
	}
	if lc == nil || lc.Kind != "vrf" || lc.VRF == nil {
		return "", "", 0, false
	}
	return link, vrf, int(lc.VRF.Table), true
}

// kernelRoute is a route the kernel makes for an address: which one
// (prefix route, local route, broadcast route), and for what.
type kernelRoute struct {
	what, link string
	addr       netip.Prefix
}

// kernelRouteOf finds the route with identity k among those the kernel
// makes for the file's static addresses (fib_add_ifaddr, addrconf): for an
// IPv4 address its local route (table local, or its VRF's), its prefix
// route (table main or its VRF's, the peer's prefix for a point-to-point
// address; none for a /32 without a peer, nor with noprefixroute) and the
// broadcast route of a subnet below /31; for an IPv6 address its prefix
// route (metric 256, with a point-to-point address's to its peer). The index is made on the first route.
func (b *builder) kernelRouteOf(k model.RouteKey) (kernelRoute, bool) {
	if b.kernelRoutes == nil {
		b.kernelRoutes = map[model.RouteKey]kernelRoute{}
		put := func(what string, a *model.Address, dst netip.Prefix, table, metric uint32) {
			key := model.RouteKey{Dst: dst, Table: table, Metric: metric}
			if _, ok := b.kernelRoutes[key]; !ok {
				b.kernelRoutes[key] = kernelRoute{what, a.Link, a.Prefix}
			}
		}
		for i := range b.st.Addresses {
			a := &b.st.Addresses[i]
			local, main := uint32(model.TableLocal), uint32(model.TableMain)
			if vrf := b.vrfOfLink(a.Link); vrf != "" && b.links[vrf].VRF != nil {
				local, main = b.links[vrf].VRF.Table, b.links[vrf].VRF.Table
			}
			ip := a.Prefix.Addr()
			subnet := a.Prefix.Masked()
			if a.Peer.IsValid() {
				subnet = a.Peer.Masked()
			}
			if ip.Is4() {
				put("local route", a, netip.PrefixFrom(ip, 32), local, 0)
				if !a.NoPrefixRoute && (subnet.Addr() != ip || subnet.Bits() < 32) {
					put("prefix route", a, subnet, main, 0)
				}
				if subnet.Bits() < 31 {
					put("broadcast route", a, netip.PrefixFrom(lastAddr(subnet), 32), local, 0)
				}
				continue
			}
			// The IPv6 local route has metric 0, which no route of the
			// file has (it is taken as 1024): it cannot be declared.
			if !a.NoPrefixRoute {
				put("prefix route", a, a.Prefix.Masked(), main, model.IPv6KernelPrefixMetric)
				if a.Peer.IsValid() {
					put("prefix route", a, netip.PrefixFrom(a.Peer.Addr(), 128), main, model.IPv6KernelPrefixMetric)
				}
			}
		}
	}
	kr, ok := b.kernelRoutes[k]
	return kr, ok
}

// notUnicastGateway says why the kernel's local table gives the IPv4
// address gw a type other than unicast as seen from link dev, or "": an
// address of a link in dev's VRF (local), one in the subnet of an address
// on lo (the kernel routes lo's whole subnet as local), the broadcast
// address of such a link's subnet, or a loopback, multicast or limited
// broadcast address. The kernel refuses such a gateway on-link (fib_check_nh_v4_gw).
func (b *builder) notUnicastGateway(gw netip.Addr, dev string) string {
	switch {
	case gw.IsMulticast():
		return "is a multicast address"
	case gw == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "is the limited broadcast address"
	case gw.IsLoopback():
		return "is a loopback address (lo holds 127.0.0.0/8)"
	}
	vrf := b.vrfOfLink(dev)
	for _, a := range b.st.Addresses {
		p := a.Prefix
		if !p.Addr().Is4() || b.vrfOfLink(a.Link) != vrf {
			continue
		}
		switch {
		case p.Addr() == gw:
			return fmt.Sprintf("is an address of link %s (a local address)", a.Link)
		case a.Link == loopback && p.Masked().Contains(gw):
			return fmt.Sprintf("is in the subnet %s of an address on lo, which the kernel routes as local", p.Masked())
		case p.Bits() < 31 && gw == lastAddr(p):
			return fmt.Sprintf("is the broadcast address of link %s's subnet %s", a.Link, p.Masked())
		}
	}
	return ""
}

// vrfOfLink is the vrf a link is in (the link itself for a vrf), or "".
func (b *builder) vrfOfLink(link string) string {
	lc := b.links[link]
	switch {
	case lc == nil:
		return ""
	case lc.Kind == "vrf":
		return link
	case lc.Master != "" && b.links[lc.Master] != nil && b.links[lc.Master].Kind == "vrf":
		return lc.Master
	}
	return ""
}

// lastAddr is the last address of an IPv4 prefix (its broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(a[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a)
}

// whyMTU puts kernelMTU's reason in parentheses, or nothing.
func whyMTU(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}
