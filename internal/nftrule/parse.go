package nftrule

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Error is a problem at a byte offset of the rule text. Its message is
// formatted when asked for: a file can hold half a million bad rules, of
// which the loader prints a hundred and keeps ten thousand, and formatting
// every one was most of the time spent on such a file.
type Error struct {
	Offset int
	format string
	args   []any // nil: format is the message as is
}

func (e *Error) Error() string {
	if e.args == nil {
		return e.format
	}
	return fmt.Sprintf(e.format, e.args...)
}

func errorf(off int, format string, args ...any) *Error {
	return &Error{off, format, args}
}

type token struct {
	s      string
	off    int
	quoted bool
}

func tokenize(text string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(text) {
		c := text[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			j := strings.IndexByte(text[i+1:], '"')
			if j < 0 {
				return nil, &Error{Offset: i, format: "unterminated string; expected a closing \""}
			}
			toks = append(toks, token{text[i+1 : i+1+j], i, true})
			i += j + 2
		default:
			j := i
			for j < len(text) && text[j] != ' ' && text[j] != '\t' {
				j++
			}
			toks = append(toks, token{text[i:j], i, false})
			i = j
		}
	}
	return toks, nil
}

type parser struct {
	toks []token
	i    int
	end  int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i].s
	}
	return ""
}

func (p *parser) off() int {
	if p.i < len(p.toks) {
		return p.toks[p.i].off
	}
	return p.end
}

func (p *parser) next() token {
	if p.i < len(p.toks) {
		p.i++
		return p.toks[p.i-1]
	}
	return token{off: p.end}
}

func (p *parser) errf(off int, format string, args ...any) error {
	return errorf(off, format, args...)
}

// expect consumes a word or fails naming what was expected.
func (p *parser) expect(word string) error {
	t := p.next()
	if t.s != word || t.quoted {
		return p.errf(t.off, "expected %q, found %s", word, show(t))
	}
	return nil
}

func show(t token) string {
	if t.s == "" && !t.quoted {
		return "the end of the rule"
	}
	return strconv.Quote(t.s)
}

// neq consumes an optional "!=" (or "==").
func (p *parser) neq() bool {
	switch p.peek() {
	case "!=":
		p.i++
		return true
	case "==":
		p.i++
	}
	return false
}

const starts = "meta, mark, iifname, oifname, ip, ip6, tcp, udp, ct, counter, log, masquerade, snat, dnat, accept, drop, return, continue, jump, goto"

// Parse parses one rule.
func Parse(text string) (*Rule, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, end: len(text)}
	r := &Rule{}
	if len(toks) == 0 {
		return nil, &Error{Offset: 0, format: "empty rule; expected nft words such as " + starts}
	}
	for p.i < len(p.toks) {
		if len(r.Stmts) > 0 {
			if _, ok := r.Stmts[len(r.Stmts)-1].(*Verdict); ok {
				return nil, p.errf(p.off(), "nothing may follow a verdict, found %s", show(p.toks[p.i]))
			}
		}
		off := p.off()
		s, err := p.stmt()
		if err != nil {
			return nil, err
		}
		r.Stmts = append(r.Stmts, s)
		r.Offsets = append(r.Offsets, off)
	}
	return r, nil
}

func (p *parser) stmt() (Stmt, error) {
	t := p.next()
	if t.quoted {
		return nil, p.errf(t.off, "unexpected string %q; expected one of %s", t.s, starts)
	}
	switch t.s {
	case "meta":
		k := p.next()
		switch k.s {
		case "mark":
			return p.mark(k.off)
		case "l4proto":
			n := p.neq()
			v := p.next()
			proto, err := parseProto(v)
			if err != nil {
				return nil, err
			}
			return &L4ProtoMatch{n, proto}, nil
		case "nfproto":
			v := p.next()
			switch v.s {
			case "ipv4":
				return &NfprotoMatch{}, nil
			case "ipv6":
				return &NfprotoMatch{V6: true}, nil
			}
			return nil, p.errf(v.off, "expected ipv4 or ipv6, found %s", show(v))
		case "iifname", "oifname":
			return p.ifname(k.s == "oifname")
		}
		return nil, p.errf(k.off, "expected mark, l4proto, nfproto, iifname or oifname after meta, found %s", show(k))
	case "mark":
		return p.mark(t.off)
	case "iifname", "oifname":
		return p.ifname(t.s == "oifname")
	case "ip", "ip6":
		return p.addr(t.s == "ip6")
	case "tcp", "udp":
		return p.transport(t)
	case "ct":
		if err := p.expect("state"); err != nil {
			return nil, err
		}
		v := p.next()
		bits, err := flagBits(p, v, ctStateNames, "connection state")
		if err != nil {
			return nil, err
		}
		return &CtStateMatch{bits}, nil
	case "counter":
		return &Counter{}, nil
	case "log":
		return p.log()
	case "masquerade":
		return &Masquerade{}, nil
	case "snat", "dnat":
		return p.nat(t.s == "dnat")
	case "accept", "drop", "return", "continue":
		return &Verdict{Kind: t.s}, nil
	case "jump", "goto":
		c := p.next()
		if c.s == "" || c.quoted {
			return nil, p.errf(c.off, "expected a chain name after %s, found %s", t.s, show(c))
		}
		return &Verdict{Kind: t.s, Chain: c.s}, nil
	}
	return nil, p.errf(t.off, "unknown word %s; expected one of %s", show(t), starts)
}

func parseU32(p *parser, t token, what string) (uint32, error) {
	v, err := strconv.ParseUint(t.s, 0, 32)
	if err != nil || t.quoted {
		return 0, p.errf(t.off, "expected %s (a 32-bit number such as 0x40), found %s", what, show(t))
	}
	return uint32(v), nil
}

func (p *parser) mark(off int) (Stmt, error) {
	if p.peek() == "set" {
		p.i++
		return p.markSet()
	}
	if p.peek() == "&" {
		p.i++
		mask, err := parseU32(p, p.next(), "a mask")
		if err != nil {
			return nil, err
		}
		op := p.next()
		if op.s != "==" && op.s != "!=" {
			return nil, p.errf(op.off, "expected == or != after the mask, found %s", show(op))
		}
		v, err := parseU32(p, p.next(), "a mark")
		if err != nil {
			return nil, err
		}
		if v&^mask != 0 {
			return nil, p.errf(off, "mark 0x%x has bits outside mask 0x%x: the rule could never match", v, mask)
		}
		return &MarkMatch{Mask: mask, HasMask: true, Neq: op.s == "!=", Value: v}, nil
	}
	n := p.neq()
	v, err := parseU32(p, p.next(), "a mark")
	if err != nil {
		return nil, err
	}
	return &MarkMatch{Neq: n, Value: v}, nil
}

func (p *parser) markSet() (Stmt, error) {
	t := p.peek()
	if t != "meta" && t != "mark" {
		v, err := parseU32(p, p.next(), "a mark value or \"meta mark & MASK | VALUE\"")
		if err != nil {
			return nil, err
		}
		return &MarkSet{Value: v}, nil
	}
	p.i++
	if t == "meta" {
		if err := p.expect("mark"); err != nil {
			return nil, err
		}
	}
	m := &MarkSet{FromMark: true, And: 0xffffffff}
	if p.peek() == "&" {
		p.i++
		v, err := parseU32(p, p.next(), "a mask")
		if err != nil {
			return nil, err
		}
		m.And = v
	}
	if p.peek() == "|" {
		p.i++
		v, err := parseU32(p, p.next(), "a value")
		if err != nil {
			return nil, err
		}
		m.Or = v
	}
	return m, nil
}

func (p *parser) ifname(out bool) (Stmt, error) {
	n := p.neq()
	v := p.next()
	name := v.s
	if name == "" || len(name) > 15 || strings.ContainsAny(name, "/ ") || (strings.Contains(name, "*") && strings.Index(name, "*") != len(name)-1) {
		return nil, p.errf(v.off, "expected an interface name (up to 15 bytes, a trailing * for a prefix), found %s", show(v))
	}
	return &IfnameMatch{Out: out, Neq: n, Name: name}, nil
}

func parseProto(t token) (uint8, error) {
	if v, ok := protoNames[t.s]; ok {
		return v, nil
	}
	if n, err := strconv.ParseUint(t.s, 10, 8); err == nil {
		return uint8(n), nil
	}
	return 0, errorf(t.off, "expected a protocol such as tcp, udp, icmp, icmpv6 or a number, found %s", show(t))
}

func (p *parser) addr(v6 bool) (Stmt, error) {
	f := p.next()
	if f.s != "saddr" && f.s != "daddr" {
		return nil, p.errf(f.off, "expected saddr or daddr, found %s", show(f))
	}
	m := &AddrMatch{V6: v6, Dst: f.s == "daddr", Neq: p.neq()}
	v := p.next()
	if strings.HasPrefix(v.s, "@") && !v.quoted {
		if len(v.s) == 1 {
			return nil, p.errf(v.off, "expected a set name after @")
		}
		m.Set = v.s[1:]
		return m, nil
	}
	fam := "IPv4"
	if v6 {
		fam = "IPv6"
	}
	pr, err := netip.ParsePrefix(v.s)
	if err != nil {
		a, aerr := netip.ParseAddr(v.s)
		if aerr != nil || a.Zone() != "" {
			return nil, p.errf(v.off, "expected an %s address, prefix or @set, found %s", fam, show(v))
		}
		pr = netip.PrefixFrom(a, a.BitLen())
	}
	if pr.Addr().Is6() != v6 || pr.Addr().Is4In6() {
		return nil, p.errf(v.off, "expected an %s address, prefix or @set, found %s", fam, show(v))
	}
	if pr.Masked() != pr {
		return nil, p.errf(v.off, "%q has host bits set; the prefix is %s", v.s, pr.Masked())
	}
	m.Prefix = pr
	return m, nil
}

func (p *parser) transport(t token) (Stmt, error) {
	proto := protoNames[t.s]
	f := p.next()
	switch {
	case f.s == "dport" || f.s == "sport":
		m := &PortMatch{Proto: proto, Dst: f.s == "dport", Neq: p.neq()}
		v := p.next()
		if strings.HasPrefix(v.s, "@") && len(v.s) > 1 {
			m.Set = v.s[1:]
			return m, nil
		}
		lo, hi, isRange := strings.Cut(v.s, "-")
		a, err1 := strconv.ParseUint(lo, 10, 16)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseUint(hi, 10, 16)
		}
		if err1 != nil || err2 != nil || b < a || v.quoted {
			return nil, p.errf(v.off, "expected a port, a range like 1000-2000 or @set, found %s", show(v))
		}
		m.Lo, m.Hi = uint16(a), uint16(b)
		return m, nil
	case f.s == "flags" && t.s == "tcp":
		v := p.next()
		bits, err := flagBits(p, v, tcpFlagNames, "TCP flag")
		if err != nil {
			return nil, err
		}
		return &TCPFlagsMatch{uint8(bits)}, nil
	case f.s == "option" && t.s == "tcp":
		for _, w := range []string{"maxseg", "size", "set"} {
			if err := p.expect(w); err != nil {
				return nil, err
			}
		}
		v := p.next()
		if v.s == "rt" {
			if err := p.expect("mtu"); err != nil {
				return nil, err
			}
			return &MSSSet{RtMTU: true}, nil
		}
		n, err := strconv.ParseUint(v.s, 10, 16)
		if err != nil || n < 536 {
			return nil, p.errf(v.off, "expected an MSS from 536 to 65535 or \"rt mtu\", found %s", show(v))
		}
		return &MSSSet{Size: uint16(n)}, nil
	}
	if t.s == "tcp" {
		return nil, p.errf(f.off, "expected dport, sport, flags or option after tcp, found %s", show(f))
	}
	return nil, p.errf(f.off, "expected dport or sport after udp, found %s", show(f))
}

func flagBits(p *parser, v token, names []named, what string) (uint32, error) {
	var bits uint32
	var all []string
	for _, n := range names {
		all = append(all, n.name)
	}
	for _, w := range strings.Split(v.s, ",") {
		found := false
		for _, n := range names {
			if n.name == w {
				bits |= n.bit
				found = true
			}
		}
		if !found || v.quoted {
			return 0, p.errf(v.off, "expected a %s (%s, comma separated), found %s", what, strings.Join(all, ", "), show(v))
		}
	}
	return bits, nil
}

var logLevels = []string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug", "audit"}

// LogLevel numbers a level word (syslog numbering; audit is 8).
func LogLevel(s string) int {
	for i, l := range logLevels {
		if l == s {
			return i
		}
	}
	return -1
}

func (p *parser) log() (Stmt, error) {
	l := &Log{}
	// The kernel (nft_log_init) refuses a level together with a group with
	// EINVAL: a group sends the packet to nfnetlink_log, which has no
	// level. The refusal fails the whole nftables batch, every table with
	// it, so it is caught here with the rule's position. nft refuses the
	// audit level with any other option as well.
	levelAt, groupAt, prefixAt := -1, -1, -1
	for {
		at := p.off()
		switch p.peek() {
		case "prefix":
			p.i++
			v := p.next()
			if !v.quoted || len(v.s) > 127 {
				return nil, p.errf(v.off, "expected a quoted prefix of up to 127 bytes, found %s", show(v))
			}
			l.Prefix, prefixAt = v.s, at
		case "level":
			p.i++
			v := p.next()
			if LogLevel(v.s) < 0 {
				return nil, p.errf(v.off, "expected a log level (%s), found %s", strings.Join(logLevels, ", "), show(v))
			}
			l.Level, levelAt = v.s, at
		case "group":
			p.i++
			v := p.next()
			n, err := strconv.ParseUint(v.s, 10, 16)
			if err != nil {
				return nil, p.errf(v.off, "expected a log group number 0-65535, found %s", show(v))
			}
			l.Group, l.HasGroup, groupAt = uint16(n), true, at
		default:
			switch {
			case levelAt >= 0 && groupAt >= 0:
				return nil, p.errf(max(levelAt, groupAt), "log takes a level or a group, not both: a group sends packets to nfnetlink_log, which has no level (the kernel refuses both)")
			case l.Level == "audit" && prefixAt >= 0:
				return nil, p.errf(max(levelAt, prefixAt), "log level audit takes no prefix")
			}
			return l, nil
		}
	}
}

func (p *parser) nat(dst bool) (Stmt, error) {
	n := &NAT{Dst: dst}
	fam := ""
	if w := p.peek(); w == "ip" || w == "ip6" {
		fam = w
		p.i++
	}
	if err := p.expect("to"); err != nil {
		return nil, err
	}
	v := p.next()
	if ap, err := netip.ParseAddrPort(v.s); err == nil {
		n.Addr, n.Port = ap.Addr(), ap.Port()
	} else if a, err := netip.ParseAddr(v.s); err == nil && a.Zone() == "" {
		n.Addr = a
	} else {
		return nil, p.errf(v.off, "expected an address or address:port (IPv6 as [addr]:port), found %s", show(v))
	}
	if (fam == "ip" && !n.Addr.Is4()) || (fam == "ip6" && !n.Addr.Is6()) {
		return nil, p.errf(v.off, "%s is not an %s address", n.Addr, fam)
	}
	return n, nil
}
