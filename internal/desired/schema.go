package desired

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

//go:generate go run ./schemagen -o ../../docs/schema/config.json

// The configuration's JSON Schema (docs/schema/config.json, written by
// schemagen) is made here from the conf structs, by reflection, the way
// the decoder reads them, so that it is never written a second time:
//
//   - a conf struct is an object whose keys are its fields' yaml tags and
//     nothing else (the decoder refuses an unknown key);
//   - a map is an object of named entries, a slice an array;
//   - a bool, an integer or a string is what the decoder takes for one
//     (decode.go: strconv's words and bases, any scalar for a string);
//   - a type that parses itself (values.go, the shorthands of addresses,
//     subnets and routes-files, sysctls, block ranges) says what it
//     accepts in a jsonSchema method beside its parser;
//   - what only the builder knows is a `schema` tag on the field, whose
//     words name the lists and limits the builder checks with (below):
//     required, enum=NAME, limits=NAME, block (a kind's block), unique
//     (a list that refuses an item given twice).
//
// A pointer field given null is a key left out (the decoder leaves the
// pointer nil), so the schema takes null there unless the key is required.
// What the schema cannot say (a reference to another link, a prefix with
// host bits set, the families of a route's addresses...) the loader says;
// schemaDifferential_test.go lists which refusals the schema catches.

// schemaEnums are the words a field takes, by the name its tag gives:
// the lists the builder checks the same fields with.
var schemaEnums = map[string][]string{
	"linkKinds":      model.Kinds,
	"linkStates":     linkStates,
	"ipvlanModes":    ipvlanModes,
	"macvlanModes":   macvlanModes,
	"vlanProtocols":  vlanProtocols,
	"bondModes":      model.BondModes,
	"tunnelModes":    append(append([]string(nil), ipipModes...), ip6tnlModes...),
	"encapTypes":     encapTypes,
	"routeTypes":     sortedKeys(model.RouteTypeNames),
	"ruleActions":    sortedKeys(model.RuleActionNames),
	"nftSetTypes":    model.NftSetTypes,
	"nftSetFlags":    nftSetFlags,
	"nftChainTypes":  nftChainTypes,
	"nftHooks":       nftAllHooks(),
	"nftPolicies":    nftPolicies,
	"peerSelections": peerSelections,
}

// schemaPathEnums narrow a shared type's enumeration where its path says
// more (an ipip link's mode and an ip6tnl link's share tunnelConf).
var schemaPathEnums = map[string][]string{
	"links.*.ipip.mode":   ipipModes,
	"links.*.ip6tnl.mode": ip6tnlModes,
}

// schemaNames are what the keys of a map must look like, where the
// schema can say it: an nftables table is "FAMILY NAME".
var schemaNames = map[string]string{
	"nftables": "^(" + strings.Join(model.NftFamilies, "|") + ") [^ ]+$",
}

// schemaLimit is the range of an integer field, from the builder's constants.
type schemaLimit struct {
	min, max int64
	// multipleOf, when not 0.
	multipleOf int64
	// not are values inside the range that are refused.
	not []int64
}

var schemaLimits = map[string]schemaLimit{
	"version":           {min: CurrentVersion, max: CurrentVersion},
	"linkMTU":           {min: minMTU, max: maxL3MTU},
	"routeMTU":          {min: 0, max: maxMTU},
	"vni":               {min: 0, max: maxVNI},
	"vlanID":            {min: 0, max: maxVLANID},
	"udpPort":           {min: 1, max: math.MaxUint16},
	"listenPort":        {min: 0, max: math.MaxUint16},
	"protocol":          {min: minProtocol, max: maxProtocol},
	"metric":            {min: 0, max: math.MaxUint32},
	"tos":               {min: 0, max: maxTOS, multipleOf: 4},
	"weight":            {min: minWeight, max: maxWeight},
	"rulePriority":      {min: 1, max: math.MaxUint32, not: reservedRulePriorities()},
	"suppressPrefixLen": {min: 0, max: 128},
	"blockSizeBits":     {min: 0, max: maxBlockSizeBits},
	"prefixLength":      {min: 1, max: 128},
	"ipv4PrefixLength":  {min: 1, max: 32},
	"vrfTable":          {min: 1, max: math.MaxUint32, not: []int64{model.TableDefault, model.TableMain, model.TableLocal}},
	"miimon":            {min: 0, max: maxMiimon},
	"fouIPProto":        {min: 0, max: math.MaxUint8, not: nil},
}

// schemaTyper is a type that parses itself and says what it accepts: a
// schema, and the name of its definition when it is worth sharing.
type schemaTyper interface {
	jsonSchema(path string) (def string, schema map[string]any)
}

// SchemaKeys returns the path of every leaf key of the configuration (a
// key whose value is not a mapping of keys of the schema), in the
// configuration reference's words: a map's entries as "*", a list's items
// as "[]": "version", "links.*.vxlan.port", "routes[].nexthops[].via",
// "sysctls.*". docs/config.md documents each (schemagen's test).
func SchemaKeys() []string {
	var keys []string
	walkKeys(reflect.TypeOf(fileConf{}), "", func(path string) { keys = append(keys, path) })
	sort.Strings(keys)
	return keys
}

// walkKeys calls leaf for every leaf key under the struct type t at path.
func walkKeys(t reflect.Type, path string, leaf func(string)) {
	for _, name := range infoOf(t).names {
		f := t.FieldByIndex(infoOf(t).fields[name].index)
		p := join(path, name)
		ft, suffix := elemType(f.Type)
		switch {
		case isConfStruct(ft):
			walkKeys(ft, p+suffix, leaf)
		case ft == reflect.TypeOf(sysctlsConf{}):
			leaf(p + suffix + ".*")
		default:
			leaf(p)
		}
	}
}

// elemType is what a field holds under its pointers, maps and slices, and
// the path's suffix for them.
func elemType(t reflect.Type) (reflect.Type, string) {
	suffix := ""
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Map:
			t, suffix = t.Elem(), suffix+".*"
		case reflect.Slice:
			t, suffix = t.Elem(), suffix+"[]"
		default:
			return t, suffix
		}
	}
}

// isConfStruct reports whether t is a struct the decoder fills key by key:
// one with Meta (a shorthand's mapping form included), not one that parses
// itself whole.
func isConfStruct(t reflect.Type) bool {
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(scalarType) {
		return false
	}
	if _, ok := reflect.New(t).Interface().(schemaTyper); ok {
		if _, short := reflect.New(t).Interface().(schemaShorthand); !short {
			return false
		}
	}
	return infoOf(t).metaIdx >= 0
}

// schemaShorthand is a conf struct that also takes a scalar (an address,
// a subnet, a side file's path): its mapping form is made from its fields,
// and shorthand says what the scalar may be.
type schemaShorthand interface {
	shorthand() map[string]any
}

// schemaRefiner adds what its fields' tags cannot say to a struct's schema
// (keys of which one is needed).
type schemaRefiner interface {
	refineSchema(obj map[string]any)
}

// JSONSchema returns the configuration's JSON Schema (draft-07, the
// newest yaml-language-server reads). describe gives a key path's
// description (docs/config.md's row), or "".
func JSONSchema(describe func(path string) string) map[string]any {
	g := &schemaGen{describe: describe, defs: map[string]any{}}
	root := g.object(reflect.TypeOf(fileConf{}), "")
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	root["title"] = "netreconcile configuration"
	root["description"] = "The file netreconcile makes the host's network match (docs/config.md). Generated from the loader's types by internal/desired/schemagen: the loader is the judge, and says more (references between objects, families, what the kernel refuses)."
	root["definitions"] = g.defs
	return root
}

type schemaGen struct {
	describe func(string) string
	defs     map[string]any
}

// object is the schema of conf struct t at path.
func (g *schemaGen) object(t reflect.Type, path string) map[string]any {
	si := infoOf(t)
	props := map[string]any{}
	var required []string
	var conds []any
	for _, name := range si.names {
		f := t.FieldByIndex(si.fields[name].index)
		p := join(path, name)
		tag := parseSchemaTag(f.Tag.Get("schema"))
		s := g.value(f.Type, p, tag)
		if d := g.describe(p); d != "" {
			s = withDescription(s, d)
		}
		props[name] = s
		if tag.required {
			required = append(required, name)
		}
		if tag.block {
			if _, ok := kindBlocks[name]; !ok {
				panic("desired: " + p + " is no kind's block")
			}
			// A kind's block belongs to links of that kind; a kind whose
			// block is needed has it.
			conds = append(conds, map[string]any{
				"if":   map[string]any{"required": []string{name}},
				"then": map[string]any{"properties": map[string]any{"kind": map[string]any{"const": name}}},
			})
			if kindBlocks[name] {
				conds = append(conds, map[string]any{
					"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": name}}, "required": []string{"kind"}},
					"then": map[string]any{"required": []string{name}},
				})
			}
		}
	}
	obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		obj["required"] = required
	}
	if len(conds) > 0 {
		obj["allOf"] = conds
	}
	if r, ok := reflect.New(t).Interface().(schemaRefiner); ok {
		r.refineSchema(obj)
	}
	return obj
}

// value is the schema of a field of type t at path.
func (g *schemaGen) value(t reflect.Type, path string, tag schemaTag) map[string]any {
	if t.Kind() == reflect.Pointer {
		s := g.value(t.Elem(), path, tag)
		if tag.required {
			return s
		}
		// null is the key left out.
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	if st, ok := reflect.New(t).Interface().(schemaTyper); ok {
		def, s := st.jsonSchema(path)
		if def == "" {
			return s
		}
		if prev, ok := g.defs[def]; ok && !reflect.DeepEqual(prev, s) {
			panic(fmt.Sprintf("desired: two schemas named %s", def))
		}
		g.defs[def] = s
		return map[string]any{"$ref": "#/definitions/" + def}
	}
	if sh, ok := reflect.New(t).Interface().(schemaShorthand); ok {
		return map[string]any{"anyOf": []any{sh.shorthand(), g.object(t, path)}}
	}
	switch t.Kind() {
	case reflect.Struct:
		return g.object(t, path)
	case reflect.Map:
		// An entry given null is an empty mapping (a chain with no
		// keys is a regular chain): taken where that is.
		entry := g.value(t.Elem(), path+".*", schemaTag{required: true})
		if _, req := entry["required"]; !req && entry["type"] == "object" && entry["anyOf"] == nil {
			entry = map[string]any{"anyOf": []any{entry, map[string]any{"type": "null"}}}
		}
		s := map[string]any{"type": "object", "additionalProperties": entry}
		names := map[string]any{"minLength": 1}
		if p, ok := schemaNames[path]; ok {
			names["pattern"] = p
		}
		s["propertyNames"] = names
		return s
	case reflect.Slice:
		// An empty item ("- ") is refused: an item is required. The
		// field's enumeration and limits are its items'.
		itemTag := tag
		itemTag.required, itemTag.unique = true, false
		s := map[string]any{"type": "array", "items": g.value(t.Elem(), path+"[]", itemTag)}
		if tag.unique {
			s["uniqueItems"] = true
		}
		return s
	case reflect.String:
		if words := tag.enumFor(path); words != nil {
			return map[string]any{"enum": words}
		}
		g.defs["string"] = map[string]any{
			"description": "Any scalar, read as its text.",
			"type":        []string{"string", "number", "boolean"},
		}
		return map[string]any{"$ref": "#/definitions/string"}
	case reflect.Bool:
		g.defs["boolean"] = map[string]any{"anyOf": []any{
			map[string]any{"type": "boolean"},
			// strconv.ParseBool's words, which the decoder takes from a
			// plain scalar whatever YAML makes of it (t, or !!str true).
			map[string]any{"type": "string", "pattern": "^(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$"},
			map[string]any{"type": "integer", "enum": []any{0, 1}},
		}}
		return map[string]any{"$ref": "#/definitions/boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return integerSchema(t, tag.limit())
	}
	panic(fmt.Sprintf("desired: no schema for %s at %s", t, path))
}

// integerSchema is what decodeInt takes for an integer of type t: a number
// within the type and the limit, or its text in one of strconv's bases.
func integerSchema(t reflect.Type, l *schemaLimit) map[string]any {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch t.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		lo, hi = 0, int64(1)<<t.Bits()-1
	case reflect.Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	}
	n := map[string]any{"type": "integer"}
	if l != nil {
		lo, hi = max(lo, l.min), min(hi, l.max)
		if l.multipleOf != 0 {
			n["multipleOf"] = l.multipleOf
		}
		if len(l.not) > 0 {
			n["not"] = map[string]any{"enum": l.not}
		}
	}
	if lo != math.MinInt64 {
		n["minimum"] = lo
	}
	if hi != math.MaxInt64 {
		n["maximum"] = hi
	}
	return map[string]any{"anyOf": []any{n, map[string]any{"type": "string", "pattern": intTextPattern}}}
}

// intTextPattern is an integer written as a string, as strconv.ParseInt
// with base 0 reads it (the schema cannot check its range).
const intTextPattern = `^[-+]?(0[xX](_?[0-9a-fA-F])+|0[bB](_?[01])+|0[oO](_?[0-7])+|0(_?[0-7])*|[1-9](_?[0-9])*)$`

// withDescription gives s a description: beside it, or around a $ref
// (whose siblings draft-07 ignores).
func withDescription(s map[string]any, d string) map[string]any {
	if _, ref := s["$ref"]; ref {
		return map[string]any{"description": d, "allOf": []any{s}}
	}
	out := map[string]any{"description": d}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// schemaTag is a field's `schema` tag.
type schemaTag struct {
	required bool
	enum     string
	limits   string
	// block: the field is a kind's block, named after the kind (whether
	// the kind needs it is kindBlocks').
	block bool
	// unique: a list whose items the builder refuses twice (a route, an
	// address, an element): the same item twice is an error.
	unique bool
}

func parseSchemaTag(s string) schemaTag {
	var t schemaTag
	for _, w := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "":
		case "required":
			t.required = true
		case "enum":
			if _, ok := schemaEnums[v]; !ok {
				panic("desired: no enumeration " + v)
			}
			t.enum = v
		case "limits":
			if _, ok := schemaLimits[v]; !ok {
				panic("desired: no limits " + v)
			}
			t.limits = v
		case "block":
			t.block = true
		case "unique":
			t.unique = true
		default:
			panic("desired: unknown schema tag " + w)
		}
	}
	return t
}

func (t schemaTag) enumFor(path string) []string {
	if w, ok := schemaPathEnums[path]; ok {
		return w
	}
	if t.enum == "" {
		return nil
	}
	return schemaEnums[t.enum]
}

func (t schemaTag) limit() *schemaLimit {
	if t.limits == "" {
		return nil
	}
	l := schemaLimits[t.limits]
	return &l
}

func reservedRulePriorities() []int64 {
	var out []int64
	for _, p := range model.ReservedRulePriorities {
		if p != 0 {
			out = append(out, int64(p))
		}
	}
	return out
}

// nftAllHooks is every family's hooks: which a chain may take depends on
// its table's family, which the schema does not follow.
func nftAllHooks() []string {
	var out []string
	for _, f := range model.NftFamilies {
		for _, h := range nftHooks[f] {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}
