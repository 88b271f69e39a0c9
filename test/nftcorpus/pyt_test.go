package nftcorpus

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// A file in the .t format, in our own words: what ParsePyT must make of
// each kind of line.
const sampleT = `:in;type filter hook input priority 0
:dev-in;type filter hook ingress device lo priority 0
:side;

*ip;t-ip;in,side
*netdev;t-dev;dev-in
*mystery;t-x;in

!addrs type ipv4_addr . inet_service timeout 1h flags interval;ok
?addrs 10.0.0.1 . 22;ok
%hits type counter;ok
%cap type quota over 5 mbytes;ok
%ftp type ct helper { type "ftp" protocol tcp; };ok

# a comment
tcp dport 0x16 accept;ok;tcp dport 22 accept
ip saddr 1.2.3;fail
- meta nothing;ok
`

func TestParsePyT(t *testing.T) {
	f, err := ParsePyT("x/sample.t", sampleT)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tables) != 2 {
		t.Fatalf("tables: %d, want 2 (the mystery family left out)", len(f.Tables))
	}
	ip, dev := f.Tables[0], f.Tables[1]
	if ip.Family != "ip" || len(ip.Chains) != 2 || ip.Chains[1].Hook != "" {
		t.Errorf("ip table: %+v", ip)
	}
	if c := dev.Chains[0]; c.Device != "lo" || c.Hook != "ingress" || c.Prio != "0" {
		t.Errorf("netdev chain: %+v", c)
	}
	wantDecls := []Decl{
		{Kind: "sets", Name: "addrs", YAML: `{type: 'ipv4_addr . inet_service', timeout: '1h', flags: [interval]}`,
			Nft: "set addrs { type ipv4_addr . inet_service; timeout 1h; flags interval; }"},
		{Kind: "objects", Name: "hits", YAML: `'counter'`, Nft: "counter hits {  }"},
		{Kind: "objects", Name: "cap", YAML: `'quota over 5 mbytes'`, Nft: "quota cap { over 5 mbytes }"},
		{Kind: "objects", Name: "ftp", YAML: `'ct helper { type "ftp" protocol tcp; }'`, Nft: `ct helper ftp { type "ftp" protocol tcp; }`},
	}
	for _, tab := range f.Tables {
		if len(tab.Decls) != len(wantDecls) {
			t.Fatalf("%s: decls %+v", tab.Label, tab.Decls)
		}
		for i, d := range tab.Decls {
			if d != wantDecls[i] {
				t.Errorf("%s: decl %d: %+v, want %+v", tab.Label, i, d, wantDecls[i])
			}
		}
	}
	// Two rules, each in ip's two chains and netdev's one.
	if len(f.Cases) != 6 || f.Disabled != 1 || f.Elements != 1 || f.Skipped != 2 {
		t.Fatalf("cases %d disabled %d elements %d skipped %d", len(f.Cases), f.Disabled, f.Elements, f.Skipped)
	}
	c := f.Cases[0]
	if c.Rule != "tcp dport 0x16 accept" || c.Expect != "ok" || c.Chain != "in" || c.Table != ip || c.Source != "x/sample.t:16" {
		t.Errorf("first case: %+v", c)
	}
	if c := f.Cases[5]; c.Expect != "fail" || c.Table != dev || c.Chain != "dev-in" {
		t.Errorf("last case: %+v", c)
	}
	// The table's script and file name the same chains and declarations.
	script, _ := ip.Script([]ChainRule{{Chain: "in", Rule: c.Rule}})
	for _, want := range []string{"chain in { type filter hook input priority 0; }", "chain side { }", "counter hits {  }", "add rule ip nrcd in tcp dport 0x16 accept"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	y := dev.YAML(map[string][]string{"dev-in": {"accept"}})
	for _, want := range []string{"device: lo", "hits: 'counter'", `- "accept"`} {
		if !strings.Contains(y, want) {
			t.Errorf("file lacks %q:\n%s", want, y)
		}
	}
}

func TestParsePyTRefusesWhatItCannotRead(t *testing.T) {
	for name, text := range map[string]string{
		"chain not declared": "*ip;t;in\n",
		"rule before table":  "accept;ok\n",
		"verdict unknown":    ":in;\n*ip;t;in\naccept;maybe\n",
		"chain key unknown":  ":in;type filter hook input prio 0\n",
		"set flags garbled":  ":in;\n*ip;t;in\n!s type ipv4_addr sizes 3;ok\n",
	} {
		if _, err := ParsePyT("x.t", text); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// TestNftTestsPy runs nftables' own regression suite through netreconcile
// and through nft -f: every rule of the .t files under NFT_TESTS_PY (a
// tests/py directory of nftables' source) of the families netreconcile
// has, in every chain of every table of its file, must give the same
// kernel rule, or be refused by both. NFT_TESTS_PY_DIRS picks the
// subdirectories (by default those of the families netreconcile has:
// any,inet,ip,ip6,arp,bridge,netdev), NFT_TESTS_PY_FILES a
// regular expression over the files' names (any/ct.t). make test-nftpy
// fetches the suite. Where the host's nft judges a rule otherwise than
// the suite's nft did, that is counted apart (PyTDrift): nft is the
// oracle, the file's verdict is its own nft's.
func TestNftTestsPy(t *testing.T) {
	dir := os.Getenv("NFT_TESTS_PY")
	if dir == "" {
		t.Skip("NFT_TESTS_PY is not set: it names the tests/py directory of nftables' source (make test-nftpy fetches it)")
	}
	nettest.RequireTool(t, "nft")
	nettest.RequireRoot(t)
	subdirs := strings.Split(cmp.Or(os.Getenv("NFT_TESTS_PY_DIRS"), "any,inet,ip,ip6,arp,bridge,netdev"), ",")
	files, err := ReadPyTDir(dir, subdirs)
	if err != nil {
		t.Fatal(err)
	}
	only := regexp.MustCompile(os.Getenv("NFT_TESTS_PY_FILES"))
	var cases []Case
	var disabled, elements, skipped, nfiles int
	for _, f := range files {
		if !only.MatchString(f.Name) {
			continue
		}
		nfiles++
		cases = append(cases, f.Cases...)
		disabled += f.Disabled
		elements += f.Elements
		skipped += f.Skipped
	}
	t.Logf("%s: %d files, %d cases (rule, table, chain), %d element lines; not run: %d disabled rules, %d rules in tables of families netreconcile has not",
		filepath.Clean(dir), nfiles, len(cases), elements, disabled, skipped)
	results := Run(t, cases)
	var rules, decls, elems []Result
	for _, r := range results {
		switch r.Kind {
		case KindDecl:
			decls = append(decls, r)
		case KindElems:
			elems = append(elems, r)
		default:
			rules = append(rules, r)
		}
	}
	t.Logf("rules: %s", Tally(rules))
	t.Logf("element lines: %s", Tally(elems))
	drift := PyTDrift(rules)
	t.Logf("the host's nft against the suite's verdicts (not differences of netreconcile): %d the file says nft takes were refused, %d it says nft refuses were taken, %d identical ones nft lists otherwise than the file says",
		drift.OkButRefused, drift.FailButTaken, drift.ListedOtherwise)
	for _, r := range rules {
		if ListedOtherwise(r) {
			t.Logf("  the suite expects nft to list %s (%s) as %q; it lists %q", r.Case, r.Source, r.Listing, r.Listed)
		}
	}
	var drifted []Case
	for _, r := range rules {
		if r.Expect == "ok" && !NftTook(r) {
			drifted = append(drifted, r.Case)
		}
	}
	said := NftSays(t, drifted)
	reasons := map[string]int{}
	for i, c := range drifted {
		reasons[DriftReason(said[i])]++
		t.Logf("  the suite expects nft to take %s (%s): %s", c, c.Source, said[i])
	}
	for reason, n := range reasons {
		t.Logf("  %d: %s", n, reason)
	}
	classes, byClass := TallyByClass(rules)
	for _, c := range classes {
		t.Logf("  [%s] %s", c, byClass[c])
	}
	for _, r := range decls {
		t.Errorf("declaration of %s: nft takes it, netreconcile refuses it: %s\n%s", r.Class, r.Rule, r.Detail)
	}
	documented := 0
	defer func() {
		t.Logf("not identical nor refused by both, which netreconcile refuses by design (docs/config.md): %d", documented)
	}()
	for _, r := range append(rules, elems...) {
		if r.Documented != "" {
			documented++
			t.Logf("  refused by design: %s (%s): %s", r.Case, r.Source, r.Documented)
			continue
		}
		switch r.Outcome {
		case Differ, OnlyWeAccept, OnlyNftTakes:
			t.Errorf("%s (%s, %s): %s\n%s", r.Case, r.Source, tableOf(r.Case).Label, r.Outcome, r.Detail)
		}
	}
}

// Listings compare as nftables' runner compares them: spaces aside, a
// set's elements in any order; anything else counts.
func TestNormalListing(t *testing.T) {
	same := [][2]string{
		{"tcp dport {22,  80}", "tcp dport { 80, 22 }"},
		{"meta mark set ct mark map { 1 : 2, 3 : 4}", "meta mark set ct mark map {3 : 4,1 : 2 }"},
	}
	for _, p := range same {
		if normalListing(p[0]) != normalListing(p[1]) {
			t.Errorf("%q and %q differ: %q, %q", p[0], p[1], normalListing(p[0]), normalListing(p[1]))
		}
	}
	for _, p := range [][2]string{{"tcp dport { 22, 80 }", "tcp dport { 22, 81 }"}, {"ip ttl 3", "ip ttl 03"}, {"{ a }", "a"}} {
		if normalListing(p[0]) == normalListing(p[1]) {
			t.Errorf("%q and %q are the same", p[0], p[1])
		}
	}
}
