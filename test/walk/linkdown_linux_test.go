package walk

import "testing"

// TestWalkFinding108IPv6GatewayRouteOnALinkWithoutCarrier replays walk
// finding 108 (host seed 10660574966138, step 73) on this kernel: an IPv6
// route via a gateway of p9a's subnet, in table 100, while p9a has no
// carrier (its peer is down) and all.ignore_routes_with_linkdown is 1. The
// kernel's gateway check, through the rules, leaves out the routes of such
// a link, and the apply failed with no route to host. The route is taken
// now, as with carrier, and the steps where carrier comes and goes again
// converge with it.
func TestWalkFinding108IPv6GatewayRouteOnALinkWithoutCarrier(t *testing.T) {
	conf := func(peerDown bool) *Config {
		return &Config{Protocol: 200,
			Links: map[string]*Link{
				"p9a": {Name: "p9a", Kind: "veth", Peer: "p9b", MTU: 9000, Addrs: []*Addr{{CIDR: "10.97.0.3/24"}, {CIDR: "fd00:61::4/64"}}},
				"p9b": {Name: "p9b", Kind: "veth", Peer: "p9a", Down: peerDown},
			},
			Sysctls: map[string]string{"net.ipv6.conf.all.ignore_routes_with_linkdown": "1"},
			Routes:  []*Route{{To: "2001:db8:5::/64", Via: "fd00:61::c9", Dev: "p9a", Table: "100", Metric: 100}},
		}
	}
	r := kernelRunner(t, nil)
	for i, c := range []*Config{conf(true), conf(false), conf(true)} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
	}
}
