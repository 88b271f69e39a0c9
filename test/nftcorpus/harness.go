package nftcorpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// Case is one rule to try: a chain of a family's standard table, and the
// rule's text.
type Case struct {
	Family, Chain, Rule string
	// Class names the syntax class (corpus), "generated", or the test
	// file of nftables' suite.
	Class string
	// Table is the table the rule goes in; nil is the family's standard
	// table.
	Table *Table
	// Source is where the rule was read (a test file's name and line),
	// and Expect what that file says nft makes of it ("ok" or "fail"):
	// what nftables' suite expected of its own version of nft.
	Source, Expect string
	// Listing is how the suite's file says its nft lists the rule.
	Listing string
}

func (c Case) String() string { return fmt.Sprintf("%s %s: %s", c.Family, c.Chain, c.Rule) }

// Outcome is what became of a case.
type Outcome int

// Result kinds other than a rule's.
const (
	KindDecl  = "declaration"
	KindElems = "elements"
)

// Outcomes.
const (
	Identical     Outcome = iota // both took it, the kernel holds the same rule
	RefusedByBoth                // both refused it
	Differ                       // both took it, the kernel's rules differ
	OnlyWeAccept                 // nft refused it, netreconcile wrote it
	OnlyNftTakes                 // nft took it, netreconcile refused it
)

var outcomeNames = []string{"identical", "refused by both", "differ", "only netreconcile accepts", "only nft accepts"}

func (o Outcome) String() string { return outcomeNames[o] }

// Result is a case's outcome, with the two sides' kernel rules when they
// differ, or netreconcile's refusal.
type Result struct {
	Case
	Outcome Outcome
	Detail  string
	// Kind is "" for a rule's result; KindDecl for a declaration's of a
	// table of nftables' suite (Rule is nft's words for it), KindElems
	// for a line of set elements (Rule is "@SET ELEMENTS").
	Kind string
	// Documented, on an outcome other than identical or refused by
	// both, is the place in docs/config.md that says netreconcile
	// refuses it by design.
	Documented string
	// Listed is nft's listing of an identical rule (nft list, without
	// its handle).
	Listed string
}

// Counts tallies results by outcome.
type Counts map[Outcome]int

func (c Counts) String() string {
	total := 0
	for _, n := range c {
		total += n
	}
	return fmt.Sprintf("tried %d: identical %d, refused by both %d, differ %d, only netreconcile accepts %d, only nft accepts %d",
		total, c[Identical], c[RefusedByBoth], c[Differ], c[OnlyWeAccept], c[OnlyNftTakes])
}

// Tally counts results.
func Tally(rs []Result) Counts {
	c := Counts{}
	for _, r := range rs {
		c[r.Outcome]++
	}
	return c
}

// Run runs cases through netreconcile and through nft -f, each table in
// two fresh namespaces, and returns each case's outcome: the standard
// tables first, in the order of Families, then the others in the order
// of their first case.
func Run(t testing.TB, cases []Case) []Result {
	t.Helper()
	byTable := map[*Table][]Case{}
	var order []*Table
	for _, fam := range Families {
		order = append(order, Standard(fam))
	}
	for _, c := range cases {
		tab := tableOf(c)
		if _, ok := byTable[tab]; !ok && !slices.Contains(order, tab) {
			order = append(order, tab)
		}
		byTable[tab] = append(byTable[tab], c)
	}
	var out []Result
	for _, tab := range order {
		if cs := byTable[tab]; len(cs) > 0 {
			out = append(out, runTable(t, tab, cs)...)
		}
	}
	return out
}

// perChain lays cases out by chain, each with its index in its chain, in
// the order a file lists them (chain by chain): the kernel judges some
// rules by those before them (a jump that closes a loop is refused, the
// rule that was there first is not), so both sides add them in one order.
func perChain(tab *Table, cases []Case, take func(int) bool) ([]ChainRule, map[string][]string, map[ChainRule]int) {
	var rules []ChainRule
	byChain := map[string][]string{}
	index := map[ChainRule]int{}
	for _, ch := range tab.Chains {
		for i, c := range cases {
			if c.Chain != ch.Name || !take(i) {
				continue
			}
			cr := ChainRule{Chain: c.Chain, Index: len(byChain[c.Chain]), Rule: c.Rule}
			byChain[c.Chain] = append(byChain[c.Chain], c.Rule)
			rules = append(rules, cr)
			index[cr] = i
		}
	}
	return rules, byChain, index
}

var placedRE = regexp.MustCompile(`^[^:]+:(\d+):\d+-\d+: Error: `)

// errNotRun says nft could not be run (not a refusal).
var errNotRun = errors.New("nft did not run")

// NftTakes runs a family's cases through nft -f, in their standard table,
// with nftF (which runs nft -f on each script in turn, in a namespace
// without tables, until one fails, and returns what the failing one
// printed, its index and a non-nil error), and reports which rules nft
// takes: the whole script, less the rules it refuses, until it takes what
// is left. A rule it refuses is one it placed its own error at, or the
// first the kernel refused (the kernel refuses every rule of a table after
// one that fails its validation), or one that makes nft fail alone (its
// assertions fail on some input: a run that fails without placing an
// error is split in halves). A split run judges its halves apart, and a
// rule taken in one may close a loop with a rule of the other: the rules
// taken go through again, together, until nft takes them in one run.
//
// nft's scanner keeps state from one command to the next in one run (nft
// 1.0.6: after `ct mark set meta mark dnat ip to 10.0.0.1`, `helper` is the
// keyword of `ct helper` in every later command, and `jump helper` a
// syntax error): a rule nft gives a syntax error is run alone, and refused
// only if nft refuses it then too; a rule it takes alone starts a run of
// its own from then on (alone).
//
// checkF runs nft -c -f on each script apart, in a namespace without
// tables, and reports which it took. The cases are of one table (that of
// the first), or of fam's standard table when there are none.
func NftTakes(fam string, cases []Case, nftF func(scripts []string) ([]byte, int, error), checkF func(scripts []string) ([]bool, error)) (took, alone []bool, _ error) {
	tab := Standard(fam)
	if len(cases) > 0 {
		tab = tableOf(cases[0])
	}
	took = make([]bool, len(cases))
	alone = make([]bool, len(cases))
	for i := range took {
		took[i] = true
	}
	runs := 0
	var failure error
	var refuse func(idx []int)
	refuse = func(idx []int) {
		for len(idx) > 0 && failure == nil {
			if runs++; runs > 5000 {
				failure = fmt.Errorf("nft -f: still refusing after %d runs", runs)
				return
			}
			rules, _, index := perChain(tab, cases, func(i int) bool { return slices.Contains(idx, i) && took[i] })
			scripts, linesOf := tab.Scripts(rules, func(cr ChainRule) bool { return alone[index[cr]] })
			out, failed, err := nftF(scripts)
			if err == nil {
				return
			}
			lines := linesOf[failed]
			firstRule := len(lines) + 1
			for n := range lines {
				firstRule = min(firstRule, n)
			}
			dropped := false
			kernel := -1
			var suspects []int
			for _, l := range strings.Split(string(out), "\n") {
				m := placedRE.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				n, _ := strconv.Atoi(m[1])
				if strings.Contains(l, "Error: Could not process rule: ") {
					if kernel < 0 || n < kernel {
						kernel = n
					}
					continue
				}
				cr, ok := lines[n]
				switch {
				case !ok:
				case strings.Contains(l, "Error: syntax error") && !alone[index[cr]] && n != firstRule:
					if !slices.Contains(suspects, index[cr]) {
						suspects = append(suspects, index[cr])
					}
				default:
					took[index[cr]] = false
					dropped = true
				}
			}
			if cr, ok := lines[kernel]; ok && kernel > 0 {
				took[index[cr]] = false
				dropped = true
			}
			suspects = slices.DeleteFunc(suspects, func(i int) bool { return !took[i] })
			if len(suspects) > 0 {
				runs++
				var checks []string
				for _, i := range suspects {
					s, _ := tab.Script([]ChainRule{{Chain: cases[i].Chain, Rule: cases[i].Rule}})
					checks = append(checks, s)
				}
				ok, err := checkF(checks)
				if err != nil {
					failure = err
					return
				}
				for k, i := range suspects {
					alone[i], took[i] = ok[k], ok[k]
				}
				dropped = true
			}
			idx = slices.DeleteFunc(idx, func(i int) bool { return !took[i] })
			switch {
			case dropped:
				continue
			case len(idx) == 1:
				took[idx[0]] = false
				return
			case len(idx) == 0:
				failure = fmt.Errorf("%w: nft -f refused the table %s:\n%s\n%s", errNotRun, tab.Label, out, strings.Join(scripts, ""))
				return
			}
			half := len(idx) / 2
			refuse(append([]int(nil), idx[:half]...))
			refuse(append([]int(nil), idx[half:]...))
			return
		}
	}
	for failure == nil {
		var idx []int
		for i := range cases {
			if took[i] {
				idx = append(idx, i)
			}
		}
		before := runs
		refuse(idx)
		// Done when nft took what is left in one run, or nothing is left
		// (every rule refused: no run at all).
		if runs-before <= 1 {
			break
		}
	}
	return took, alone, failure
}

// runTable runs a table's cases. A table of nftables' suite declares what
// its file declares, less what nft refuses (nftables' own test runner adds
// each declaration alone and goes on after a refusal); a declaration nft
// takes and netreconcile refuses is a result of its own (Decl), left out
// of both sides.
func runTable(t testing.TB, tab *Table, cases []Case) []Result {
	t.Helper()
	fam := tab.Family
	dir := t.TempDir()
	nftTook := make([]bool, len(cases))
	weTook := make([]bool, len(cases))
	weSaid := make([]string, len(cases))
	for i := range cases {
		nftTook[i], weTook[i] = true, true
	}

	// nft -f: the whole script, less the rules it refuses (NftTakes).
	nsN := nettest.NewNetNS(t)
	var out []Result
	if tab != Standard(fam) {
		bare := *tab
		bare.Decls = nil
		script, _ := bare.Script(nil)
		if msg, err := exec.Command("ip", "netns", "exec", nsN, "nft", "-c", "-f", nettest.WriteFile(t, dir, "bare.nft", script)).CombinedOutput(); err != nil {
			// nft refuses the file's chains: every rule is refused, and
			// netreconcile must refuse the table too.
			r := nettest.CLI(t, "validate", "-c", nettest.WriteFile(t, dir, "bare.yaml", bare.YAML(nil)))
			o := RefusedByBoth
			if r.Code == 0 {
				o = OnlyWeAccept
			}
			for _, c := range cases {
				out = append(out, Result{Case: c, Outcome: o, Detail: "the table's chains: nft: " + string(msg)})
			}
			return out
		}
		var scripts []string
		for _, d := range tab.Decls {
			one := bare
			one.Decls = []Decl{d}
			s, _ := one.Script(nil)
			scripts = append(scripts, s)
		}
		ok, err := checkInNS(nsN, dir, scripts)
		if err != nil {
			t.Fatal(err)
		}
		for k, d := range tab.Decls {
			if ok[k] {
				bare.Decls = append(bare.Decls, d)
			}
		}
		// netreconcile: validate the declarations alone, and leave out
		// those it refuses.
		for run := 0; run < 20; run++ {
			f := nettest.WriteFile(t, dir, fmt.Sprintf("decl%d.yaml", run), bare.YAML(nil))
			r := nettest.CLI(t, "validate", "-o", "json", "-c", f)
			if r.Code == 0 {
				break
			}
			errs, err := placedErrors(r)
			if err != nil {
				t.Fatalf("validate of the declarations of %s: %v", tab.Label, err)
			}
			kept := bare.Decls[:0:0]
			for _, d := range bare.Decls {
				prefix := fmt.Sprintf("nftables.%s %s.%s.%s", fam, TableName, d.Kind, d.Name)
				refused := ""
				for _, e := range errs {
					if e.Path == prefix || strings.HasPrefix(e.Path, prefix+".") {
						refused = e.Message
					}
				}
				if refused == "" {
					kept = append(kept, d)
					continue
				}
				out = append(out, Result{Case: Case{Family: fam, Rule: d.Nft, Class: tab.Label, Table: tab},
					Outcome: OnlyNftTakes, Detail: "netreconcile: " + refused, Kind: KindDecl})
			}
			if len(kept) == len(bare.Decls) {
				t.Fatalf("validate of the declarations of %s: errors not at a declaration:\n%s%s", tab.Label, r.Stdout, r.Stderr)
			}
			bare.Decls = kept
		}
		tab = &bare
		cases = slices.Clone(cases)
		for i := range cases {
			cases[i].Table = tab
		}
	}
	empty, _ := tab.Script(nil)
	if out, err := exec.Command("ip", "netns", "exec", nsN, "nft", "-f", nettest.WriteFile(t, dir, "empty.nft", empty)).CombinedOutput(); err != nil {
		t.Fatalf("nft -f refuses the table %s: %v\n%s", tab.Label, err, out)
	}
	took, alone, err := NftTakes(fam, cases, func(scripts []string) ([]byte, int, error) {
		if out, err := exec.Command("ip", "netns", "exec", nsN, "nft", "flush", "ruleset").CombinedOutput(); err != nil {
			return out, 0, fmt.Errorf("%w: %v", errNotRun, err)
		}
		for k, script := range scripts {
			p := filepath.Join(dir, fmt.Sprintf("n%d.nft", k))
			if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
				return nil, k, err
			}
			if out, err := exec.Command("ip", "netns", "exec", nsN, "nft", "-f", p).CombinedOutput(); err != nil {
				return out, k, err
			}
		}
		return nil, 0, nil
	}, func(scripts []string) ([]bool, error) { return checkInNS(nsN, dir, scripts) })
	if err != nil {
		t.Fatal(err)
	}
	copy(nftTook, took)
	rules, _, nftIndex := perChain(tab, cases, func(i int) bool { return nftTook[i] })
	scripts, _ := tab.Scripts(rules, func(cr ChainRule) bool { return alone[nftIndex[cr]] })
	nettest.InNS(t, nsN, "nft", "flush", "ruleset")
	for k, script := range scripts {
		nettest.InNS(t, nsN, "nft", "-f", nettest.WriteFile(t, dir, fmt.Sprintf("final%d.nft", k), script))
	}
	nftRules := readRules(t, nsN, fam)

	// netreconcile: validate says which rules it refuses (by field path),
	// apply writes the others.
	nsW := nettest.NewNetNS(t)
	state := t.TempDir()
	var weIndex map[ChainRule]int
	for run := 0; ; run++ {
		var byChain map[string][]string
		var rules []ChainRule
		rules, byChain, weIndex = perChain(tab, cases, func(i int) bool { return weTook[i] })
		f := filepath.Join(dir, fmt.Sprintf("w%d.yaml", run))
		if err := os.WriteFile(f, []byte(tab.YAML(byChain)), 0o644); err != nil {
			t.Fatal(err)
		}
		errs, applied := validateApply(t, f, nsW, state, run, "the table "+tab.Label)
		if applied {
			break
		}
		byPath := map[string]ChainRule{}
		for _, cr := range rules {
			byPath[fmt.Sprintf("nftables.%s %s.chains.%s.rules[%d]", fam, TableName, cr.Chain, cr.Index)] = cr
		}
		for _, e := range errs {
			cr, ok := byPath[e.Path]
			if !ok {
				t.Fatalf("validate: an error not at a rule: %s: %s", e.Path, e.Message)
			}
			weTook[weIndex[cr]] = false
			weSaid[weIndex[cr]] = e.Message
		}
	}
	weRules := readRules(t, nsW, fam)

	for i, c := range cases {
		r := Result{Case: c}
		switch {
		case !nftTook[i] && !weTook[i]:
			r.Outcome = RefusedByBoth
		case !nftTook[i]:
			r.Outcome = OnlyWeAccept
		case !weTook[i]:
			r.Outcome = OnlyNftTakes
			r.Detail = "netreconcile: " + weSaid[i]
		default:
			n := nftRules.at(c.Chain, indexOf(nftIndex, i))
			w := weRules.at(c.Chain, indexOf(weIndex, i))
			// A rule both took and neither listing shows is the
			// harness's failure to read it, never a match.
			if n == w && n != noRule {
				r.Outcome = Identical
				r.Listed = n[strings.LastIndex(n, "\n")+1:]
			} else {
				r.Outcome = Differ
				r.Detail = fmt.Sprintf("nft -f:\n%s\nnetreconcile:\n%s", n, w)
			}
		}
		out = append(out, r)
	}
	if len(tab.Elems) > 0 {
		out = append(out, runElems(t, tab, dir, nsN, nsW, state)...)
	}
	return out
}

// runElems runs a table's element lines, after its rules: through nft, a
// line at a time into the table as the file declares it (`add element`,
// as nftables' runner does), and through netreconcile, every line's
// elements in the set's declaration, less those validate refuses. A line
// is taken when all its elements are. The sets' elements are then
// compared as nft lists them, the time left to each aside.
func runElems(t testing.TB, tab *Table, dir, nsN, nsW, state string) []Result {
	t.Helper()
	fam := tab.Family
	bare := *tab
	declared := map[string]bool{}
	for _, d := range tab.Decls {
		declared[d.Name] = true
	}
	script, _ := bare.Script(nil)
	nettest.InNS(t, nsN, "nft", "flush", "ruleset")
	nettest.InNS(t, nsN, "nft", "-f", nettest.WriteFile(t, dir, "elems.nft", script))
	nftTook := make([]bool, len(tab.Elems))
	for i, l := range tab.Elems {
		if !declared[l.Set] || l.Early {
			continue
		}
		cmd := fmt.Sprintf("add element %s %s %s { %s }\n", fam, TableName, l.Set, strings.Join(l.Elems, ", "))
		_, err := exec.Command("ip", "netns", "exec", nsN, "nft", "-f", nettest.WriteFile(t, dir, "elem.nft", cmd)).CombinedOutput()
		nftTook[i] = err == nil
	}
	weTook := make([]bool, len(tab.Elems))
	weSaid := make([]string, len(tab.Elems))
	for i, l := range tab.Elems {
		// A line for a set nft refused to declare (runTable left it
		// out) is refused by both.
		weTook[i] = declared[l.Set] && !l.Early
		switch {
		case !declared[l.Set]:
			weSaid[i] = "its set is not declared"
		case l.Early:
			weSaid[i] = "before its set's declaration"
		}
	}
	for run := 0; ; run++ {
		withElems := bare
		withElems.Decls = nil
		for _, d := range bare.Decls {
			// nft's add takes an element the set holds; a file's list
			// names each once.
			var es []string
			for i, l := range tab.Elems {
				if l.Set == d.Name && weTook[i] {
					for _, e := range l.Elems {
						if !slices.Contains(es, e) {
							es = append(es, e)
						}
					}
				}
			}
			if len(es) > 0 {
				var q []string
				for _, e := range es {
					q = append(q, yamlQuote(e))
				}
				d.YAML = strings.TrimSuffix(d.YAML, "}") + ", elements: [" + strings.Join(q, ", ") + "]}"
			}
			withElems.Decls = append(withElems.Decls, d)
		}
		f := nettest.WriteFile(t, dir, fmt.Sprintf("e%d.yaml", run), withElems.YAML(nil))
		errs, applied := validateApply(t, f, nsW, state, run, "the elements of "+tab.Label)
		if applied {
			break
		}
		dropped := false
		// The file validate read: indexes are into its lists, whatever
		// this loop drops.
		inFile := slices.Clone(weTook)
		for _, e := range errs {
			// sets.NAME.elements[k]: the k-th element taken of the set.
			var k int
			rest, ok := strings.CutPrefix(e.Path, fmt.Sprintf("nftables.%s %s.sets.", fam, TableName))
			if !ok {
				continue
			}
			set, idx, ok := strings.Cut(rest, ".elements[")
			if !ok {
				// At the set's elements as a whole (an overlap): the
				// last line with the element the message names first,
				// else every line of the set.
				set, _, _ = strings.Cut(rest, ".")
				k = -1
				first, _, _ := strings.Cut(e.Message, " ")
				for i := len(tab.Elems) - 1; i >= 0; i-- {
					if l := tab.Elems[i]; l.Set == set && inFile[i] && slices.Contains(l.Elems, strings.Trim(first, `"`)) {
						weTook[i], weSaid[i], dropped = false, e.Message, true
						break
					}
				}
				if dropped {
					continue
				}
			} else if _, err := fmt.Sscanf(idx, "%d]", &k); err != nil {
				continue
			}
			var seen []string
			for i, l := range tab.Elems {
				if l.Set != set || !inFile[i] {
					continue
				}
				hit := k < 0
				for _, el := range l.Elems {
					if !slices.Contains(seen, el) {
						hit = hit || len(seen) == k
						seen = append(seen, el)
					}
				}
				if hit {
					weTook[i], weSaid[i], dropped = false, e.Message, true
				}
			}
		}
		if !dropped {
			t.Fatalf("validate of the elements of %s: errors not at an element: %+v", tab.Label, errs)
		}
	}
	var out []Result
	setOK := map[string]bool{}
	for i, l := range tab.Elems {
		r := Result{Case: Case{Family: fam, Rule: "@" + l.Set + " " + strings.Join(l.Elems, ", "), Class: tab.Label, Table: tab, Source: l.Source, Expect: l.Expect}, Kind: KindElems}
		switch {
		case !nftTook[i] && !weTook[i]:
			r.Outcome = RefusedByBoth
		case !nftTook[i]:
			r.Outcome = OnlyWeAccept
		case !weTook[i]:
			r.Outcome = OnlyNftTakes
			r.Detail = "netreconcile: " + weSaid[i]
			if strings.Contains(weSaid[i], "a set with a default timeout cannot declare elements") {
				r.Documented = "docs/config.md, sets.NAME.timeout: such a set declares no elements (they would expire)"
			}
		default:
			r.Outcome = Identical
			setOK[l.Set] = true
		}
		out = append(out, r)
	}
	// A set whose lines both took: its elements as each kernel holds them.
	for set := range setOK {
		n := listElems(t, nsN, fam, set)
		w := listElems(t, nsW, fam, set)
		if n == w {
			continue
		}
		for i := range out {
			if tab.Elems[i].Set == set && out[i].Outcome == Identical {
				out[i].Outcome = Differ
				out[i].Detail = fmt.Sprintf("the set's elements: nft -f:\n%s\nnetreconcile:\n%s", n, w)
			}
		}
	}
	return out
}

var expiresRE = regexp.MustCompile(` expires [0-9dhms]+`)

// listElems lists a set's elements, the time each has left aside.
func listElems(t testing.TB, ns, fam, set string) string {
	t.Helper()
	l := nettest.InNS(t, ns, "nft", "list", "set", fam, TableName, set)
	_, es, _ := strings.Cut(l, "elements = ")
	es, _, _ = strings.Cut(es, "}")
	return expiresRE.ReplaceAllString(strings.Join(strings.Fields(es), " "), "")
}

// checkInNS runs nft -c -f on each script apart, in one namespace exec
// (nft -c commits nothing), and reports which nft took.
func checkInNS(ns, dir string, scripts []string) ([]bool, error) {
	var sh strings.Builder
	for k, script := range scripts {
		p := filepath.Join(dir, fmt.Sprintf("c%d.nft", k))
		if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(&sh, "nft -c -f %s >/dev/null 2>&1 && echo ok || echo no\n", p)
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "nft flush ruleset\n"+sh.String()).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %s", errNotRun, err, out)
	}
	return Checked(out, len(scripts))
}

// placedError is an error of validate -o json, at a field path.
type placedError struct{ Path, Message string }

// placedErrors reads the errors of a failed validate -o json.
// validateApply validates the file f and, when it is valid, applies it in
// ns; otherwise it returns the errors validate placed, failing the test
// when they are not placed or the runs (dropping what was refused each
// time) do not end.
func validateApply(t testing.TB, f, ns, state string, run int, what string) (errs []placedError, applied bool) {
	t.Helper()
	r := nettest.CLI(t, "validate", "-o", "json", "-c", f)
	if r.Code == 0 {
		if r := nettest.CLI(t, "apply", "-q", "-c", f, "--netns", ns, "--state-dir", state); r.Code != 0 {
			t.Fatalf("apply of %s, which validate took: exit %d\n%s%s", what, r.Code, r.Stdout, r.Stderr)
		}
		return nil, true
	}
	errs, err := placedErrors(r)
	if err != nil || run > 40 {
		t.Fatalf("validate of %s: errors not placed at rules: %v", what, err)
	}
	return errs, false
}

func placedErrors(r nettest.Result) ([]placedError, error) {
	var v struct{ Errors []placedError }
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || len(v.Errors) == 0 {
		return nil, fmt.Errorf("exit %d, no errors read (%v):\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return v.Errors, nil
}

// Checked reads the "ok" or "no" lines of a run of n checks.
func Checked(out []byte, n int) ([]bool, error) {
	f := strings.Fields(string(out))
	if len(f) != n {
		return nil, fmt.Errorf("%w: %d answers to %d checks: %s", errNotRun, len(f), n, out)
	}
	ok := make([]bool, n)
	for k, w := range f {
		ok[k] = w == "ok"
	}
	return ok, nil
}

func indexOf(index map[ChainRule]int, i int) int {
	for cr, j := range index {
		if j == i {
			return cr.Index
		}
	}
	return -1
}

// noRule stands for a rule a listing lacks.
const noRule = "(no rule)"

// ruleset is a table's rules as the kernel holds them: per chain, each
// rule's bytecode (nft --debug=netlink, anonymous sets by content) and its
// words (nft list).
type ruleset map[string][]string

func (rs ruleset) at(chain string, i int) string {
	if i < 0 || i >= len(rs[chain]) {
		return noRule
	}
	return rs[chain][i]
}

var (
	ruleHeadRE = regexp.MustCompile(`^\S+ \S+ (\S+) \d+( \d+)?$`)
	setHeadRE  = regexp.MustCompile(`^\S+ \S+ @(\S+)$`)
	anonRefRE  = regexp.MustCompile(`set (__(?:set|map|objmap)\d+)`)
	handleRE   = regexp.MustCompile(` # handle \d+$`)
)

// readRules reads the standard table's rules in a namespace.
func readRules(t testing.TB, ns, fam string) ruleset { return readTableRules(t, ns, fam, TableName) }

// readTableRules reads a table's rules in a namespace.
func readTableRules(t testing.TB, ns, fam, name string) ruleset {
	t.Helper()
	debug := nettest.InNS(t, ns, "nft", "--debug=netlink", "list", "table", fam, name)
	list := nettest.InNS(t, ns, "nft", "-a", "list", "table", fam, name)
	type block struct {
		chain string
		lines []string
	}
	var blocks []*block
	var b *block
	for _, l := range strings.Split(debug, "\n") {
		switch {
		case setHeadRE.MatchString(l):
			b = nil
		case ruleHeadRE.MatchString(l):
			b = &block{chain: ruleHeadRE.FindStringSubmatch(l)[1]}
			blocks = append(blocks, b)
		case strings.HasPrefix(l, "  [") && b != nil:
			b.lines = append(b.lines, strings.TrimSpace(l))
		}
	}
	sets := collectSets(debug)
	out := ruleset{}
	for _, bl := range blocks {
		var lines []string
		for _, l := range bl.lines {
			lines = append(lines, anonRefRE.ReplaceAllStringFunc(l, func(m string) string {
				es := append([]string(nil), sets[anonRefRE.FindStringSubmatch(m)[1]]...)
				sort.Strings(es)
				return "set {" + strings.Join(es, "; ") + "}"
			}))
		}
		out[bl.chain] = append(out[bl.chain], strings.Join(lines, "\n"))
	}
	// The words: each rule's line of nft list, without its handle, after
	// its bytecode.
	chain := ""
	idx := map[string]int{}
	for _, l := range strings.Split(list, "\n") {
		s := strings.TrimSpace(l)
		if name, ok := strings.CutPrefix(s, "chain "); ok {
			chain = strings.Fields(name)[0]
			continue
		}
		if chain == "" || !handleRE.MatchString(s) || strings.HasPrefix(s, "type ") {
			continue
		}
		if i := idx[chain]; i < len(out[chain]) {
			out[chain][i] += "\n" + handleRE.ReplaceAllString(s, "")
		}
		idx[chain]++
	}
	return out
}

// collectSets reads the anonymous sets' elements of a debug listing.
func collectSets(debug string) map[string][]string {
	sets := map[string][]string{}
	name := ""
	for _, l := range strings.Split(debug, "\n") {
		switch {
		case setHeadRE.MatchString(l):
			name = setHeadRE.FindStringSubmatch(l)[1]
		case strings.HasPrefix(l, "\telement ") && name != "":
			sets[name] = append(sets[name], strings.TrimSpace(l))
		default:
			if !strings.HasPrefix(l, "\t") {
				name = ""
			}
		}
	}
	return sets
}

// TallyByClass counts results by syntax class, the classes in order.
func TallyByClass(rs []Result) ([]string, map[string]Counts) {
	var classes []string
	by := map[string]Counts{}
	for _, r := range rs {
		if by[r.Class] == nil {
			by[r.Class] = Counts{}
			classes = append(classes, r.Class)
		}
		by[r.Class][r.Outcome]++
	}
	return classes, by
}
