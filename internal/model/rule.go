package model

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Reserved rule priorities: the kernel's default rules (local, main, default).
var ReservedRulePriorities = []int{0, 32766, 32767}

// Rule actions, rtnetlink FR_ACT numbering.
const (
	RuleLookup      = 1
	RuleGoto        = 2
	RuleBlackhole   = 6
	RuleUnreachable = 7
	RuleProhibit    = 8
)

// RuleActionNames maps the file's words to actions.
var RuleActionNames = map[string]int{"lookup": RuleLookup, "blackhole": RuleBlackhole, "unreachable": RuleUnreachable, "prohibit": RuleProhibit}

// Rule is a policy routing rule of one family. The kernel compares every field
// to find a rule, so the whole rule is its identity: a changed rule is a
// different rule.
type Rule struct {
	Priority int
	IPv6     bool
	From     netip.Prefix
	To       netip.Prefix
	FwMark   uint32
	FwMask   uint32 // 0 with FwMark != 0 means an exact match (mask 0xffffffff)
	IIF      string
	OIF      string
	Invert   bool
	Action   int
	Table    int
	// SuppressPrefixLen is -1 when unset, as the kernel reports it.
	SuppressPrefixLen int

	Protocol int    // actual
	Origin   string // desired: file:line:col
}

// RuleKey is the identity of a rule (all of its selectors and action).
type RuleKey struct {
	Priority          int
	IPv6              bool
	From, To          netip.Prefix
	FwMark, FwMask    uint32
	IIF, OIF          string
	Invert            bool
	Action, Table     int
	SuppressPrefixLen int
}

// Key returns the rule's identity.
func (r *Rule) Key() RuleKey {
	return RuleKey{r.Priority, r.IPv6, r.From, r.To, r.FwMark, r.FwMask, r.IIF, r.OIF, r.Invert, r.Action, r.Table, r.SuppressPrefixLen}
}

// String renders the rule the way `ip rule` lists it.
func (r *Rule) String() string { return r.Key().String() }

func (k RuleKey) String() string {
	var b []string
	fam := "ipv4"
	if k.IPv6 {
		fam = "ipv6"
	}
	b = append(b, fmt.Sprintf("%d:", k.Priority))
	if k.Invert {
		b = append(b, "not")
	}
	from := "all"
	if k.From.IsValid() {
		from = k.From.String()
	}
	b = append(b, "from", from)
	if k.To.IsValid() {
		b = append(b, "to", k.To.String())
	}
	if k.FwMark != 0 || k.FwMask != 0 {
		m := fmt.Sprintf("fwmark %#x", k.FwMark)
		if k.FwMask != 0 && k.FwMask != 0xffffffff {
			m += fmt.Sprintf("/%#x", k.FwMask)
		}
		b = append(b, m)
	}
	if k.IIF != "" {
		b = append(b, "iif", k.IIF)
	}
	if k.OIF != "" {
		b = append(b, "oif", k.OIF)
	}
	switch k.Action {
	case RuleLookup:
		b = append(b, "lookup", TableName(k.Table))
	default:
		for n, v := range RuleActionNames {
			if v == k.Action {
				b = append(b, n)
			}
		}
	}
	if k.SuppressPrefixLen >= 0 {
		b = append(b, fmt.Sprintf("suppress_prefixlength %d", k.SuppressPrefixLen))
	}
	return strings.Join(b, " ") + " (" + fam + ")"
}

// Less orders rules by priority, family, then text.
func (k RuleKey) Less(o RuleKey) bool {
	if k.Priority != o.Priority {
		return k.Priority < o.Priority
	}
	if k.IPv6 != o.IPv6 {
		return !k.IPv6
	}
	return k.String() < o.String()
}

// SortRules orders rules by key.
func SortRules(rs []Rule) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Key().Less(rs[j].Key()) })
}

// DeleteMatches reports whether the kernel, asked to delete r, could delete
// o instead. A delete request names no rule: the kernel (rule_find in
// net/core/fib_rules.c) deletes the first rule in its list that has every
// selector the request sets, and takes a selector the request leaves unset
// (no from/to, no iif/oif, no mark, no suppress_prefixlength, table 0) as a
// wildcard; the invert flag is not compared at all. So the delete of a rule
// without a mark matches the same rule with "fwmark 0", and "from X" matches
// "not from X". The request carries r's protocol, which keeps other
// software's rules out when it is not 0.
func (r *Rule) DeleteMatches(o *Rule) bool {
	return o.Priority == r.Priority && o.IPv6 == r.IPv6 && o.Action == r.Action &&
		(r.Protocol == 0 || o.Protocol == r.Protocol) &&
		(r.Table == 0 || o.Table == r.Table) &&
		(!r.From.IsValid() || r.From.Bits() == 0 || o.From == r.From) &&
		(!r.To.IsValid() || r.To.Bits() == 0 || o.To == r.To) &&
		(r.FwMark == 0 || o.FwMark == r.FwMark) &&
		(r.FwMask == 0 || o.FwMask == r.FwMask) &&
		(r.IIF == "" || o.IIF == r.IIF) &&
		(r.OIF == "" || o.OIF == r.OIF) &&
		(r.SuppressPrefixLen < 0 || o.SuppressPrefixLen == r.SuppressPrefixLen)
}

// Selectors counts the selectors r sets: a delete request with more of them
// matches fewer rules.
func (r *Rule) Selectors() int {
	n := 0
	for _, set := range []bool{r.From.IsValid() && r.From.Bits() > 0, r.To.IsValid() && r.To.Bits() > 0, r.FwMark != 0, r.FwMask != 0, r.IIF != "", r.OIF != "", r.SuppressPrefixLen >= 0, r.Invert} {
		if set {
			n++
		}
	}
	return n
}

// AddClashes reports whether the kernel refuses to add r ("file exists")
// because o exists. It looks for an existing rule (rule_exists in
// net/core/fib_rules.c) comparing priority, action, table, iif, oif, mark
// and mask and suppress_prefixlength exactly, but from and to only where the
// new rule sets them (fib4_rule_compare, fib6_rule_compare): a rule without
// "to" is taken for an existing one of the same priority and action with
// any "to". The invert flag is not compared.
func (r *Rule) AddClashes(o *Rule) bool {
	return o.Priority == r.Priority && o.IPv6 == r.IPv6 && o.Action == r.Action && o.Table == r.Table &&
		o.IIF == r.IIF && o.OIF == r.OIF && o.FwMark == r.FwMark && o.fwMask() == r.fwMask() &&
		o.SuppressPrefixLen == r.SuppressPrefixLen &&
		(!r.From.IsValid() || r.From.Bits() == 0 || o.From == r.From) &&
		(!r.To.IsValid() || r.To.Bits() == 0 || o.To == r.To)
}

// fwMask is the mask the kernel keeps: a mark without a mask is an exact
// match (0xffffffff).
func (r *Rule) fwMask() uint32 {
	if r.FwMask == 0 && r.FwMark != 0 {
		return 0xffffffff
	}
	return r.FwMask
}

// ClashGroup is the part of a rule the kernel compares exactly when it
// looks for an existing one (see AddClashes): rules of different groups
// never clash.
func (r *Rule) ClashGroup() RuleKey {
	return RuleKey{Priority: r.Priority, IPv6: r.IPv6, FwMark: r.FwMark, FwMask: r.fwMask(), IIF: r.IIF, OIF: r.OIF,
		Action: r.Action, Table: r.Table, SuppressPrefixLen: r.SuppressPrefixLen}
}
