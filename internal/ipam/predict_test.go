package ipam

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPredictIsWhatTheChangesDo holds Predict to the real thing: on
// generated registries (pools of a few blocks, some addresses held, some
// cooling), a pass that gives some holders' addresses back and allocates for
// others is predicted, then done with Release and Allocate on a copy of the
// files. The prediction must fail exactly where the changes fail, at the same
// need and with the same error, and must leave the files as they were.
func TestPredictIsWhatTheChangesDo(t *testing.T) {
	ctx := context.Background()
	failures, withFiles := 0, 0
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 17))
		pools := []Pool{
			testPool("a", rng.IntN(2), time.Duration(rng.IntN(2))*time.Minute, v4("10.0.0.0/30")),
			testPool("b", 1, 0, dual("10.1.0.0/30", "fd00::/126")),
		}
		if rng.IntN(3) == 0 {
			pools[0].AllowedBlocks = []IndexRange{{First: 0, Last: 0}}
		}
		dir := t.TempDir()
		clock := newFakeClock()
		r := openTest(t, dir, clock, pools...)
		owners := []string{"o0", "o1", "o2", "o3", "o4", "o5"}
		for range rng.IntN(6) {
			p := pools[rng.IntN(2)].Name
			_, _ = r.Allocate(ctx, p, owners[rng.IntN(len(owners))], "")
			if rng.IntN(3) == 0 {
				_, _, _ = r.Release(ctx, p, owners[rng.IntN(len(owners))], "")
			}
		}
		held, err := r.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var giveBack []Allocation
		for _, a := range held {
			if rng.IntN(2) == 0 {
				giveBack = append(giveBack, a)
			}
		}
		var needs []Need
		for range rng.IntN(5) {
			needs = append(needs, Need{Pool: pools[rng.IntN(2)].Name, Owner: owners[rng.IntN(len(owners))]})
		}
		before := readAll(t, dir)
		if before != "" {
			withFiles++
		}
		gotAt, gotErr := r.Predict(ctx, giveBack, needs)
		if after := readAll(t, dir); after != before {
			t.Fatalf("seed %d: Predict changed the registry files", seed)
		}

		real := openTest(t, copyDir(t, dir), clock, pools...)
		wantAt, wantErr := -1, error(nil)
		for _, a := range giveBack {
			if _, _, err := real.Release(ctx, a.Pool, a.Owner, a.Iface); err != nil {
				t.Fatalf("seed %d: release: %v", seed, err)
			}
		}
		for i, n := range needs {
			if _, err := real.Allocate(ctx, n.Pool, n.Owner, n.Iface); err != nil {
				wantAt, wantErr = i, err
				break
			}
		}
		if gotAt != wantAt || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("seed %d: held %v, give back %v, needs %v:\nPredict: %d %v\nchanges: %d %v",
				seed, held, giveBack, needs, gotAt, gotErr, wantAt, wantErr)
		}
		if wantErr != nil {
			failures++
		}
	}
	// The generator must reach both outcomes, and registries with
	// something held, or the test proves nothing.
	if failures == 0 || failures == 400 || withFiles < 200 {
		t.Errorf("%d of 400 passes failed, %d had registry files: the generator must make both outcomes and mostly held registries", failures, withFiles)
	}
}

// readAll is every registry file under dir, by path.
func readAll(t *testing.T, dir string) string {
	t.Helper()
	var out string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || filepath.Ext(path) != ".registry" {
			return err
		}
		b, err := os.ReadFile(path)
		out += path + "\n" + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(to, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return to
}
