package txwalk

import (
	"testing"

	"github.com/netreconcile/netreconcile/test/walk"
)

// TestDraw shows what a seed draws, without running it.
func TestDraw(t *testing.T) {
	seq, err := Draw(&Options{Seed: 1, Steps: 40, Caps: walk.Caps{}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mode %s layout %s", seq.Mode, seq.Layout)
	for i, s := range seq.Steps {
		t.Logf("%2d %s", i+1, s)
	}
	for _, v := range seq.Versions[:4] {
		t.Logf("v%d:\n%s%v", v.N, v.Main(), v.Frags)
	}
}

// TestDrawInvalidCandidates: the seeds make test walks begin with an
// invalid --candidate at least once (whose error must name the candidate's
// own position: transaction walk finding 124).
func TestDrawInvalidCandidates(t *testing.T) {
	n := 0
	for _, seed := range []int64{1, 2, 3, 4, 5, 6} {
		seq, err := Draw(&Options{Seed: seed, Steps: TestSteps, Caps: walk.Caps{}, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seq.Steps {
			if s.Op == opBadCand {
				n++
			}
		}
	}
	if n == 0 {
		t.Error("no seed of make test begins with an invalid candidate")
	}
	t.Logf("%d begins with an invalid candidate in make test's seeds", n)
}
