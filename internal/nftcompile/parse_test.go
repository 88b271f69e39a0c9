package nftcompile

import (
	"reflect"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

func TestParseErrors(t *testing.T) {
	stderr := `/dev/stdin:9:34-34: Error: syntax error, unexpected newline
add rule inet t c tcp dport 0b101
                                 ^
/dev/stdin:5:43-48: Error: Statement after terminal statement has no effect
add rule inet t c tcp sport 22 masquerade accept
                               ~~~~~~~~~~ ^^^^^^
Error: Could not process rule: Too many links
nft: payload.c:117: payload_expr_pctx_update: Assertion ` + "`base->length > 0'" + ` failed.
`
	got := parseErrors(stderr)
	want := []nftError{
		{Line: 9, Col: 34, EndCol: 34, Msg: "syntax error, unexpected newline"},
		{Line: 5, Col: 43, EndCol: 48, Msg: "Statement after terminal statement has no effect"},
		{Msg: "Could not process rule: Too many links"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// Nothing placed, nothing that says Error: the whole text, once.
	if got := parseErrors("nft: payload.c:117: Assertion failed.\n"); len(got) != 1 || got[0].Line != 0 || !strings.Contains(got[0].Msg, "Assertion") {
		t.Errorf("an assertion: %+v", got)
	}
}

// Of the kernel's errors only the first placed one names a bad rule: the
// kernel refuses every rule of the table after it.
func TestFirstKernelError(t *testing.T) {
	es := []nftError{{Line: 7, Msg: kernelErrorPrefix + "Operation not supported"}, {Line: 5, Msg: kernelErrorPrefix + "Operation not supported"},
		{Line: 9, Msg: "syntax error"}, {Msg: kernelErrorPrefix + "unplaced"}}
	got := firstKernelError(es)
	want := []nftError{{Line: 9, Msg: "syntax error"}, {Msg: kernelErrorPrefix + "unplaced"}, {Line: 5, Msg: kernelErrorPrefix + "Operation not supported"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

const listing = `table ip other { # handle 2
	chain c { # handle 1
		accept # handle 2
	}
}
table inet fw { # handle 1
	counter web { # handle 1
	}

	quota budget { # handle 2
		over 100 mbytes
	}

	ct helper ftp { # handle 3
		type "ftp" protocol tcp
		l3proto inet
	}

	set svc { # handle 4
		type ipv4_addr . inet_service
		flags interval
		elements = { 10.0.0.0/8 . 22-25,
			     192.168.1.1 . 443 }
	}

	map ifv { # handle 5
		typeof iifname : verdict
		comment "by name"
		elements = { "lo" : drop, "a,b" : accept,
			     "eth0" : jump x }
	}

	chain input { # handle 6
		type filter hook input priority filter; policy accept;
		tcp dport { 22, 80 } accept comment "x # handle 99" # handle 10
		iifname "dummy\*" drop # handle 11
	}

	chain x { # handle 7
	}
}
`

func TestParseListing(t *testing.T) {
	l := ParseListing(listing, "inet", "fw")
	if want := map[string]map[uint64]string{
		"input": {10: `tcp dport { 22, 80 } accept comment "x # handle 99"`, 11: `iifname "dummy\*" drop`},
		"x":     {},
	}; !reflect.DeepEqual(l.Rules, want) {
		t.Errorf("rules %v\nwant %v", l.Rules, want)
	}
	if want := map[string]string{"web": "counter", "budget": "quota over 100 mbytes",
		"ftp": `ct helper { type "ftp" protocol tcp; l3proto inet; }`}; !reflect.DeepEqual(l.Objects, want) {
		t.Errorf("objects %v\nwant %v", l.Objects, want)
	}
	if want := (&model.NftListedSet{Type: "ipv4_addr . inet_service", Flags: []string{"interval"},
		Elements: []string{"10.0.0.0/8 . 22-25", "192.168.1.1 . 443"}}); !reflect.DeepEqual(l.Sets["svc"], want) {
		t.Errorf("set svc %+v\nwant %+v", l.Sets["svc"], want)
	}
	if want := (&model.NftListedSet{Map: true, Typeof: "iifname : verdict", Comment: `"by name"`,
		Elements: []string{`"lo" : drop`, `"a,b" : accept`, `"eth0" : jump x`}}); !reflect.DeepEqual(l.Sets["ifv"], want) {
		t.Errorf("map ifv %+v\nwant %+v", l.Sets["ifv"], want)
	}
	if l := ParseListing(listing, "ip", "other"); l.Rules["c"][2] != "accept" || len(l.Sets) != 0 {
		t.Errorf("the other table: %+v", l)
	}
}

func TestObjectParts(t *testing.T) {
	for decl, want := range map[string][2]string{
		"counter":                                   {"counter", ""},
		"quota over 25 mbytes":                      {"quota", "over 25 mbytes"},
		`ct helper { type "ftp" protocol tcp; }`:    {"ct helper", `type "ftp" protocol tcp;`},
		"ct timeout { protocol udp; }":              {"ct timeout", "protocol udp;"},
		"limit rate 10/second":                      {"limit", "rate 10/second"},
		`secmark "system_u:object_r:ssh_t:s0"`:      {"secmark", `"system_u:object_r:ssh_t:s0"`},
		"synproxy { mss 1460; wscale 7; }":          {"synproxy", "mss 1460; wscale 7;"},
		"ct expectation { protocol tcp; dport 1; }": {"ct expectation", "protocol tcp; dport 1;"},
	} {
		if k, b := objectParts(decl); k != want[0] || b != want[1] {
			t.Errorf("objectParts(%q) = %q, %q; want %q", decl, k, b, want)
		}
	}
}

// A key changes with what a rule's bytecode depends on and with nothing
// else: a set the text does not name, or another link, leaves it.
func TestKey(t *testing.T) {
	tb := &model.NftTable{Family: "inet", Name: "t",
		Sets:   []model.NftSet{{Name: "allow", Type: model.NftIPv4}, {Name: "other", Type: model.NftIPv6}},
		Chains: []model.NftChain{{Name: "in", Type: "filter", Hook: "input"}, {Name: "helper"}}}
	c := &tb.Chains[0]
	base := Key("v1", tb, c, "ip saddr @allow iif eth0 jump helper", map[string]int{"eth0": 2, "eth1": 3})
	same := Key("v1", tb, c, "ip saddr @allow iif eth0 jump helper", map[string]int{"eth0": 2, "eth1": 9})
	if base != same {
		t.Error("a link the text does not name changed the key")
	}
	tb2 := *tb
	tb2.Sets = []model.NftSet{tb.Sets[0], {Name: "other", Type: model.NftMark}}
	if Key("v1", &tb2, c, "ip saddr @allow iif eth0 jump helper", map[string]int{"eth0": 2}) != base {
		t.Error("a set the text does not name changed the key")
	}
	for what, k := range map[string]string{
		"nft's version":    Key("v2", tb, c, "ip saddr @allow iif eth0 jump helper", map[string]int{"eth0": 2}),
		"the link's index": Key("v1", tb, c, "ip saddr @allow iif eth0 jump helper", map[string]int{"eth0": 4}),
		"the chain's hook": Key("v1", tb, &model.NftChain{Name: "in", Type: "filter", Hook: "output"}, "ip saddr @allow iif eth0 jump helper", map[string]int{"eth0": 2}),
		"the text":         Key("v1", tb, c, "ip saddr @allow iif eth0 jump  helper", map[string]int{"eth0": 2}),
	} {
		if k == base {
			t.Errorf("%s did not change the key", what)
		}
	}
}

// A key typed where nft's words go is masked in nft's message even when
// nft quotes only part of it (it stops a word at '+').
func TestMaskSecretsInNftMessages(t *testing.T) {
	key := "Gd9cVKgrjK56O6RBrUQyp+t360pULMoB8eXQjoeMFQM="
	errs := Errors{{Pos: "f.yaml:3:9", Msg: "unknown datatype Gd9cVKgrjK56O6RBrUQyp"}, {Pos: "f.yaml:4:9", Msg: "unknown datatype ipv4_adr"}}
	maskSecrets(errs, []string{"type " + key + ";", "type ipv4_adr;"})
	if strings.Contains(errs[0].Msg, "Gd9cVKgr") || !strings.Contains(errs[0].Msg, "unknown datatype") {
		t.Errorf("a key's piece shown: %s", errs[0].Msg)
	}
	if errs[1].Msg != "unknown datatype ipv4_adr" {
		t.Errorf("a word that is no key masked: %s", errs[1].Msg)
	}
}

// A key in base64url (its '+' and '/' typed as '-' and '_') that nft
// quotes whole but for its padding: masking its longest piece of letters
// and digits alone broke the run the message's own redaction would have
// hidden, and left "-G2F4H-F_9VAuikc-0we78" shown (TestRedactionJudgesValuesNotOwnNames,
// with a key drawn at random).
func TestMaskSecretsLeavesNoStretchOfAKey(t *testing.T) {
	key := "xZSYJfLxCVfRjlCz1V4Yk-G2F4H-F_9VAuikc-0we78="
	errs := Errors{{Pos: "f.yaml:5:14", Msg: "unknown datatype " + strings.TrimSuffix(key, "=")}}
	maskSecrets(errs, []string{"type " + key + ";"})
	for i := 0; i+minSecretPiece <= len(key); i++ {
		if strings.Contains(errs[0].Msg, key[i:i+minSecretPiece]) {
			t.Fatalf("a stretch of the key shown: %s", errs[0].Msg)
		}
	}
	if !strings.HasPrefix(errs[0].Msg, "unknown datatype ") {
		t.Errorf("the message lost its words: %s", errs[0].Msg)
	}
}
