package kernel

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Routes lists the routes of every table (the local table included), of one
// protocol when protocol is not 0.
func (k *Netlink) Routes(protocol int) ([]model.Route, error) {
	var out []model.Route
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(protocol, 0, make([]model.Route, 0, k.routeHint.Load()))
		return err
	})
	if err != nil {
		return nil, err
	}
	k.routeHint.Store(int64(len(out)))
	model.SortRoutes(out)
	return out, nil
}

// TableRoutes lists the routes of one table, of every protocol.
func (k *Netlink) TableRoutes(table int) ([]model.Route, error) {
	var out []model.Route
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(0, table, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A kernel without strict checking sends every table: keep the one asked.
	n := 0
	for _, r := range out {
		if r.Table == table {
			out[n] = r
			n++
		}
	}
	out = out[:n]
	model.SortRoutes(out)
	return out, nil
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
