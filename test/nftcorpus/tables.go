// Package nftcorpus is the differential of netreconcile's nftables rules
// against nft itself: a corpus of rules in our own words covering the
// syntax classes of nft (those of nftables' own tests/py for the families
// any, inet, ip and ip6), a seeded generator of rule texts over the same
// classes, and a harness that runs rules through netreconcile and through
// `nft -f` in two fresh namespaces and compares the kernel's rules
// (`nft --debug=netlink list`, the bytecode, and `nft list`, the words), or
// that both refused.
//
// nftables' tests/py are not vendored: they are GPL test data of another
// project, and Debian's source package is not reachable from every build
// machine. The corpus is written here, rule by rule; nft is the oracle.
package nftcorpus

import (
	"fmt"
	"strings"
)

// TableName is the table the differential's rules go in, in every family.
const TableName = "nrcd"

// Families are the table families of the corpus.
var Families = []string{"ip", "ip6", "inet", "arp", "bridge", "netdev"}

// chain is a chain of the standard tables.
type chain struct {
	name, typ, hook, prio string
	fams                  string // the families that have it
}

// chains are the standard tables' chains: base chains of every type and
// hook the families have, and a regular one to jump to.
var chains = []chain{
	{"in", "filter", "input", "0", "ip ip6 inet arp bridge"},
	{"out", "filter", "output", "0", "ip ip6 inet arp bridge"},
	{"forw", "filter", "forward", "0", "ip ip6 inet bridge"},
	{"pre", "filter", "prerouting", "-150", "ip ip6 inet bridge"},
	{"post", "filter", "postrouting", "0", "ip ip6 inet bridge"},
	{"natpre", "nat", "prerouting", "-100", "ip ip6 inet"},
	{"natpost", "nat", "postrouting", "100", "ip ip6 inet"},
	{"natout", "nat", "output", "-100", "ip ip6 inet"},
	{"natin", "nat", "input", "100", "ip ip6 inet"},
	{"rout", "route", "output", "-150", "ip ip6 inet"},
	{"ing", "filter", "ingress", "0", "netdev"},
	{"egr", "filter", "egress", "0", "netdev"},
	{"helper", "", "", "", "ip ip6 inet arp bridge netdev"},
}

// decl is a set, map or object of the standard tables, in the file's words
// and in nft's.
type decl struct {
	kind, name string // "sets", "maps", "objects"
	yaml, nft  string
	fams       string
}

var decls = []decl{
	{"sets", "s4", `{type: ipv4_addr, flags: [interval], elements: [10.0.0.0/8, 192.168.0.0/16, 172.16.1.1]}`,
		"set s4 { type ipv4_addr; flags interval; elements = { 10.0.0.0/8, 192.168.0.0/16, 172.16.1.1 } }", "ip inet bridge netdev"},
	{"sets", "s6", `{type: ipv6_addr, flags: [interval], elements: ["fd00::/8", "2001:db8::1"]}`,
		"set s6 { type ipv6_addr; flags interval; elements = { fd00::/8, 2001:db8::1 } }", "ip6 inet bridge netdev"},
	{"sets", "sp", `{type: inet_service, elements: [22, 80, 443]}`,
		"set sp { type inet_service; elements = { 22, 80, 443 } }", "ip ip6 inet bridge netdev"},
	{"sets", "sm", `{type: mark, elements: [0x1, 0x20]}`,
		"set sm { type mark; elements = { 0x1, 0x20 } }", "ip ip6 inet arp bridge netdev"},
	{"sets", "spr", `{type: inet_proto, elements: [6, 17]}`,
		"set spr { type inet_proto; elements = { 6, 17 } }", "ip ip6 inet bridge netdev"},
	{"sets", "st", `{type: ipv4_addr, flags: [timeout], timeout: 1h}`,
		"set st { type ipv4_addr; flags timeout; timeout 1h; }", "ip inet"},
	{"sets", "cs", `{type: "ipv4_addr . inet_service", flags: [interval], elements: ["10.0.0.0/8 . 22-25", "192.168.1.1 . 80"]}`,
		"set cs { type ipv4_addr . inet_service; flags interval; elements = { 10.0.0.0/8 . 22-25, 192.168.1.1 . 80 } }", "ip inet"},
	{"sets", "cs6", `{type: "ipv6_addr . inet_proto", elements: ["fd00::1 . tcp"]}`,
		"set cs6 { type ipv6_addr . inet_proto; elements = { fd00::1 . tcp } }", "ip6 inet"},
	{"sets", "dyn", `{typeof: "ip saddr", flags: [dynamic, timeout], timeout: 1m, size: 4096}`,
		"set dyn { typeof ip saddr; flags dynamic,timeout; timeout 1m; size 4096; }", "ip inet"},
	{"sets", "dyn6", `{typeof: "ip6 saddr . tcp dport", flags: [dynamic], size: 1024}`,
		"set dyn6 { typeof ip6 saddr . tcp dport; flags dynamic; size 1024; }", "ip6 inet"},
	{"sets", "ifs", `{type: ifname, elements: ['"eth0"', '"wg*"']}`,
		"set ifs { type ifname; flags interval; elements = { \"eth0\", \"wg*\" } }", ""},
	{"sets", "ifn", `{type: ifname, elements: ['"eth0"', '"lo"']}`,
		"set ifn { type ifname; elements = { \"eth0\", \"lo\" } }", "ip ip6 inet bridge netdev"},
	{"sets", "eth", `{type: ether_addr, elements: ["00:11:22:33:44:55"]}`,
		"set eth { type ether_addr; elements = { 00:11:22:33:44:55 } }", "ip ip6 inet bridge netdev"},
	{"maps", "vm", `{type: "inet_service : verdict", elements: ["22 : accept", "23 : drop", "24 : jump helper"]}`,
		"map vm { type inet_service : verdict; elements = { 22 : accept, 23 : drop, 24 : jump helper } }", "ip ip6 inet bridge netdev"},
	{"maps", "mm", `{type: "ipv4_addr : mark", elements: ["10.1.1.1 : 0x5", "10.1.1.2 : 0x6"]}`,
		"map mm { type ipv4_addr : mark; elements = { 10.1.1.1 : 0x5, 10.1.1.2 : 0x6 } }", "ip inet"},
	{"maps", "nm", `{type: "ipv4_addr : ipv4_addr", flags: [interval], elements: ["10.2.0.0/16 : 192.168.5.5"]}`,
		"map nm { type ipv4_addr : ipv4_addr; flags interval; elements = { 10.2.0.0/16 : 192.168.5.5 } }", "ip inet"},
	{"maps", "pm", `{type: "inet_service : ipv4_addr . inet_service", elements: ["8080 : 10.3.3.3 . 80"]}`,
		"map pm { type inet_service : ipv4_addr . inet_service; elements = { 8080 : 10.3.3.3 . 80 } }", "ip inet"},
	{"maps", "om", `{type: "inet_service : counter", elements: ['22 : "cnt"', '80 : "cnt2"']}`,
		"map om { type inet_service : counter; elements = { 22 : \"cnt\", 80 : \"cnt2\" } }", "ip ip6 inet bridge netdev"},
	{"maps", "qm", `{type: "ipv4_addr : quota", elements: ['10.4.4.4 : "q"']}`,
		"map qm { type ipv4_addr : quota; elements = { 10.4.4.4 : \"q\" } }", "ip inet"},
	{"maps", "ifv", `{typeof: "iifname : verdict", elements: ['"eth0" : accept', '"lo" : drop']}`,
		"map ifv { typeof iifname : verdict; elements = { \"eth0\" : accept, \"lo\" : drop } }", "ip ip6 inet bridge netdev"},
	{"objects", "cnt", "counter", "counter cnt { }", "ip ip6 inet arp bridge netdev"},
	{"objects", "cnt2", "counter packets 10 bytes 1000", "counter cnt2 { packets 10 bytes 1000 }", "ip ip6 inet arp bridge netdev"},
	{"objects", "q", "quota 25 mbytes", "quota q { 25 mbytes }", "ip ip6 inet arp bridge netdev"},
	{"objects", "qo", "quota over 900 mbytes", "quota qo { over 900 mbytes }", "ip ip6 inet arp bridge netdev"},
	{"objects", "lim", "limit rate 10/second burst 20 packets", "limit lim { rate 10/second burst 20 packets }", "ip ip6 inet arp bridge netdev"},
	{"objects", "limb", "limit rate over 2 mbytes/second", "limit limb { rate over 2 mbytes/second }", "ip ip6 inet arp bridge netdev"},
	{"objects", "ftp", `'ct helper { type "ftp" protocol tcp; }'`, "ct helper ftp { type \"ftp\" protocol tcp; }", "ip ip6 inet"},
	{"objects", "cto", `'ct timeout { protocol tcp; policy = { established: 300, close: 10 } }'`,
		"ct timeout cto { protocol tcp; policy = { established: 300, close: 10 }; }", "ip ip6 inet"},
	{"objects", "cte", `'ct expectation { protocol tcp; dport 2121; timeout 1m; size 8; }'`,
		"ct expectation cte { protocol tcp; dport 2121; timeout 1m; size 8; }", "ip"},
	{"objects", "syn", "synproxy mss 1460 wscale 7 timestamp sack-perm", "synproxy syn { mss 1460 wscale 7 timestamp sack-perm }", "ip ip6 inet"},
}

func has(fams, f string) bool { return strings.Contains(" "+fams+" ", " "+f+" ") }

// Chains returns the chain names a family's standard table has.
func Chains(family string) []string {
	var out []string
	for _, c := range chains {
		if has(c.fams, family) {
			out = append(out, c.name)
		}
	}
	return out
}

// Table is a table the differential's rules go in: its family, its chains
// and its sets, maps and objects. Each family has a standard one
// (Standard); a test file of nftables' own suite makes its own (ReadT).
// Cases are run table by table, a table per pair of namespaces.
type Table struct {
	Family string
	Chains []Chain
	Decls  []Decl
	// Label names the table in logs (a test file and its table line).
	Label string
	// Elems are lines of elements to add to its sets, in order.
	Elems []ElemLine
}

// ElemLine is a line of elements for a set of a Table, and where it was
// read and what its file says nft makes of it.
type ElemLine struct {
	Set            string
	Elems          []string
	Source, Expect string
	// Early says the line comes before its set's declaration in its
	// file: nft refuses it (no such set), and it is not run.
	Early bool
}

// Chain is a chain of a Table; Hook "" is a regular chain.
type Chain struct {
	Name, Type, Hook, Prio, Device string
}

// Decl is a set, map or object of a Table, in the file's words and in
// nft's (a line of a table block).
type Decl struct {
	Kind, Name string // Kind: "sets", "maps", "objects"
	YAML, Nft  string
}

var standard = map[string]*Table{}

func init() {
	for _, fam := range Families {
		t := &Table{Family: fam, Label: "standard " + fam}
		for _, c := range chains {
			if !has(c.fams, fam) {
				continue
			}
			ch := Chain{Name: c.name, Type: c.typ, Hook: c.hook, Prio: c.prio}
			if fam == "netdev" && c.hook != "" {
				ch.Device = "lo"
			}
			t.Chains = append(t.Chains, ch)
		}
		for _, d := range decls {
			if has(d.fams, fam) {
				t.Decls = append(t.Decls, Decl{Kind: d.kind, Name: d.name, YAML: d.yaml, Nft: d.nft})
			}
		}
		standard[fam] = t
	}
}

// Standard returns a family's standard table.
func Standard(family string) *Table { return standard[family] }

// tableOf is the table a case's rule goes in.
func tableOf(c Case) *Table {
	if c.Table != nil {
		return c.Table
	}
	return Standard(c.Family)
}

// YAML is the table with rules in its chains, as a netreconcile file.
func (t *Table) YAML(rules map[string][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nnftables:\n  %s %s:\n", t.Family, TableName)
	for _, kind := range []string{"sets", "maps", "objects"} {
		first := true
		for _, d := range t.Decls {
			if d.Kind != kind {
				continue
			}
			if first {
				fmt.Fprintf(&b, "    %s:\n", kind)
				first = false
			}
			fmt.Fprintf(&b, "      %s: %s\n", d.Name, d.YAML)
		}
	}
	b.WriteString("    chains:\n")
	for _, c := range t.Chains {
		fmt.Fprintf(&b, "      %s:\n", c.Name)
		if c.Hook != "" {
			fmt.Fprintf(&b, "        type: %s\n        hook: %s\n        priority: %s\n", c.Type, c.Hook, c.Prio)
			if c.Device != "" {
				fmt.Fprintf(&b, "        device: %s\n", c.Device)
			}
		}
		b.WriteString("        rules:\n")
		for _, r := range rules[c.Name] {
			fmt.Fprintf(&b, "          - %q\n", r)
		}
		if len(rules[c.Name]) == 0 {
			b.WriteString("          []\n")
		}
	}
	return strings.ReplaceAll(b.String(), "        rules:\n          []\n", "        rules: []\n")
}

// Script is the table as an nft script, and the rules as `add rule` lines
// after it: line[i] is the rule's (chain, index) for the lines that are
// rules.
func (t *Table) Script(rules []ChainRule) (string, map[int]ChainRule) {
	var b strings.Builder
	lines := map[int]ChainRule{}
	n := 0
	w := func(s string) {
		b.WriteString(s)
		b.WriteByte('\n')
		n++
	}
	w(fmt.Sprintf("table %s %s {", t.Family, TableName))
	for _, kind := range []string{"objects", "sets", "maps"} {
		for _, d := range t.Decls {
			if d.Kind == kind {
				w("\t" + d.Nft)
			}
		}
	}
	for _, c := range t.Chains {
		if c.Hook == "" {
			w("\tchain " + c.Name + " { }")
			continue
		}
		dev := ""
		if c.Device != "" {
			dev = fmt.Sprintf(" device %q", c.Device)
		}
		w(fmt.Sprintf("\tchain %s { type %s hook %s%s priority %s; }", c.Name, c.Type, c.Hook, dev, c.Prio))
	}
	w("}")
	for _, r := range rules {
		w(fmt.Sprintf("add rule %s %s %s %s", t.Family, TableName, r.Chain, r.Rule))
		lines[n] = r
	}
	return b.String(), lines
}

// Scripts is Script in several runs of nft -f, in turn in one namespace:
// a new one at each rule alone says must start one (nft's scanner keeps
// state from one command to the next in one run: NftTakes). lines[k] is
// Script's map for script k.
func (t *Table) Scripts(rules []ChainRule, alone func(ChainRule) bool) ([]string, []map[int]ChainRule) {
	first := len(rules)
	for i, r := range rules {
		if alone(r) {
			first = i
			break
		}
	}
	s, l := t.Script(rules[:first])
	scripts, lines := []string{s}, []map[int]ChainRule{l}
	for i := first; i < len(rules); i++ {
		if i == first || alone(rules[i]) {
			scripts, lines = append(scripts, ""), append(lines, map[int]ChainRule{})
		}
		k := len(scripts) - 1
		r := rules[i]
		scripts[k] += fmt.Sprintf("add rule %s %s %s %s\n", t.Family, TableName, r.Chain, r.Rule)
		lines[k][strings.Count(scripts[k], "\n")] = r
	}
	return scripts, lines
}

// ChainRule is a rule of a chain, and its index among the chain's rules.
type ChainRule struct {
	Chain string
	Index int
	Rule  string
}
