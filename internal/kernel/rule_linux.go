package kernel

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

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

// fib_rules.h attribute numbers the library does not name.
const (
	fraDst               = 1
	fraSrc               = 2
	fraIifname           = 3
	fraGoto              = 4
	fraPriority          = 6
	fraFwmark            = 10
	fraSuppressPrefixlen = 14
	fraTable             = 15
	fraFwmask            = 16
	fraOifname           = 17
	fraProtocol          = 21
	fibRuleInvert        = 0x2
)

func parseRule(m []byte) (model.Rule, error) {
	hdr := nl.DeserializeRtMsg(m) // fib_rule_hdr has rtmsg's layout; Type is the action
	attrs, err := nl.ParseRouteAttr(m[hdr.Len():])
	if err != nil {
		return model.Rule{}, err
	}
	v6 := hdr.Family == unix.AF_INET6
	r := model.Rule{IPv6: v6, Action: int(hdr.Type), Table: int(hdr.Table), Invert: hdr.Flags&fibRuleInvert != 0, SuppressPrefixLen: -1}
	prefix := func(b []byte, l uint8) netip.Prefix {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return netip.Prefix{}
		}
		// Not unmapped: 16 bytes are an IPv6 prefix (addrOf).
		return netip.PrefixFrom(a, int(l))
	}
	for _, a := range attrs {
		v := a.Value
		switch a.Attr.Type {
		case fraDst:
			r.To = prefix(v, hdr.Dst_len)
		case fraSrc:
			r.From = prefix(v, hdr.Src_len)
		case fraIifname:
			r.IIF = strings.TrimRight(string(v), "\x00")
		case fraOifname:
			r.OIF = strings.TrimRight(string(v), "\x00")
		case fraPriority:
			r.Priority = int(native.Uint32(v))
		case fraFwmark:
			r.FwMark = native.Uint32(v)
		case fraFwmask:
			r.FwMask = native.Uint32(v)
		case fraTable:
			r.Table = int(native.Uint32(v))
		case fraSuppressPrefixlen:
			if n := int32(native.Uint32(v)); n >= 0 {
				r.SuppressPrefixLen = int(n)
			}
		case fraProtocol:
			r.Protocol = int(v[0])
		case fraGoto:
			r.Table = int(native.Uint32(v))
		}
	}
	if r.Action != model.RuleLookup && r.Action != model.RuleGoto {
		r.Table = 0
	}
	// No normalisation of the mark: the kernel reports FRA_FWMASK whenever
	// the rule has a mark selector (mark or mask non-zero), and FRA_FWMARK
	// only for a non-zero mark, so "fwmark 0" reads back as mark 0 with
	// mask 0xffffffff, a real selector, and a rule without one as mask 0.
	// Dropping the mask of "fwmark 0" made it read as a rule without a
	// mark: the diff then added it again (EEXIST) and deleted the mark-less
	// rule, whose delete matched the real one.
	return r, nil
}

var native = nl.NativeEndian()

// ruleRequest builds an RTM_NEWRULE or RTM_DELRULE request carrying every
// selector r sets. It is built here rather than by the library, whose
// RuleAdd leaves suppress_prefixlength out of a rule of a table above 255
// (it sends it only with the header's 8-bit table), so such a rule was
// added without it and never read back equal.
func (k *Netlink) ruleRequest(cmd, flags int, r *model.Rule, protocol int) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(cmd, flags|unix.NLM_F_ACK)
	req.Sockets = k.sockets
	hdr := nl.NewRtMsg() // fib_rule_hdr has rtmsg's layout; Type is the action
	hdr.Family = unix.AF_INET
	if r.IPv6 {
		hdr.Family = unix.AF_INET6
	}
	hdr.Protocol, hdr.Scope, hdr.Table = 0, 0, unix.RT_TABLE_UNSPEC
	hdr.Type = uint8(r.Action)
	if r.Invert {
		hdr.Flags |= fibRuleInvert
	}
	var attrs []*nl.RtAttr
	// A /0 prefix is no selector: the kernel stores none for it.
	if r.From.IsValid() && r.From.Bits() > 0 {
		hdr.Src_len = uint8(r.From.Bits())
		attrs = append(attrs, nl.NewRtAttr(fraSrc, r.From.Addr().AsSlice()))
	}
	if r.To.IsValid() && r.To.Bits() > 0 {
		hdr.Dst_len = uint8(r.To.Bits())
		attrs = append(attrs, nl.NewRtAttr(fraDst, r.To.Addr().AsSlice()))
	}
	attrs = append(attrs, nl.NewRtAttr(fraPriority, nl.Uint32Attr(uint32(r.Priority))))
	// The mask always goes with the mark: the kernel gives a mark without
	// one the mask 0xffffffff, and a mark of 0 without one no selector at
	// all, so "fwmark 0" would be lost.
	if r.FwMark != 0 || r.FwMask != 0 {
		attrs = append(attrs, nl.NewRtAttr(fraFwmark, nl.Uint32Attr(r.FwMark)), nl.NewRtAttr(fraFwmask, nl.Uint32Attr(r.FwMask)))
	}
	if r.IIF != "" {
		attrs = append(attrs, nl.NewRtAttr(fraIifname, nl.ZeroTerminated(r.IIF)))
	}
	if r.OIF != "" {
		attrs = append(attrs, nl.NewRtAttr(fraOifname, nl.ZeroTerminated(r.OIF)))
	}
	if r.Action == model.RuleLookup {
		attrs = append(attrs, nl.NewRtAttr(fraTable, nl.Uint32Attr(uint32(r.Table))))
	}
	if r.SuppressPrefixLen >= 0 {
		attrs = append(attrs, nl.NewRtAttr(fraSuppressPrefixlen, nl.Uint32Attr(uint32(r.SuppressPrefixLen))))
	}
	if protocol > 0 {
		attrs = append(attrs, nl.NewRtAttr(fraProtocol, []byte{uint8(protocol)}))
	}
	req.AddData(hdr)
	for _, a := range attrs {
		req.AddData(a)
	}
	return req
}

// AddRule adds a rule stamped with protocol.
func (k *Netlink) AddRule(r *model.Rule, protocol int) error {
	k.wrote()
	if _, err := k.ruleRequest(unix.RTM_NEWRULE, unix.NLM_F_CREATE|unix.NLM_F_EXCL, r, protocol).Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("add rule %s: %w", r, err)
	}
	return nil
}

// DeleteRule deletes the rule matching all of r's selectors.
func (k *Netlink) DeleteRule(r *model.Rule) error {
	k.wrote()
	// Every selector of r goes in the request, but the kernel still takes
	// those r leaves unset as wildcards: the diff orders the deletes so
	// that none can take another rule (model.Rule.DeleteMatches).
	if _, err := k.ruleRequest(unix.RTM_DELRULE, 0, r, r.Protocol).Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return fmt.Errorf("delete rule %s: %w", r, err)
	}
	return nil
}
