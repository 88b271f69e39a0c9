package walk

import "testing"

// TestWalkFinding194RuleNamingARecreatedLinkFollowsItsIndex replays the walk
// finding of host seed 49737547370500, step 29 (a walk of the run of seed
// 90934393032559): a veth whose peer the file renames is recreated, and the
// vxlan on it with it; the rules of a table that name them (iif "p2a",
// iif { "x1", "lo" }) were compiled to the indexes the links had before the
// plan, written as they were, and named indexes no link had after it (the
// next pass wrote them again). They wait for the links now, and the same
// apply writes them with the new indexes.
func TestWalkFinding194RuleNamingARecreatedLinkFollowsItsIndex(t *testing.T) {
	conf := func(peer string) *Config {
		return &Config{Protocol: 200,
			Links: map[string]*Link{
				"p2a": {Name: "p2a", Kind: "veth", Peer: peer, MTU: 1500},
				peer:  {Name: peer, Kind: "veth", Peer: "p2a", MTU: 1500},
			},
			Tables: []*Table{{Family: "inet", Name: "nrw0", Chains: []*Chain{
				{Name: "helper", Rules: []string{"counter accept"}},
				{Name: "in", Type: "filter", Hook: "input", Priority: "filter", Policy: "accept",
					Rules: []string{`iif "p2a" jump helper`, `iif { "p2a", "lo" } counter accept`, `iifname "p2a" accept`}},
			}}},
		}
	}
	r := kernelRunner(t, nil)
	// The rules' comparison is under test, not the oracle's proof of
	// each key.
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range []*Config{conf("p2c"), conf("p2b"), conf("p2c")} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
	}
}
