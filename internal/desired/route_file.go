package desired

import (
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// routesFileConf is an item of routes-files: a side file of routes, one a
// line in ip-route(8)'s words (sidefile.go), given as its path or as
//
//	{file: PATH, table: TABLE}
//
// where table is the table of the lines that name none.
type routesFileConf struct {
	Meta
	File  string `yaml:"file" schema:"required"`
	Table *Table `yaml:"table"`
}

func (rf *routesFileConf) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		rf.Pos = d.pos(n)
		rf.File = n.Value
		rf.keys = []keyPos{{"file", rf.Pos.Line, rf.Pos.Col}}
		return
	}
	// The mapping form with the generic decoder; the alias type has no
	// decodeNode method, which stops the recursion.
	type plain routesFileConf
	d.decodeStructValue(n, path, (*plain)(rf))
}

// routeWords are the words a line of a routes file takes after its
// destination, as ip-route(8) writes them, in the order errors list them.
var routeWords = []string{"via", "dev", "src", "table", "metric", "scope", "mtu", "tos", "onlink", "nexthop"}

// routeLine is what the lines of a routes file are parsed into, one at a
// time: the route, and what it points to, made once and reused, so that a
// line allocates nothing the built route does not keep.
type routeLine struct {
	rc      routeConf
	to      Prefix
	via     Addr
	src     Addr
	table   Table
	scope   Scope
	hops    []nextHopConf
	hopPtrs []*nextHopConf
	hopVias []Addr
	weights []int
	keys    []keyPos
	words   []word
	// names holds one string per link name, so that the routes built do
	// not keep the file's text alive through their Dev.
	names map[string]string
}

// routesFiles reads the routes files fc names and builds their routes.
func (b *builder) routesFiles(fc *fileConf) {
	for k, rf := range fc.RoutesFiles {
		if rf == nil || rf.notMapping {
			continue // reported by the decoder
		}
		rp := routePath{"routes-files", k}
		if rf.File == "" {
			b.errs.add(rf.Pos, rp.at(".file"), "missing; expected the path of a file of routes, one a line (relative to this file's directory)")
			continue
		}
		f := b.sides.get(sidePath(fc.Pos.File, rf.File))
		if f.err != nil {
			b.errs.add(rf.at("file"), rp.at(".file"), "%s", readError(f.err))
			continue
		}
		if b.line == nil {
			b.line = &routeLine{names: map[string]string{}}
		}
		eachLine(f.text, func(no int, line string) {
			if rc := b.line.parse(b, f.path, no, line, rp, rf); rc != nil {
				b.route(rp, rc)
			}
		})
	}
}

// parse reads one line of a routes file, reporting its errors at their
// words. A value that does not parse is left as YAML leaves a field whose
// value does not (zero), so that the checks of the route's meaning report
// what they would report of the same route in YAML; a line that cannot be
// read as a route (an unknown word, a word without its value) gives nil.
//
//	[TYPE] PREFIX [via [inet|inet6] ADDR] [dev LINK] [src ADDR] [table TABLE]
//	       [metric N] [scope SCOPE] [mtu N] [tos N] [onlink]
//	       [nexthop [via ADDR] [dev LINK] [weight N]]...
func (l *routeLine) parse(b *builder, file string, no int, line string, rp routePath, rf *routesFileConf) *routeConf {
	l.words = splitWords(line, l.words)
	ws := l.words
	at := func(w word) Pos { return Pos{file, no, col(line, w.off)} }
	fail := func(w word, field, format string, args ...any) {
		b.errs.add(at(w), rp.at(field), format, args...)
	}
	rc := &l.rc
	*rc = routeConf{}
	rc.Pos = at(ws[0])
	l.keys = l.keys[:0]
	key := func(name string, w word) {
		p := at(w)
		l.keys = append(l.keys, keyPos{name, p.Line, p.Col})
	}
	given := func(name string, keys []keyPos) bool {
		for _, k := range keys {
			if k.name == name {
				return true
			}
		}
		return false
	}
	i := 0
	if _, isType := model.RouteTypeNames[ws[0].s]; isType {
		rc.Type = ws[0].s
		key("type", ws[0])
		i++
	}
	if i == len(ws) {
		fail(ws[0], "", "expected a destination prefix after the route type, like %s 10.0.0.0/8", ws[0].s)
		return nil
	}
	// The destination: what "to:" takes.
	l.to = Prefix{}
	if err := l.to.parse(ws[i].s); err != nil {
		fail(ws[i], ".to", "%v", err)
	}
	rc.To = &l.to
	key("to", ws[i])
	i++
	l.hops, l.hopPtrs, l.hopVias, l.weights = l.hops[:0], l.hopPtrs[:0], l.hopVias[:0], l.weights[:0]
	hopKeys := 0 // where the keys of the current next hop start in l.keys
	inHop := false
	for ; i < len(ws); i++ {
		w := ws[i]
		name := w.s
		switch name {
		case "preference", "priority":
			name = "metric" // ip-route(8)'s other names for it
		case "dsfield":
			name = "tos"
		}
		field := "." + name
		if inHop {
			field = ".nexthops[" + strconv.Itoa(len(l.hops)-1) + "]." + name
		}
		switch {
		case name == "nexthop":
			l.hops = append(l.hops, nextHopConf{Meta: Meta{Pos: at(w)}})
			hopKeys, inHop = len(l.keys), true
			continue
		case inHop && name != "via" && name != "dev" && name != "weight":
			fail(w, field, "after nexthop, expected via, dev, weight or another nexthop, found %q; give the route's own words before the first nexthop", w.s)
			return nil
		case name == "weight" && !inHop:
			fail(w, field, "weight belongs to a next hop: write it after nexthop")
			return nil
		case name != "weight" && !slices.Contains(routeWords, name):
			fail(w, field, "unknown word %q; expected one of: %s", w.s, strings.Join(routeWords, ", "))
			return nil
		}
		keys := l.keys
		if inHop {
			keys = l.keys[hopKeys:]
		}
		if given(name, keys) {
			fail(w, field, "%s given twice", name)
			if name != "onlink" {
				i++ // its value
			}
			continue
		}
		if name == "onlink" {
			rc.OnLink = true
			key(name, w)
			continue
		}
		if i+1 == len(ws) {
			fail(w, field, "expected a value after %s", w.s)
			return nil
		}
		i++
		v := ws[i]
		if name == "via" && (v.s == "inet" || v.s == "inet6") && i+1 < len(ws) {
			// ip-route(8) writes an IPv6 gateway of an IPv4 route (RFC
			// 5549) as "via inet6 ADDR"; the address says its family.
			i++
			v = ws[i]
		}
		key(name, v)
		var err error
		switch name {
		case "via":
			var a Addr
			err = a.parse(v.s)
			if inHop {
				l.hopVias = append(l.hopVias, a)
			} else {
				l.via = a
				rc.Via = &l.via
			}
		case "dev":
			dev, seen := l.names[v.s]
			if !seen {
				dev = strings.Clone(v.s)
				l.names[dev] = dev
			}
			if inHop {
				l.hops[len(l.hops)-1].Dev = dev
			} else {
				rc.Dev = dev
			}
		case "src":
			l.src = Addr{}
			err = l.src.parse(v.s)
			rc.Src = &l.src
		case "table":
			l.table = Table{}
			err = l.table.parse(v.s)
			rc.Table = &l.table
		case "scope":
			l.scope = Scope{}
			err = l.scope.parse(v.s)
			rc.Scope = &l.scope
		case "metric", "mtu", "weight":
			n, perr := strconv.ParseInt(v.s, 0, 64)
			if perr != nil {
				fail(v, field, "expected an integer, found %q", v.s)
				n = 0
			}
			switch name {
			case "metric":
				rc.Metric = int(n)
			case "mtu":
				rc.MTU = int(n)
			default:
				l.weights = append(l.weights, int(n))
			}
		case "tos":
			n, perr := strconv.ParseUint(v.s, 0, 8)
			if perr != nil {
				fail(v, field, "expected an integer from 0 to 255, found %q", v.s)
				n = 0
			}
			rc.TOS = uint8(n)
		}
		if err != nil {
			fail(v, field, "%v", err)
		}
		if inHop {
			// The next hop's own keys, for its errors' positions.
			h := &l.hops[len(l.hops)-1]
			h.keys = l.keys[hopKeys:len(l.keys):len(l.keys)]
		}
	}
	// The next hops' vias and weights, in their order in the line: each
	// next hop takes the ones written after its "nexthop".
	vias, weights := 0, 0
	for k := range l.hops {
		h := &l.hops[k]
		if given("via", h.keys) {
			h.Via = &l.hopVias[vias]
			vias++
		}
		if given("weight", h.keys) {
			h.Weight = &l.weights[weights]
			weights++
		}
		l.hopPtrs = append(l.hopPtrs, h)
	}
	if len(l.hops) > 0 {
		rc.NextHops = l.hopPtrs
		// The route's key for its errors: the first nexthop.
		key("nexthops", word{"", strings.Index(line, "nexthop")})
	}
	if rc.Table == nil && rf.Table != nil {
		// The file's table. Its errors point at the line, whose route
		// it is (a route's keys are positions in one file).
		rc.Table = rf.Table
	}
	rc.keys = l.keys
	return rc
}

// routePath names a route in errors: routes[i] in the YAML, or the item of
// routes-files that names the file holding it (the position gives the
// line).
type routePath struct {
	list string
	i    int
}

func (p routePath) at(field string) string { return p.list + "[" + strconv.Itoa(p.i) + "]" + field }
