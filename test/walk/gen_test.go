package walk

import (
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// The generator makes the vlan, macvlan, vrf and bond kinds where the
// kernel has them (the host's: macvlan only), with the attributes
// that change in place and those that replace, and every configuration it
// makes is one the validator takes.
func TestGenMakesLinkKinds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		caps  Caps
		kinds []string
	}{
		{"host", Caps{MACVlan: true}, []string{"macvlan"}},
		{"guest", Caps{Dummy: true, IPVlan: true, IPIP: true, IP6Tnl: true, VLAN: true, MACVlan: true, VRF: true, Bond: true}, []string{"macvlan", "vlan", "vrf", "bond"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGen(rand.New(rand.NewSource(1)), tc.caps, Defects{}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			modes := map[string]bool{}
			members, vrfRoutes := 0, 0
			for walk := 0; walk < 30; walk++ {
				c := g.Initial()
				for step := 0; step < 60; step++ {
					if _, err := desired.Parse(c.Sources()); err != nil {
						t.Fatalf("walk %d step %d: the generator made an invalid file: %v\n%s", walk, step, err, c.YAML())
					}
					for _, l := range c.Links {
						seen[l.Kind]++
						if l.Kind == "macvlan" || l.Kind == "bond" || l.Kind == "vlan" {
							modes[l.Kind+" "+l.Mode] = true
						}
						if l.Kind == "vrf" {
							for _, r := range c.Routes {
								if r.Table == strconv.Itoa(l.Table) {
									vrfRoutes++
								}
							}
						}
						if m := c.Links[l.Master]; m != nil && (m.Kind == "bond" || m.Kind == "vrf") {
							members++
						}
					}
					c, _ = g.Next(c)
				}
			}
			for _, k := range tc.kinds {
				if seen[k] == 0 {
					t.Errorf("no %s in 1,800 steps (seen %v)", k, seen)
				}
			}
			t.Logf("links seen %v; modes %v; vrf and bond members %d; routes in a vrf's table %d", seen, modes, members, vrfRoutes)
			if tc.name == "guest" {
				for _, m := range []string{"bond active-backup", "bond balance-xor", "bond 802.3ad", "bond broadcast", "bond balance-tlb", "bond balance-alb",
					"macvlan private", "macvlan vepa", "macvlan passthru", "vlan 802.1ad"} {
					if !modes[m] {
						t.Errorf("no %s in 1,800 steps", m)
					}
				}
				if members == 0 || vrfRoutes == 0 {
					t.Errorf("%d vrf and bond members, %d routes in a vrf's table in 1,800 steps", members, vrfRoutes)
				}
			}
		})
	}
}

// The generator draws rules that name the file's links (iif, oif, iifname,
// oifname, verdict maps keyed by them), jumps and gotos among a verdict
// map's elements, and macvlans and vlans on bridges, and recreates links
// that rules name; every file it makes is one the validator takes.
func TestGenDrawsLinkRulesMapJumpsAndUppersOnBridges(t *testing.T) {
	g, err := NewGen(rand.New(rand.NewSource(2)), Caps{Dummy: true, VLAN: true, MACVlan: true, Bond: true}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for walk := 0; walk < 30; walk++ {
		c := g.Initial()
		for step := 0; step < 60; step++ {
			if _, err := desired.Parse(c.Sources()); err != nil {
				t.Fatalf("walk %d step %d: the generator made an invalid file: %v\n%s", walk, step, err, c.YAML())
			}
			named := map[string]bool{}
			for _, tb := range c.Tables {
				for _, ch := range tb.Chains {
					for _, r := range ch.Rules {
						if n := linkRuleName(r); n != "" {
							seen[strings.Fields(strings.TrimPrefix(r, "meta "))[0]]++
							named[n] = true
						}
					}
				}
				for _, s := range tb.NSets {
					for _, e := range append(slices.Clone(s.Elements), s.FileElements...) {
						for _, w := range []string{"jump", "goto"} {
							if strings.Contains(e, w+" ") {
								seen["map "+w]++
							}
						}
					}
				}
			}
			for _, l := range c.Links {
				if p := c.Links[l.Parent]; p != nil && p.Kind == "bridge" && (l.Kind == "macvlan" || l.Kind == "vlan") {
					seen[l.Kind+" on a bridge"]++
				}
			}
			next, _ := g.Next(c)
			for n := range named {
				if a, b := c.Links[n], next.Links[n]; a != nil && b != nil && (a.Kind != b.Kind || a.Peer != b.Peer || a.Parent != b.Parent || a.VXLAN != nil && b.VXLAN != nil && *a.VXLAN != *b.VXLAN) {
					seen["named link recreated"]++
				}
			}
			c = next
		}
	}
	t.Logf("seen %v", seen)
	for _, k := range []string{"iif", "oif", "iifname", "oifname", "map jump", "map goto", "macvlan on a bridge", "vlan on a bridge", "named link recreated"} {
		if seen[k] == 0 {
			t.Errorf("no %s in 1,800 steps", k)
		}
	}
}

// A set sw the peers cannot feed (without flags [interval]) stays the only
// sw of its table: the feed goes to another table or nowhere (host seed
// 2026's second walk, 91019493466812, step 63: "name given twice").
func TestGenFeedsNoSecondSetOfAName(t *testing.T) {
	g, err := NewGen(rand.New(rand.NewSource(3)), Caps{}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		c := &Config{Links: map[string]*Link{"wg0": {Name: "wg0", Kind: "wireguard", WG: &WG{}}},
			Tables: []*Table{{Family: "inet", Name: "nrw0", Sets: []*Set{{Name: "sw", Type: "ipv4_addr"}}}}}
		g.inPlaceSetFeed(c)
		if n := len(c.Tables[0].Sets); n != 1 {
			t.Fatalf("draw %d: %d sets in inet nrw0, want the one sw", i, n)
		}
	}
}
