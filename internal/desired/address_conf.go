package desired

import (
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// addressConf is an entry of a link's addresses: either the shorthand
// "10.0.0.1/24" or a mapping with the address and its options.
type addressConf struct {
	Meta
	Address       *IfAddr `yaml:"address"`
	Peer          *Prefix `yaml:"peer"`
	Scope         *Scope  `yaml:"scope"`
	NoPrefixRoute bool    `yaml:"noprefixroute"`
	// An address taken from a pool (pool.go) instead of given.
	Pool             string `yaml:"pool"`
	PrefixLength     *int   `yaml:"prefix-length" schema:"limits=prefixLength"`
	IPv4PrefixLength *int   `yaml:"ipv4-prefix-length" schema:"limits=ipv4PrefixLength"`
	IPv6PrefixLength *int   `yaml:"ipv6-prefix-length" schema:"limits=prefixLength"`
	// unparsable: the shorthand that did not parse. Every check of the
	// entry would report at the error's position, where nothing more is
	// reported, so the builder skips it: a megabyte of "[x,x,…]" is half a
	// million of them.
	unparsable bool
}

func (a *addressConf) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		a.Pos = d.pos(n)
		var addr IfAddr
		if err := addr.parse(n.Value); err != nil {
			a.unparsable = true
			d.errs.addLazy(a.Pos, func() (string, string) { return path, err.Error() })
			return
		}
		a.Address = &IfAddr{addr.P}
		a.keys = []keyPos{{"address", a.Pos.Line, a.Pos.Col}}
		return
	}
	// Decode the mapping form with the generic struct decoder; the alias type
	// has no decodeNode method, which stops the recursion.
	type plain addressConf
	p := (*plain)(a)
	d.decodeStructValue(n, path, p)
}

// unparsableAddress stands for every shorthand that did not parse, once
// reported (skipUnparsableAddress): the builder skips it, and a megabyte of
// "[x,x,…]" would otherwise be half a million entries of 136 bytes.
var unparsableAddress = addressConf{unparsable: true}

// skipUnparsableAddress reports c as decodeNode would and stands
// unparsableAddress for it if it is a shorthand that does not parse.
func skipUnparsableAddress(d *decoder, c *yaml.Node, path string, i int, e *reflect.Value) bool {
	if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
		return false
	}
	if !ifAddrFails(c.Value) {
		return false
	}
	// The message is made for a kept error only, by parse itself.
	d.errs.addLazy(d.pos(c), func() (string, string) {
		var addr IfAddr
		return path + "[" + strconv.Itoa(i) + "]", addr.parse(c.Value).Error()
	})
	e.Set(reflect.ValueOf(&unparsableAddress))
	return true
}

// ifAddrFails reports whether IfAddr.parse fails on s, without making its
// error: a megabyte of "[x,x,…]" where addresses are expected is half a
// million of them, of which MaxKeptErrors are kept. It follows parse step
// by step: refuseZone fails on "%", ParsePrefix on a text without "/"
// (TestIfAddrFails).
func ifAddrFails(s string) bool {
	if strings.Contains(s, "%") || !strings.Contains(s, "/") {
		return true
	}
	var addr IfAddr
	return addr.parse(s) != nil
}
