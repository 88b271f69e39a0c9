// Package nftrule parses the one-line nftables rules of the configuration
// file ("ip daddr @targets meta mark set meta mark & 0xffffffdf | 0x40 accept")
// into a small syntax tree, and renders its canonical text: the text a rule's
// identity hash is computed from.
//
// Rules are written as nft lines rather than as YAML mappings because the
// people who write them know nft: they copy lines from `nft list` and from
// documentation, and the golden tests compare against `nft -f` loading the
// same lines. Only a subset of nft is accepted, and every refusal names the
// word and what would be accepted there.
//
// The package is pure (no kernel types): the kernel package compiles a Rule
// into nftables expressions.
package nftrule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Rule is a parsed rule: matches and statements in written order, ending
// with at most one verdict.
type Rule struct {
	Stmts []Stmt
	// Offsets holds where each statement starts in the text (for errors).
	Offsets []int
}

// Stmt is one match or statement.
type Stmt interface {
	String() string
}

// String renders the canonical text.
func (r *Rule) String() string {
	parts := make([]string, len(r.Stmts))
	for i, s := range r.Stmts {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// ID is the rule's identity: a hash of its canonical text, stored in the
// rule's user data so that an unchanged rule is recognised in the kernel.
func (r *Rule) ID() string { return TextID(r.String()) }

// TextID hashes canonical text into an identity.
func TextID(canonical string) string {
	h := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(h[:8])
}

func neq(b bool) string {
	if b {
		return "!= "
	}
	return ""
}

// MarkMatch is `meta mark [& MASK ==|!=] VALUE`.
type MarkMatch struct {
	Mask    uint32
	HasMask bool
	Neq     bool
	Value   uint32
}

func (m *MarkMatch) String() string {
	if m.HasMask {
		op := "=="
		if m.Neq {
			op = "!="
		}
		return fmt.Sprintf("meta mark & 0x%08x %s 0x%08x", m.Mask, op, m.Value)
	}
	return fmt.Sprintf("meta mark %s0x%08x", neq(m.Neq), m.Value)
}

// IfnameMatch is `iifname "x"` / `oifname != "x*"`.
type IfnameMatch struct {
	Out  bool
	Neq  bool
	Name string // a trailing * matches a prefix
}

func (m *IfnameMatch) String() string {
	k := "iifname"
	if m.Out {
		k = "oifname"
	}
	return fmt.Sprintf("%s %s%q", k, neq(m.Neq), m.Name)
}

// L4ProtoMatch is `meta l4proto tcp`.
type L4ProtoMatch struct {
	Neq   bool
	Proto uint8
}

func (m *L4ProtoMatch) String() string {
	return fmt.Sprintf("meta l4proto %s%s", neq(m.Neq), ProtoName(m.Proto))
}

// NfprotoMatch is `meta nfproto ipv4|ipv6`.
type NfprotoMatch struct{ V6 bool }

func (m *NfprotoMatch) String() string {
	if m.V6 {
		return "meta nfproto ipv6"
	}
	return "meta nfproto ipv4"
}

// AddrMatch is `ip saddr 10.0.0.0/8`, `ip6 daddr != @set`.
type AddrMatch struct {
	V6, Dst, Neq bool
	Prefix       netip.Prefix // when Set is ""
	Set          string
}

func (m *AddrMatch) String() string {
	p, f := "ip", "saddr"
	if m.V6 {
		p = "ip6"
	}
	if m.Dst {
		f = "daddr"
	}
	v := "@" + m.Set
	if m.Set == "" {
		v = m.Prefix.String()
		if m.Prefix.IsSingleIP() {
			v = m.Prefix.Addr().String()
		}
	}
	return fmt.Sprintf("%s %s %s%s", p, f, neq(m.Neq), v)
}

// PortMatch is `tcp dport 22`, `udp sport != 1000-2000`, `tcp dport @ports`.
type PortMatch struct {
	Proto    uint8 // 6 or 17
	Dst, Neq bool
	Lo, Hi   uint16
	Set      string
}

func (m *PortMatch) String() string {
	f := "sport"
	if m.Dst {
		f = "dport"
	}
	v := "@" + m.Set
	if m.Set == "" {
		v = fmt.Sprint(m.Lo)
		if m.Hi != m.Lo {
			v = fmt.Sprintf("%d-%d", m.Lo, m.Hi)
		}
	}
	return fmt.Sprintf("%s %s %s%s", ProtoName(m.Proto), f, neq(m.Neq), v)
}

// TCPFlagsMatch is `tcp flags syn[,ack...]`: any of the flags is set.
type TCPFlagsMatch struct{ Flags uint8 }

func (m *TCPFlagsMatch) String() string {
	return "tcp flags " + bitNames(uint32(m.Flags), tcpFlagNames)
}

// CtStateMatch is `ct state established,related`: any of the states.
type CtStateMatch struct{ Bits uint32 }

func (m *CtStateMatch) String() string { return "ct state " + bitNames(m.Bits, ctStateNames) }

// Counter is `counter`.
type Counter struct{}

func (*Counter) String() string { return "counter" }

// Log is `log [prefix "p"] [level l] [group n]`.
type Log struct {
	Prefix   string
	Level    string // "" for the default
	Group    uint16
	HasGroup bool
}

func (l *Log) String() string {
	s := "log"
	if l.Prefix != "" {
		s += fmt.Sprintf(" prefix %q", l.Prefix)
	}
	if l.Level != "" {
		s += " level " + l.Level
	}
	if l.HasGroup {
		s += fmt.Sprintf(" group %d", l.Group)
	}
	return s
}

// MarkSet is `meta mark set VALUE` or `meta mark set meta mark & AND | OR`
// (FromMark); either operation may be absent (AND 0xffffffff, OR 0).
type MarkSet struct {
	FromMark bool
	And, Or  uint32
	Value    uint32
}

func (m *MarkSet) String() string {
	if !m.FromMark {
		return fmt.Sprintf("meta mark set 0x%08x", m.Value)
	}
	s := "meta mark set meta mark"
	if m.And != 0xffffffff {
		s += fmt.Sprintf(" & 0x%08x", m.And)
	}
	if m.Or != 0 {
		s += fmt.Sprintf(" | 0x%08x", m.Or)
	}
	return s
}

// MSSSet is `tcp option maxseg size set N` or `... set rt mtu`.
type MSSSet struct {
	RtMTU bool
	Size  uint16
}

func (m *MSSSet) String() string {
	if m.RtMTU {
		return "tcp option maxseg size set rt mtu"
	}
	return fmt.Sprintf("tcp option maxseg size set %d", m.Size)
}

// Masquerade is `masquerade`.
type Masquerade struct{}

func (*Masquerade) String() string { return "masquerade" }

// NAT is `snat [ip|ip6] to ADDR[:PORT]` / `dnat ...`.
type NAT struct {
	Dst  bool
	Addr netip.Addr
	Port uint16
}

func (n *NAT) String() string {
	k := "snat"
	if n.Dst {
		k = "dnat"
	}
	fam := "ip"
	to := n.Addr.String()
	if n.Addr.Is6() {
		fam = "ip6"
		if n.Port != 0 {
			to = "[" + to + "]"
		}
	}
	if n.Port != 0 {
		to += fmt.Sprintf(":%d", n.Port)
	}
	return fmt.Sprintf("%s %s to %s", k, fam, to)
}

// Verdict is accept, drop, return, continue, jump CHAIN or goto CHAIN.
type Verdict struct {
	Kind  string
	Chain string
}

func (v *Verdict) String() string {
	if v.Chain != "" {
		return v.Kind + " " + v.Chain
	}
	return v.Kind
}

// Protocols by name, as nft spells them.
var protoNames = map[string]uint8{"icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "ipv6": 41, "gre": 47, "esp": 50, "ah": 51, "icmpv6": 58, "sctp": 132, "udplite": 136, "ipip": 4}

// ProtoName names an IP protocol number the way nft does.
func ProtoName(p uint8) string {
	for n, v := range protoNames {
		if v == p {
			return n
		}
	}
	return fmt.Sprint(p)
}

var tcpFlagNames = []named{{"fin", 0x01}, {"syn", 0x02}, {"rst", 0x04}, {"psh", 0x08}, {"ack", 0x10}, {"urg", 0x20}, {"ecn", 0x40}, {"cwr", 0x80}}

var ctStateNames = []named{{"invalid", 1}, {"established", 2}, {"related", 4}, {"new", 8}, {"untracked", 64}}

type named struct {
	name string
	bit  uint32
}

func bitNames(bits uint32, names []named) string {
	var out []string
	for _, n := range names {
		if bits&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
