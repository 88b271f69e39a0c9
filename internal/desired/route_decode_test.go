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
		own, generic := &errList{}, &errList{}
		got := (&decoder{file: "f.yaml", errs: own}).decodeRoutes(seq, "routes")
		var want []*plainRoute
		(&decoder{file: "f.yaml", errs: generic}).decode(seq, "routes", reflect.ValueOf(&want).Elem())
		if len(got) != len(want) {
			t.Fatalf("round %d: %d routes, generic %d", round, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], (*routeConf)(want[i])) {
				t.Fatalf("round %d, file\n%s\nroute %d: %+v\ngeneric: %+v", round, b.String(), i, got[i], want[i])
			}
		}
		if g, w := own.err(), generic.err(); !reflect.DeepEqual(g, w) {
			t.Fatalf("round %d, file\n%s\nerrors\n%v\ngeneric\n%v", round, b.String(), g, w)
		}
	}
}
