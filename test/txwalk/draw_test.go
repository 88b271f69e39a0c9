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
