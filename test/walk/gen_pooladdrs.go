package walk

import (
	"fmt"
	"math/big"
	"math/rand"
	"net/netip"
	"slices"
)

// The static addresses below are drawn from P, a sequence of their own, so
// that R's draws (and the walks of the seeds make test replays) stay as they
// were: a link's own address inside the subnet of one of the walk's pools,
// where the pool hands out first, whether a pool of the file holds the
// subnet or not. The addresses of a link's own subnets (linkIndex) fall in a
// pool's for three veth ends only (p9a, p9b, p9c); these reach every link,
// the bridges and veth ends the foreign actor puts in conflict above all,
// so that what a link left out for a conflict keeps meets the pools in
// every order: a static address that a pool comes into the file around, or
// that the pool handed out to the link or to another one.

// PoolAddrsSeed turns a walk's seed into the seed of its P sequence.
const PoolAddrsSeed = 0x706f6f6c

func (g *Gen) pseq() *rand.Rand {
	if g.P == nil {
		g.P = rand.New(rand.NewSource(1))
	}
	return g.P
}

// poolSubnets are the subnets the walk's pools take, the alternatives of
// changePool's included.
func poolSubnets() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{pools["pw"], pools["pv"], dualPool[1], dualPool[2]} {
		out = append(out, netip.MustParsePrefix(s), netip.MustParsePrefix(subnetAlt[s]))
	}
	return out
}

// inPoolSubnets says whether ip is in one of poolSubnets.
func inPoolSubnets(ip netip.Addr) bool {
	return slices.ContainsFunc(poolSubnets(), func(sn netip.Prefix) bool { return sn.Contains(ip) })
}

// staticInPools, now and then, gives a link a static address of the first
// eight of a pool subnet's (where the pool hands out first: its first block,
// or its first blocks of one address), or takes such an address off a link.
func (g *Gen) staticInPools(c *Config) string {
	p := g.pseq()
	if p.Float64() >= 0.12 {
		return ""
	}
	var ns []string
	for _, n := range c.LinkNames() {
		if c.Links[n].Kind != "device" {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return ""
	}
	n := ns[p.Intn(len(ns))]
	l := c.Links[n]
	if p.Float64() < 0.35 {
		for i, a := range l.Addrs {
			if a.Pool == "" && inPoolSubnets(netip.MustParsePrefix(a.CIDR).Addr()) {
				l.Addrs = append(l.Addrs[:i], l.Addrs[i+1:]...)
				return "take " + a.CIDR + " off " + n
			}
		}
	}
	subnets := poolSubnets()
	sn := subnets[p.Intn(len(subnets))]
	ip := nthAddr(sn, p.Intn(8))
	bits := sn.Bits()
	if p.Float64() < 0.4 {
		bits = ip.BitLen()
	}
	a := &Addr{CIDR: netip.PrefixFrom(ip, bits).String()}
	for _, x := range l.Addrs {
		if x.Pool == "" && netip.MustParsePrefix(x.CIDR).Addr() == ip {
			return ""
		}
	}
	l.Addrs = append(l.Addrs, a)
	return fmt.Sprintf("give %s %s, of pool subnet %s", n, a.CIDR, sn)
}

// nthAddr is the address i after sn's first.
func nthAddr(sn netip.Prefix, i int) netip.Addr {
	b := new(big.Int).SetBytes(sn.Addr().AsSlice())
	b.Add(b, big.NewInt(int64(i)))
	ip, _ := netip.AddrFromSlice(b.FillBytes(make([]byte, sn.Addr().BitLen()/8)))
	return ip
}
