package desired

import (
	"strings"
	"testing"
	"time"
)

func TestNftErrorsPointAtTheText(t *testing.T) {
	src := `version: 1
nftables:
  inet t:
    sets:
      s: {type: ipv4_addr, elements: [10.0.0.0/8]}
      p: {type: ports}
    chains:
      c:
        type: filter
        hook: prerouting
        priority: filtre
        rules:
          - ip daddr @s frobnicate
          - "ip daddr @nope accept"
          - jump c
  bogus t2: {}
`
	_, err := Parse([]Source{{Name: "f.yaml", Data: []byte(src)}})
	if err == nil {
		t.Fatal("no error")
	}
	// A type other than netreconcile's own five ("ports") is nft's to
	// judge: validate compiles it (test/integration).
	for _, want := range []string{
		`f.yaml:5:39: nftables.inet t.sets.s.elements[0]: "10.0.0.0/8" is a prefix; a set of prefixes needs flags [interval]`,
		`f.yaml:11:19: nftables.inet t.chains.c.priority: expected a number or one of raw, mangle, dstnat, filter, security, srcnat`,
		`f.yaml:16:13: nftables.bogus t2: expected a table as "FAMILY NAME"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	// A rule is one line of nft and no more: a text that would end the
	// command nft reads it in, or run past its line, is refused here;
	// everything else about it is nft's to judge (nftcompile).
	src = strings.Replace(src, "filtre", "filter", 1)
	src = strings.Replace(src, "flags: [interval]", "", 1)
	src = strings.Replace(src, "{type: ipv4_addr,", "{type: ipv4_addr, flags: [interval],", 1)
	src = strings.Replace(src, "      p: {type: ports}\n", "", 1)
	src = strings.Replace(src, "  bogus t2: {}\n", "", 1)
	src = strings.Replace(src, "          - ip daddr @s frobnicate\n", "          - accept; include \"/etc/shadow\"\n", 1)
	src = strings.Replace(src, "          - \"ip daddr @nope accept\"\n", "          - 'tcp dport { 22, 80 accept'\n", 1)
	src = strings.Replace(src, "          - jump c\n", "          - \"accept comment \\\"x\\ny\\\"\"\n          - 'iifname \"eth0 accept'\n          - accept } }\n          - accept # ; } {\n", 1)
	_, err = Parse([]Source{{Name: "f.yaml", Data: []byte(src)}})
	for _, want := range []string{
		`f.yaml:12:19: nftables.inet t.chains.c.rules[0]: ";" ends an nft command: a rule is one command (give each rule its own entry)`,
		`f.yaml:13:24: nftables.inet t.chains.c.rules[1]: "{" not closed; expected a closing "}"`,
		`f.yaml:14:13: nftables.inet t.chains.c.rules[2]: control character '\n'; a rule is one line of nft`,
		`f.yaml:15:22: nftables.inet t.chains.c.rules[3]: string not closed; expected a closing "`,
		`f.yaml:16:20: nftables.inet t.chains.c.rules[4]: "}" closes no "{"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	if n := ErrorCount(err); n != 5 {
		t.Errorf("%d errors, want 5 (a comment's ; and braces are nft's to ignore):\n%v", n, err)
	}
}

// A list of rules reached again through an alias is decoded once and
// shared when it is clean, and each chain's rules still say where they are
// in their own chain. One with a bad item is decoded at each path, and
// refused at the item (one error a position, under the first path).
func TestAliasedRuleListsDecodeOnce(t *testing.T) {
	clean := "version: 1\nnftables:\n  inet t:\n    chains:\n      a: {rules: &r [\"counter\", \"accept\"]}\n      b: {rules: *r}\n"
	cfg, err := Parse([]Source{{Name: "f.yaml", Data: []byte(clean)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		c := cfg.State.NFTables[0].Chain(name)
		if c == nil || len(c.Rules) != 2 {
			t.Fatalf("chain %s: %+v", name, c)
		}
		want := "nftables.inet t.chains." + name + ".rules[1]"
		if got := c.Rules[1].Source.Path(); got != want || c.Rules[1].Source.At(0) != "f.yaml:5:34" {
			t.Errorf("chain %s's second rule is at %s %s, want %s f.yaml:5:34", name, c.Rules[1].Source.At(0), got, want)
		}
	}
	bad := strings.Replace(clean, `"accept"]`, `[accept]]`, 1)
	_, err = Parse([]Source{{Name: "f.yaml", Data: []byte(bad)}})
	if want := "f.yaml:5:33: nftables.inet t.chains.a.rules[1]: expected a string, found a list"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("errors lack %q:\n%v", want, err)
	}
}

// An element written twice in a set or map nft declares is refused, as in
// a set of netreconcile's own types, and as the JSON Schema's uniqueItems
// refuses it (test/confschema's differential met the walk's maps with an
// element given twice: the loader took the file, the schema did not).
func TestNftDeclaredElementGivenTwice(t *testing.T) {
	src := `version: 1
nftables:
  inet t:
    sets:
      s: {typeof: meta mark, elements: ["0x20", "0x40", "0x20"]}
    maps:
      m: {type: "mark : verdict", elements: ["0x20 : accept", "0x20 : accept"]}
`
	_, err := Parse([]Source{{Name: "f.yaml", Data: []byte(src)}})
	for _, want := range []string{
		`f.yaml:5:57: nftables.inet t.sets.s.elements[2]: element given twice (also at f.yaml:5:41)`,
		`f.yaml:7:63: nftables.inet t.maps.m.elements[1]: element given twice (also at f.yaml:7:46)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

// A set's timeout may be given in days, as nft writes and lists one
// (`timeout 2d3h`): nft took such a set and validate refused it (issue 31,
// nftables' tests/py inet/sets.t). Days go with the other units, for
// netreconcile's own set types and for sets nft declares alike.
func TestIssue31NftSetTimeoutInDays(t *testing.T) {
	src := `version: 1
nftables:
  inet t:
    sets:
      own: {type: ipv6_addr, timeout: 2d3h0m7s}
      whole: {type: ipv4_addr, timeout: 1d}
      nfts: {type: ipv4_addr . inet_service, timeout: 10d1ms}
    chains:
      c: {rules: []}
`
	cfg, err := Parse([]Source{{Name: "f.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	tab := cfg.State.NFTables[0]
	day := 24 * time.Hour
	if s := tab.Set("own"); s == nil || s.DefaultTimeout != 2*day+3*time.Hour+7*time.Second || !s.Timeout {
		t.Errorf("own: %+v", s)
	}
	if s := tab.Set("whole"); s == nil || s.DefaultTimeout != day {
		t.Errorf("whole: %+v", s)
	}
	if s := tab.Set("nfts"); s == nil || !strings.Contains(s.Decl, "timeout 10d1ms;") {
		t.Errorf("nfts: %+v", s)
	}
	for _, bad := range []string{"1.5d", "d3h", "3d-1h", "70000d", "2dd"} {
		_, err := Parse([]Source{{Name: "f.yaml", Data: []byte(strings.Replace(src, "timeout: 1d}", "timeout: "+bad+"}", 1))}})
		if err == nil || !strings.Contains(err.Error(), "nftables.inet t.sets.whole.timeout: expected a duration") {
			t.Errorf("timeout %s: %v", bad, err)
		}
	}
}

// A set of netreconcile's own types with flags interval and timeout is
// refused at its flags, saying that nft takes the pair and why this does
// not: the interval's two elements.
func TestNftSetIntervalWithTimeoutRefusedWithTheReason(t *testing.T) {
	for _, set := range []string{
		"{type: ipv4_addr, flags: [interval, timeout]}",
		"{type: ipv6_addr, flags: [interval], timeout: 1h}",
	} {
		src := "version: 1\nnftables:\n  inet t:\n    sets:\n      s: " + set + "\n"
		_, err := Parse([]Source{{Name: "f.yaml", Data: []byte(src)}})
		want := "f.yaml:5:"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nftables.inet t.sets.s.flags: flags interval and timeout together are not supported (nft takes them): an interval is two kernel elements") {
			t.Errorf("%s: %v, want the refusal at its flags", set, err)
		}
	}
}
