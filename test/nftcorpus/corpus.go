package nftcorpus

import (
	_ "embed"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

//go:embed corpus.txt
var corpusText string

// Corpus returns the corpus's cases: each rule in each of its families
// that has its chain.
func Corpus() []Case {
	var out []Case
	class, chain := "", ""
	var fams []string
	for i, line := range strings.Split(corpusText, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "[") {
			end := strings.Index(l, "]")
			f := strings.Fields(l[end+1:])
			if end < 0 || len(f) != 2 {
				panic(fmt.Sprintf("corpus.txt:%d: bad header %q", i+1, l))
			}
			class, fams, chain = l[1:end], strings.Split(f[0], ","), f[1]
			continue
		}
		for _, fam := range fams {
			if has(strings.Join(Chains(fam), " "), chain) {
				out = append(out, Case{Family: fam, Chain: chain, Rule: l, Class: class})
			}
		}
	}
	return out
}

// Sample returns n cases of cs, drawn with r, in their order.
func Sample(cs []Case, n int, r *rand.Rand) []Case {
	if n >= len(cs) {
		return cs
	}
	idx := r.Perm(len(cs))[:n]
	keep := make([]bool, len(cs))
	for _, i := range idx {
		keep[i] = true
	}
	var out []Case
	for i, c := range cs {
		if keep[i] {
			out = append(out, c)
		}
	}
	return out
}

// Gen draws rule texts over the corpus's classes: matches, statements and
// verdicts put together at random, with values in nft's several number
// syntaxes (and some that are not nft's), negated or not, single, ranges
// or anonymous sets. Many are refused by nft: the harness requires the
// same of netreconcile.
type Gen struct {
	R *rand.Rand
}

func (g *Gen) pick(xs ...string) string { return xs[g.R.Intn(len(xs))] }

func (g *Gen) chance(p float64) bool { return g.R.Float64() < p }

// number renders n in one of the syntaxes a user may write.
func (g *Gen) number(n int) string {
	switch g.R.Intn(8) {
	case 0:
		return fmt.Sprintf("0x%x", n)
	case 1:
		return fmt.Sprintf("0%o", n) // octal for nft
	case 2:
		if g.chance(0.1) {
			return "0b" + strconv.FormatInt(int64(n), 2) // not nft's
		}
	}
	return strconv.Itoa(n)
}

func (g *Gen) port() string {
	if g.chance(0.15) {
		return g.pick("ssh", "http", "https", "domain", "ntp", "smtp")
	}
	return g.number(g.R.Intn(65536))
}

func (g *Gen) v4() string {
	return fmt.Sprintf("%d.%d.%d.%d", g.R.Intn(224), g.R.Intn(256), g.R.Intn(256), g.R.Intn(256))
}

func (g *Gen) v6() string {
	return fmt.Sprintf("fd%02x:%x::%x", g.R.Intn(256), g.R.Intn(65536), g.R.Intn(65536))
}

// value renders one value, a range, or an anonymous set of them, maybe
// negated.
func (g *Gen) value(one func() string) string {
	neg := ""
	if g.chance(0.2) {
		neg = "!= "
	}
	switch g.R.Intn(5) {
	case 0:
		return neg + one() + "-" + one()
	case 1:
		n := 1 + g.R.Intn(4)
		var vs []string
		for i := 0; i < n; i++ {
			vs = append(vs, one())
		}
		return neg + "{ " + strings.Join(vs, ", ") + " }"
	}
	return neg + one()
}

func (g *Gen) match(fam string) string {
	l3 := fam == "ip" || fam == "ip6" || fam == "inet" || fam == "bridge" || fam == "netdev"
	var ms []func() string
	ms = append(ms,
		func() string { return "meta mark " + g.value(func() string { return g.number(g.R.Intn(1 << 16)) }) },
		func() string {
			return "meta mark & " + g.number(g.R.Intn(1<<16)) + " " + g.pick("==", "!=") + " " + g.number(g.R.Intn(1<<16))
		},
	)
	if fam != "arp" {
		ms = append(ms,
			func() string { return "iifname " + g.pick(`"eth0"`, `"wg*"`, `"x\*"`, `{ "a", "b" }`, `!= "lo"`) },
			func() string {
				return "meta l4proto " + g.value(func() string { return g.pick("tcp", "udp", "icmp", "sctp", "ipip", "17") })
			},
		)
	}
	if l3 {
		ms = append(ms,
			func() string { return g.pick("tcp", "udp") + " " + g.pick("dport", "sport") + " " + g.value(g.port) },
			func() string {
				return "tcp flags " + g.pick("syn", "syn,ack", "& (syn|ack) == syn", "& (fin|syn|rst) != 0", "{ syn, ack }")
			},
			func() string { return "th dport " + g.value(g.port) },
		)
	}
	if fam == "ip" || fam == "inet" || fam == "bridge" || fam == "netdev" {
		ms = append(ms,
			func() string { return "ip " + g.pick("saddr", "daddr") + " " + g.value(g.v4) },
			func() string {
				return "ip " + g.pick("saddr", "daddr") + " " + g.v4() + "/" + strconv.Itoa(g.R.Intn(33))
			},
			func() string { return "ip " + g.pick("saddr", "daddr") + " " + g.pick("@s4", "!= @s4") },
			func() string { return "ip ttl " + g.value(func() string { return g.number(g.R.Intn(300)) }) },
			func() string {
				return "ip protocol " + g.value(func() string { return g.pick("tcp", "udp", "icmp", "6") })
			},
			func() string {
				return "icmp type " + g.value(func() string { return g.pick("echo-request", "echo-reply", "8") })
			},
		)
	}
	if fam == "ip6" || fam == "inet" || fam == "bridge" || fam == "netdev" {
		ms = append(ms,
			func() string { return "ip6 " + g.pick("saddr", "daddr") + " " + g.value(g.v6) },
			func() string { return "ip6 hoplimit " + g.value(func() string { return g.number(g.R.Intn(300)) }) },
			func() string {
				return "icmpv6 type " + g.value(func() string { return g.pick("echo-request", "nd-neighbor-solicit", "1") })
			},
		)
	}
	if fam == "ip" || fam == "ip6" || fam == "inet" {
		ms = append(ms,
			func() string {
				return "ct state " + g.pick("established,related", "{ new, invalid }", "!= established", "new")
			},
			func() string { return "ct mark " + g.value(func() string { return g.number(g.R.Intn(256)) }) },
			func() string { return "meta nfproto " + g.pick("ipv4", "ipv6") },
		)
	}
	return ms[g.R.Intn(len(ms))]()
}

func (g *Gen) statement(fam string) string {
	ss := []string{"counter", "log", `log prefix "gen "`, "limit rate " + strconv.Itoa(1+g.R.Intn(100)) + "/second",
		"meta mark set " + g.number(g.R.Intn(1<<16)), "quota " + strconv.Itoa(1+g.R.Intn(100)) + " mbytes"}
	if fam == "ip" || fam == "ip6" || fam == "inet" {
		ss = append(ss, "ct mark set meta mark", "notrack")
	}
	return g.pick(ss...)
}

func (g *Gen) verdict(fam, chain string) string {
	vs := []string{"accept", "drop", "jump helper", "goto helper", "continue"}
	switch {
	case chain == "natpost" && fam != "arp":
		vs = append(vs, "masquerade", "snat ip to "+g.v4(), "snat to "+g.v4())
	case chain == "natpre":
		vs = append(vs, "dnat ip to "+g.v4(), "redirect to :"+g.port(), "dnat to "+g.v4()+":"+g.port())
	case chain == "in" && (fam == "ip" || fam == "ip6" || fam == "inet"):
		vs = append(vs, "reject", "reject with tcp reset", "reject with icmpx admin-prohibited")
	}
	return g.pick(vs...)
}

// Rule draws one rule for a chain of a family's standard table.
func (g *Gen) Rule(fam, chain string) string {
	var parts []string
	for i := g.R.Intn(3); i >= 0; i-- {
		parts = append(parts, g.match(fam))
	}
	if g.chance(0.4) {
		parts = append(parts, g.statement(fam))
	}
	if g.chance(0.7) {
		parts = append(parts, g.verdict(fam, chain))
	}
	return strings.Join(parts, " ")
}

// Cases draws n cases over the families and their chains.
func (g *Gen) Cases(n int) []Case {
	var out []Case
	for i := 0; i < n; i++ {
		fam := Families[g.R.Intn(len(Families))]
		cs := Chains(fam)
		chain := cs[g.R.Intn(len(cs))]
		out = append(out, Case{Family: fam, Chain: chain, Rule: g.Rule(fam, chain), Class: "generated"})
	}
	return out
}
