package nftrule

// Context is what a rule may refer to: its table's family, its chain, and
// the table's sets and chains.
type Context struct {
	Family    string // ip, ip6, inet, arp, bridge, netdev
	ChainType string // filter, nat, route; "" for a regular chain
	Hook      string // "" for a regular chain
	// Sets maps set names to their key types (ipv4_addr, inet_service...).
	Sets map[string]string
	// Chains maps chain names to whether they are base chains.
	Chains map[string]bool
}

// Check verifies a parsed rule against its context: families, set types,
// jump targets, and statements the kernel only accepts in some chains. The
// error's Offset points at the statement.
func Check(r *Rule, ctx Context) error {
	ipFam := ctx.Family == "ip" || ctx.Family == "ip6" || ctx.Family == "inet"
	l4 := false // a tcp/udp match precedes (for NAT ports)
	for i, s := range r.Stmts {
		off := 0
		if i < len(r.Offsets) {
			off = r.Offsets[i]
		}
		fail := func(format string, args ...any) error { return errorf(off, format, args...) }
		switch s := s.(type) {
		case *AddrMatch:
			want := "ip"
			if s.V6 {
				want = "ip6"
			}
			if ctx.Family != want && ctx.Family != "inet" {
				return fail("%s matches need a table of family %s or inet, not %s", want, want, ctx.Family)
			}
			if s.Set == "" && s.Prefix.Bits() == 0 {
				return fail("%s matches every address; remove the match", s.Prefix)
			}
			if s.Set != "" {
				typ := "ipv4_addr"
				if s.V6 {
					typ = "ipv6_addr"
				}
				if err := checkSet(ctx, s.Set, typ, off); err != nil {
					return err
				}
			}
		case *PortMatch, *TCPFlagsMatch, *MSSSet, *L4ProtoMatch, *NfprotoMatch, *CtStateMatch:
			if !ipFam {
				return fail("%s needs a table of family ip, ip6 or inet, not %s", s, ctx.Family)
			}
			if pm, ok := s.(*PortMatch); ok {
				l4 = true
				if pm.Set != "" {
					if err := checkSet(ctx, pm.Set, "inet_service", off); err != nil {
						return err
					}
				}
			}
			if lm, ok := s.(*L4ProtoMatch); ok && !lm.Neq && (lm.Proto == 6 || lm.Proto == 17) {
				l4 = true
			}
			if ms, ok := s.(*MSSSet); ok && ms.RtMTU && ctx.Hook != "forward" && ctx.Hook != "output" && ctx.Hook != "postrouting" {
				return fail("rt mtu is only known in chains hooked at forward, output or postrouting, not %s", hookWord(ctx.Hook))
			}
		case *Masquerade, *NAT:
			if ctx.ChainType != "nat" {
				return fail("%s needs a base chain of type nat", s)
			}
			if n, ok := s.(*NAT); ok {
				switch {
				case !n.Dst && ctx.Hook != "postrouting" && ctx.Hook != "input":
					return fail("snat needs a chain hooked at postrouting or input, not %s", hookWord(ctx.Hook))
				case n.Dst && ctx.Hook != "prerouting" && ctx.Hook != "output":
					return fail("dnat needs a chain hooked at prerouting or output, not %s", hookWord(ctx.Hook))
				case n.Addr.Is4() && ctx.Family == "ip6", n.Addr.Is6() && ctx.Family == "ip":
					return fail("%s is not of the table's family %s", n.Addr, ctx.Family)
				case n.Port != 0 && !l4:
					return fail("a NAT port needs a tcp or udp match (such as tcp dport 80 or meta l4proto tcp) before it")
				}
			} else if ctx.Hook != "postrouting" {
				return fail("masquerade needs a chain hooked at postrouting, not %s", hookWord(ctx.Hook))
			}
		case *Verdict:
			if s.Chain == "" {
				continue
			}
			base, ok := ctx.Chains[s.Chain]
			switch {
			case !ok:
				return fail("no chain %q in this table to %s to", s.Chain, s.Kind)
			case base:
				return fail("chain %q is a base chain; %s needs a regular chain (one without hook)", s.Chain, s.Kind)
			}
		}
	}
	return nil
}

func hookWord(h string) string {
	if h == "" {
		return "a regular chain"
	}
	return h
}

func checkSet(ctx Context, name, typ string, off int) error {
	t, ok := ctx.Sets[name]
	if !ok {
		return errorf(off, "no set %q in this table", name)
	}
	if t != typ {
		return errorf(off, "set %q holds %s; this match needs a set of %s", name, t, typ)
	}
	return nil
}
