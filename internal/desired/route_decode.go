package desired

import (
	"reflect"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Routes are a file's bulk: a hundred thousand of them is a table a host
// may carry. The generic decoder (decode.go) spends on each what a few
// structs can afford: reflection per field, a path string per key, a
// set of the keys seen. The routes list is decoded here instead, each route
// by its keys, with a path made only for an error; what it decodes is what
// the generic decoder decodes (TestRouteDecoderAgreesWithGeneric). yaml.v3
// has built the whole document's tree by then; a route's nodes are let go
// once it is decoded when the file has no alias (nothing else reaches
// them), so that the routes decoded and the tree are not held whole at
// once.

var routeConfsType = reflect.TypeOf([]*routeConf(nil))

// decodeRoutes decodes a list of routes, as the generic decoder decodes a
// list of mappings.
func (d *decoder) decodeRoutes(n *yaml.Node, path string) []*routeConf {
	return decodeMappings(d, n, path, routeConfsType, func(c *yaml.Node, i int, rc *routeConf) {
		d.decodeRoute(c, path, i, rc)
	})
}

// decodeRoute decodes route i of the list at path from n, as decodeStruct
// would.
func (d *decoder) decodeRoute(n *yaml.Node, path string, i int, rc *routeConf) {
	rc.Pos = d.pos(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path+"["+strconv.Itoa(i)+"]", "expected a mapping, found %s", kindWord(n))
		rc.notMapping = true
		return
	}
	if len(n.Content) > 0 {
		rc.keys = make([]keyPos, 0, min(len(n.Content)/2, len(routeKeyNames)))
	}
	fieldPath := func(key string) string { return path + "[" + strconv.Itoa(i) + "]." + key }
	var seen keySet
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, val := n.Content[j], n.Content[j+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			d.fail(k, path+"["+strconv.Itoa(i)+"]", "merge keys (<<) are not supported")
			continue
		}
		if !seen.add(k.Value) {
			d.fail(k, fieldPath(k.Value), "key given twice")
			continue
		}
		key, known := routeKeyNames[k.Value]
		if !known {
			d.fail(k, fieldPath(k.Value), "unknown key; expected one of: %s", infoOf(routeConfsType.Elem().Elem()).expected)
			continue
		}
		rc.setKey(key, d.pos(val))
		v := val
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch key {
		case "to":
			rc.To = scalarField(d, v, key, fieldPath, rc.To)
		case "family":
			rc.Family = scalarField(d, v, key, fieldPath, rc.Family)
		case "via":
			rc.Via = scalarField(d, v, key, fieldPath, rc.Via)
		case "src":
			rc.Src = scalarField(d, v, key, fieldPath, rc.Src)
		case "table":
			rc.Table = scalarField(d, v, key, fieldPath, rc.Table)
		case "scope":
			rc.Scope = scalarField(d, v, key, fieldPath, rc.Scope)
		case "dev":
			rc.Dev = stringField(d, v, key, fieldPath)
		case "type":
			rc.Type = stringField(d, v, key, fieldPath)
		default:
			// The rarer keys, and those of other kinds (metric, mtu,
			// tos, onlink, nexthops), by the generic decoder.
			d.decode(v, fieldPath(key), reflect.ValueOf(rc).Elem().FieldByIndex(routeFields[key]))
		}
	}
}

// routeKeyNames are routeConf's keys, each its own string: a key's name
// in the route's keys is one of these, not the node's.
var routeKeyNames = map[string]string{}

// routeFields are the fields of routeConf by key.
var routeFields = map[string][]int{}

func init() {
	fields, _, _ := fieldsOf(reflect.TypeOf(routeConf{}))
	for name, f := range fields {
		routeKeyNames[name], routeFields[name] = name, f.index
	}
}

// scalarField decodes a scalar value into the field p points to, made when
// nil, as the generic decoder decodes a pointer to a scalar type: nothing
// for a null, an error for what is not a scalar or does not parse.
func scalarField[T any, P interface {
	*T
	scalar
}](d *decoder, n *yaml.Node, key string, fieldPath func(string) string, p P) P {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return p
	}
	if p == nil {
		p = new(T)
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(n, fieldPath(key), "expected a scalar, found %s", kindWord(n))
		return p
	}
	if err := p.parse(n.Value); err != nil {
		d.errs.addLazy(d.pos(n), func() (string, string) { return fieldPath(key), err.Error() })
	}
	return p
}

// stringField decodes a string value, as the generic decoder does.
func stringField(d *decoder, n *yaml.Node, key string, fieldPath func(string) string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.fail(n, fieldPath(key), "expected a string, found %s", kindWord(n))
		return ""
	}
	return n.Value
}
