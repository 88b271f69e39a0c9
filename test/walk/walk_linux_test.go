package walk

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// The bounded walk of `make test` and the long one of `make soak`. Flags (or
// the environment, which make passes on): -walk.seed / WALK_SEED (default
// TestSeed, so that `make test` and CI walk the same, reproducible path; 0:
// random, printed, as `make soak` does), -walk.steps / WALK_STEPS, -walk.duration / WALK_DURATION (a soak:
// walk after walk until the steps or the time are used up), -walk.defects /
// WALK_DEFECTS (known-defect switches to turn on, see Defects),
// -walk.keepgoing / WALK_KEEPGOING=1 (a soak lists every failure, not the first),
// -walk.shrink / WALK_SHRINK_TRIALS (the shrinker's replays).
var (
	flagSeed     = flag.Int64("walk.seed", envInt("WALK_SEED", TestSeed), "seed of the walk (0: random)")
	flagSteps    = flag.Int("walk.steps", int(envInt("WALK_STEPS", defaultSteps())), "steps in all")
	flagWalkLen  = flag.Int("walk.length", int(envInt("WALK_LENGTH", 100)), "steps of one walk (a fresh namespace each)")
	flagDuration = flag.Duration("walk.duration", envDuration("WALK_DURATION"), "soak: walk until this much time has passed (0: by steps)")
	flagDefects  = flag.String("walk.defects", os.Getenv("WALK_DEFECTS"), "known-defect switches to turn on (comma-separated, or all)")
	flagKeep     = flag.Bool("walk.keepgoing", os.Getenv("WALK_KEEPGOING") == "1", "soak: after a failure, report it and walk on with the next seed")
	flagShrink   = flag.Int("walk.shrink", int(envInt("WALK_SHRINK_TRIALS", 0)), "replays the shrinker may make (0: its default, 150); a soak on a busy machine affords fewer")
)

// defaultSteps is 200 for `make test-walk` (NETRECONCILE_WALK=1), and a
// 20-step smoke walk for a plain `go test ./...`, which runs everything
// else too.
func defaultSteps() int64 {
	if os.Getenv("NETRECONCILE_WALK") == "1" {
		return 200
	}
	return 20
}

func envInt(k string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(k), 10, 64); err == nil {
		return v
	}
	return def
}

func envDuration(k string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(k))
	return d
}

func TestWalk(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	// Every step's round trip covers show --all too: its output, the
	// foreign objects the walk made as comments, is a file that plans
	// nothing.
	f := WalkFlags{Seed: *flagSeed, Steps: *flagSteps, Length: *flagWalkLen, Duration: *flagDuration, Defects: *flagDefects, KeepGoing: *flagKeep, ShrinkTrials: *flagShrink, ShowAll: true}
	// On the fixed seed and the steps of `make test-walk`, the schema's
	// reach on this kernel too (TestSchemaReach has the generator's part);
	// the 20-step smoke walk of a plain go test is too short for it.
	fixed := f.Seed == TestSeed && f.Duration == 0 && f.Steps >= 200
	if fixed {
		f.Reach, f.Proven = NewReach(), map[string]bool{}
	}
	RunWalks(t, f)
	if fixed && !t.Failed() {
		checkWalkReach(t, f.Reach, f.Proven)
	}
}

// checkWalkReach fails for a key the walk's files held that show never
// printed, and for a key of oracleChecks the walk's files held whose
// comparison proveOracle never showed (unless reachExceptions says why).
func checkWalkReach(t *testing.T, r Reach, proven map[string]bool) {
	t.Helper()
	for _, k := range sortedKeys(r) {
		x := r[k]
		if x.Set == 0 {
			continue
		}
		if reason, ok := reachExceptions[k+" shown"]; x.Shown == 0 && !ok {
			t.Errorf("%s: the walk's files held it %d times, show never printed it", k, x.Set)
		} else if x.Shown > 0 && ok {
			t.Errorf("%s: show printed it, yet reachExceptions says it does not (%s): drop the exception", k, reason)
		}
		if _, checked := oracleChecks[k]; checked && !proven[k] {
			if _, ok := reachExceptions[k+" proven"]; !ok {
				t.Errorf("%s: the walk's files held it %d times, and the oracle was never shown to see it change (proveOracle)", k, x.Set)
			}
		}
	}
	if t.Failed() {
		t.Logf("the walk's counts:\n%s", r)
	}
}
