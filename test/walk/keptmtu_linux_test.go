package walk

import "testing"

// TestWalkFinding197ChildAboveAParentThatKeptItsMTU replays walk finding
// 197 (host soak seed 35783797956903, step 49, shrunk to 5 steps): bridge
// b2, made at MTU 1280, kept it when the file dropped its mtu key (apply
// resets no MTU), and a macvlan then declared on it at 1300 was refused by
// the kernel, as the plan warned. The generator, working from the files,
// took b2 for a bridge at its kind's 1500. The runner now fits such a
// child to the MTU the kernel keeps on its lower device.
func TestWalkFinding197ChildAboveAParentThatKeptItsMTU(t *testing.T) {
	bridge := func(mtu int) *Link {
		return &Link{Name: "b2", Kind: "bridge", MTU: mtu, Addrs: []*Addr{{CIDR: "10.76.1.2/24"}}}
	}
	steps := []*Config{
		{Protocol: 200, Links: map[string]*Link{"b2": bridge(1280)}},
		{Protocol: 200, Links: map[string]*Link{"b2": bridge(0)}},
		{Protocol: 200, Links: map[string]*Link{"b2": bridge(0),
			"m0": {Name: "m0", Kind: "macvlan", Parent: "b2", MTU: 1300, Addrs: []*Addr{{CIDR: "10.28.0.1/24"}}}}},
	}
	converges(t, kernelRunner(t, nil), steps...)
	if got := steps[2].Links["m0"].MTU; got != 1280 {
		t.Errorf("m0's MTU %d, want 1280: b2's, which the kernel kept", got)
	}
}

// TestWalkFinding201ChildFittedBelowIPv6KeepsTheFileValid replays walk
// finding 201 (host soak seed 98003601309131, step 19, shrunk to 2 steps),
// a generator bug: veth p0a, made at 1000, kept it when the file dropped
// its mtu key, and the runner fitted vxlan k1 on it, declared at 1300 with
// an IPv6 address, to 950, a file that validation refuses. The runner now
// leaves such a child's MTU out: the kernel makes it at 950, and diff and
// apply refuse IPv6 on it, as the walk expects.
func TestWalkFinding201ChildFittedBelowIPv6KeepsTheFileValid(t *testing.T) {
	veth := func(mtu int) map[string]*Link {
		return map[string]*Link{
			"p0a": {Name: "p0a", Kind: "veth", Peer: "p0c", MTU: mtu, Addrs: []*Addr{{CIDR: "10.96.0.2/32"}}},
			"p0c": {Name: "p0c", Kind: "veth", Peer: "p0a", Down: true},
		}
	}
	second := veth(0)
	second["k1"] = &Link{Name: "k1", Kind: "vxlan", MTU: 1300, VXLAN: &VXLAN{ID: 30, Local: "192.0.2.4", Remote: "192.0.2.9", Dev: "p0a", TTL: 64},
		Addrs: []*Addr{{CIDR: "10.167.0.4/24"}, {CIDR: "fd00:a7:9::2/128"}}}
	steps := []*Config{{Protocol: 200, Links: veth(1000)}, {Protocol: 200, Links: second}}
	r := kernelRunner(t, nil)
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range steps {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
	}
	if got := steps[1].Links["k1"].MTU; got != 0 {
		t.Errorf("k1's MTU %d, want it left out (0)", got)
	}
}
