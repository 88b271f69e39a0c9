package desired

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// builder turns the decoded files into one model.State, checking meaning
// (references, families, ranges, conflicts between fragments).
type builder struct {
	errs  *errList
	st    *model.State
	links map[string]*linkConf // every declared link, across files
	// linkNames is links' names sorted, made once: a megabyte declares a
	// hundred thousand links, and sorting their names was a tenth of its
	// time each time.
	linkNames []string
	// where each keyed object was declared, to report conflicts between fragments
	routeAt routeIndex
	ruleAt  map[model.RuleKey]Pos
	// ruleClashes indexes the rules by model.Rule.ClashGroup (rule.go).
	ruleClashes map[model.RuleKey]*clashIndex
	fouAt       map[model.FouKey]Pos
	// wgPortAt holds the UDP port each WireGuard device listens on, and
	// where it was set: the kernel binds it in both families.
	wgPortAt map[int]portAt
	sysctlAt map[string]Pos
	// addrAt and poolAddrAt hold where each address of a link was declared.
	addrAt      map[linkAddr]string
	subnetScope map[linkSubnet]scopeAt
	poolAddrAt  map[[2]string]string
	// poolConfs holds every declared pool, across files (pool.go).
	poolConfs map[string]*poolConf
	// Made once from links, when first needed: ipvlanParents (ipvlanOf)
	// and wgKnown (wireGuardLinks).
	ipvlanParents map[string]string
	// srcLinks maps each static address to its link (vrfOfSource).
	srcLinks map[netip.Addr]string
	// kernelRoutes are the routes the kernel makes for the file's static
	// addresses, by identity (kernelRouteOf).
	kernelRoutes map[model.RouteKey]kernelRoute
	wgKnown      *string
	// ipvlanOn holds the first ipvlan (in name order) on each parent.
	ipvlanOn map[string]ipvlanAt
	// origins makes the Origin of routes and addresses.
	origins posArena
	// devNames holds one string per link name routes go through
	// (devName).
	devNames map[string]string
	// sides are the side files (sidefile.go), line the parse of a routes
	// file's lines (route_file.go).
	sides *sideFiles
	line  *routeLine
}

func build(confs []*fileConf, errs *errList, sides *sideFiles) *model.State {
	b := &builder{
		errs:     errs,
		sides:    sides,
		st:       model.NewState(),
		links:    map[string]*linkConf{},
		ruleAt:   map[model.RuleKey]Pos{},
		fouAt:    map[model.FouKey]Pos{},
		wgPortAt: map[int]portAt{},

		addrAt:      map[linkAddr]string{},
		subnetScope: map[linkSubnet]scopeAt{},
		poolAddrAt:  map[[2]string]string{},
		ipvlanOn:    map[string]ipvlanAt{},
	}
	n := 0
	for _, fc := range confs {
		for _, rc := range fc.Routes {
			// Only the routes written as mappings: a megabyte of "[x,x,…]"
			// (aliased) is a million entries that are not routes.
			if rc != nil && len(rc.keys) > 0 {
				n++
			}
		}
		for _, rf := range fc.RoutesFiles {
			// Read here, for the size: at most a route a line.
			if rf != nil && rf.File != "" {
				if f := sides.get(sidePath(fc.Pos.File, rf.File)); f.err == nil {
					n += lineCount(f.text)
				}
			}
		}
	}
	b.routeAt = newRouteIndex(n)
	b.st.Routes = make([]model.Route, 0, n)
	b.settings(confs)
	b.pools(confs)
	// Links first, across all files, so that references resolve whatever
	// fragment declares the target.
	for _, fc := range confs {
		for _, name := range sortedKeys(fc.Links) {
			lc := fc.Links[name]
			if lc == nil {
				errs.add(fc.at("links"), "links."+name, "empty link; expected at least \"kind\"")
				continue
			}
			if prev, dup := b.links[name]; dup {
				errs.add(lc.Pos, "links."+name, "link declared again (first at %s); each fragment must own its links", prev.Pos)
				continue
			}
			b.links[name] = lc
			b.linkNames = append(b.linkNames, name)
		}
	}
	if !slices.IsSorted(b.linkNames) {
		// Fragments: each file's names are sorted, not all of them.
		slices.Sort(b.linkNames)
	}
	for _, name := range b.linkNames {
		if lc := b.links[name]; !lc.notMapping {
			// One that was not a mapping was reported by the decoder,
			// and every check of link reports at the same position.
			b.link(name, lc)
		}
	}
	b.linkCycles()
	for _, fc := range confs {
		// Items that were not mappings were reported by the decoder.
		for i, fo := range fc.Fou {
			if !fo.notMapping {
				b.fou(i, fo)
			}
		}
		for i, rc := range fc.Routes {
			if !rc.notMapping {
				b.route(routePath{"routes", i}, rc)
			}
			// Built: the decoded route goes as its model is made, so that
			// a big file's two forms are not held whole at once (the
			// decoded ones come in chunks, freed chunk by chunk).
			fc.Routes[i] = nil
		}
		b.routesFiles(fc)
		for i, rc := range fc.Rules {
			if !rc.notMapping {
				b.rule(i, rc)
			}
		}
	}
	b.nftables(confs)
	b.sysctls(confs)
	model.SortSysctls(b.st.Sysctls)
	model.SortAddresses(b.st.Addresses)
	model.SortRoutes(b.st.Routes)
	model.SortRules(b.st.Rules)
	model.SortFou(b.st.FouPorts)
	return b.st
}

func (b *builder) settings(confs []*fileConf) {
	var at, mdAt Pos
	for _, fc := range confs {
		s := fc.Settings
		if s != nil && s.has("max-disruption") {
			switch v := s.MaxDisruption; {
			case !slices.Contains(model.DisruptionNames, v):
				b.errs.add(s.at("max-disruption"), "settings.max-disruption", "expected one of %s, found %q", strings.Join(model.DisruptionNames, ", "), v)
			case mdAt.File != "" && v != b.st.MaxDisruption:
				b.errs.add(s.at("max-disruption"), "settings.max-disruption", "conflicts with %s set at %s", b.st.MaxDisruption, mdAt)
			default:
				b.st.MaxDisruption, mdAt = v, s.at("max-disruption")
			}
		}
		if s == nil || !s.has("protocol") {
			continue
		}
		p := s.Protocol
		switch {
		case p < minProtocol || p > maxProtocol:
			b.errs.add(s.at("protocol"), "settings.protocol", "expected a route protocol number from %d to %d (0-%d belong to the kernel), found %d", minProtocol, maxProtocol, minProtocol-1, p)
		case !b.checkProtocol(s, p):
		case at.File != "" && p != b.st.Protocol:
			b.errs.add(s.at("protocol"), "settings.protocol", "conflicts with protocol %d set at %s", b.st.Protocol, at)
		default:
			b.st.Protocol, at = p, s.at("protocol")
		}
	}
}

// declared reports whether a link name is declared in the file.
func (b *builder) declared(name string) bool { _, ok := b.links[name]; return ok }

// parentConf returns the block that names the link's parent (ipvlan,
// macvlan or vlan), the parent and the block's positions.
func (lc *linkConf) parentConf() (kind, parent string, m Meta) {
	switch {
	case lc.IPVlan != nil:
		return "ipvlan", lc.IPVlan.Parent, lc.IPVlan.Meta
	case lc.MACVlan != nil:
		return "macvlan", lc.MACVlan.Parent, lc.MACVlan.Meta
	case lc.VLAN != nil:
		return "vlan", lc.VLAN.Parent, lc.VLAN.Meta
	}
	return "", "", Meta{}
}

// linkEdge is one "must exist first" reference between declared links.
type linkEdge struct {
	from, to string // link names
	word     string // master, dev or parent, as the file says it
	at       Pos
	path     string
}

// linkCycles reports references between links that go round: x master y
// with y master x, a vxlan whose dev is a link whose master is the vxlan,
// and so on. Apply creates a link after what it references, so a cycle
// made it create one link of the cycle and fail on the next. The two ends
// of a veth pair are created together and count as one link.
func (b *builder) linkCycles() {
	errsBefore := b.errs.count()
	node := func(name string) string {
		lc := b.links[name]
		if lc == nil || lc.Kind != model.KindVeth || lc.Veth == nil || lc.Veth.PeerNetNS != "" {
			return name
		}
		if pc := b.links[lc.Veth.Peer]; pc != nil && pc.Veth != nil && pc.Veth.Peer == name && lc.Veth.Peer < name {
			return lc.Veth.Peer
		}
		return name
	}
	out := map[string][]linkEdge{}
	for _, name := range b.linkNames {
		lc := b.links[name]
		if lc.Master == "" && lc.VXLAN == nil && lc.IPVlan == nil && lc.VLAN == nil && lc.MACVlan == nil {
			continue
		}
		var es []linkEdge
		if lc.Master != "" && lc.Master != name { // its own master is reported in link
			es = append(es, linkEdge{name, lc.Master, "master", lc.at("master"), "links." + name + ".master"})
		}
		if vc := lc.VXLAN; vc != nil && vc.Dev != "" {
			es = append(es, linkEdge{name, vc.Dev, "dev", vc.at("dev"), "links." + name + ".vxlan.dev"})
		}
		if kind, parent, m := lc.parentConf(); parent != "" {
			es = append(es, linkEdge{name, parent, "parent", m.at("parent"), "links." + name + "." + kind + ".parent"})
		}
		for _, e := range es {
			// The two ends of a pair reference each other by nature; a link
			// that names itself as its dev goes round all the same.
			if b.declared(e.to) && (e.to == name || node(e.to) != node(name)) {
				out[node(name)] = append(out[node(name)], e)
			}
		}
	}
	// Depth-first search, in name order so the report is stable; each
	// cycle is reported once, at the reference that closes it.
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []linkEdge
	var visit func(n string)
	visit = func(n string) {
		state[n] = onPath
		for _, e := range out[n] {
			to := node(e.to)
			switch state[to] {
			case unseen:
				path = append(path, e)
				visit(to)
				path = path[:len(path)-1]
			case onPath:
				cyc := []linkEdge{e}
				for i := len(path) - 1; i >= 0 && node(cyc[0].from) != to; i-- {
					cyc = append([]linkEdge{path[i]}, cyc...)
				}
				var words []string
				for _, c := range cyc {
					words = append(words, c.from+" "+c.word+" "+c.to)
				}
				b.errs.add(e.at, e.path, "links reference each other in a cycle (%s); each link's master, dev or parent must be created before it", strings.Join(words, ", "))
			}
		}
		state[n] = done
	}
	// A link that references none is in no cycle, and visiting it first
	// changes no other visit: the search starts only from the others.
	for _, name := range b.linkNames {
		if n := node(name); len(out[n]) > 0 && state[n] == unseen {
			visit(n)
		}
	}
	if b.errs.count() == errsBefore { // a needs cycle is a loop too: said once
		b.stackLoops()
	}
}

// stackLoops reports links that would sit above themselves in the kernel's
// stack of devices (its upper and lower links): a port is below its master,
// and a vxlan or ipvlan above its dev or parent (the kernel links them as
// upper and lower devices too). The kernel refuses the link that closes such
// a loop with EBUSY, in whatever order they are made: b2 master of x2, x2's
// dev bridge br, br master of x0, x0's dev b2. The edges
// here go from a link to the one above it; each loop is reported once, at
// the reference that closes it.
func (b *builder) stackLoops() {
	up := map[string][]linkEdge{}
	for _, name := range b.linkNames {
		lc := b.links[name]
		if lc == nil || lc.notMapping {
			continue
		}
		if lc.Master != "" && lc.Master != name && b.declared(lc.Master) {
			up[name] = append(up[name], linkEdge{name, lc.Master, "master", lc.at("master"), "links." + name + ".master"})
		}
		if vc := lc.VXLAN; vc != nil && vc.Dev != "" && vc.Dev != name && b.declared(vc.Dev) {
			up[vc.Dev] = append(up[vc.Dev], linkEdge{vc.Dev, name, "dev", vc.at("dev"), "links." + name + ".vxlan.dev"})
		}
		if kind, parent, m := lc.parentConf(); parent != "" && parent != name && b.declared(parent) {
			up[parent] = append(up[parent], linkEdge{parent, name, "parent", m.at("parent"), "links." + name + "." + kind + ".parent"})
		}
	}
	// The words of an edge as the file says it: "x master y", "v dev d".
	says := func(e linkEdge) string {
		if e.word == "master" {
			return e.from + " master " + e.to
		}
		return e.to + " " + e.word + " " + e.from
	}
	state := map[string]int{} // 0 unseen, 1 on the path, 2 done
	var path []linkEdge
	var visit func(n string)
	visit = func(n string) {
		state[n] = 1
		for _, e := range up[n] {
			switch state[e.to] {
			case 0:
				path = append(path, e)
				visit(e.to)
				path = path[:len(path)-1]
			case 1:
				i := len(path) - 1
				for i > 0 && path[i].from != e.to {
					i--
				}
				var words []string
				for _, c := range append(slices.Clone(path[i:]), e) {
					words = append(words, says(c))
				}
				b.errs.add(e.at, e.path, "links stack on each other in a loop (%s): each would be above itself in the kernel's stack of devices, which the kernel refuses (EBUSY); break the loop", strings.Join(words, ", "))
			}
		}
		state[n] = 2
	}
	for _, name := range b.linkNames {
		if state[name] == 0 && len(up[name]) > 0 {
			visit(name)
		}
	}
}
