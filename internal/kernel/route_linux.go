package kernel

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Routes lists the routes of every table (the local table included), of one
// protocol when protocol is not 0.
func (k *Netlink) Routes(protocol int) ([]model.Route, error) {
	filter := &netlink.Route{Table: unix.RT_TABLE_UNSPEC, Protocol: netlink.RouteProtocol(protocol)}
	mask := netlink.RT_FILTER_TABLE
	if protocol != 0 {
		mask |= netlink.RT_FILTER_PROTOCOL
	}
	var out []model.Route
	err := retry("routes", func() error {
		out = out[:0]
		return k.hr.RouteListFilteredIter(netlink.FAMILY_ALL, filter, mask, func(r netlink.Route) bool {
			if r.Family != unix.AF_INET && r.Family != unix.AF_INET6 {
				return true
			}
			out = append(out, k.fromRoute(&r))
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	model.SortRoutes(out)
	return out, nil
}

func (k *Netlink) fromRoute(r *netlink.Route) model.Route {
	m := model.Route{Table: r.Table, TOS: r.Tos, Metric: r.Priority, Type: r.Type, Gateway: toAddr(r.Gw), Src: toAddr(r.Src), Scope: int(r.Scope), OnLink: r.Flags&unix.RTNH_F_ONLINK != 0, MTU: r.MTU, Protocol: int(r.Protocol)}
	if r.Dst != nil {
		m.Dst = toPrefix(r.Dst)
	} else if r.Family == unix.AF_INET6 {
		m.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	} else {
		m.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	if r.LinkIndex != 0 {
		m.Dev = k.name(r.LinkIndex)
	}
	return m
}

func (k *Netlink) toRoute(r *model.Route, protocol int) (*netlink.Route, error) {
	nr := &netlink.Route{Table: r.Table, Dst: fromPrefix(r.Dst), Tos: r.TOS, Priority: r.Metric, Type: r.Type, Gw: fromAddr(r.Gateway), Src: fromAddr(r.Src), Scope: netlink.Scope(r.Scope), MTU: r.MTU, Protocol: netlink.RouteProtocol(protocol)}
	nr.Family = unix.AF_INET
	if r.IsIPv6() {
		nr.Family = unix.AF_INET6
	}
	if r.OnLink {
		nr.Flags |= unix.RTNH_F_ONLINK
	}
	if r.Dev != "" {
		i, err := k.index(r.Dev)
		if err != nil {
			return nil, err
		}
		nr.LinkIndex = i
	}
	return nr, nil
}

// AddRoute adds a route; EEXIST if one with its key exists.
func (k *Netlink) AddRoute(r *model.Route, protocol int) error {
	nr, err := k.toRoute(r, protocol)
	if err != nil {
		return fmt.Errorf("add route %s: %w", r.Key(), err)
	}
	k.wrote()
	return routeErr(RouteAdd, r, k.h.RouteAdd(nr))
}

// ReplaceRoute adds a route or replaces the one with the same key.
func (k *Netlink) ReplaceRoute(r *model.Route, protocol int) error {
	nr, err := k.toRoute(r, protocol)
	if err != nil {
		return fmt.Errorf("replace route %s: %w", r.Key(), err)
	}
	k.wrote()
	if err := k.h.RouteReplace(nr); err != nil {
		return fmt.Errorf("replace route %s: %w", r.Key(), err)
	}
	return nil
}

// DeleteRoute deletes the route with r's key.
func (k *Netlink) DeleteRoute(r *model.Route) error {
	// Only the key and the protocol identify the route to delete: sending
	// more (a device that is gone) would make the kernel refuse. Scope
	// nowhere matches a route of any scope, as `ip route del` does; the
	// library would send universe, which misses link-scope routes (ESRCH).
	nr := &netlink.Route{Table: r.Table, Dst: fromPrefix(r.Dst), Tos: r.TOS, Priority: r.Metric, Type: r.Type, Protocol: netlink.RouteProtocol(r.Protocol), Scope: netlink.SCOPE_NOWHERE}
	nr.Family = unix.AF_INET
	if r.IsIPv6() {
		nr.Family = unix.AF_INET6
	}
	k.wrote()
	if err := k.h.RouteDel(nr); err != nil {
		return fmt.Errorf("delete route %s: %w", r.Key(), err)
	}
	return nil
}
