package cli

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/model"
)

// showPools makes the state show prints say what the pools of conf say: an
// address a link holds from a pool (the registry's owner config:link/NAME)
// is that link's pool entry, not a static address, and the pools' export
// routes are left to the pools section. Printed as they are, applying
// show's output would give the addresses back and refuse the routes.
func showPools(ctx context.Context, eng *engine.Engine, conf, st *model.State) error {
	reg, err := eng.OpenRegistry(conf)
	if reg == nil || err != nil {
		return err
	}
	st.Pools = conf.Pools
	held, err := reg.List(ctx, "")
	if err != nil {
		return err
	}
	for _, a := range held {
		link, ok := strings.CutPrefix(a.Owner, ipam.ConfigOwner("link", ""))
		if !ok || a.Iface != "" {
			continue
		}
		pa := model.PoolAddress{Link: link, Pool: a.Pool}
		var at []int
		for _, ip := range a.Addrs() {
			i := slices.IndexFunc(st.Addresses, func(x model.Address) bool { return x.Link == link && x.Prefix.Addr() == ip })
			if i < 0 {
				break
			}
			x := st.Addresses[i]
			if ip.Is4() {
				pa.IPv4Bits = x.Prefix.Bits()
			} else {
				pa.IPv6Bits = x.Prefix.Bits()
			}
			pa.Scope, pa.NoPrefixRoute = x.Scope, x.NoPrefixRoute
			at = append(at, i)
		}
		if len(at) != len(a.Addrs()) {
			// Not on the link as the registry says (yet): shown as
			// the kernel has it.
			continue
		}
		slices.Sort(at)
		for j := len(at) - 1; j >= 0; j-- {
			st.Addresses = slices.Delete(st.Addresses, at[j], at[j]+1)
		}
		st.PoolAddresses = append(st.PoolAddresses, pa)
	}
	st.Routes = slices.DeleteFunc(st.Routes, func(r model.Route) bool { return exportRoute(conf.Pools, &r) })
	return nil
}

// exportRoute says whether r is a pool's export route: dev lo, in the
// pool's export table, to a prefix inside its subnets.
func exportRoute(pools []model.Pool, r *model.Route) bool {
	for _, p := range pools {
		if r.Table != p.ExportTable || r.Dev != "lo" {
			continue
		}
		for _, sn := range p.Subnets {
			for _, s := range []netip.Prefix{sn.IPv4, sn.IPv6} {
				if s.IsValid() && s.Bits() <= r.Dst.Bits() && s.Contains(r.Dst.Addr()) {
					return true
				}
			}
		}
	}
	return false
}
