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
		return netip.PrefixFrom(a.Unmap(), int(l))
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
	// The kernel reports a mask of 0xffffffff for a mark given without one.
	if r.FwMark == 0 && r.FwMask == 0xffffffff {
		r.FwMask = 0
	}
	return r, nil
}

var native = nl.NativeEndian()

func toRule(r *model.Rule, protocol int) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Priority = r.Priority
	nr.Family = unix.AF_INET
	if r.IPv6 {
		nr.Family = unix.AF_INET6
	}
	nr.Src, nr.Dst = fromPrefix(r.From), fromPrefix(r.To)
	nr.Mark = r.FwMark
	if r.FwMask != 0 {
		m := r.FwMask
		nr.Mask = &m
	}
	nr.IifName, nr.OifName, nr.Invert = r.IIF, r.OIF, r.Invert
	nr.Type = uint8(r.Action)
	if r.Action == model.RuleLookup {
		nr.Table = r.Table
	}
	nr.SuppressPrefixlen = r.SuppressPrefixLen
	nr.Protocol = uint8(protocol)
	return nr
}

// AddRule adds a rule stamped with protocol.
func (k *Netlink) AddRule(r *model.Rule, protocol int) error {
	k.wrote()
	if err := k.h.RuleAdd(toRule(r, protocol)); err != nil {
		return fmt.Errorf("add rule %s: %w", r, err)
	}
	return nil
}

// DeleteRule deletes the rule matching all of r's selectors.
func (k *Netlink) DeleteRule(r *model.Rule) error {
	k.wrote()
	if err := k.h.RuleDel(toRule(r, r.Protocol)); err != nil {
		return fmt.Errorf("delete rule %s: %w", r, err)
	}
	return nil
}
