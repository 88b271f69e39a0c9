package desired

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Regression tests for the findings of issue 11, one per finding. Their
// inputs also seed the fuzz targets (regressionFiles).

// nullItemCases: a null item in every list of the schema.
var nullItemCases = []struct{ file, want string }{
	{"version: 1\nroutes:\n  - ~\n", "f.yaml:3:5: routes[0]: empty list item; expected a mapping"},
	{"version: 1\nrules: [null]\n", "f.yaml:2:9: rules[0]: empty list item; expected a mapping"},
	{"version: 1\nfou:\n  -\n", "f.yaml:3:4: fou[0]: empty list item; expected a mapping"},
	{"version: 1\nlinks:\n  br0: {kind: bridge, addresses: [~]}\n", "f.yaml:3:35: links.br0.addresses[0]: empty list item; expected a value or a mapping"},
	{"version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard:\n      private-key-file: /nonexistent\n      peers: [~]\n",
		"f.yaml:7:15: links.wg0.wireguard.peers[0]: empty list item; expected a mapping"},
	{"version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard:\n      private-key-file: /nonexistent\n      peers: [{public-key: yO/W+1rA6/xDsIaPbtDBR7A3YUD3AjTQAxgWUdYqbWc=, allowed-ips: [~]}]\n",
		"f.yaml:7:88: links.wg0.wireguard.peers[0].allowed-ips[0]: empty list item; expected a value"},
	{"version: 1\nnftables:\n  inet f:\n    sets:\n      s: {type: ipv4_addr, elements: [~]}\n",
		"f.yaml:5:39: nftables.inet f.sets.s.elements[0]: expected a string, found nothing"},
	{"version: 1\nnftables:\n  inet f:\n    chains:\n      c: {rules: [null]}\n",
		"f.yaml:5:19: nftables.inet f.chains.c.rules[0]: expected a string, found nothing"},
}

var regressionFiles = func() []string {
	fs := []string{
		" version: 1\nlinks:\n  br0: {kind: bridge}\n",
		"version: 1\n...\nlinks:\n  br0: {kind: bridge}\n",
		"version: 1\nlinks: &a [*a]\n",
		aliasedLinks,
		laughs(6),
	}
	for _, c := range nullItemCases {
		fs = append(fs, c.file)
	}
	return fs
}()

// A half-typed list item crashed validate, diff, apply and the daemon.
func TestNullListItemIsAnError(t *testing.T) {
	for _, c := range nullItemCases {
		got := errorsOf(t, src("f.yaml", c.file))
		if !strings.Contains(got, c.want) {
			t.Errorf("file:\n%s\nerrors:\n%s\nwant among them:\n%s", c.file, got, c.want)
		}
	}
}

// Whatever follows the first document that is not blank or a comment is an
// error at its position: the loader used to keep the first document only.
func TestTextAfterFirstDocument(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{" version: 1\nlinks:\n  br0: {kind: bridge}\n", "f.yaml:1:2: text after the end of the first YAML document"},
		{"version: 1\n...\nlinks:\n  br0: {kind: bridge}\n", "f.yaml:2:1: text after the end of the first YAML document"},
		{"version: 1\n---\nlinks:\n  br0: {kind: bridge}\n", "f.yaml:3:1: a second YAML document"},
		{"version: 1\nroutes:\n  - {to: 10.0.0.0/24, type: blackhole}\n...\nlinks: {}\n", "f.yaml:4:1: text after the end of the first YAML document"},
	} {
		got := errorsOf(t, src("f.yaml", c.file))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("file:\n%s\nerrors:\n%s\nwant:\n%s…", c.file, got, c.want)
		}
	}
	for _, ok := range []string{"version: 1\n...\n", "version: 1\n...\n# done\n\n", "---\nversion: 1\n"} {
		if got := errorsOf(t, src("f.yaml", ok)); got != "" {
			t.Errorf("file %q: %s", ok, got)
		}
	}
}

// aliasedLinks has a link that aliases another whose addresses are a
// one-line flow list: the flow fast path handed the alias back empty.
const aliasedLinks = "version: 1\nlinks:\n  br0: &x\n    kind: bridge\n    addresses: [10.0.0.1/24, 10.0.1.1/24]\n  br1: *x\n"

func TestAliasedFlowListKeepsItsItems(t *testing.T) {
	cfg, err := Parse([]Source{src("f.yaml", aliasedLinks)})
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]int{}
	for _, a := range cfg.State.Addresses {
		on[a.Link]++
	}
	if on["br0"] != 2 || on["br1"] != 2 {
		t.Errorf("addresses per link %v, want 2 on br0 and 2 on br1", on)
	}
}

// laughs is a "billion laughs" file: n levels of ten aliases each.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nx0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// Aliases were expanded without a bound, and an alias inside its own
// anchor recursed until the stack ran out.
func TestAliasBudget(t *testing.T) {
	got := errorsOf(t, src("f.yaml", laughs(6)))
	want := "f.yaml:5:45: aliases expand this file to more than"
	if !strings.HasPrefix(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s…", got, want)
	}
	got = errorsOf(t, src("f.yaml", "version: 1\nlinks: &a [*a]\n"))
	want = "f.yaml:2:12: alias *a refers to a node that contains it"
	if !strings.HasPrefix(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s…", got, want)
	}
	// Anchors used as intended stay well inside the budget.
	if got := errorsOf(t, src("f.yaml", aliasedLinks)); got != "" {
		t.Errorf("shared link refused: %s", got)
	}
}

// 100k errors are all kept, sorted, counted, and printed up to a cap.
func TestManyErrorsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nroutes:\n")
	const n = 100000
	for i := range n {
		fmt.Fprintf(&b, "  - {to: 10.%d.%d.0/24, dev: missing0}\n", i>>8&255, i&255)
	}
	_, err := Parse([]Source{src("f.yaml", b.String())})
	var es Errors
	if !errors.As(err, &es) || ErrorCount(err) != n || len(es) != 10000 {
		t.Fatalf("%d errors counted, %d kept; want %d and the first 10,000", ErrorCount(err), len(es), n)
	}
	if es[0].Pos.Line != 3 || es[len(es)-1].Pos.Line != 3+10000-1 {
		t.Fatalf("kept errors from line %d to %d, want the first by position", es[0].Pos.Line, es[len(es)-1].Pos.Line)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Pos.Line < es[i-1].Pos.Line {
			t.Fatalf("errors not sorted by position at %d", i)
		}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "invalid configuration (100,000 errors):") || !strings.HasSuffix(msg, "\n  … and 99,900 more") ||
		strings.Count(msg, "\n") != 101 {
		t.Errorf("message of %d lines, head %q, tail %q", strings.Count(msg, "\n"), msg[:60], msg[len(msg)-40:])
	}
}

// Errors had no position when an item was not a mapping (the later checks
// reported at an empty position) or a set element was null.
func TestEveryErrorHasAPosition(t *testing.T) {
	for _, f := range []string{
		"version: 1\nroutes: [5, [x], {}]\nrules: [x]\nfou: [1]\n",
		"version: 1\nlinks:\n  br0: {kind: bridge, addresses: [[x], {}]}\n  wg0: {kind: wireguard, wireguard: {peers: [x]}}\n",
		"version: 1\nnftables:\n  inet f:\n    sets:\n      s: {type: ipv4_addr, elements: [~, [x]]}\n    chains:\n      c: {rules: [~], priority: [x]}\n",
		"version: 1\npools:\n  p: {subnets: [~, x]}\n",
		"",
		"# only a comment\n",
	} {
		_, err := Parse([]Source{src("f.yaml", f), src("conf.d/g.yaml", f)})
		var es Errors
		if !errors.As(err, &es) {
			t.Fatalf("file %q: %v", f, err)
		}
		for _, e := range es {
			if e.Pos.Line < 1 || e.Pos.Col < 1 {
				t.Errorf("file %q: error without a position: %s", f, e)
			}
		}
	}
}

// Symbolic links in conf.d were skipped without a word.
func TestDropInSymlinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, "conf.d", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("main.yaml", "version: 1\n")
	write("real.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n")
	link("../real.yaml", "10-linked.yaml")
	main := filepath.Join(dir, "main.yaml")
	cfg, err := Load(main, DropInDir(main))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.State.Links) != 1 {
		t.Errorf("links %v, want br0 from the linked fragment", cfg.State.SortedLinkNames())
	}
	for _, c := range []struct{ target, name string }{
		{"../nonexistent.yaml", "20-dangling.yaml"},
		{"30-loop.yaml", "30-loop.yaml"},
		{"..", "40-dir.yaml"},
	} {
		link(c.target, c.name)
		p := filepath.Join(dir, "conf.d", c.name)
		_, err := Load(main, DropInDir(main))
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s -> %s: error %v, want one naming %s", c.name, c.target, err, p)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// An empty or cut fragment declared nothing, and the daemon deleted what
// the fragment had declared.
func TestDropInNeedsVersion(t *testing.T) {
	main := src("main.yaml", "version: 1\n")
	for _, f := range []string{"", "\n", "# writing…\n", "links:\n  br0: {kind: bridge}\n"} {
		got := errorsOf(t, main, src("conf.d/f.yaml", f))
		if !strings.Contains(got, "conf.d/f.yaml:1:1: version: missing") {
			t.Errorf("fragment %q: errors %q", f, got)
		}
	}
}

// Beyond the cap, errors are counted, and the kept ones are the first by
// position whatever order they were found in.
func TestErrorListKeepsTheFirstByPosition(t *testing.T) {
	l := &errList{max: 3}
	for _, line := range []int{9, 4, 7, 1, 8, 4, 2, 6} {
		l.add(Pos{"f.yaml", line, 1}, "", "at %d", line)
	}
	err := l.err()
	var es Errors
	if !errors.As(err, &es) || ErrorCount(err) != 7 {
		t.Fatalf("count %d, want 7 (one position twice)", ErrorCount(err))
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Msg)
	}
	if strings.Join(got, " ") != "at 1 at 2 at 4" {
		t.Errorf("kept %q, want the first three by position", got)
	}
	if want := "invalid configuration (7 errors):\n  f.yaml:1:1: at 1\n  f.yaml:2:1: at 2\n  f.yaml:4:1: at 4\n  … and 4 more"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

// TestNotMappingItems: list items that are not mappings are reported by
// the decoder and stood for by one shared entry (Meta.notMapping), which
// the checks of meaning skip. The counts and the errors kept are those the
// decoder gave when it still made a struct per item and checked each (the
// reference it was compared with, recorded here): every item is reported
// once, at its position, and an alias of a reported item adds nothing.
func TestNotMappingItems(t *testing.T) {
	many := strings.Repeat("x,", MaxKeptErrors+500) + "[y], *a, {}"
	for _, c := range []struct {
		file        string
		count       int
		first, last string
	}{
		{"version: 1\nlinks:\n  d: {kind: device}\nroutes: [&a x, " + many + ", {to: 10.0.0.0/24, dev: d}]\n", 10503,
			`f.yaml:4:10: routes[0]: expected a mapping, found "x"`, `f.yaml:4:20012: routes[9999]: expected a mapping, found "x"`},
		{"version: 1\nrules: [&a x, " + many + ", {priority: 100, table: 10}]\n", 10503,
			`f.yaml:2:9: rules[0]: expected a mapping, found "x"`, `f.yaml:2:20011: rules[9999]: expected a mapping, found "x"`},
		{"version: 1\nfou: [&a x, " + many + ", {port: 5555, ipproto: 4}]\n", 10503,
			`f.yaml:2:7: fou[0]: expected a mapping, found "x"`, `f.yaml:2:20009: fou[9999]: expected a mapping, found "x"`},
		{"version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard:\n      private-key-file: /nonexistent\n      peers: [&a x, " + many + "]\n", 10504,
			`f.yaml:6:25: links.wg0.wireguard.private-key-file: key file /nonexistent does not exist`, `f.yaml:7:20015: links.wg0.wireguard.peers[9998]: expected a mapping, found "x"`},
		{"version: 1\nroutes:\n  - x\n  - [1, 2]\n  - {to: default, via: 10.0.0.1}\n  - 7\n", 3,
			`f.yaml:3:5: routes[0]: expected a mapping, found "x"`, `f.yaml:6:5: routes[3]: expected a mapping, found "7"`},
		{"version: 1\npools:\n  p: {subnets: &s [10.0.0.0/24, &a x, " + many + ", default, 10.0.0.1/24, \"fe80::%x/64\", 10.0.0.0/25, ~, [y]]}\n  q: {subnets: *s}\n", 10510,
			`f.yaml:3:33: pools.p.subnets[1]: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or "default"), found "x"`,
			`f.yaml:3:20035: pools.p.subnets[10000]: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or "default"), found "x"`},
	} {
		_, err := Parse([]Source{{Name: "f.yaml", Data: []byte(c.file)}})
		var es Errors
		if !errors.As(err, &es) || ErrorCount(err) != c.count || len(es) != min(c.count, MaxKeptErrors) {
			t.Errorf("file %.60q…: %d errors, %d kept; want %d", c.file, ErrorCount(err), len(es), c.count)
			continue
		}
		if first, last := es[0].Error(), es[len(es)-1].Error(); first != c.first || last != c.last {
			t.Errorf("file %.60q…: errors from\n%s\nto\n%s\nwant from\n%s\nto\n%s", c.file, first, last, c.first, c.last)
		}
	}
}

// prefixFails says what Prefix.parse says, without the message.
func TestPrefixFails(t *testing.T) {
	for _, s := range []string{"", "x", "default", "all", "10.0.0.0/8", "10.0.0.1/8", "10.0.0.0", "fd00::/64", "fe80::%eth0/64", "fd00::1/64", "10.0.0.0/33", " 10.0.0.0/8", "::/0", "0.0.0.0/0", "Default"} {
		if got, want := prefixFails(s), (&Prefix{}).parse(s) != nil; got != want {
			t.Errorf("%q: prefixFails %v, parse fails %v", s, got, want)
		}
	}
}

func TestIfAddrFails(t *testing.T) {
	for _, s := range []string{"", "x", "/", "10.0.0.1", "10.0.0.1/24", "10.0.0.1/33", "fd00::1/64", "fe80::1%eth0/64", "%/", " 10.0.0.1/24", "10.0.0.1/24 ", "::/0", "10.0.0.1//24", "x/24"} {
		if got, want := ifAddrFails(s), (&IfAddr{}).parse(s) != nil; got != want {
			t.Errorf("%q: ifAddrFails %v, parse fails %v", s, got, want)
		}
	}
}
