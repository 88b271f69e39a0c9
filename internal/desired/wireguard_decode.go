package desired

import (
	"fmt"
	"reflect"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// A device's peers are a file's other bulk: ten thousand of them is a mesh
// a host may carry. As for routes (route_decode.go), the peers list is
// decoded here rather than by the generic decoder, which spent on each peer
// reflection per field and per list item, a path string per key and per
// item, and an allocation per allowed IP and per endpoint: a peer is
// decoded by its keys, its scalars into one array per list, and a path is
// made only for an error. What it decodes is what the generic decoder
// decodes (TestPeerDecoderAgreesWithGeneric).

var wgPeerConfsType = reflect.TypeOf([]*wgPeerConf(nil))

// itemPath is the path of item i of the list at list, made only for an
// error: a value, so that passing it allocates nothing.
type itemPath struct {
	list string
	i    int
}

func (p itemPath) String() string { return p.list + "[" + strconv.Itoa(p.i) + "]" }

// key is the path of key k of the item.
func (p itemPath) key(k string) string { return p.String() + "." + k }

// item is the path of item i of the list at key k (-1: the key's).
func (p itemPath) item(k string, i int) string {
	if i < 0 {
		return p.key(k)
	}
	return p.key(k) + "[" + strconv.Itoa(i) + "]"
}

// decodePeers decodes a list of peers, as the generic decoder decodes a
// list of mappings.
func (d *decoder) decodePeers(n *yaml.Node, path string) []*wgPeerConf {
	return decodeMappings(d, n, path, wgPeerConfsType, func(c *yaml.Node, i int, pc *wgPeerConf) {
		d.decodePeer(c, itemPath{path, i}, pc)
	})
}

// decodeMappings decodes the list n at path of mappings into *T, each by
// one, as the generic decoder decodes a list of mappings (list, its type):
// an item that is no mapping is an error and a T of the generic decoder's
// at its place, a half-typed "- " an error and an empty T there, which the
// checks of meaning report nothing of. The Ts are allocated in chunks: one
// allocation for many.
func decodeMappings[T any, PT interface {
	*T
	setPos(Pos)
}](d *decoder, n *yaml.Node, path string, list reflect.Type, one func(c *yaml.Node, i int, dst PT)) []PT {
	out := make([]PT, len(n.Content))
	var chunk []T
	for i, c := range n.Content {
		d.releaseItem(n, i)
		if c.Kind == yaml.AliasNode {
			c = c.Alias
		}
		switch {
		case c.Kind == yaml.SequenceNode || c.Kind == yaml.ScalarNode && c.Tag != "!!null":
			// What decodeStruct reports for it, lazily.
			d.errs.addLazy(d.pos(c), func() (string, string) {
				return itemPath{path, i}.String(), fmt.Sprintf("expected a mapping, found %s", kindWord(c))
			})
			out[i] = d.notMapping(list.Elem()).Interface().(PT)
		case c.Kind == yaml.ScalarNode:
			d.fail(c, itemPath{path, i}.String(), "empty list item; expected a mapping")
			out[i] = PT(new(T))
			out[i].setPos(d.pos(c))
		default:
			if len(chunk) == 0 {
				chunk = make([]T, min(len(n.Content)-i, 256))
			}
			out[i] = PT(&chunk[0])
			chunk = chunk[1:]
			one(c, i, out[i])
		}
	}
	return out
}

// decodePeer decodes the peer at from the mapping n, as decodeStruct would.
func (d *decoder) decodePeer(n *yaml.Node, at itemPath, pc *wgPeerConf) {
	pc.Pos = d.pos(n)
	if len(n.Content) > 0 {
		pc.keys = make([]keyPos, 0, min(len(n.Content)/2, len(wgPeerKeyNames)))
	}
	var seen keySet
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, val := n.Content[j], n.Content[j+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			d.fail(k, at.String(), "merge keys (<<) are not supported")
			continue
		}
		if !seen.add(k.Value) {
			d.fail(k, at.key(k.Value), "key given twice")
			continue
		}
		key, known := wgPeerKeyNames[k.Value]
		if !known {
			d.fail(k, at.key(k.Value), "unknown key; expected one of: %s", infoOf(wgPeerConfsType.Elem().Elem()).expected)
			continue
		}
		pc.setKey(key, d.pos(val))
		v := val
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch key {
		case "public-key":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				d.fail(v, at.key(key), "expected a string, found %s", kindWord(v))
				continue
			}
			pc.PublicKey = v.Value
		case "allowed-ips":
			pc.AllowedIPs = scalarList[Prefix](d, v, at, key)
		case "endpoints":
			pc.Endpoints = scalarList[wgEndpoint](d, v, at, key)
		case "persistent-keepalive":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			pc.PersistentKeepalive = new(Duration)
			scalarItem(d, v, pc.PersistentKeepalive, at, key, -1)
		default:
			// The rarer keys (preshared-key-file, keep-preshared-key),
			// by the generic decoder.
			d.decode(v, at.key(key), reflect.ValueOf(pc).Elem().FieldByIndex(wgPeerFields[key]))
		}
	}
}

// scalarList decodes the list of scalars of the peer's key at n, as the
// generic decoder decodes a []*T of a scalar type without a Meta: the
// items in one array.
func scalarList[T any, P interface {
	*T
	scalar
}](d *decoder, n *yaml.Node, at itemPath, key string) []P {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, at.key(key), "expected a list, found %s", kindWord(n))
		return nil
	}
	out := make([]P, len(n.Content))
	vals := make([]T, len(n.Content))
	for i, c := range n.Content {
		d.releaseItem(n, i)
		if c.Kind == yaml.AliasNode {
			c = c.Alias
		}
		out[i] = &vals[i]
		if c.Kind == yaml.ScalarNode && c.Tag == "!!null" {
			// A half-typed "- ": an error, and a zero item.
			d.fail(c, at.item(key, i), "empty list item; expected a value")
			continue
		}
		scalarItem(d, c, out[i], at, key, i)
	}
	return out
}

// scalarItem parses the scalar n into p, the peer's key (item i of its
// list; -1: the key's value itself), as the generic decoder does.
func scalarItem(d *decoder, n *yaml.Node, p scalar, at itemPath, key string, i int) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, at.item(key, i), "expected a scalar, found %s", kindWord(n))
		return
	}
	if err := p.parse(n.Value); err != nil {
		d.errs.addLazy(d.pos(n), func() (string, string) { return at.item(key, i), err.Error() })
	}
}

// wgPeerKeyNames are wgPeerConf's keys, each its own string: a key's name
// in the peer's keys is one of these, not the node's.
var wgPeerKeyNames = map[string]string{}

// wgPeerFields are the fields of wgPeerConf by key.
var wgPeerFields = map[string][]int{}

func init() {
	fields, _, _ := fieldsOf(reflect.TypeOf(wgPeerConf{}))
	for name, f := range fields {
		wgPeerKeyNames[name], wgPeerFields[name] = name, f.index
	}
}
