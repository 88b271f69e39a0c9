package walk

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"

	"go.yaml.in/yaml/v3"
)

// generatorReach counts what walks of the generator over every kind do to
// each key of the schema: walks walks of steps steps from seed's sequence.
func generatorReach(t *testing.T, seed int64, walks, steps int) Reach {
	t.Helper()
	r := NewReach()
	seeds := rand.New(rand.NewSource(seed))
	for w := 0; w < walks; w++ {
		g, err := NewGen(rand.New(rand.NewSource(seeds.Int63())), allCaps, mustDefects(t), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		c := g.Initial()
		var prev = mustDoc(t, c)
		r.Diff(nil, prev)
		for s := 1; s < steps; s++ {
			c, _ = g.Next(c)
			next := mustDoc(t, c)
			r.Diff(prev, next)
			prev = next
		}
	}
	return r
}

func mustDefects(t *testing.T) Defects {
	d, err := ParseDefects("")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustDoc(t *testing.T, c *Config) *yaml.Node {
	t.Helper()
	d, err := fileDoc(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// reachSeed, reachWalks and reachSteps are the generator's walks the
// schema-reach test counts (fixed: the counts are a fact of the tree).
const (
	reachSeed  = TestSeed
	reachWalks = 40
	reachSteps = 200
)

// TestSchemaReach holds every leaf key of the configuration schema
// (desired.SchemaKeys, the decoder's types, as docs/config.md is checked
// against) to the walk: the generator sets, changes and removes it
// (reachExceptions lists the events a key cannot have, with the reason);
// the oracle compares it with an independent reader (oracleChecks, or
// oracleExceptions with the reason; TestWalkSchemaReach shows each
// comparison on the real kernel); show prints it (TestWalkSchemaReach).
// A key added to the schema fails here until it is covered or excepted.
func TestSchemaReach(t *testing.T) {
	schema := map[string]bool{}
	for _, k := range desired.SchemaKeys() {
		schema[k] = true
		_, checked := oracleChecks[k]
		if reason, ok := oracleExceptions[k]; ok == checked || ok && reason == "" {
			t.Errorf("%s: the oracle's comparison: want exactly one of oracleChecks and oracleExceptions (with a reason); checks %v, exception %q", k, checked, reason)
		}
	}
	for k := range oracleChecks {
		if !schema[k] {
			t.Errorf("oracleChecks: %s is not a key of the schema", k)
		}
	}
	for k := range oracleExceptions {
		if !schema[k] {
			t.Errorf("oracleExceptions: %s is not a key of the schema", k)
		}
	}
	for k, reason := range reachExceptions {
		key, event, _ := strings.Cut(k, " ")
		if !schema[key] || !slices.Contains(reachEvents, event) || reason == "" {
			t.Errorf("reachExceptions: %q (%q): want a key of the schema, one of %v and a reason", k, reason, reachEvents)
		}
	}
	r := generatorReach(t, reachSeed, reachWalks, reachSteps)
	for _, k := range desired.SchemaKeys() {
		x := r[k]
		for _, ev := range []struct {
			name string
			n    int
		}{{"set", x.Set}, {"changed", x.Changed}, {"removed", x.Removed}} {
			reason, excepted := reachExceptions[k+" "+ev.name]
			switch {
			case ev.n == 0 && !excepted:
				t.Errorf("%s: the generator never %s it (in %d walks of %d steps); generate it, or list it in reachExceptions with the reason", k, map[string]string{"set": "sets", "changed": "changes", "removed": "removes"}[ev.name], reachWalks, reachSteps)
			case ev.n > 0 && excepted:
				t.Errorf("%s: the generator %s it %d times, yet reachExceptions says it cannot (%s): drop the exception", k, ev.name, ev.n, reason)
			}
		}
	}
	if t.Failed() {
		t.Logf("the generator's counts:\n%s", r)
	}
}

// TestSchemaReachTable prints the reach as a Markdown table (WALK_REACH_TABLE=1):
// each key, what the generator did to it, the oracle's reader, and the
// exceptions listed for it.
func TestSchemaReachTable(t *testing.T) {
	if os.Getenv("WALK_REACH_TABLE") != "1" {
		t.Skip("WALK_REACH_TABLE=1 prints the table")
	}
	r := generatorReach(t, reachSeed, reachWalks, reachSteps)
	var b strings.Builder
	b.WriteString("| key | generator set/changed/removed | oracle | exceptions |\n|---|---|---|---|\n")
	for _, k := range desired.SchemaKeys() {
		x := r[k]
		or := oracleChecks[k].by
		if or == "" {
			or = "none: " + oracleExceptions[k]
		}
		var ex []string
		for _, ev := range reachEvents {
			if reason, ok := reachExceptions[k+" "+ev]; ok {
				ex = append(ex, ev+": "+reason)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %d/%d/%d | %s | %s |\n", k, x.Set, x.Changed, x.Removed, or, strings.Join(ex, "; "))
	}
	fmt.Print(b.String())
}
