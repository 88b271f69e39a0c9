package confschema

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/test/walk"
)

// The schema against the loader, on files made three ways: the examples
// and the configuration reference's snippets, the convergence walk's
// generator (valid files of every kind, with what changes in place and
// what replaces), and one mutation of each of those (a value of another
// kind, out of range or unknown, a key dropped, misspelt or added, an item
// given twice). Every file the loader accepts must validate; of those it
// refuses, the test tells which the schema catches too, by what the
// loader said, and holds the share it catches.

// corpus is valid files: their name, content and the directory they are
// read in (their key files are there).
type corpusFile struct {
	name string
	data []byte
	// dir, when set, is where the file is read instead (a walk's step,
	// with its side files).
	dir string
}

// in is the directory f is read in.
func (f corpusFile) in(dir string) string {
	if f.dir != "" {
		return f.dir
	}
	return dir
}

func examples(t *testing.T, dir string) []corpusFile {
	t.Helper()
	writeKeys(t, dir)
	paths, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(paths) < 5 {
		t.Fatalf("examples: %v", err)
	}
	var out []corpusFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusFile{filepath.Base(p), []byte(strings.ReplaceAll(string(data), "/etc/netreconcile/", dir+"/")), ""})
	}
	return out
}

// writeKeys writes the key files the examples name, in dir.
func writeKeys(t *testing.T, dir string) {
	t.Helper()
	key := "yO/W+1rA6/xDsIaPbtDBR7A3YUD3AjTQAxgWUdYqbWc=\n"
	for _, n := range []string{"kubespan.key", "node2.psk"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// walkFiles are configurations of the walk's generator, every kind on.
func walkFiles(t *testing.T, dir string, walks, steps int) []corpusFile {
	t.Helper()
	defects, err := walk.ParseDefects("")
	if err != nil {
		t.Fatal(err)
	}
	caps := walk.Caps{Dummy: true, IPVlan: true, IPIP: true, IP6Tnl: true, Fou: true, VLAN: true, MACVlan: true, VRF: true, Bond: true, WireGuard: true}
	g, err := walk.NewGen(rand.New(rand.NewSource(1)), caps, defects, dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusFile
	for w := 0; w < walks; w++ {
		c := g.Initial()
		for s := 0; s < steps; s++ {
			// Each step in a directory of its own, with the side files
			// it names.
			d := filepath.Join(dir, fmt.Sprintf("walk-%d-%d", w, s))
			for n, data := range c.SideFiles() {
				if err := os.MkdirAll(filepath.Join(d, "side"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "side", n), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, corpusFile{fmt.Sprintf("walk %d step %d", w, s), []byte(c.YAML()), d})
			c, _ = g.Next(c)
		}
	}
	return out
}

func load(dir string, data []byte) error {
	_, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "netreconcile.yaml"), Data: data}})
	return err
}

func TestSchemaAcceptsWhatTheLoaderAccepts(t *testing.T) {
	s, err := Generated()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := append(examples(t, dir), walkFiles(t, dir, 20, 25)...)
	for _, f := range files {
		if err := load(f.in(dir), f.data); err != nil {
			t.Fatalf("%s: the loader refuses it: %v", f.name, err)
		}
		if err := Validate(s, f.data); err != nil {
			t.Errorf("%s: the loader accepts it, the schema refuses it: %v\n%s", f.name, err, f.data)
		}
	}
	t.Logf("%d files the loader accepts validate", len(files))
}

// TestSchemaCatchesRefusals mutates valid files once each and compares the
// two judges.
func TestSchemaCatchesRefusals(t *testing.T) {
	s, err := Generated()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := append(examples(t, dir), walkFiles(t, dir, 10, 10)...)
	r := rand.New(rand.NewSource(7))
	type tally struct{ caught, missed int }
	byMutation := map[string]*tally{}
	missedBy := map[string]int{}
	caughtBy := map[string]int{}
	accepted, refused := 0, 0
	for _, f := range base {
		for i := 0; i < 12; i++ {
			kind, data, ok := mutate(r, f.data)
			if !ok {
				continue
			}
			lerr := load(f.in(dir), data)
			serr := Validate(s, data)
			if lerr == nil {
				accepted++
				if serr != nil {
					t.Errorf("%s, %s: the loader accepts it, the schema refuses it: %v\n%s", f.name, kind, serr, data)
				}
				continue
			}
			refused++
			tl := byMutation[kind]
			if tl == nil {
				tl = &tally{}
				byMutation[kind] = tl
			}
			class := errorClass(lerr)
			if serr != nil {
				tl.caught++
				caughtBy[class]++
			} else {
				tl.missed++
				missedBy[class]++
			}
		}
	}
	caught := 0
	var lines []string
	for k, tl := range byMutation {
		caught += tl.caught
		lines = append(lines, fmt.Sprintf("  %-28s %4d caught, %4d not", k, tl.caught, tl.missed))
	}
	sort.Strings(lines)
	t.Logf("%d mutated files: the loader accepts %d (each validates), refuses %d; the schema catches %d of those (%.0f%%)\nby mutation:\n%s",
		accepted+refused, accepted, refused, caught, 100*float64(caught)/float64(max(refused, 1)), strings.Join(lines, "\n"))
	t.Logf("refusals the schema catches, by what the loader says:\n%s", top(caughtBy, 40))
	t.Logf("refusals only the loader makes, by what it says:\n%s", top(missedBy, 60))
	if refused < 500 {
		t.Errorf("only %d refused files: the mutations are too tame to say anything", refused)
	}
	// The share is what the schema can express: when a change of the
	// schema or the loader lowers it, look at the lists above.
	if share := float64(caught) / float64(refused); share < minCaught {
		t.Errorf("the schema catches %.0f%% of the refusals, less than %.0f%%", 100*share, 100*minCaught)
	}
}

// minCaught is the share of refusals the schema caught when the test was
// written (94%), less a margin for the randomness of the sample.
const minCaught = 0.85

// errorClass names a refusal by the first error's path, with names and
// indexes made wildcards, and its message, with values left out.
func errorClass(err error) string {
	var es desired.Errors
	if !errors.As(err, &es) || len(es) == 0 {
		return "(not a field error) " + firstLine(err.Error())
	}
	e := es[0]
	return wildPath(e.Path) + ": " + wildMessage(e.Msg)
}

var (
	indexRE = regexp.MustCompile(`\[[0-9]+\]`)
	valueRE = regexp.MustCompile(`"[^"]*"|'[^']*'|/tmp/\S+|\b[0-9][0-9a-fA-F:./x]*`)
)

// wildPath makes the names in a path "*" and its indexes "[]", as
// desired.SchemaKeys writes paths.
func wildPath(p string) string {
	p = indexRE.ReplaceAllString(p, "[]")
	parts := strings.Split(p, ".")
	keys := map[string]bool{}
	for _, k := range desired.SchemaKeys() {
		for _, w := range strings.Split(strings.ReplaceAll(k, "[]", ""), ".") {
			keys[w] = true
		}
	}
	for i, w := range parts {
		base := strings.TrimSuffix(w, "[]")
		if i > 0 && !keys[base] {
			parts[i] = "*" + w[len(base):]
		}
	}
	return strings.Join(parts, ".")
}

func wildMessage(m string) string {
	m = firstLine(m)
	if len(m) > 90 {
		m = m[:90] + "…"
	}
	return valueRE.ReplaceAllString(m, "_")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func top(m map[string]int, n int) string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var b strings.Builder
	for i, e := range all {
		if i == n {
			fmt.Fprintf(&b, "  … and %d more\n", len(all)-n)
			break
		}
		fmt.Fprintf(&b, "  %4d  %s\n", e.v, e.k)
	}
	return b.String()
}

// wrongValues are what a mutation puts in place of a scalar: another type,
// out of range, unknown words, malformed addresses.
var wrongValues = []string{
	"x", "-1", "0", "1", "65536", "4294967296", "99999999999999999999", "true", "1.5", "0x", "''", "~",
	"10.0.0.1", "10.0.0.1/24", "10.0.0.0/33", "fd00::1/129", "fd00::/64", "default", "300.1.1.1",
	"30", "30x", "-5s", "5m", "0x40/0x60", "0x1ffffffff", "bogus", "up", "ipv4", "auto", "a b",
	"/etc/passwd", "br0", "[]", "{}", "[x]", "{a: 1}",
}

// mutate changes one thing of a valid file: a scalar replaced, a key
// dropped, misspelt or added, a list item given twice. It returns what it
// did, as a word, and the file.
func mutate(r *rand.Rand, data []byte) (string, []byte, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return "", nil, false
	}
	var maps, seqs, scalars []*yaml.Node
	var walk func(n *yaml.Node, isKey bool)
	walk = func(n *yaml.Node, isKey bool) {
		switch n.Kind {
		case yaml.MappingNode:
			maps = append(maps, n)
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], false)
			}
		case yaml.SequenceNode:
			seqs = append(seqs, n)
			for _, c := range n.Content {
				walk(c, false)
			}
		case yaml.ScalarNode:
			if !isKey {
				scalars = append(scalars, n)
			}
		}
	}
	walk(doc.Content[0], false)
	var kind string
	switch op := r.Intn(10); {
	case op < 5 && len(scalars) > 0:
		n := scalars[r.Intn(len(scalars))]
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(wrongValues[r.Intn(len(wrongValues))]), &v); err != nil || len(v.Content) == 0 {
			return "", nil, false
		}
		*n = *v.Content[0]
		kind = "scalar replaced"
	case op < 7 && len(maps) > 0:
		m := maps[r.Intn(len(maps))]
		if len(m.Content) == 0 {
			return "", nil, false
		}
		i := 2 * r.Intn(len(m.Content)/2)
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
		kind = "key dropped"
	case op < 8 && len(maps) > 0:
		m := maps[r.Intn(len(maps))]
		if len(m.Content) == 0 {
			return "", nil, false
		}
		m.Content[2*r.Intn(len(m.Content)/2)].Value += "x"
		kind = "key misspelt"
	case op < 9 && len(maps) > 0:
		m := maps[r.Intn(len(maps))]
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "bogus"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "1"})
		kind = "key added"
	case len(seqs) > 0:
		s := seqs[r.Intn(len(seqs))]
		if len(s.Content) == 0 {
			return "", nil, false
		}
		s.Content = append(s.Content, s.Content[r.Intn(len(s.Content))])
		kind = "item given twice"
	default:
		return "", nil, false
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", nil, false
	}
	return kind, out, true
}
