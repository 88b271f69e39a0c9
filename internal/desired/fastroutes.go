package desired

import (
	"bytes"
	"reflect"
	"strconv"
	"unsafe"

	"go.yaml.in/yaml/v3"
)

// A file of 100k routes spends most of its load time building and walking
// yaml.Nodes. Route lists are usually written one flow mapping of plain
// scalars per line ("  - {to: 10.0.0.0/24, dev: eth0}"), so the top-level
// routes block is decoded here directly when every item has that shape and
// every value is valid; yaml.v3 then parses the rest of the file with the
// block blanked out (same line numbers). Anything else (a comment, a quote,
// a value that fails, a key given twice, an unknown key) drops the fast path
// and the whole file goes through the general decoder, which reports the
// errors: messages and positions are the decoder's by construction.
//
// A block written in block style ("- to: …" and the keys on the lines
// below) is parsed by yaml.v3 in chunks of items instead (scanBlockRoutes),
// to hold one chunk's nodes at a time rather than the whole file's.
//
// Equality with the general decoder is what FuzzLoad and FuzzLoadGenerated
// check. What the fast paths cannot count as yaml.v3 does makes them
// decline: line breaks other than "\n" and a byte order mark (hasOtherBreaks),
// anything before the block that is not a key of a top-level block mapping
// (a document marker, a flow collection), anchors and aliases in the routes
// block or before it.

// fastRoutes is a routes block decoded by the fast path.
type fastRoutes struct {
	routes []*routeConf
	pos    Pos    // the block sequence's position (its first "-")
	line   int    // the line of the key "routes:"
	first  bool   // routes is the top-level mapping's first key
	data   []byte // the file with the block's lines blank
}

// scanRoutes finds and decodes the top-level routes block; ok is false when
// the file does not qualify.
func scanRoutes(file string, data []byte) (fr fastRoutes, ok bool) {
	start := findRoutesLine(data)
	if start < 0 {
		return fr, false
	}
	// Nothing before the block may open a construct that spans lines
	// (quotes, block scalars, unclosed flow collections): the routes line
	// must be a key of the top-level mapping.
	seenKey := false
	for _, line := range bytes.Split(data[:start], []byte{'\n'}) {
		if !singleLine(line) {
			return fr, false
		}
		switch {
		case len(bytes.Trim(line, " ")) == 0 || bytes.TrimLeft(line, " ")[0] == '#':
		case line[0] != ' ':
			// At column 0 only keys of the top-level block mapping: not a
			// document marker (the block would be in another document),
			// not a flow collection or a scalar (the document would not
			// be a block mapping).
			if !topKey(line) {
				return fr, false
			}
			seenKey = true
		case !seenKey:
			return fr, false
		}
	}
	routesLine := bytes.Count(data[:start], []byte{'\n'}) + 1
	lineNo := routesLine
	i := start + len("routes:")
	for i < len(data) && data[i] == ' ' {
		i++
	}
	if i >= len(data) || data[i] != '\n' {
		return fr, false
	}
	i++
	blockStart, indent := i, -1
	var alloc routeAlloc
	for i < len(data) {
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += i
		}
		line := data[i:end]
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n == 0 || n == len(line) || line[n] != '-' {
			break
		}
		if indent < 0 {
			indent = n
		} else if n != indent {
			return fr, false
		}
		lineNo++
		rc, ok := fastRoute(file, lineNo, line, n, &alloc)
		if !ok {
			fr, ok = scanBlockRoutes(file, data, start, blockStart, routesLine)
			fr.first = !seenKey
			return fr, ok
		}
		fr.routes = append(fr.routes, rc)
		i = end + 1
	}
	if len(fr.routes) == 0 {
		fr, ok = scanBlockRoutes(file, data, start, blockStart, routesLine)
	} else {
		fr, ok = fr.finish(file, data, start, blockStart, min(i, len(data)), indent, routesLine)
	}
	fr.first = !seenKey
	return fr, ok
}

// finish checks what follows the block and blanks the block's lines.
func (fr fastRoutes) finish(file string, data []byte, start, blockStart, blockEnd, indent, routesLine int) (fastRoutes, bool) {
	// What follows must start a top-level key (or end the file), after
	// blank lines and comments only: then yaml.v3 reads it as a key of
	// the top-level mapping with the block or without, and the file with
	// the block blanked is the file without the routes key. Anything else
	// ("0", "- x", "..." at column 0) may be an error in the file and a
	// document of its own once the block, the mapping's first key, is
	// blanked.
	for j := blockEnd; j < len(data); {
		e := bytes.IndexByte(data[j:], '\n')
		if e < 0 {
			e = len(data) - j
		}
		line := data[j : j+e]
		if len(bytes.TrimRight(line, " ")) == 0 || line[0] == '#' {
			j += e + 1
			continue
		}
		if !topKey(line) {
			return fr, false
		}
		break
	}
	fr.line = routesLine
	fr.pos = Pos{file, bytes.Count(data[:blockStart], []byte{'\n'}) + 1, indent + 1}
	// The block's lines become empty lines: the lines after keep their numbers.
	nl := bytes.Count(data[start:blockEnd], []byte{'\n'})
	fr.data = make([]byte, 0, len(data)-(blockEnd-start)+nl)
	fr.data = append(fr.data, data[:start]...)
	fr.data = append(fr.data, bytes.Repeat([]byte{'\n'}, nl)...)
	fr.data = append(fr.data, data[blockEnd:]...)
	return fr, true
}

// blockChunk is how many block-style routes are parsed at once: yaml.v3
// builds about seven nodes per route, and parsing the block in chunks frees
// them chunk by chunk instead of holding the whole file's tree.
const blockChunk = 1000

// scanBlockRoutes takes a routes block written in block style ("- to: …"
// then "dev: …" on the lines below). The block is parsed by yaml.v3 in
// chunks of whole items, each item decoded by the general decoder, so the
// nodes are those yaml.v3 builds for the whole file: the block may hold
// only what cannot reach across items or depend on the rest of the file
// (no anchor, alias, tag, quote, block scalar, flow collection, comment or
// tab), every item starts at one indentation, and no line is indented less.
// Any error declines, and the general decoder reports it.
func scanBlockRoutes(file string, data []byte, start, blockStart, routesLine int) (fr fastRoutes, ok bool) {
	var items []int // offsets of the items' first lines
	var itemLines []int
	indent, lineNo, i := -1, routesLine, blockStart
	for i < len(data) {
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += i
		}
		line := data[i:end]
		if len(line) > 0 && line[0] != ' ' {
			break
		}
		lineNo++
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n < len(line) {
			for _, c := range line[n:] {
				switch c {
				case '"', '\'', '|', '>', '\t', '\r', '&', '*', '!', '%', '@', '`', '?', '#', '{', '}', '[', ']':
					return fr, false
				}
			}
			switch {
			case indent < 0 && line[n] != '-':
				return fr, false
			case indent < 0:
				indent = n
			case n < indent:
				return fr, false
			}
			if n == indent {
				if line[n] != '-' || n+1 < len(line) && line[n+1] != ' ' {
					return fr, false
				}
				items = append(items, i)
				itemLines = append(itemLines, lineNo)
			}
		}
		i = end + 1
	}
	if len(items) == 0 {
		return fr, false
	}
	blockEnd := min(i, len(data))
	local := &errList{}
	d := &decoder{file: file, errs: local}
	fr.routes = make([]*routeConf, 0, len(items))
	for c := 0; c < len(items); c += blockChunk {
		last := min(c+blockChunk, len(items))
		to := blockEnd
		if last < len(items) {
			to = items[last]
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data[items[c]:to], &doc); err != nil || len(doc.Content) != 1 {
			return fr, false
		}
		seq := doc.Content[0]
		if seq.Kind != yaml.SequenceNode || len(seq.Content) != last-c {
			return fr, false
		}
		shiftLines(seq, itemLines[c]-1)
		for k, item := range seq.Content {
			if item.Kind == yaml.ScalarNode && item.Tag == "!!null" {
				return fr, false
			}
			var rc *routeConf
			d.decode(item, "routes["+strconv.Itoa(c+k)+"]", reflect.ValueOf(&rc).Elem())
			if local.count() != 0 {
				return fr, false
			}
			fr.routes = append(fr.routes, rc)
		}
	}
	// The sequence is where its first item is, after any blank lines.
	return fr.finish(file, data, start, items[0], blockEnd, indent, routesLine)
}

// shiftLines moves a parsed chunk's nodes to their lines in the file.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// topKey reports whether a line starts with a plain key and ": " (or ends
// after the colon).
func topKey(line []byte) bool {
	i := 0
	for i < len(line) && (alnum(line[i]) || line[i] == '-' && i > 0 || line[i] == '_' || line[i] == '.' && i > 0) {
		i++
	}
	return i > 0 && i < len(line) && line[i] == ':' && (i+1 == len(line) || line[i+1] == ' ')
}

// findRoutesLine returns the offset of a line "routes:" at column 0, or -1.
func findRoutesLine(data []byte) int {
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte("routes:"))
		if i < 0 {
			return -1
		}
		i += off
		if i == 0 || data[i-1] == '\n' {
			return i
		}
		off = i + 1
	}
}

// singleLine reports whether a line opens nothing that continues on the next:
// no quote, no block scalar indicator, balanced flow brackets, no tab.
func singleLine(line []byte) bool {
	depth := 0
	for _, c := range line {
		switch c {
		case '"', '\'', '|', '>', '\t', '\r', '&', '*', '!', '%', '@', '`', '?':
			return false
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// routeAlloc hands out what fastRoute makes for each route from slices
// made a chunk at a time: the route, its keys and its values were eight
// allocations per route, a third of the time of 100k routes with the
// garbage collector's share. The chunks live as long as the routes do.
type routeAlloc struct {
	confs    []routeConf
	keys     []keyPos
	prefixes []Prefix
	tables   []Table
	// names holds one string per link name or route type, not one per
	// route; last is the one given last (routes through one link follow
	// each other).
	names map[string]string
	last  string
}

const routeChunk = 512

func (a *routeAlloc) conf() *routeConf {
	if len(a.confs) == 0 {
		a.confs = make([]routeConf, routeChunk)
	}
	rc := &a.confs[0]
	a.confs = a.confs[1:]
	return rc
}

// keyList returns a copy of ks whose capacity is its length.
func (a *routeAlloc) keyList(ks []keyPos) []keyPos {
	if len(a.keys) < len(ks) {
		a.keys = make([]keyPos, max(routeChunk*4, len(ks)))
	}
	out := a.keys[:len(ks):len(ks)]
	copy(out, ks)
	a.keys = a.keys[len(ks):]
	return out
}

func (a *routeAlloc) prefix() *Prefix {
	if len(a.prefixes) == 0 {
		a.prefixes = make([]Prefix, routeChunk)
	}
	p := &a.prefixes[0]
	a.prefixes = a.prefixes[1:]
	return p
}

func (a *routeAlloc) table() *Table {
	if len(a.tables) == 0 {
		a.tables = make([]Table, routeChunk)
	}
	t := &a.tables[0]
	a.tables = a.tables[1:]
	return t
}

// name returns b as a string, one per distinct text.
func (a *routeAlloc) name(b []byte) string {
	if string(b) == a.last {
		return a.last
	}
	if a.names == nil {
		a.names = map[string]string{}
	}
	n, ok := a.names[string(b)]
	if !ok {
		n = string(b)
		a.names[n] = n
	}
	a.last = n
	return n
}

// fastRoute decodes "- {key: value, ...}" (indent spaces before "-").
func fastRoute(file string, lineNo int, line []byte, indent int, a *routeAlloc) (*routeConf, bool) {
	i := indent + 1
	if i >= len(line) || line[i] != ' ' {
		return nil, false
	}
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i >= len(line) || line[i] != '{' {
		return nil, false
	}
	var rc routeConf
	rc.Pos = Pos{file, lineNo, i + 1}
	// The keys are gathered here, then copied to a chunk (keyList).
	var keyBuf [16]keyPos
	keys := keyBuf[:0]
	i++
	for {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		k := i
		for i < len(line) && (line[i] >= 'a' && line[i] <= 'z' || line[i] == '-') {
			i++
		}
		if i == k || i+1 >= len(line) || line[i] != ':' || line[i+1] != ' ' {
			return nil, false
		}
		var key string
		var known bool
		switch string(line[k:i]) {
		// The keys of almost every route, without a map lookup.
		case "to":
			key, known = "to", true
		case "dev":
			key, known = "dev", true
		case "via":
			key, known = "via", true
		case "table":
			key, known = "table", true
		default:
			key, known = routeKeys[string(line[k:i])]
		}
		if !known {
			return nil, false
		}
		i++
		for i < len(line) && line[i] == ' ' {
			i++
		}
		v := i
		for i < len(line) && plainChar(line[i]) {
			i++
		}
		if i == v || line[v] == '-' || line[v] == ':' || line[i-1] == ':' {
			return nil, false
		}
		// A key given twice declines: keys holds each key once, and never
		// more than routeConf has.
		for _, k := range keys {
			if k.name == key {
				return nil, false
			}
		}
		if !rc.set(key, line[v:i], a) {
			return nil, false
		}
		keys = append(keys, keyPos{key, lineNo, v + 1})
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i >= len(line) {
			return nil, false
		}
		if line[i] == '}' {
			i++
			break
		}
		if line[i] != ',' {
			return nil, false
		}
		i++
	}
	for ; i < len(line); i++ {
		if line[i] != ' ' {
			return nil, false
		}
	}
	p := a.conf()
	*p = rc
	p.keys = a.keyList(keys)
	return p, true
}

func plainChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '/' || c == ':' || c == '_' || c == '-'
}

// routeKeys holds the keys of routeConf, so that a key read from the file
// needs no string of its own.
var routeKeys = map[string]string{}

func init() {
	fields, _, _ := fieldsOf(reflect.TypeOf(routeConf{}))
	for k := range fields {
		routeKeys[k] = k
	}
}

// set decodes one value as the general decoder would; false when that
// would fail or when the value is a YAML null.
func (rc *routeConf) set(key string, b []byte, a *routeAlloc) bool {
	switch string(b) {
	case "null", "Null", "NULL":
		return false
	}
	switch key {
	case "dev":
		rc.Dev = a.name(b)
		return true
	case "type":
		rc.Type = a.name(b)
		return true
	}
	// The parsers keep nothing of the text they are given but in an error,
	// which is dropped here (false, and the general decoder runs): the
	// text is read where it is, without a string of its own per value.
	v := transient(b)
	var err error
	switch key {
	case "to":
		rc.To = a.prefix()
		err = rc.To.parse(v)
	case "family":
		rc.Family = &Family{}
		err = rc.Family.parse(v)
	case "via":
		rc.Via = &Addr{}
		err = rc.Via.parse(v)
	case "src":
		rc.Src = &Addr{}
		err = rc.Src.parse(v)
	case "table":
		rc.Table = a.table()
		err = rc.Table.parse(v)
	case "scope":
		rc.Scope = &Scope{}
		err = rc.Scope.parse(v)
	case "metric":
		var n int64
		n, err = strconv.ParseInt(v, 0, 64)
		rc.Metric = int(n)
	case "mtu":
		var n int64
		n, err = strconv.ParseInt(v, 0, 64)
		rc.MTU = int(n)
	case "tos":
		var n uint64
		n, err = strconv.ParseUint(v, 0, 8)
		rc.TOS = uint8(n)
	case "onlink":
		rc.OnLink, err = strconv.ParseBool(v)
	default:
		return false
	}
	return err == nil
}

// transient returns b as a string without copying it, for a call that
// keeps no part of the string once it returns without an error: b must
// not change while the string is in use, and the string must not be kept.
func transient(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// fastPath can be turned off to compare both paths in tests.
var fastPath = true

// decodeFile decodes one file, with the fast paths (routes block, long flow
// sequences in fastflow.go) when they apply.
func decodeFile(src Source, errs *errList) *fileConf {
	if fastPath && !hasOtherBreaks(src.Data) {
		data := src.Data
		fr, routesOK := scanRoutes(src.Name, data)
		if routesOK {
			data = fr.data
		}
		cut, flows := cutFlows(data)
		if flows != nil {
			data = cut
		}
		if routesOK || flows != nil {
			local := &errList{max: errs.max}
			fc := decodeYAMLCut(src.Name, data, flows, local)
			// A file decoded (fc not nil: valid YAML once cut, every cut
			// taken back) holds the tree yaml.v3 builds of
			// the whole file, but for the routes block, which decodes
			// without an error. The decoder walked that tree as it walks
			// yaml.v3's, so its errors are the general decoder's, and they
			// are kept: an error file with a long flow collection was
			// otherwise decoded twice. Any other failure, a YAML error of
			// the cut text included, sends the file through the general
			// decoder, whose messages are the reference.
			if fc != nil && !(routesOK && fc.has("routes")) && errs.absorb(local, src.Name) {
				if routesOK {
					if fr.first {
						// The blanked key was the mapping's first: the
						// mapping is where it was, not at the next key
						// (nor at 1:1 when there is none).
						fc.Pos = Pos{src.Name, fr.line, 1}
					}
					fc.Routes = fr.routes
					fc.setKey("routes", fr.pos)
				}
				return fc
			}
		}
	}
	return decodeYAML(src.Name, src.Data, errs)
}
