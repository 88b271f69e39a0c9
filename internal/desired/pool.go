package desired

import (
	"fmt"
	"math/bits"
	"net/netip"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// maxBlockSizeBits: a block is at most an IPv4 address's 32 bits (in a
// dual-stack pool a block index names a v4 and a v6 block of one size).
const maxBlockSizeBits = 32

// poolConf is an entry of pools, keyed by the pool's name.
type poolConf struct {
	Meta
	Subnets       []*subnetConf `yaml:"subnets" schema:"required,unique"`
	BlockSizeBits int           `yaml:"block-size-bits" schema:"limits=blockSizeBits"`
	ExportTable   *Table        `yaml:"export-table"`
	ReuseDelay    *Duration     `yaml:"reuse-delay"`
	Blocks        *blockRanges  `yaml:"blocks"`
}

// subnetConf is an entry of a pool's subnets: a prefix of one family, or a dual-stack pair
// written {ipv4: P4, ipv6: P6}.
type subnetConf struct {
	Meta
	IPv4 *Prefix `yaml:"ipv4"`
	IPv6 *Prefix `yaml:"ipv6"`
}

func (s *subnetConf) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		s.Pos = d.pos(n)
		p := &Prefix{}
		if err := p.parse(n.Value); err != nil {
			d.fail(n, path, "%v", err)
			return
		}
		if p.Default {
			d.fail(n, path, "expected a subnet like 10.2.0.0/16, found %q", n.Value)
			return
		}
		key := "ipv4"
		if p.P.Addr().Is4() {
			s.IPv4 = p
		} else {
			key, s.IPv6 = "ipv6", p
		}
		s.keys = []keyPos{{key, s.Pos.Line, s.Pos.Col}}
		return
	}
	type plain subnetConf
	d.decodeStructValue(n, path, (*plain)(s))
}

// unparsableSubnet stands for every scalar subnet that did not parse, once
// reported (skipUnparsableSubnet): the builder skips it, whose only check
// of such an entry reports at the decoder's error.
var unparsableSubnet = subnetConf{}

// skipUnparsableSubnet reports c as decodeNode would, lazily, and stands
// unparsableSubnet for it if it is a scalar that is not a subnet.
func skipUnparsableSubnet(d *decoder, c *yaml.Node, path string, i int, e *reflect.Value) bool {
	if c.Kind != yaml.ScalarNode || c.Tag == "!!null" || c.Value != "default" && c.Value != "all" && !prefixFails(c.Value) {
		return false
	}
	d.errs.addLazy(d.pos(c), func() (string, string) {
		p := &Prefix{}
		if err := p.parse(c.Value); err != nil {
			return path + "[" + strconv.Itoa(i) + "]", err.Error()
		}
		return path + "[" + strconv.Itoa(i) + "]", fmt.Sprintf("expected a subnet like 10.2.0.0/16, found %q", c.Value)
	})
	e.Set(reflect.ValueOf(&unparsableSubnet))
	return true
}

// blockRanges is the block indexes a host may hold: "0-15", 7, or a list of those.
type blockRanges struct {
	ranges []model.PoolRange
	at     []Pos
}

func (r *blockRanges) decodeNode(d *decoder, n *yaml.Node, path string) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	// The item's path and the message are made for an error kept only: a
	// megabyte of "[x,x,…]" (aliased) is a million errors.
	fail := func(c *yaml.Node, i int) {
		d.errs.addLazy(d.pos(c), func() (string, string) {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = path + "[" + strconv.Itoa(i) + "]"
			}
			found := kindWord(c).String()
			if c.Kind == yaml.ScalarNode && c.Tag != "!!null" {
				found = strconv.Quote(c.Value)
			}
			return p, "expected a block index or a range like \"0-15\", found " + found
		})
	}
	for i, c := range items {
		if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
			fail(c, i)
			continue
		}
		first, last, isRange := strings.Cut(c.Value, "-")
		if !isRange {
			last = first
		}
		f, ok1 := blockIndex(first)
		l, ok2 := blockIndex(last)
		if !ok1 || !ok2 {
			fail(c, i)
			continue
		}
		r.ranges = append(r.ranges, model.PoolRange{First: f, Last: l})
		r.at = append(r.at, d.pos(c))
	}
}

// blockIndex parses one end of a block range, spaces around allowed; a
// word that is not all digits fails without making an error value.
func blockIndex(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// pools builds every pool of every file; they come before links, whose addresses use them.
func (b *builder) pools(confs []*fileConf) {
	b.poolConfs = map[string]*poolConf{}
	for _, fc := range confs {
		for _, name := range sortedKeys(fc.Pools) {
			pc := fc.Pools[name]
			if pc == nil {
				b.errs.add(fc.at("pools"), "pools."+name, "empty pool; expected at least \"subnets\"")
				continue
			}
			if prev, dup := b.poolConfs[name]; dup {
				b.errs.add(pc.Pos, "pools."+name, "pool declared again (first at %s)", prev.Pos)
				continue
			}
			b.poolConfs[name] = pc
		}
	}
	var all subnetIndex // the subnets of the pools before
	for _, name := range sortedKeys(b.poolConfs) {
		pc := b.poolConfs[name]
		p, ok := b.pool(name, pc)
		if !ok {
			continue
		}
		for _, s := range p.Subnets {
			if t, overlap := all.overlap(s); overlap {
				b.errs.add(pc.at("subnets"), "pools."+name+".subnets", "subnet %s overlaps %s of pool %s (declared at %s)", s, t.subnet, t.pool, t.origin)
				break
			}
		}
		for _, s := range p.Subnets {
			all.add(s, poolSubnet{s, p.Name, p.Origin})
		}
		b.st.Pools = append(b.st.Pools, p)
	}
}

// poolSubnet is a subnet in a subnetIndex, with what an error names.
type poolSubnet struct {
	subnet       model.PoolSubnet
	pool, origin string
}

// subnetIndex finds a subnet that overlaps another in time linear in the
// number of subnets (times the address length): two prefixes overlap only
// when one contains the other, so it keeps every prefix (to find one that
// contains a new prefix, at each of the new one's shorter lengths) and
// every proper ancestor of each (to find one the new prefix contains). A
// pool of 50k subnets was checked pair by pair, in seconds.
type subnetIndex struct {
	exact, under map[netip.Prefix]poolSubnet
}

func (x *subnetIndex) add(s model.PoolSubnet, v poolSubnet) {
	if x.exact == nil {
		x.exact, x.under = map[netip.Prefix]poolSubnet{}, map[netip.Prefix]poolSubnet{}
	}
	for _, p := range []netip.Prefix{s.IPv4, s.IPv6} {
		if !p.IsValid() {
			continue
		}
		if _, ok := x.exact[p]; !ok {
			x.exact[p] = v
		}
		for bits := p.Bits() - 1; bits >= 0; bits-- {
			a := netip.PrefixFrom(p.Addr(), bits).Masked()
			if _, ok := x.under[a]; ok {
				break // and so are the shorter ones
			}
			x.under[a] = v
		}
	}
}

func (x *subnetIndex) overlap(s model.PoolSubnet) (poolSubnet, bool) {
	for _, p := range []netip.Prefix{s.IPv4, s.IPv6} {
		if !p.IsValid() || x.exact == nil {
			continue
		}
		if v, ok := x.under[p.Masked()]; ok {
			return v, true
		}
		for bits := p.Bits(); bits >= 0; bits-- {
			if v, ok := x.exact[netip.PrefixFrom(p.Addr(), bits).Masked()]; ok {
				return v, true
			}
		}
	}
	return poolSubnet{}, false
}

// pool converts one pool, reporting each problem at its place; ok is false if there was one.
func (b *builder) pool(name string, pc *poolConf) (model.Pool, bool) {
	path := "pools." + name
	before := b.errs.count()
	p := model.Pool{PoolSpec: model.DefaultPoolSpec(name), Origin: pc.Pos.String()}
	if pc.has("block-size-bits") {
		p.BlockSizeBits = pc.BlockSizeBits
		if p.BlockSizeBits < 0 || p.BlockSizeBits > maxBlockSizeBits {
			b.errs.add(pc.at("block-size-bits"), path+".block-size-bits", "expected 0 to %d host bits per block (5 gives /27 and /123 blocks), found %d", maxBlockSizeBits, p.BlockSizeBits)
		}
	}
	if pc.ExportTable != nil {
		p.ExportTable = uint32(pc.ExportTable.N)
		switch pc.ExportTable.N {
		case model.TableDefault, model.TableMain, model.TableLocal, 252:
			b.errs.add(pc.at("export-table"), path+".export-table", "table %s is the kernel's own; expected 1-251 or above 255 (default %d)", model.TableName(pc.ExportTable.N), model.DefaultExportTable)
		}
	}
	if pc.ReuseDelay != nil {
		p.ReuseDelay = pc.ReuseDelay.D
	}
	if len(pc.Subnets) == 0 {
		b.errs.add(pc.at("subnets"), path+".subnets", "missing; expected a list of subnets like [10.2.0.0/16] or [{ipv4: 10.2.0.0/16, ipv6: \"fd01::/112\"}]")
	}
	var total uint64
	overflow := false
	var own subnetIndex
	for i, sc := range pc.Subnets {
		if sc == &unparsableSubnet {
			continue // reported by the decoder
		}
		if sc == nil || sc.IPv4 == nil && sc.IPv6 == nil {
			at := pc.at("subnets")
			if sc != nil {
				at = sc.Pos
			}
			b.errs.addLazy(at, func() (string, string) {
				return path + ".subnets[" + strconv.Itoa(i) + "]", "expected a subnet like 10.2.0.0/16 or a pair {ipv4: 10.2.0.0/16, ipv6: \"fd01::/112\"}"
			})
			continue
		}
		sp := fmt.Sprintf("%s.subnets[%d]", path, i)
		s, hostBits, ok := b.subnet(sp, sc)
		if !ok {
			continue
		}
		if len(p.Subnets) > 0 {
			first := p.Subnets[0]
			if first.IPv4.IsValid() != s.IPv4.IsValid() || first.IPv6.IsValid() != s.IPv6.IsValid() {
				b.errs.add(sc.Pos, sp, "subnet %s has other families than the first, %s; a dual-stack pair is written {ipv4: P4, ipv6: P6}", s, first)
				continue
			}
		}
		if t, overlap := own.overlap(s); overlap {
			b.errs.add(sc.Pos, sp, "subnet %s overlaps subnet %s of the same pool", s, t.subnet)
		}
		own.add(s, poolSubnet{subnet: s})
		if p.BlockSizeBits < 0 || p.BlockSizeBits > 32 {
			// reported at block-size-bits
		} else if hostBits < p.BlockSizeBits {
			b.errs.add(sc.Pos, sp, "subnet %s is smaller than one block of block-size-bits %d", s, p.BlockSizeBits)
		} else if n := hostBits - p.BlockSizeBits; n > 62 {
			overflow = true
		} else {
			var carry uint64
			total, carry = bits.Add64(total, 1<<n, 0)
			overflow = overflow || carry != 0
		}
		p.Subnets = append(p.Subnets, s)
	}
	if pc.Blocks != nil {
		p.AllowedBlocks = pc.Blocks.ranges
		for i, r := range pc.Blocks.ranges {
			switch {
			case r.First > r.Last:
				b.errs.add(pc.Blocks.at[i], path+".blocks", "range %d-%d: the first index is after the last", r.First, r.Last)
			case !overflow && total > 0 && b.errs.count() == before && r.Last >= total:
				b.errs.add(pc.Blocks.at[i], path+".blocks", "range %d-%d: the pool has blocks 0-%d", r.First, r.Last, total-1)
			}
		}
	}
	if b.errs.count() > before {
		return p, false
	}
	// What pooldef refuses beyond the checks above (a name that cannot be a file name,
	// a pool of more than 2^64 blocks) is reported at the pool.
	if err := p.Validate(); err != nil {
		b.errs.add(pc.Pos, path, "%s", strings.TrimPrefix(err.Error(), "pool "+name+": "))
		return p, false
	}
	return p, true
}

// subnet converts one subnet and returns its number of host bits.
func (b *builder) subnet(path string, sc *subnetConf) (model.PoolSubnet, int, bool) {
	var s model.PoolSubnet
	hostBits := -1
	for _, f := range []struct {
		key string
		p   *Prefix
		v6  bool
		dst *netip.Prefix
	}{{"ipv4", sc.IPv4, false, &s.IPv4}, {"ipv6", sc.IPv6, true, &s.IPv6}} {
		if f.p == nil {
			continue
		}
		if f.p.Default || f.p.P.Addr().Is6() != f.v6 {
			b.errs.add(sc.at(f.key), path+"."+f.key, "expected an %s subnet, found %s", familyWord(f.v6), prefixWord(f.p))
			return s, 0, false
		}
		*f.dst = f.p.P
		h := f.p.P.Addr().BitLen() - f.p.P.Bits()
		if hostBits >= 0 && h != hostBits {
			b.errs.add(sc.at(f.key), path+"."+f.key, "a dual-stack pair needs prefixes of the same size in host bits: %s has %d, %s has %d", s.IPv4, hostBits, f.p.P, h)
			return s, 0, false
		}
		hostBits = h
	}
	return s, hostBits, true
}

func prefixWord(p *Prefix) string {
	if p.Default {
		return "default"
	}
	return p.P.String()
}

// poolAddress is a link's address entry that names a pool instead of an address.
func (b *builder) poolAddress(link string, path func() string, ac *addressConf) {
	for _, k := range []string{"address", "peer"} {
		if ac.has(k) {
			b.errs.add(ac.at(k), path()+"."+k, "an address taken from a pool has no %s: give either address or pool", k)
			return
		}
	}
	pc, ok := b.poolConfs[ac.Pool]
	if !ok {
		b.errs.add(ac.at("pool"), path()+".pool", "pool %q is not declared under pools", ac.Pool)
		return
	}
	var pool *model.Pool
	for i := range b.st.Pools {
		if b.st.Pools[i].Name == ac.Pool {
			pool = &b.st.Pools[i]
		}
	}
	pa := model.PoolAddress{Link: link, Pool: ac.Pool, IPv4Bits: 32, IPv6Bits: 128, NoPrefixRoute: ac.NoPrefixRoute, Origin: ac.Pos.String()}
	if ac.Scope != nil {
		pa.Scope = ac.Scope.N
	}
	if pool == nil {
		return // the pool's own errors are reported
	}
	v4, v6 := pool.Subnets[0].IPv4.IsValid(), pool.Subnets[0].IPv6.IsValid()
	length := func(key string, n *int, v6 bool, dst *int) {
		if n == nil {
			return
		}
		max := 32
		if v6 {
			max = 128
		}
		if *n < 1 || *n > max {
			b.errs.add(ac.at(key), path()+"."+key, "expected a prefix length from 1 to %d, found %d", max, *n)
			return
		}
		*dst = *n
	}
	switch {
	case ac.PrefixLength != nil && v4 && v6:
		b.errs.add(ac.at("prefix-length"), path()+".prefix-length", "pool %s is dual-stack (declared at %s): give ipv4-prefix-length and ipv6-prefix-length instead", ac.Pool, pc.Pos)
	case ac.PrefixLength != nil:
		if v4 {
			length("prefix-length", ac.PrefixLength, false, &pa.IPv4Bits)
		} else {
			length("prefix-length", ac.PrefixLength, true, &pa.IPv6Bits)
		}
	}
	for _, f := range []struct {
		key      string
		n        *int
		v6, have bool
		dst      *int
	}{{"ipv4-prefix-length", ac.IPv4PrefixLength, false, v4, &pa.IPv4Bits}, {"ipv6-prefix-length", ac.IPv6PrefixLength, true, v6, &pa.IPv6Bits}} {
		if f.n == nil {
			continue
		}
		if !f.have {
			b.errs.add(ac.at(f.key), path()+"."+f.key, "pool %s has no %s subnets", ac.Pool, familyWord(f.v6))
			continue
		}
		length(f.key, f.n, f.v6, f.dst)
	}
	if prev, dup := b.poolAddrAt[[2]string{link, ac.Pool}]; dup {
		b.errs.add(ac.at("pool"), path()+".pool", "link %s already takes an address from pool %s (at %s); a link takes one address per pool", link, ac.Pool, prev)
		return
	}
	b.poolAddrAt[[2]string{link, ac.Pool}] = pa.Origin
	b.st.PoolAddresses = append(b.st.PoolAddresses, pa)
}
