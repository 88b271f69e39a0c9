package walk

import (
	"math/rand"
	"strings"
	"testing"
)

// The generator makes multipath routes (some with IPv6 next hops of IPv4
// routes), single-path RFC 5549 routes and every route type, and Next
// keeps them (repair does not drop them all).
func TestGenMakesNewRouteKinds(t *testing.T) {
	g, err := NewGen(rand.New(rand.NewSource(1)), Caps{}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	c := g.Initial()
	for i := 0; i < 3000; i++ {
		c, _ = g.Next(c)
		for _, r := range c.Routes {
			seen["type "+r.Type]++
			if len(r.Hops) > 0 {
				seen["multipath"]++
				for _, h := range r.Hops {
					if !strings.Contains(r.To, ":") && strings.Contains(h.Via, ":") {
						seen["multipath rfc5549"]++
					}
					if h.Weight > 1 {
						seen["weight"]++
					}
				}
			} else if !strings.Contains(r.To, ":") && strings.Contains(r.Via, ":") {
				seen["rfc5549"]++
			}
		}
	}
	for _, k := range []string{"multipath", "multipath rfc5549", "weight", "rfc5549", "type unicast", "type local", "type blackhole", "type unreachable", "type prohibit", "type throw"} {
		if seen[k] == 0 {
			t.Errorf("never generated: %s (seen %v)", k, seen)
		}
	}
}
