package desired

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The routes list's own decoder gives what the generic decoder gives for
// the same list: the same routes, the same errors at the same positions.
// The generic decoder, which every other list goes through, is the oracle:
// the list is decoded again by it, as a list of a type without the
// routes' own decoder.
func TestRouteDecoderAgreesWithGeneric(t *testing.T) {
	type plainRoute routeConf
	rnd := rand.New(rand.NewPCG(3, 4))
	pick := func(xs ...string) string { return xs[rnd.IntN(len(xs))] }
	values := []string{"10.0.0.0/24", "default", "10.0.0.1", "fe80::1", "x", "~", "null", "[a, b]", "{a: 1}", "1", "0x10", "-1",
		"300", "true", "yes", "'true'", "\"1\"", "eth0", "main", "link", "ipv6", "both", "1.5", "*v", "\"\"", "[]", "{}", "blackhole"}
	keys := []string{"to", "family", "via", "dev", "src", "table", "metric", "scope", "mtu", "tos", "onlink", "type", "nexthops", "dve", "<<", "to"}
	for round := range 2000 {
		var b strings.Builder
		b.WriteString("v: &v 10.1.0.0/16\nroutes:\n")
		for range rnd.IntN(6) {
			switch rnd.IntN(12) {
			case 0:
				b.WriteString("  - " + pick("x", "~", "[1]", "", "{}", "*v") + "\n")
				continue
			}
			var fields []string
			for range rnd.IntN(6) {
				k := keys[rnd.IntN(len(keys))]
				v := values[rnd.IntN(len(values))]
				if k == "nexthops" {
					v = pick("[{via: 10.0.0.1}, {dev: eth0, weight: 2}]", "x", "[x, ~]", "[]")
				}
				fields = append(fields, k+": "+v)
			}
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(fields, ", "))
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
			continue
		}
		seq := doc.Content[0].Content[3]
		if seq.Kind != yaml.SequenceNode {
			continue
		}
		agreesWithGeneric(t, fmt.Sprintf("round %d, file\n%s\n", round, b.String()), seq, "routes", (*decoder).decodeRoutes,
			func(p *plainRoute) *routeConf { return (*routeConf)(p) })
	}
}

// agreesWithGeneric fails t unless a list's own decoder (own) gives for the
// list seq at path what the generic decoder gives for it decoded as a list
// of Plain, a type of the same fields without the own decoder (as, its
// conversion): the same items and the same errors at the same positions.
func agreesWithGeneric[Own, Plain any](t *testing.T, what string, seq *yaml.Node, path string, own func(*decoder, *yaml.Node, string) []*Own, as func(*Plain) *Own) {
	t.Helper()
	ownErrs, genericErrs := &errList{}, &errList{}
	got := own(&decoder{file: "f.yaml", errs: ownErrs}, seq, path)
	var want []*Plain
	(&decoder{file: "f.yaml", errs: genericErrs}).decode(seq, path, reflect.ValueOf(&want).Elem())
	if len(got) != len(want) {
		t.Fatalf("%s%d items, generic %d", what, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], as(want[i])) {
			t.Fatalf("%sitem %d: %+v\ngeneric: %+v", what, i, got[i], want[i])
		}
	}
	if g, w := ownErrs.err(), genericErrs.err(); !reflect.DeepEqual(g, w) {
		t.Fatalf("%serrors\n%v\ngeneric\n%v", what, g, w)
	}
}
