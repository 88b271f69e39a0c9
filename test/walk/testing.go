package walk

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSeed is the seed `make test` walks by default, on the host and in the
// guest: a failure in CI is then the same failure on a developer's machine,
// and a change that breaks a path the seed walks fails every run. Random
// seeds are for `make soak` (SOAK_SEED=0), which explores.
const TestSeed = 90934393032559

// WalkFlags are the knobs of RunWalks.
type WalkFlags struct {
	Seed     int64
	Steps    int
	Length   int
	Duration time.Duration
	Defects  string
	// ShrinkTrials bounds the shrinker's replays (0: its default). The
	// guest, under TCG, affords fewer.
	ShrinkTrials int
	// KeepGoing makes a soak go on with the next seed after a failure
	// (reported, its shrunk sequence kept) instead of stopping at the first:
	// one long run then lists every failure it met. The test still fails.
	KeepGoing bool
	// ShowAll adds show --all to each step's round trip.
	ShowAll bool
	// Reach and Proven, when set, collect over every walk what the files
	// did to each schema key and show printed, and the keys whose oracle
	// comparison was shown (Options).
	Reach  Reach
	Proven map[string]bool
}

// RunWalks runs walks until f.Steps steps are made (or, with f.Duration,
// until that much time has passed), each walk at most f.Length steps from a
// fresh namespace, and fails t with the seed and the shrunk sequence of the
// first failure. The host test and the VM's e2e test share it.
func RunWalks(t *testing.T, f WalkFlags) {
	t.Helper()
	d, err := ParseDefects(f.Defects)
	if err != nil {
		t.Fatal(err)
	}
	caps, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	seed := f.Seed
	if seed == 0 {
		seed = time.Now().UnixNano() & 0x7fffffffffff
	}
	if f.Length <= 0 {
		f.Length = 200
	}
	t.Logf("walk: seed %d (reproduce with WALK_SEED=%d or -walk.seed=%d), %s, defect switches on: %s", seed, seed, seed, caps, d)
	start := time.Now()
	seeds := rand.New(rand.NewSource(seed))
	var steps, checks, walks int
	var used, failed []string
	for s := seed; ; s = seeds.Int63() & 0x7fffffffffff {
		if f.Duration > 0 {
			if time.Since(start) >= f.Duration {
				break
			}
		} else if steps >= f.Steps {
			break
		}
		n := f.Length
		if f.Duration == 0 && f.Steps-steps < n {
			n = f.Steps - steps
		}
		dir, err := os.MkdirTemp("", "nrwalk-")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Walk(Options{Seed: s, Steps: n, Caps: caps, Defects: d, Dir: dir, ShrinkTrials: f.ShrinkTrials, Logf: t.Logf, ShowAll: f.ShowAll, Reach: f.Reach, Proven: f.Proven})
		if err != nil {
			t.Fatalf("walk seed %d: %v", s, err)
		}
		walks++
		steps += rep.Steps
		checks += rep.Checks
		used = append(used, strconv.FormatInt(s, 10))
		if rep.Failure != nil {
			msg := fmt.Sprintf("walk seed %d failed at step %d: %v\nshrunk sequence in %s:\n%s", s, rep.Failure.Step+1, rep.Failure, rep.Repro, listRepro(rep.Repro))
			if !f.KeepGoing {
				t.Logf("walk: %d walks, %d steps, %d checks before the failure", walks, steps, checks)
				t.Fatal(msg)
			}
			t.Error(msg)
			failed = append(failed, fmt.Sprintf("%d@%d", s, rep.Failure.Step+1))
			continue
		}
		_ = os.RemoveAll(dir)
	}
	t.Logf("walk: %d walks (seeds %s), %d steps, %d checks, %s, %d failures %s", walks, strings.Join(used, " "), steps, checks, time.Since(start).Round(time.Second), len(failed), strings.Join(failed, " "))
}

// listRepro prints the files of a shrunk sequence.
func listRepro(dir string) string {
	var b strings.Builder
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, pat := range []string{"*/walk.yaml", "*/conf.d/*.yaml", "*/side/*"} {
		sub, _ := filepath.Glob(filepath.Join(dir, pat))
		names = append(names, sub...)
	}
	for _, n := range names {
		if fi, err := os.Stat(n); err != nil || fi.IsDir() {
			continue
		}
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		b.WriteString("==> " + n + " <==\n" + string(data) + "\n")
	}
	return b.String()
}
