package txwalk

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"

	"github.com/netreconcile/netreconcile/test/walk"
)

// A Version is one whole configuration the walk writes or hands to
// --candidate: the main file's content from test/walk's generator, and
// drop-in fragments and side files of the walk's own, whose kernel objects
// (routes in tables of their own, an nftables set) this package checks.
type Version struct {
	N int
	C *walk.Config
	// Frags are the drop-in fragments present, by name (in conf.d, the
	// loader's order is the names'), and their content.
	Frags map[string]string
	// Routes are the routes the fragments and the routes side file
	// declare, "TABLE PREFIX TYPE"; Elements the set's elements
	// (literal and from the elements side file). nil Elements: no set.
	Routes   []string
	Elements []string
	// Sides are the side files' content, by name (sideNames), when the
	// side fragment names them.
	Sides map[string]string
}

// The walk's own kernel objects live apart from test/walk's: routes in
// tables 3001–3003 under 198.18.0.0/15, a set in the table inet nrwtx.
const (
	tableFrag  = 3001 // routes of 10-routes.yaml
	tableSide  = 3002 // routes of the routes side file
	tableExtra = 3003 // routes of 30-extra.yml
	sideTable  = "inet nrwtx"
)

var ownTables = map[string]bool{"3001": true, "3002": true, "3003": true}

// fragNames are the drop-in fragments a version may hold; sideFrag names
// the side files.
var fragNames = []string{"10-routes.yaml", "20-side.yaml", "30-extra.yml"}

const sideFrag = "20-side.yaml"

// sideMark stands for the side files' directory in a fragment's text: the
// layout says how the fragment names it (layout.render).
const sideMark = "@SIDE@/"

// sideNames are the side files: routes, and the set's elements.
var sideNames = []string{"static.routes", "drop.txt"}

// newVersion makes a version around c: its fragments and side files drawn
// from r.
func newVersion(n int, c *walk.Config, r *rand.Rand) *Version {
	v := &Version{N: n, C: c, Frags: map[string]string{}, Sides: map[string]string{}}
	route := func(table int, typ string) string {
		return fmt.Sprintf("198.%d.%d.0/24", 18+r.Intn(2), r.Intn(8)) + " " + typ
	}
	pick := func(table int, typ string, max int) []string {
		seen := map[string]bool{}
		var out []string
		for i, k := 0, 1+r.Intn(max); i < k; i++ {
			s := route(table, typ)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		sort.Strings(out)
		return out
	}
	if r.Intn(5) != 0 {
		rs := pick(tableFrag, "blackhole", 3)
		var b strings.Builder
		b.WriteString("version: 1\nroutes:\n")
		for _, s := range rs {
			f := strings.Fields(s)
			fmt.Fprintf(&b, "  - {to: %s, type: %s, table: %d}\n", f[0], f[1], tableFrag)
			v.Routes = append(v.Routes, fmt.Sprintf("%d %s", tableFrag, s))
		}
		v.Frags["10-routes.yaml"] = b.String()
	}
	if r.Intn(4) != 0 {
		rs := pick(tableSide, "unreachable", 4)
		var b strings.Builder
		b.WriteString("# the walk's routes side file\n")
		for _, s := range rs {
			f := strings.Fields(s)
			fmt.Fprintf(&b, "%s %s\n", f[1], f[0])
			v.Routes = append(v.Routes, fmt.Sprintf("%d %s", tableSide, s))
		}
		v.Sides["static.routes"] = b.String()
		seen := map[string]bool{}
		var lit, file []string
		for i, k := 0, r.Intn(4); i < k; i++ {
			e := fmt.Sprintf("198.19.200.%d", 1+r.Intn(20))
			if !seen[e] {
				seen[e] = true
				lit = append(lit, e)
			}
		}
		for i, k := 0, r.Intn(5); i < k; i++ {
			e := fmt.Sprintf("198.19.201.%d", 1+r.Intn(20))
			if !seen[e] {
				seen[e] = true
				file = append(file, e)
			}
		}
		v.Sides["drop.txt"] = "# the walk's elements side file\n" + strings.Join(file, "\n") + "\n"
		v.Elements = append(append([]string{}, lit...), file...)
		sort.Strings(v.Elements)
		var els string
		if len(lit) > 0 {
			els = ", elements: [" + strings.Join(lit, ", ") + "]"
		}
		v.Frags[sideFrag] = fmt.Sprintf("version: 1\nroutes-files:\n  - {file: %s, table: %d}\nnftables:\n  %s:\n    sets:\n      s: {type: ipv4_addr, elements-file: %s%s}\n",
			sideMark+"static.routes", tableSide, sideTable, sideMark+"drop.txt", els)
	}
	if r.Intn(3) == 0 {
		rs := pick(tableExtra, "prohibit", 2)
		var b strings.Builder
		b.WriteString("version: 1\nroutes:\n")
		for _, s := range rs {
			f := strings.Fields(s)
			fmt.Fprintf(&b, "  - {to: %s, type: %s, table: %d}\n", f[0], f[1], tableExtra)
			v.Routes = append(v.Routes, fmt.Sprintf("%d %s", tableExtra, s))
		}
		v.Frags["30-extra.yml"] = b.String()
	}
	sort.Strings(v.Routes)
	return v
}

// withMain is v with c as the main file's content: a --candidate changes
// the main file only.
func (v *Version) withMain(n int, c *walk.Config) *Version {
	w := *v
	w.N, w.C = n, c
	return &w
}

// Main is the main file's content.
func (v *Version) Main() string { return v.C.YAML() }

// names says whether v's configuration names the side files.
func (v *Version) namesSides() bool { _, ok := v.Frags[sideFrag]; return ok }

// scrub takes out of a configuration what the walk's mode cannot hold or
// does not check: adoption (a transaction that adopts a foreign object and
// rolls back deletes it: docs/walk-findings.md; the walk adopts only with
// Options.Adopt), and, for the service user, veth peers in another
// namespace (entering it takes CAP_SYS_ADMIN, which the unit does not
// give: a conflict by design, docs/config.md). The walk's own side files
// (routes-files, elements-file) go too: this walk lays its side files out
// itself (sideFrag), and writes only those. So does settings.max-disruption:
// the daemon then holds a change an apply makes (test/walk checks that),
// and this walk's oracle expects the daemon to converge to the files.
func scrub(g *walk.Gen, c *walk.Config, adopt bool, mode Mode) {
	c.MaxDisruption = ""
	changed := false
	if len(c.RouteFiles) > 0 {
		var rs []*walk.Route
		for _, r := range c.Routes {
			if r.Side == "" {
				rs = append(rs, r)
			}
		}
		c.Routes, c.RouteFiles = rs, nil
		changed = true
	}
	for _, t := range c.Tables {
		for _, st := range t.Sets {
			if st.ElemFile != "" {
				st.ElemFile, st.FileElements = "", nil
				changed = true
			}
		}
	}
	if l := c.Links[walk.AdoptLink]; l != nil && !adopt {
		delete(c.Links, walk.AdoptLink)
		changed = true
	}
	var ts []*walk.Table
	for _, t := range c.Tables {
		if t.Adopt && !adopt {
			changed = true
			continue
		}
		ts = append(ts, t)
	}
	c.Tables = ts
	if mode.Service {
		for n, l := range c.Links {
			if l.PeerNS != "" {
				delete(c.Links, n)
				changed = true
			}
		}
	}
	if changed {
		g.Repair(c)
	}
}
