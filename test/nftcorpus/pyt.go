package nftcorpus

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// The reader of nftables' own regression suite, tests/py: its .t files
// are read where they lie (NFT_TESTS_PY), never copied into this tree.
//
// A .t file is lines of these kinds, in the order nftables' runner
// (tests/py/nft-test.py) takes them:
//
//	:NAME;CONFIG            a chain: CONFIG is nft's chain spec, or empty
//	*FAMILY;TABLE;C1,C2     a table, with chains named by : lines before
//	!NAME type T [. T]... [timeout D] [flags F];ok|fail   a set, in every table so far
//	?NAME E1, E2;ok|fail    elements of a set
//	%NAME type T [SPEC];ok|fail   a named object, in every table so far
//	RULE;ok[;LISTING]       a rule nft takes (and lists as LISTING)
//	RULE;fail               a rule nft refuses
//	-RULE;...               a rule the runner leaves out unless told
//	# ...                   a comment
//
// Every rule goes in every chain of every table of its file. The verdicts
// and listings are those of the nft the suite came with; the differential
// takes the host's nft as its oracle, and only counts where the two
// disagree (PyTStats).

// PyTFile is what a .t file gives the differential.
type PyTFile struct {
	Name   string // relative to the suite's directory: any/ct.t
	Tables []*Table
	Cases  []Case
	// Disabled counts the rules the file leaves out (- lines),
	// Elements the element lines (? lines), run after the rules, and
	// Skipped the rules in tables of families netreconcile has not.
	Disabled, Elements, Skipped int
}

// ReadPyTDir reads the .t files of the given subdirectories (any, inet,
// ip, ip6…) of a tests/py directory, in name order.
func ReadPyTDir(dir string, subdirs []string) ([]*PyTFile, error) {
	var out []*PyTFile
	for _, sub := range subdirs {
		names, err := filepath.Glob(filepath.Join(dir, sub, "*.t"))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", sub, err)
		}
		sort.Strings(names)
		for _, p := range names {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("read test file: %w", err)
			}
			f, err := ParsePyT(filepath.Join(sub, filepath.Base(p)), string(b))
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// ParsePyT reads one .t file. name labels its cases (Class, Source).
func ParsePyT(name, text string) (*PyTFile, error) {
	f := &PyTFile{Name: name}
	chainSpecs := map[string]Chain{}
	// all is every table of the file, supported family or not: a
	// declaration goes in each table declared before it.
	var all []*Table
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimRight(raw, " \t\r")
		at := fmt.Sprintf("%s:%d", name, i+1)
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			continue
		}
		switch line[0] {
		case ':':
			nm, spec, _ := strings.Cut(line[1:], ";")
			c, err := parseChainSpec(nm, spec)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			chainSpecs[nm] = c
			continue
		case '*':
			parts := strings.Split(line[1:], ";")
			if len(parts) != 3 {
				return nil, fmt.Errorf("%s: a table line has three fields: %q", at, line)
			}
			t := &Table{Family: parts[0], Label: fmt.Sprintf("%s (%s %s)", name, parts[0], parts[1])}
			for _, cn := range strings.Split(parts[2], ",") {
				c, ok := chainSpecs[cn]
				if !ok {
					return nil, fmt.Errorf("%s: table %s names chain %q, which no line before declares", at, parts[1], cn)
				}
				t.Chains = append(t.Chains, c)
			}
			all = append(all, t)
			if slices.Contains(Families, t.Family) {
				f.Tables = append(f.Tables, t)
			}
			continue
		case '?':
			spec, verdict, _ := strings.Cut(line[1:], ";")
			set, elems, ok := strings.Cut(spec, " ")
			if !ok {
				return nil, fmt.Errorf("%s: an element line is SET ELEMENT, …: %q", at, line)
			}
			l := ElemLine{Set: set, Source: at, Expect: strings.TrimSpace(verdict)}
			for _, e := range strings.Split(elems, ",") {
				l.Elems = append(l.Elems, strings.TrimSpace(e))
			}
			f.Elements++
			for _, t := range all {
				l.Early = !slices.ContainsFunc(t.Decls, func(d Decl) bool { return d.Name == set })
				t.Elems = append(t.Elems, l)
			}
			continue
		case '!', '%':
			var spec, verdict string
			if brace := strings.LastIndex(line, "}"); line[0] == '%' && brace > 0 {
				spec, verdict = line[1:brace+1], strings.TrimPrefix(line[brace+1:], ";")
			} else {
				spec, verdict, _ = strings.Cut(line[1:], ";")
			}
			var d Decl
			var err error
			if line[0] == '!' {
				d, err = parseSetLine(spec)
			} else {
				d, err = parseObjectLine(spec)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			// A declaration the file says nft refuses is tried all the
			// same: the host's nft decides (runTable).
			_ = verdict
			for _, t := range all {
				if !slices.ContainsFunc(t.Decls, func(o Decl) bool { return o.Name == d.Name }) {
					t.Decls = append(t.Decls, d)
				}
			}
			continue
		}
		disabled := line[0] == '-'
		fields := strings.Split(line, ";")
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("%s: a rule line is RULE;ok|fail[;LISTING]: %q", at, line)
		}
		want := strings.TrimSpace(fields[1])
		if want != "ok" && want != "fail" {
			return nil, fmt.Errorf("%s: a rule line is RULE;ok|fail[;LISTING]: %q", at, line)
		}
		if disabled {
			f.Disabled++
			continue
		}
		rule := strings.TrimSpace(fields[0])
		listing := rule
		if len(fields) == 3 {
			listing = strings.TrimSpace(fields[2])
		}
		if len(all) == 0 {
			return nil, fmt.Errorf("%s: a rule before any table", at)
		}
		for _, t := range all {
			if !slices.Contains(Families, t.Family) {
				f.Skipped++
				continue
			}
			for _, c := range t.Chains {
				f.Cases = append(f.Cases, Case{Family: t.Family, Chain: c.Name, Rule: rule, Class: name, Table: t, Source: at, Expect: want, Listing: listing})
			}
		}
	}
	return f, nil
}

// parseChainSpec reads a chain line's spec: "type T hook H [device D]
// priority P", or nothing for a regular chain.
func parseChainSpec(name, spec string) (Chain, error) {
	c := Chain{Name: name}
	w := strings.Fields(spec)
	for k := 0; k < len(w); k += 2 {
		if k+1 >= len(w) {
			return c, fmt.Errorf("chain %s: %q has no value", name, w[k])
		}
		v := w[k+1]
		switch w[k] {
		case "type":
			c.Type = v
		case "hook":
			c.Hook = v
		case "device":
			c.Device = strings.Trim(v, `"`)
		case "priority":
			c.Prio = v
		default:
			return c, fmt.Errorf("chain %s: unknown key %q", name, w[k])
		}
	}
	if (c.Hook == "") != (c.Type == "") || (c.Hook == "") != (c.Prio == "") {
		return c, fmt.Errorf("chain %s: a base chain has a type, a hook and a priority: %q", name, spec)
	}
	return c, nil
}

// parseSetLine reads "NAME type T [. T]... [timeout D] [flags F]", as
// nftables' runner does (a set, or a map when the type has a colon).
func parseSetLine(spec string) (Decl, error) {
	w := strings.Fields(spec)
	if len(w) < 3 || w[1] != "type" {
		return Decl{}, fmt.Errorf("a set line is NAME type TYPE …: %q", spec)
	}
	name, typ := w[0], w[2]
	k := 3
	for k+1 < len(w) && w[k] == "." {
		typ += " . " + w[k+1]
		k += 2
	}
	var timeout, flags string
	if k+1 < len(w) && w[k] == "timeout" {
		timeout = w[k+1]
		k += 2
	}
	if k+1 < len(w) && w[k] == "flags" {
		flags = w[k+1]
		k += 2
	}
	if k != len(w) {
		return Decl{}, fmt.Errorf("set %s: %q not understood", name, strings.Join(w[k:], " "))
	}
	kind := "sets"
	if strings.Contains(typ, ":") {
		kind = "maps"
	}
	nft := fmt.Sprintf("%s %s { type %s;", strings.TrimSuffix(kind, "s"), name, typ)
	yaml := fmt.Sprintf("{type: %s", yamlQuote(typ))
	if timeout != "" {
		nft += " timeout " + timeout + ";"
		yaml += ", timeout: " + yamlQuote(timeout)
	}
	if flags != "" {
		nft += " flags " + flags + ";"
		yaml += ", flags: [" + strings.Join(strings.Split(flags, ","), ", ") + "]"
	}
	return Decl{Kind: kind, Name: name, YAML: yaml + "}", Nft: nft + " }"}, nil
}

// parseObjectLine reads "NAME type T [SPEC]": a named object, nft's
// `add T TABLE NAME SPEC`, in a table block `T NAME { SPEC }`.
func parseObjectLine(spec string) (Decl, error) {
	w := strings.Fields(spec)
	if len(w) < 3 || w[1] != "type" {
		return Decl{}, fmt.Errorf("an object line is NAME type TYPE …: %q", spec)
	}
	name, typ, rest := w[0], w[2], w[3:]
	if typ == "ct" && len(rest) > 0 {
		typ, rest = "ct "+rest[0], rest[1:]
	}
	body := strings.Join(rest, " ")
	nft := fmt.Sprintf("%s %s { %s }", typ, name, body)
	if strings.HasPrefix(body, "{") {
		nft = fmt.Sprintf("%s %s %s", typ, name, body)
	}
	return Decl{Kind: "objects", Name: name, YAML: yamlQuote(strings.TrimSpace(typ + " " + body)), Nft: nft}, nil
}

// yamlQuote quotes s as a YAML single-quoted scalar.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// PyTStats counts where the host's nft judged a rule otherwise than the
// suite's file expected of its own nft: a rule the file says nft takes
// that the host's nft refused, one it says nft refuses that the host's
// nft took, and one both took that the host's nft lists otherwise than
// the file says (words aside, the same kernel rule on both sides: nft's
// listing changes between versions). The differential holds netreconcile
// to the host's nft; these are the two nfts' difference, counted apart.
type PyTStats struct {
	OkButRefused, FailButTaken, ListedOtherwise int
}

// NftTook says whether the host's nft took a result's rule.
func NftTook(r Result) bool {
	return r.Outcome == Identical || r.Outcome == Differ || r.Outcome == OnlyNftTakes
}

// PyTDrift counts results whose nft judged otherwise than the file
// expected.
func PyTDrift(rs []Result) PyTStats {
	var s PyTStats
	for _, r := range rs {
		if r.Kind != "" || r.Expect == "" {
			continue
		}
		switch took := NftTook(r); {
		case r.Expect == "ok" && !took:
			s.OkButRefused++
		case r.Expect == "fail" && took:
			s.FailButTaken++
		case ListedOtherwise(r):
			s.ListedOtherwise++
		}
	}
	return s
}

// NftSays runs each case's rule alone in its table through nft -f, in a
// namespace without tables, and returns the first error nft printed (""
// where it took the rule): why the host's nft refused what the suite
// expected its nft to take. Not nft -c: the kernel refuses some rules
// only at the commit (osf in an ip6 table: EOPNOTSUPP).
func NftSays(t testing.TB, cases []Case) []string {
	t.Helper()
	ns := nettest.NewNetNS(t)
	dir := t.TempDir()
	out := make([]string, len(cases))
	for i, c := range cases {
		s, _ := tableOf(c).Script([]ChainRule{{Chain: c.Chain, Rule: c.Rule}})
		p := nettest.WriteFile(t, dir, "say.nft", s)
		msg, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", `nft flush ruleset && nft -f "$1"`, "sh", p).CombinedOutput()
		if err == nil {
			continue
		}
		out[i] = "(no message)"
		for _, l := range strings.Split(string(msg), "\n") {
			if _, e, ok := strings.Cut(l, "Error: "); ok {
				out[i] = e
				break
			}
		}
	}
	return out
}

// DriftReason buckets nft's refusal: the kernel's (an expression or
// module this kernel lacks) or nft's own (its parser or evaluator).
func DriftReason(msg string) string {
	if e, ok := strings.CutPrefix(msg, "Could not process rule: "); ok {
		return "the host's kernel refuses it: " + e
	}
	if msg == "" {
		return "taken alone (refused beside the file's other rules)"
	}
	return "the host's nft refuses it"
}

// ListedOtherwise says whether nft listed an identical rule otherwise than
// the suite's file says, as nftables' runner compares: spaces aside, and
// the elements of a set in any order.
func ListedOtherwise(r Result) bool {
	return r.Outcome == Identical && r.Listing != "" && normalListing(r.Listed) != normalListing(r.Listing)
}

// normalListing is a listing with its spaces made one and the elements of
// each innermost brace sorted.
func normalListing(l string) string {
	var b strings.Builder
	for {
		end := strings.Index(l, "}")
		if end < 0 {
			break
		}
		start := strings.LastIndex(l[:end], "{")
		if start < 0 {
			break
		}
		var es []string
		for _, e := range strings.Split(l[start+1:end], ",") {
			es = append(es, strings.Join(strings.Fields(e), " "))
		}
		sort.Strings(es)
		b.WriteString(l[:start] + "\x00" + strings.Join(es, ",") + "\x01")
		l = l[end+1:]
	}
	b.WriteString(l)
	return strings.Join(strings.Fields(b.String()), " ")
}
