package integration

import (
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
	"github.com/netreconcile/netreconcile/test/nftcorpus"
)

// TestNftDifferential runs nftables rules through netreconcile and through
// `nft -f`, each in a fresh namespace, and requires for every rule the same
// kernel rule (bytecode and words) or a refusal by both: the corpus
// (test/nftcorpus/corpus.txt) and rules drawn by its generator. make test
// runs a sample (NFTDIFF_SAMPLE corpus cases, NFTDIFF_GENERATED generated
// ones); make test-nftdiff runs the whole corpus (NETRECONCILE_NFTDIFF=full)
// and more generated rules. The seed is printed; NFTDIFF_SEED replays it.
func TestNftDifferential(t *testing.T) {
	nettest.RequireTool(t, "nft")
	seed := time.Now().UnixNano()
	if s := os.Getenv("NFTDIFF_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	sample, generated := envInt("NFTDIFF_SAMPLE", 120), envInt("NFTDIFF_GENERATED", 60)
	corpus := nftcorpus.Corpus()
	if os.Getenv("NETRECONCILE_NFTDIFF") == "full" {
		sample, generated = len(corpus), envInt("NFTDIFF_GENERATED", 1000)
	}
	r := rand.New(rand.NewSource(seed))
	cases := nftcorpus.Sample(corpus, sample, r)
	g := &nftcorpus.Gen{R: rand.New(rand.NewSource(seed))}
	cases = append(cases, g.Cases(generated)...)
	results := nftcorpus.Run(t, cases)
	counts := nftcorpus.Tally(results)
	t.Logf("seed %d (NFTDIFF_SEED): %s", seed, counts)
	for _, res := range results {
		switch res.Outcome {
		case nftcorpus.Differ, nftcorpus.OnlyWeAccept, nftcorpus.OnlyNftTakes:
			t.Errorf("%s [%s]: %s\n%s", res.Case, res.Class, res.Outcome, res.Detail)
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
