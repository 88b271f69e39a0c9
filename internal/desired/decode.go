package desired

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The decoder maps a yaml.Node tree onto the conf structs by reflection,
// instead of yaml.v3's own Decode, because yaml.v3 reports unknown fields
// without a column or a field path and stops at the first type error. Users
// fix files faster when every error names file:line:col, the path, and the
// accepted values.

// scalar is implemented by value types that parse themselves from one scalar
// node. parse returns a description of what is accepted on failure.
type scalar interface {
	parse(s string) error
}

// Meta is embedded in conf structs: where the mapping is, and where each key is.
type Meta struct {
	Pos Pos
	// keys are the keys written, in the file's order, each at its value's
	// position (in Pos's file). A slice, not a map: a struct has a few
	// keys, each known once (the decoder refuses a key given twice), and
	// a map per struct was a fifth of the time of 100k routes.
	keys []keyPos
	// notMapping marks a struct whose node was not a mapping, and the one
	// entry that stands for every list item that was not a mapping: the
	// decoder reported each, and the builder skips it. One shared entry,
	// not an empty struct per item that every check of meaning would
	// report again at the item's position, where an error already is: a
	// megabyte of "[x,x,…]" is half a million items, and their structs
	// were most of its peak memory.
	notMapping bool
}

// setPos sets where the struct is in the file (decodeMappings).
func (m *Meta) setPos(p Pos) { m.Pos = p }

// keyPos is a key of a mapping and where its value is.
type keyPos struct {
	name      string
	line, col int
}

func (m *Meta) at(key string) Pos {
	for _, k := range m.keys {
		if k.name == key {
			return Pos{m.Pos.File, k.line, k.col}
		}
	}
	return m.Pos
}

// has reports whether the key was written in the file.
func (m *Meta) has(key string) bool {
	for _, k := range m.keys {
		if k.name == key {
			return true
		}
	}
	return false
}

// setKey records a key not yet recorded, at p, which is in m.Pos's file.
func (m *Meta) setKey(key string, p Pos) {
	m.keys = append(m.keys, keyPos{key, p.Line, p.Col})
}

var (
	scalarType = reflect.TypeOf((*scalar)(nil)).Elem()
	metaType   = reflect.TypeOf(Meta{})
)

type decoder struct {
	file string
	errs *errList
	// release lets a list's items go as they are decoded (releaseItem):
	// set when the file has no alias, which could reach them again.
	release bool
	// texts are the lists of texts decoded so far, by node, when the
	// file has aliases (decodeTexts).
	texts map[*yaml.Node][]posText
	// skipped holds the entries notMapping made, by type.
	skipped map[reflect.Type]reflect.Value
}

var posTextsType = reflect.TypeOf([]posText(nil))

// decodeTexts decodes a list of texts (rules, set elements) without an
// item's path where an item cannot fail: building it was most of the
// memory of a megabyte of "[x,x,…]". A list reached again through an alias
// is decoded once and shared (the builder only reads it) when none of its
// items failed, for an item's error names its path, which differs.
func (d *decoder) decodeTexts(n *yaml.Node, path string) []posText {
	if t, ok := d.texts[n]; ok {
		return t
	}
	texts := make([]posText, len(n.Content))
	clean := true
	for i, c := range n.Content {
		d.releaseItem(n, i)
		if c.Kind == yaml.AliasNode {
			c = c.Alias
		}
		if c.Kind == yaml.ScalarNode && c.Tag != "!!null" {
			texts[i].decodeNode(d, c, "")
		} else {
			clean = false
			d.decode(c, path+"["+strconv.Itoa(i)+"]", reflect.ValueOf(&texts[i]).Elem())
		}
	}
	if clean && !d.release {
		if d.texts == nil {
			d.texts = map[*yaml.Node][]posText{}
		}
		d.texts[n] = texts
	}
	return texts
}

// releaseItem drops item i of list n from the tree once the caller holds
// it: the items decoded so far are garbage while the rest are decoded, so
// a long list's nodes and its decoded values are not all live at once
// (half a million one-character rules are a node of about 150 bytes and a
// value each). Only without aliases, which could reach an item again.
func (d *decoder) releaseItem(n *yaml.Node, i int) {
	if d.release {
		n.Content[i] = nil
	}
}

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{d.file, n.Line, n.Column} }

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs.add(d.pos(n), path, format, args...)
}

// kindWord describes what n is, for "expected …, found %s". It is a
// Stringer holding only the node, so that passing it to fail allocates
// nothing and the words are made only for an error kept (a megabyte of
// "[x,x,…]" where mappings are expected is half a million errors).
func kindWord(n *yaml.Node) nodeKind { return nodeKind{n} }

type nodeKind struct{ n *yaml.Node }

func (k nodeKind) String() string {
	n := k.n
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decode fills v (addressable) from n.
func (d *decoder) decode(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.Kind() == reflect.Pointer {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, path, v.Elem())
		return
	}
	if v.Addr().Type().Implements(scalarType) {
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "expected a scalar, found %s", kindWord(n))
			return
		}
		if err := v.Addr().Interface().(scalar).parse(n.Value); err != nil {
			// Lazily: the message is formatted only for an error kept.
			d.errs.addLazy(d.pos(n), func() (string, string) { return path, err.Error() })
		}
		return
	}
	if u, ok := v.Addr().Interface().(nodeDecoder); ok {
		u.decodeNode(d, n, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, path, v)
	case reflect.Map:
		d.decodeMap(n, path, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, found %s", kindWord(n))
			return
		}
		if v.Type() == routeConfsType {
			v.Set(reflect.ValueOf(d.decodeRoutes(n, path)))
			return
		}
		if v.Type() == wgPeerConfsType {
			v.Set(reflect.ValueOf(d.decodePeers(n, path)))
			return
		}
		if v.Type() == posTextsType {
			v.Set(reflect.ValueOf(d.decodeTexts(n, path)))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		_, addrs := s.Interface().([]*addressConf)
		_, subnets := s.Interface().([]*subnetConf)
		mappings := mappingItems(v.Type().Elem())
		for i, c := range n.Content {
			d.releaseItem(n, i)
			if c.Kind == yaml.AliasNode {
				c = c.Alias
			}
			if mappings && (c.Kind == yaml.SequenceNode || c.Kind == yaml.ScalarNode && c.Tag != "!!null") {
				// What decodeStruct reports for it, lazily.
				d.errs.addLazy(d.pos(c), func() (string, string) {
					return path + "[" + strconv.Itoa(i) + "]", fmt.Sprintf("expected a mapping, found %s", kindWord(c))
				})
				s.Index(i).Set(d.notMapping(v.Type().Elem()))
				continue
			}
			if addrs {
				if e := s.Index(i); skipUnparsableAddress(d, c, path, i, &e) {
					continue
				}
			}
			if subnets {
				if e := s.Index(i); skipUnparsableSubnet(d, c, path, i, &e) {
					continue
				}
			}
			if (mappings || addrs) && c.Kind == yaml.MappingNode && len(c.Content) == 0 {
				// An empty mapping decodes into its struct without an
				// error, so without its path: making the path for each
				// of a megabyte of "[{},{},…]" (aliased) was a tenth
				// of its peak memory.
				d.decode(c, "", s.Index(i))
				continue
			}
			// Concatenated, not Sprintf: this runs for every item of every
			// list, half a million in a megabyte of "[x,x,…]".
			ip := path + "[" + strconv.Itoa(i) + "]"
			if e := s.Index(i); e.Kind() == reflect.Pointer && c.Kind == yaml.ScalarNode && c.Tag == "!!null" {
				// A half-typed "- " is an error, not a nil item for
				// every later stage to trip over: the item is made
				// empty at the null's position, so that the checks of
				// its meaning report nothing more there.
				d.fail(c, ip, "empty list item; expected %s", itemWord(e.Type().Elem()))
				e.Set(reflect.New(e.Type().Elem()))
				d.placeMeta(c, e.Elem())
				continue
			}
			d.decode(c, ip, s.Index(i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			d.fail(n, path, "expected a string, found %s", kindWord(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || err != nil || n.Tag == "!!str" && n.Style != 0 {
			d.fail(n, path, "expected true or false, found %s", kindWord(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		d.decodeInt(n, path, v)
	default:
		panic(fmt.Sprintf("desired: unsupported field type %s at %s", v.Type(), path))
	}
}

// mappingItems reports whether t, a list's item type, is a pointer to a
// conf struct that only a mapping decodes into.
func mappingItems(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Implements(scalarType) {
		return false
	}
	if _, ok := reflect.Zero(t).Interface().(nodeDecoder); ok {
		return false
	}
	_, _, metaIdx := fieldsOf(t.Elem())
	return metaIdx >= 0
}

// notMapping returns the entry of pointer type t that stands for the items
// that were not mappings (Meta.notMapping).
func (d *decoder) notMapping(t reflect.Type) reflect.Value {
	if e, ok := d.skipped[t]; ok {
		return e
	}
	e := reflect.New(t.Elem())
	_, _, metaIdx := fieldsOf(t.Elem())
	e.Elem().Field(metaIdx).Addr().Interface().(*Meta).notMapping = true
	if d.skipped == nil {
		d.skipped = map[reflect.Type]reflect.Value{}
	}
	d.skipped[t] = e
	return e
}

// nodeDecoder is implemented by types that accept several shapes (a scalar
// shorthand or a mapping).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string)
}

func (d *decoder) decodeInt(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.fail(n, path, "expected an integer, found %s", kindWord(n))
		return
	}
	bits := v.Type().Bits()
	if v.CanUint() {
		u, err := strconv.ParseUint(n.Value, 0, bits)
		if err != nil {
			d.fail(n, path, "expected an integer from 0 to %d, found %q", uint64(1)<<bits-1, n.Value)
			return
		}
		v.SetUint(u)
		return
	}
	i, err := strconv.ParseInt(n.Value, 0, bits)
	if err != nil {
		d.fail(n, path, "expected an integer, found %q", n.Value)
		return
	}
	v.SetInt(i)
}

type fieldInfo struct {
	index []int
	name  string
}

type structInfo struct {
	fields  map[string]fieldInfo
	names   []string
	metaIdx int
	// expected is the names joined, for "unknown key": made for each
	// unknown key, it was most of the time of a megabyte of them.
	expected string
}

// structInfos caches fieldsOf per type: a file with 100k routes decodes 100k
// route structs, and reflecting over the type each time was a fifth of the
// time spent loading it.
var structInfos sync.Map // reflect.Type -> *structInfo

func fieldsOf(t reflect.Type) (map[string]fieldInfo, []string, int) {
	s := infoOf(t)
	return s.fields, s.names, s.metaIdx
}

func infoOf(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	fields, names, metaIdx := reflectFields(t)
	s := &structInfo{fields, names, metaIdx, strings.Join(names, ", ")}
	structInfos.Store(t, s)
	return s
}

func reflectFields(t reflect.Type) (map[string]fieldInfo, []string, int) {
	fields := map[string]fieldInfo{}
	var names []string
	metaIdx := -1
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type == metaType {
			metaIdx = i
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		name := strings.Split(tag, ",")[0]
		fields[name] = fieldInfo{f.Index, name}
		names = append(names, name)
	}
	sort.Strings(names)
	return fields, names, metaIdx
}

// placeMeta gives a struct's Meta the node's position, so that any later
// error about the struct points at the user's text.
func (d *decoder) placeMeta(n *yaml.Node, v reflect.Value) *Meta {
	if v.Kind() != reflect.Struct {
		return nil
	}
	_, _, metaIdx := fieldsOf(v.Type())
	if metaIdx < 0 {
		return nil
	}
	m := v.Field(metaIdx).Addr().Interface().(*Meta)
	m.Pos = d.pos(n)
	return m
}

// itemWord says what a list item of type t is expected to be.
func itemWord(t reflect.Type) string {
	if reflect.PointerTo(t).Implements(scalarType) {
		return "a value"
	}
	if t.Kind() == reflect.Struct {
		if _, ok := reflect.New(t).Interface().(nodeDecoder); ok {
			return "a value or a mapping"
		}
		return "a mapping"
	}
	return "a value"
}

func (d *decoder) decodeStruct(n *yaml.Node, path string, v reflect.Value) {
	// The position first, also when the node is not a mapping: the checks
	// of meaning then report at the node, and only once (errList).
	m := d.placeMeta(n, v)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, found %s", kindWord(n))
		if m != nil {
			// The checks of its meaning skip it: a
			// megabyte of "{l0: x, l1: x, …}" is a hundred thousand
			// links that are not mappings.
			m.notMapping = true
		}
		return
	}
	si := infoOf(v.Type())
	if m != nil && len(n.Content) > 0 {
		// Sized for the keys the mapping can set: only a mapping with
		// keys has them (a megabyte of "[{},{},…]" makes no slice).
		m.keys = make([]keyPos, 0, min(len(n.Content)/2, len(si.names)))
	}
	var seen keySet
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			d.fail(k, path, "merge keys (<<) are not supported")
			continue
		}
		if !seen.add(k.Value) {
			d.fail(k, fp, "key given twice")
			continue
		}
		f, ok := si.fields[k.Value]
		if !ok {
			d.fail(k, fp, "unknown key; expected one of: %s", si.expected)
			continue
		}
		if m != nil {
			m.setKey(k.Value, d.pos(val))
		}
		d.decode(val, fp, v.FieldByIndex(f.index))
	}
}

// keySet is the keys of one mapping seen so far: searched in an array
// while they are few (a struct's mapping has a handful; the array needs no
// allocation, which a slice per mapping was, a tenth of the memory of
// 100k routes), in a map past that (a megabyte of unknown keys is a
// hundred thousand in one mapping).
type keySet struct {
	few  [16]string
	n    int
	many map[string]struct{}
}

// add adds k and reports whether it was not there yet.
func (s *keySet) add(k string) bool {
	if s.many != nil {
		n := len(s.many)
		s.many[k] = struct{}{}
		return len(s.many) > n
	}
	if slices.Contains(s.few[:s.n], k) {
		return false
	}
	if s.n < len(s.few) {
		s.few[s.n] = k
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 2*s.n)
	for _, f := range s.few[:s.n] {
		s.many[f] = struct{}{}
	}
	s.many[k] = struct{}{}
	return true
}

func (d *decoder) decodeMap(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, found %s", kindWord(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic("desired: map keys must be strings")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			d.fail(k, path, "expected a name as key, found %s", kindWord(k))
			continue
		}
		if v.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.fail(k, fp, "name given twice")
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, fp, e)
		v.SetMapIndex(reflect.ValueOf(k.Value), e)
	}
}

// decodeStructValue decodes a mapping into the struct p points to.
func (d *decoder) decodeStructValue(n *yaml.Node, path string, p any) {
	d.decodeStruct(n, path, reflect.ValueOf(p).Elem())
}
