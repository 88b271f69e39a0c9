package walk

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/internal/ipam"
)

// The pools' part of the oracle: what the kernel shows of the IPAM pools
// (the links' addresses, compareAddrs; the export routes and the blocks
// here), against the file and the addresses other owners hold.

// poolSubnets are a pool's subnets, IPv4 first.
func (p *Pool) subnets() []netip.Prefix {
	out := []netip.Prefix{netip.MustParsePrefix(p.Subnet)}
	if p.Subnet6 != "" {
		out = append(out, netip.MustParsePrefix(p.Subnet6))
	}
	return out
}

// blockIndex is the index of the block of the pool that holds a, and
// whether one does.
func (p *Pool) blockIndex(a netip.Addr) (uint64, bool) {
	for _, sn := range p.subnets() {
		if !sn.Contains(a) {
			continue
		}
		off := new(big.Int).Sub(new(big.Int).SetBytes(a.AsSlice()), new(big.Int).SetBytes(sn.Addr().AsSlice()))
		return off.Rsh(off, uint(p.Bits)).Uint64(), true
	}
	return 0, false
}

// block is block i of the pool in each of its families.
func (p *Pool) block(i uint64) []netip.Prefix {
	var out []netip.Prefix
	for _, sn := range p.subnets() {
		base := new(big.Int).SetBytes(sn.Addr().AsSlice())
		base.Add(base, new(big.Int).Lsh(new(big.Int).SetUint64(i), uint(p.Bits)))
		b := base.FillBytes(make([]byte, sn.Addr().BitLen()/8))
		a, _ := netip.AddrFromSlice(b)
		out = append(out, netip.PrefixFrom(a, sn.Addr().BitLen()-p.Bits))
	}
	return out
}

// blockAllowed says whether block i is among the blocks the pool may take.
func (p *Pool) blockAllowed(i uint64) bool {
	if p.Blocks == "" {
		return true
	}
	for _, r := range strings.Split(p.Blocks, ",") {
		lo, hi, found := strings.Cut(strings.TrimSpace(r), "-")
		if !found {
			hi = lo
		}
		a, _ := strconv.ParseUint(lo, 10, 64)
		b, _ := strconv.ParseUint(hi, 10, 64)
		if a <= i && i <= b {
			return true
		}
	}
	return false
}

// poolHolders are the addresses of a pool's subnets that links hold in the
// kernel from a pool (addrFromPool), by link.
func poolHolders(c *Config, k *Kernel, p *Pool, skip, prev map[string]bool) map[string][]netip.Addr {
	held, _ := poolAddrs(c, k, p, skip, prev)
	return held
}

// poolAddrs are the addresses of a pool's subnets that links hold in the
// kernel, by link: those from the pool (poolHolders) and the file's own.
func poolAddrs(c *Config, k *Kernel, p *Pool, skip, prev map[string]bool) (held, own map[string][]netip.Addr) {
	held, own = map[string][]netip.Addr{}, map[string][]netip.Addr{}
	for name, al := range k.Addrs {
		for _, a := range al.Addrs {
			ip, err := netip.ParseAddr(a.Local)
			if err != nil {
				continue
			}
			if _, ok := p.blockIndex(ip); !ok {
				continue
			}
			if fromPool, _ := addrFromPool(c, name, ip, skip, prev); !fromPool {
				own[name] = append(own[name], ip)
				continue
			}
			held[name] = append(held[name], ip)
		}
	}
	return held, own
}

// addrFromPool says whether the address ip that the kernel shows on link
// name is one a pool handed out (true) or the file's own (false), and
// whether the oracle knows which (known). A link in conflict (skip) is left
// as it is, and so is what its addresses are: what an earlier step recorded
// (prev, heldPoolAddrs) holds, whatever pools this step's file holds. A
// static address the link keeps stays the file's own once the file no
// longer declares it (the link left the file; the pool reserves it, as what
// the link keeps, and holds no block for it), also in a pool that came into
// the file after the link left it. An address the link held from a pool is
// the pool's no longer once the file declares it, on any link: the pool
// takes it back, as from a link not left out, and the link keeps it as the
// file's own where the file declares it on the link (compareNewBlocks
// checks that it left the link otherwise). A link not in conflict holds as
// the file's own what the file declares on it, and any other address of a
// pool's subnets is taken for the pool's (unknown).
func addrFromPool(c *Config, name string, ip netip.Addr, skip, prev map[string]bool) (fromPool, known bool) {
	if wasHeld, seen := prev[name+" "+ip.String()]; seen && skip[name] {
		return wasHeld && len(declaredOn(c, ip)) == 0, true
	}
	if slices.Contains(declaredOn(c, ip), name) {
		return false, true
	}
	return true, false
}

// declaredOn are the links on which the file declares the address ip
// statically.
func declaredOn(c *Config, ip netip.Addr) []string {
	var out []string
	for _, n := range c.LinkNames() {
		for _, a := range c.Links[n].Addrs {
			if a.Pool == "" && netip.MustParsePrefix(a.CIDR).Addr() == ip {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// compareExports checks every pool's export routes: a route of ours in the
// export table, dev lo, for each block that holds an address of a link or
// of another owner (others, by pool), and none for another block.
func compareExports(c *Config, k *Kernel, others map[string][]netip.Addr, skip, prev map[string]bool, bad func(string, ...any)) {
	proto := ipProto(c.Protocol)
	tables := map[string]bool{}
	var want []string
	for _, p := range c.Pools {
		tables[strconv.Itoa(p.Table)] = true
		held := map[uint64]bool{}
		for _, as := range poolHolders(c, k, p, skip, prev) {
			for _, a := range as {
				i, _ := p.blockIndex(a)
				held[i] = true
			}
		}
		for _, a := range others[p.Name] {
			if i, ok := p.blockIndex(a); ok {
				held[i] = true
			}
		}
		for i := range held {
			for _, b := range p.block(i) {
				want = append(want, fmt.Sprintf("table %d %s dev lo", p.Table, b))
			}
		}
	}
	var got []string
	for _, r := range k.Routes {
		if r.Protocol != proto || !tables[r.Table] {
			continue
		}
		dst := r.Dst
		if !strings.Contains(dst, "/") {
			dst += map[bool]string{false: "/32", true: "/128"}[r.v6]
		}
		got = append(got, fmt.Sprintf("table %s %s dev %s", r.Table, dst, r.Dev))
	}
	diffSets("export route", got, want, bad)
}

// compareNewBlocks checks that the pool addresses a link took in this step
// (not held by it the step before, prev) come from blocks the pool may take,
// that no address a link holds from a pool is on another link too (one that
// a link left out for a conflict keeps, the file's own included), and that
// an address a link left out for a conflict held from a pool left it when
// the file declares it on another link only: the pool took it back, and
// what it takes back leaves a link in conflict too.
func compareNewBlocks(c *Config, k *Kernel, skip, prev map[string]bool, bad func(string, ...any)) {
	for _, p := range c.Pools {
		held, own := poolAddrs(c, k, p, skip, prev)
		on := map[netip.Addr][]string{}
		for _, m := range []map[string][]netip.Addr{held, own} {
			for link, as := range m {
				for _, a := range as {
					on[a] = append(on[a], link)
				}
			}
		}
		for _, link := range sortedKeys(held) {
			for _, a := range held[link] {
				if len(on[a]) > 1 {
					links := slices.Clone(on[a])
					sort.Strings(links)
					bad("link %s: address %s of pool %s is on links %s", link, a, p.Name, strings.Join(links, ", "))
				}
			}
		}
		for _, link := range sortedKeys(own) {
			for _, a := range own[link] {
				if ds := declaredOn(c, a); skip[link] && prev[link+" "+a.String()] && len(ds) > 0 && !slices.Contains(ds, link) {
					bad("link %s: address %s, which it held from pool %s, is still on it, the file declaring it on %s", link, a, p.Name, strings.Join(ds, ", "))
				}
			}
		}
		for link, as := range held {
			for _, a := range as {
				if prev[link+" "+a.String()] {
					continue
				}
				if i, _ := p.blockIndex(a); !p.blockAllowed(i) {
					bad("link %s: address %s of pool %s is of block %d, not among its blocks %q", link, a, p.Name, i, p.Blocks)
				}
			}
		}
	}
}

// heldPoolAddrs records what the addresses the links hold are ("LINK
// ADDR"): true for those from a pool, false for the file's own
// (addrFromPool), for every address the file declares statically and every
// one in the subnets of the file's pools. The record is what the next step
// takes for a link in conflict (skip): such a link is left as it is, and
// whether a pool handed out what it keeps is as the last step recorded it,
// for as long as the kernel shows the address there. The file's static
// addresses are recorded whatever pools the file holds: a pool that comes
// into the file, or comes back, after the link left it finds what the link
// keeps in its subnets the file's own (the pool reserves it, and holds no
// block for it).
func heldPoolAddrs(c *Config, k *Kernel, skip, prev map[string]bool) map[string]bool {
	out := map[string]bool{}
	for name, al := range k.Addrs {
		for _, a := range al.Addrs {
			ip, err := netip.ParseAddr(a.Local)
			if err != nil {
				continue
			}
			fromPool, known := addrFromPool(c, name, ip, skip, prev)
			if known || slices.ContainsFunc(c.Pools, func(p *Pool) bool { _, ok := p.blockIndex(ip); return ok }) {
				out[name+" "+ip.String()] = fromPool
			}
		}
	}
	return out
}

// leftInPools says whether a link in conflict (skip) keeps, in the kernel,
// an address of the subnets of c's pools that is its own (own) or one a
// pool handed out (held): how often a walk meets what addrFromPool judges.
func leftInPools(c *Config, k *Kernel, skip, prev map[string]bool) (own, held bool) {
	for _, p := range c.Pools {
		h, o := poolAddrs(c, k, p, skip, prev)
		for link := range skip {
			own = own || len(o[link]) > 0
			held = held || len(h[link]) > 0
		}
	}
	return own, held
}

// syncOthers makes the other owners' allocations what c says, as a CNI
// plugin would with `ipam allocate` and `ipam release`: releases with the
// previous step's files (whose pools hold them), allocations with this
// step's. It records the addresses handed out, by pool.
func (r *runner) syncOthers(c *Config, file, confDir string) error {
	want := map[string]*Other{}
	for _, o := range c.Others {
		want[o.Pool+" "+o.Owner] = o
	}
	for _, key := range sortedKeys(r.others) {
		if want[key] != nil {
			continue
		}
		pool, owner, _ := strings.Cut(key, " ")
		code, out, errs := r.cli("ipam", "release", "--pool", pool, "--owner", owner, "-c", r.prevFile, "--conf-dir", r.prevConfDir)
		if code != 0 {
			return fmt.Errorf("ipam release --pool %s --owner %s: exit %d\n%s%s", pool, owner, code, out, errs)
		}
		delete(r.others, key)
	}
	for _, key := range sortedKeys(want) {
		if r.others[key] != nil {
			continue
		}
		o := want[key]
		code, out, errs := r.cli("ipam", "allocate", "--pool", o.Pool, "--owner", o.Owner, "-c", file, "--conf-dir", confDir, "-o", "json")
		if code == cli.ExitError && strings.Contains(errs, ipam.ErrPoolExhausted.Error()) {
			// A full pool (the step gave it fewer blocks): the other
			// owner gets nothing, as a CNI plugin's ADD would fail, and
			// holds nothing the oracle counts (r.others).
			continue
		}
		if code != 0 {
			return fmt.Errorf("ipam allocate --pool %s --owner %s: exit %d\n%s%s", o.Pool, o.Owner, code, out, errs)
		}
		var doc struct {
			Allocation struct {
				IPv4, IPv6 *string
			} `json:"allocation"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			return fmt.Errorf("ipam allocate: %w\n%s", err, out)
		}
		var as []netip.Addr
		for _, s := range []*string{doc.Allocation.IPv4, doc.Allocation.IPv6} {
			if s != nil {
				as = append(as, netip.MustParseAddr(*s))
			}
		}
		r.others[key] = as
	}
	return nil
}

// othersByPool are the other owners' addresses, by pool.
func (r *runner) othersByPool() map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, key := range sortedKeys(r.others) {
		pool, _, _ := strings.Cut(key, " ")
		out[pool] = append(out[pool], r.others[key]...)
	}
	for _, as := range out {
		sort.Slice(as, func(i, j int) bool { return as[i].Less(as[j]) })
	}
	return out
}
