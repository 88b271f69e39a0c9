package desired

import (
	"github.com/netreconcile/netreconcile/internal/model"
)

// builder turns the decoded files into one model.State, checking meaning
// (references, families, ranges, conflicts between fragments).
type builder struct {
	errs  *errList
	st    *model.State
	links map[string]*linkConf // every declared link, across files
	// where each keyed object was declared, to report conflicts between fragments
	routeAt map[model.RouteKey]Pos
	ruleAt  map[model.RuleKey]Pos
	fouAt   map[model.FouKey]Pos
	// addrAt and poolAddrAt hold where each address of a link was declared.
	addrAt     map[linkAddr]string
	poolAddrAt map[[2]string]string
	// poolConfs holds every declared pool, across files (pool.go).
	poolConfs map[string]*poolConf
}

func build(confs []*fileConf, errs *errList) *model.State {
	b := &builder{
		errs:    errs,
		st:      model.NewState(),
		links:   map[string]*linkConf{},
		routeAt: map[model.RouteKey]Pos{},
		ruleAt:  map[model.RuleKey]Pos{},
		fouAt:   map[model.FouKey]Pos{},

		addrAt:     map[linkAddr]string{},
		poolAddrAt: map[[2]string]string{},
	}
	n := 0
	for _, fc := range confs {
		for _, rc := range fc.Routes {
			// Only the routes written as mappings: a megabyte of "[x,x,…]"
			// (aliased) is a million entries that are not routes.
			if rc != nil && len(rc.Keys) > 0 {
				n++
			}
		}
	}
	b.routeAt = make(map[model.RouteKey]Pos, n)
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
		}
	}
	for _, name := range sortedKeys(b.links) {
		b.link(name, b.links[name])
	}
	for _, fc := range confs {
		for i, fo := range fc.Fou {
			b.fou(i, fo)
		}
		for i, rc := range fc.Routes {
			b.route(i, rc)
		}
		for i, rc := range fc.Rules {
			b.rule(i, rc)
		}
	}
	b.nftables(confs)
	model.SortAddresses(b.st.Addresses)
	model.SortRoutes(b.st.Routes)
	model.SortRules(b.st.Rules)
	model.SortFou(b.st.FouPorts)
	return b.st
}

func (b *builder) settings(confs []*fileConf) {
	var at Pos
	for _, fc := range confs {
		s := fc.Settings
		if s == nil || !s.has("protocol") {
			continue
		}
		p := s.Protocol
		switch {
		case p < 5 || p > 255:
			b.errs.add(s.at("protocol"), "settings.protocol", "expected a route protocol number from 5 to 255 (0-4 belong to the kernel), found %d", p)
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
