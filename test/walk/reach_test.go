package walk

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// generatorReach counts what walks of the generator over every kind do to
// each key of the schema: walks walks of steps steps from seed's sequence.
func generatorReach(t *testing.T, seed int64, walks, steps int) Reach {
	t.Helper()
	seeds := rand.New(rand.NewSource(seed))
	var ss []int64
	for w := 0; w < walks; w++ {
		ss = append(ss, seeds.Int63())
	}
	// The walks are independent: on every core, each its own Reach,
	// added up at the end.
	d := mustDefects(t)
	dirs := make([]string, walks)
	for w := range dirs {
		dirs[w] = t.TempDir()
	}
	reaches := make([]Reach, walks)
	errs := make([]error, walks)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range next {
				reaches[w], errs[w] = walkReach(ss[w], d, dirs[w], steps)
			}
		}()
	}
	for w := range walks {
		next <- w
	}
	close(next)
	wg.Wait()
	r := NewReach()
	for w, x := range reaches {
		if errs[w] != nil {
			t.Fatal(errs[w])
		}
		for k, v := range x {
			y := r[k]
			if y == nil {
				y = &KeyReach{}
				r[k] = y
			}
			y.Set, y.Changed, y.Removed = y.Set+v.Set, y.Changed+v.Changed, y.Removed+v.Removed
		}
	}
	return r
}

// walkReach is what one walk of the generator from seed does to each key.
func walkReach(seed int64, d Defects, dir string, steps int) (Reach, error) {
	r := NewReach()
	g, err := NewGen(rand.New(rand.NewSource(seed)), allCaps, d, dir)
	if err != nil {
		return nil, err
	}
	g.W = rand.New(rand.NewSource(seed ^ WordsSeed))
	g.K = rand.New(rand.NewSource(seed ^ KeysSeed))
	g.P = rand.New(rand.NewSource(seed ^ PoolAddrsSeed))
	c := g.Initial()
	var docs docCache
	prev, err := docs.fileDoc(c)
	if err != nil {
		return nil, err
	}
	r.Diff(nil, prev)
	for s := 1; s < steps; s++ {
		c, _ = g.Next(c)
		next, err := docs.fileDoc(c)
		if err != nil {
			return nil, err
		}
		r.Diff(prev, next)
		prev = next
	}
	return r, nil
}

func mustDefects(t *testing.T) Defects {
	d, err := ParseDefects("")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// reachSeed, reachWalks and reachSteps are the generator's walks the
// schema-reach test counts (fixed: the counts are a fact of the tree). 80
// walks: the rarest events (a key of a kind the walk makes a few of,
// changed in place, one of some thirty in-place mutations) happen a few
// times in 40, and a change to the generator then moved some to none.
const (
	reachSeed  = TestSeed
	reachWalks = 100
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
	// Every kernel key the walk declares, by name: set, changed and
	// removed, globally and on links.
	for path, keys := range map[string]map[string][]string{"sysctls.*": globalSysctls(), "links.*.sysctls.*": linkSysctls()} {
		for _, name := range sortedKeys(keys) {
			x := r[NamedKey(path, name)]
			if x == nil || x.Set == 0 || x.Changed == 0 || x.Removed == 0 {
				t.Errorf("%s: the generator does not set, change and remove it (in %d walks of %d steps): %+v", NamedKey(path, name), reachWalks, reachSteps, x)
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
		var names []string
		for nk := range r {
			if name, ok := strings.CutPrefix(nk, k+" "); ok {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			x := r[NamedKey(k, name)]
			fmt.Fprintf(&b, "| `%s` `%s` | %d/%d/%d | %s | |\n", k, name, x.Set, x.Changed, x.Removed, or)
		}
	}
	fmt.Print(b.String())
}
