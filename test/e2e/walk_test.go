package e2e

import (
	"flag"
	"testing"

	"github.com/netreconcile/netreconcile/test/walk"
)

// The walk of test/walk inside the guest, whose kernel has what the host
// lacks (dummy, ipvlan, ipip, ip6tnl, FoU, kernel WireGuard): the generator
// detects it and makes every kind it can. Flags (pass them with VMFLAGS):
// -walk.seed, -walk.steps, -walk.duration, -walk.defects, -walk.shrink.
// Every step's round trip covers show --all too, over someone else's
// objects of every kind the guest has (walk.KindForeign).
var (
	walkSeed     = flag.Int64("walk.seed", guestSeed, "seed of the walk (0: random, printed)")
	walkSteps    = flag.Int("walk.steps", 16, "steps in all (TCG is slow, 10 to 20 s a step beside make test's other lane: the host walks further, make soak-guest 2,000 steps)")
	walkDuration = flag.Duration("walk.duration", 0, "soak: walk until this much time has passed")
	walkDefects  = flag.String("walk.defects", "", "known-defect switches to turn on")
	walkKeep     = flag.Bool("walk.keepgoing", false, "soak: after a failure, walk on with the next seed")
	walkShrink   = flag.Int("walk.shrink", 25, "replays the shrinker may make after a failure (each replays the walk under TCG)")
)

// guestSeed is the seed `make test` walks in the guest (its kinds make
// other configurations than the host's seed, walk.TestSeed): fixed, so a
// failure in CI is the same failure anywhere; -walk.seed=0 walks a random one.
const guestSeed = 22

func TestWalkVM(t *testing.T) {
	requireModules(t, "dummy", "ipvlan", "ipip", "ip6_tunnel", "fou", "fou6", "wireguard")
	walk.RunWalks(t, walk.WalkFlags{Seed: *walkSeed, Steps: *walkSteps, Length: 200, Duration: *walkDuration, Defects: *walkDefects, ShrinkTrials: *walkShrink, KeepGoing: *walkKeep, ShowAll: true})
}
