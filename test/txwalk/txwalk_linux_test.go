package txwalk

import (
	"cmp"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
	"github.com/netreconcile/netreconcile/test/walk"
)

// The short walk of `make test` and the long one of `make soak`. Flags (or
// the environment, which make passes on): -txwalk.seeds / TXWALK_SEEDS (a
// list: make test walks TestSeeds; 0: random seeds, printed, as make soak
// does), -txwalk.steps / TXWALK_STEPS (steps of one walk, a fresh namespace
// each), -txwalk.walks / TXWALK_WALKS (with random seeds), -txwalk.duration
// / TXWALK_DURATION (a soak: walks until this much time passed),
// -txwalk.keepgoing / TXWALK_KEEPGOING=1 (a soak lists every failure),
// -txwalk.shrink / TXWALK_SHRINK_TRIALS, -txwalk.mode / TXWALK_MODE (every
// walk in this mode, as Mode.String prints it), -txwalk.adopt / TXWALK_ADOPT=1
// (versions adopt foreign objects: a known defect).
var (
	flagSeeds    = flag.String("txwalk.seeds", envOr("TXWALK_SEEDS", TestSeeds), "seeds to walk, comma-separated (0: random)")
	flagSteps    = flag.Int("txwalk.steps", envInt("TXWALK_STEPS", TestSteps), "steps of one walk")
	flagWalks    = flag.Int("txwalk.walks", envInt("TXWALK_WALKS", 0), "walks with random seeds (0: one per seed given)")
	flagDuration = flag.Duration("txwalk.duration", envDuration("TXWALK_DURATION"), "soak: walk until this much time has passed")
	flagKeep     = flag.Bool("txwalk.keepgoing", os.Getenv("TXWALK_KEEPGOING") == "1", "soak: after a failure, report it and walk on")
	flagShrink   = flag.Int("txwalk.shrink", envInt("TXWALK_SHRINK_TRIALS", 0), "replays the shrinker may make (0: 60)")
	flagMode     = flag.String("txwalk.mode", os.Getenv("TXWALK_MODE"), "run every walk in this mode (root/name, service-user/exec…) instead of the one the seed draws")
	flagAdopt    = flag.Bool("txwalk.adopt", os.Getenv("TXWALK_ADOPT") == "1", "let versions adopt foreign objects")
)

// TestSeeds are the seeds `make test` walks, TestSteps steps each: fixed,
// so that a failure there is the same failure on a developer's machine.
// Walked by default, seed i runs in testModes[i], so that the short walk
// covers both users and every --netns form.
const (
	TestSeeds = "1,2,3,4,5,6"
	TestSteps = 14
)

var testModes = []Mode{
	{Form: formName}, {Form: formRunPath}, {Form: formProc}, {Form: formProcAno}, {Form: formExec},
	{Service: true, Form: formExec},
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

func envDuration(k string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(k))
	return d
}

// TestTxWalk runs the transaction walk.
func TestTxWalk(t *testing.T) {
	nettest.RequireRoot(t)
	for _, tool := range []string{"nft", "unshare", "setpriv"} {
		nettest.RequireTool(t, tool)
	}
	u := nettest.NewServiceUser(t)
	bin := filepath.Join(t.TempDir(), "netreconcile")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "-ldflags", "-X github.com/netreconcile/netreconcile/internal/cli.serviceUser="+u.Name,
		"github.com/netreconcile/netreconcile/cmd/netreconcile")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(bin))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The walk's namespaces are tx-…, apart from test/walk's.
	walk.NSPrefix = cmp.Or(os.Getenv("TXWALK_NETNS_PREFIX"), "tx")
	caps, err := walk.Detect()
	if err != nil {
		t.Fatal(err)
	}
	var seeds []int64
	for _, s := range strings.Split(*flagSeeds, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatalf("-txwalk.seeds: %v", err)
		}
		seeds = append(seeds, n)
	}
	random := len(seeds) == 1 && seeds[0] == 0
	if random {
		src := rand.New(rand.NewSource(time.Now().UnixNano()))
		seeds = nil
		for i := 0; i < max(*flagWalks, 1); i++ {
			seeds = append(seeds, src.Int63()&0x7fffffffffff)
		}
	}
	start := time.Now()
	var steps, checks, kills, walks, inForce, held int
	var failed, used []string
	var lat []time.Duration
	modes := map[string]int{}
	for i := 0; ; i++ {
		var seed int64
		switch {
		case i < len(seeds):
			seed = seeds[i]
		case random && *flagDuration > 0:
			seed = rand.Int63() & 0x7fffffffffff
		default:
			seed = -1
		}
		if seed < 0 || *flagDuration > 0 && time.Since(start) > *flagDuration {
			break
		}
		dir, err := os.MkdirTemp("", "nrtxwalk-")
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Seed: seed, Steps: *flagSteps, Bin: bin, User: u, Caps: caps, Adopt: *flagAdopt, Dir: dir, ShrinkTrials: *flagShrink, Logf: t.Logf}
		switch {
		case *flagMode != "":
			m, err := parseMode(*flagMode)
			if err != nil {
				t.Fatal(err)
			}
			opts.Mode = &m
		case *flagSeeds == TestSeeds:
			opts.Mode = &testModes[i%len(testModes)]
		}
		rep, err := Walk(opts)
		if err != nil {
			t.Fatalf("txwalk seed %d: %v", seed, err)
		}
		walks++
		steps += rep.Steps
		checks += rep.Checks
		kills += rep.Kills
		inForce += rep.InForce
		held += rep.Held
		lat = append(lat, rep.Latencies...)
		modes[rep.Mode.String()]++
		used = append(used, strconv.FormatInt(seed, 10))
		if rep.Failure != nil {
			msg := fmt.Sprintf("txwalk seed %d (%s) failed at step %d: %v\nshrunk sequence (reproduce with TXWALK_SEEDS=%d TXWALK_STEPS=%d TXWALK_MODE=%s):\n%s",
				seed, rep.Mode, rep.Failure.Step+1, rep.Failure, seed, *flagSteps, rep.Mode, rep.Shrunk)
			if !*flagKeep {
				t.Fatal(msg)
			}
			t.Error(msg)
			failed = append(failed, fmt.Sprintf("%d@%d", seed, rep.Failure.Step+1))
			continue
		}
		_ = os.RemoveAll(dir)
	}
	var worst time.Duration
	for _, l := range lat {
		worst = max(worst, l)
	}
	t.Logf("txwalk: %d walks (seeds %s; modes %v), %d steps, %d checks, %d commands killed, %d rollbacks at the deadline (the latest %s after it), "+
		"%d confirms of files the daemon applied in the window, %d transactions begun before the daemon's pass after a confirm, %s, %d failures %s",
		walks, strings.Join(used, " "), modes, steps, checks, kills, len(lat), worst.Round(time.Millisecond), inForce, held,
		time.Since(start).Round(time.Second), len(failed), strings.Join(failed, " "))
}

// parseMode reads a Mode as Mode.String prints it.
func parseMode(s string) (Mode, error) {
	for _, m := range []Mode{{Form: formName}, {Form: formRunPath}, {Form: formProc}, {Form: formProcAno}, {Form: formExec}, {Service: true, Form: formExec}} {
		if m.String() == s {
			return m, nil
		}
	}
	return Mode{}, fmt.Errorf("-txwalk.mode %q: want root/name, root/run-path, root/proc, root/proc-unnamed, root/exec or service-user/exec", s)
}
