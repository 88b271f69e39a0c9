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
	r := kernelRunner(t, nil)
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range steps {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
		if r.refused {
			t.Fatalf("step %d: refused", i+1)
		}
	}
	if got := steps[2].Links["m0"].MTU; got != 1280 {
		t.Errorf("m0's MTU %d, want 1280: b2's, which the kernel kept", got)
	}
}
