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

// Walk finding 64: a rename that would make two next hops of a route the
// same is not made, and repair drops a route whose hops are the same
// (validation refuses it), whatever made them so.
func TestNoRouteWithTheSameHopTwice(t *testing.T) {
	g, err := NewGen(rand.New(rand.NewSource(1)), Caps{}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := g.Initial()
	c.Links = map[string]*Link{
		"b0": {Name: "b0", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.250.1.1/24"}}},
		"b1": {Name: "b1", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.250.1.2/24"}}},
	}
	c.Routes = []*Route{{To: "172.16.9.0/24", Hops: []Hop{{Via: "10.250.1.254", Dev: "b0"}, {Via: "10.250.1.254", Dev: "b2"}}}}
	if !renameJoinsHops(c, "b0", "b2") || renameJoinsHops(c, "b0", "b3") || renameJoinsHops(c, "b1", "b2") {
		t.Error("renameJoinsHops")
	}
	g.Repair(c)
	if len(c.Routes) != 0 {
		t.Fatalf("a route through a link that is gone kept: %v", c.Routes[0].Hops)
	}
	c.Routes = []*Route{{To: "172.16.9.0/24", Hops: []Hop{{Via: "10.250.1.254", Dev: "b0"}, {Via: "10.250.1.254", Dev: "b1"}}}}
	g.Repair(c)
	if len(c.Routes) != 1 {
		t.Fatal("a valid multipath route dropped")
	}
	c.Routes[0].Hops[1].Dev = "b0"
	g.Repair(c)
	if len(c.Routes) != 0 {
		t.Errorf("a route with the same hop twice kept: %v", c.Routes[0].Hops)
	}
}
