package kernel

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Rules lists the rules of both families. The dump is parsed here rather
// than by the library, whose RuleList drops the rule's action (the
// fib_rule_hdr action byte): a blackhole rule would read as "lookup 0".
func (k *Netlink) Rules() ([]model.Rule, error) {
	var out []model.Rule
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		var msgs [][]byte
		err := retry("rules", func() (err error) {
			req := nl.NewNetlinkRequest(unix.RTM_GETRULE, unix.NLM_F_DUMP)
			req.Sockets = k.sockets
			req.AddData(nl.NewIfInfomsg(fam))
			msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWRULE)
			if errors.Is(err, nl.ErrDumpInterrupted) {
				err = netlink.ErrDumpInterrupted
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			r, err := parseRule(m)
			if err != nil {
				return nil, fmt.Errorf("list rules: %w", err)
			}
			out = append(out, r)
		}
	}
	model.SortRules(out)
	return out, nil
}

// parseRule reads one RTM_NEWRULE body as the model holds a rule.
func parseRule(m []byte) (model.Rule, error) {
	var rr rtnl.Rule
	if err := rtnl.DecodeRule(m, &rr); err != nil {
		return model.Rule{}, err
	}
	r := model.Rule{Priority: int(rr.Priority), IPv6: rr.Family == unix.AF_INET6, From: rr.Src, To: rr.Dst,
		FwMark: rr.Mark, FwMask: rr.Mask, IIF: rr.IIFName, OIF: rr.OIFName, Invert: rr.Flags&unix.FIB_RULE_INVERT != 0,
		Action: int(rr.Action), SuppressPrefixLen: -1, Protocol: int(rr.Protocol)}
	switch r.Action {
	case model.RuleLookup:
		r.Table = int(rr.Table)
	case model.RuleGoto:
		r.Table = int(rr.Goto)
	}
	if rr.SuppressPrefixLen >= 0 {
		r.SuppressPrefixLen = int(rr.SuppressPrefixLen)
	}
	// No normalisation of the mark: the kernel reports FRA_FWMASK whenever
	// the rule has a mark selector (mark or mask non-zero), so "fwmark 0"
	// reads back as mark 0 with mask 0xffffffff, a real selector, and a
	// rule without one as mask 0. Dropping the mask of "fwmark 0" made it
	// read as a rule without a mark: the diff then added it again (EEXIST)
	// and deleted the mark-less rule, whose delete matched the real one.
	return r, nil
}

// ruleRequest builds an RTM_NEWRULE or RTM_DELRULE request carrying every
// selector r sets. It is built here rather than by the library, whose
// RuleAdd leaves suppress_prefixlength out of a rule of a table above 255
// (it sends it only with the header's 8-bit table), so such a rule was
// added without it and never read back equal.
func ruleRequest(r *model.Rule, protocol int) ([]byte, error) {
	rr := rtnl.Rule{Family: unix.AF_INET, Action: uint8(r.Action), Priority: uint32(r.Priority),
		Mark: r.FwMark, Mask: r.FwMask, IIFName: r.IIF, OIFName: r.OIF,
		SuppressPrefixLen: int32(r.SuppressPrefixLen), SuppressIfgroup: -1, Protocol: uint8(max(protocol, 0))}
	if r.IPv6 {
		rr.Family = unix.AF_INET6
	}
	if r.Invert {
		rr.Flags = unix.FIB_RULE_INVERT
	}
	// A /0 prefix is no selector: the kernel stores none for it.
	if r.From.IsValid() && r.From.Bits() > 0 {
		rr.Src = r.From
	}
	if r.To.IsValid() && r.To.Bits() > 0 {
		rr.Dst = r.To
	}
	if r.Action == model.RuleLookup {
		rr.Table = uint32(r.Table)
	}
	// The mask always goes with the mark (rtnl.MarshalRule): the kernel
	// gives a mark without one the mask 0xffffffff, and a mark of 0
	// without one no selector at all, so "fwmark 0" would be lost.
	return rtnl.MarshalRule(&rr)
}

// AddRule adds a rule stamped with protocol.
func (k *Netlink) AddRule(r *model.Rule, protocol int) error {
	body, err := ruleRequest(r, protocol)
	if err != nil {
		return fmt.Errorf("add rule %s: %w", r, err)
	}
	k.wrote()
	if err := k.request(unix.RTM_NEWRULE, unix.NLM_F_CREATE|unix.NLM_F_EXCL, body); err != nil {
		return fmt.Errorf("add rule %s: %w", r, err)
	}
	return nil
}

// DeleteRule deletes the rule matching all of r's selectors.
func (k *Netlink) DeleteRule(r *model.Rule) error {
	// Every selector of r goes in the request, but the kernel still takes
	// those r leaves unset as wildcards: the diff orders the deletes so
	// that none can take another rule (model.Rule.DeleteMatches).
	body, err := ruleRequest(r, r.Protocol)
	if err != nil {
		return fmt.Errorf("delete rule %s: %w", r, err)
	}
	k.wrote()
	if err := k.request(unix.RTM_DELRULE, 0, body); err != nil {
		return fmt.Errorf("delete rule %s: %w", r, err)
	}
	return nil
}
