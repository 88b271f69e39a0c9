package ipam

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

const (
	// DefaultBlockSizeBits gives /27 and /123 blocks of 32 addresses, Coil's default: one route
	// announced covers a typical host's pods, and a /16 pool still serves 2048 hosts.
	DefaultBlockSizeBits = 5
	// DefaultExportTable is Coil's export table, so a BIRD configuration written for Coil
	// announces our blocks unchanged.
	DefaultExportTable = 119
	// DefaultReuseDelay is Lyft's reuseIPWait default: long enough for peers, conntrack and
	// neighbour caches to forget the previous holder of an address before it is handed out again.
	DefaultReuseDelay = 60 * time.Second

	// maxBlockSizeBits caps a block at 2^32 addresses, far more than any host hands out, so that
	// an address's offset in its block always fits in the low 64 bits of the address.
	maxBlockSizeBits = 32
	// maxIndexBits caps a subnet at 2^62 blocks, so the block indexes of a handful of subnets add
	// up in a uint64 without overflow.
	maxIndexBits = 62
	// maxNameLen keeps a pool's file names (<name>.registry.tmp) far below NAME_MAX.
	maxNameLen = 64
)

// Subnet is one entry of a pool: an IPv4 prefix, an IPv6 prefix, or both. In a dual-stack pool
// both have the same number of host bits, so a block index names a v4 block and a v6 block of the
// same size (Coil's pairing), and an allocation gets the address at the same offset in each.
type Subnet struct {
	IPv4 netip.Prefix
	IPv6 netip.Prefix
}

// String writes the subnet's prefixes joined by "+", as in error messages and `ipam list`.
func (s Subnet) String() string {
	switch {
	case s.IPv4.IsValid() && s.IPv6.IsValid():
		return s.IPv4.String() + "+" + s.IPv6.String()
	case s.IPv4.IsValid():
		return s.IPv4.String()
	default:
		return s.IPv6.String()
	}
}

// IndexRange is an inclusive range of block indexes.
type IndexRange struct {
	First, Last uint64
}

// Pool is the definition of an address pool, with every default already filled in: the config
// parser starts from DefaultPool and overrides what the file sets, so that "show" can print the
// effective values and a zero here means zero.
type Pool struct {
	// Name keys the pool in the configuration and names its registry file.
	Name string
	// Subnets are carved into blocks in this order. Subnets may be appended while blocks are
	// held; removing, reordering or changing one is refused until its blocks are released.
	Subnets []Subnet
	// BlockSizeBits is the number of host bits of a block: 5 gives /27 and /123 blocks, 0 gives
	// single-address blocks (Coil uses those for public addresses).
	BlockSizeBits int
	// ExportTable is the routing table in which each held block is exported as a route dev lo.
	ExportTable uint32
	// ReuseDelay is how long a released address waits before it is handed out again.
	ReuseDelay time.Duration
	// AllowedBlocks limits the block indexes this host may take (the configuration is rendered
	// per host, so hosts sharing a pool get disjoint ranges). Empty allows every block. A block
	// already held outside the ranges keeps its allocations but gets no new ones.
	AllowedBlocks []IndexRange
	// Reserved are addresses the pool never hands out: those the configuration declares
	// statically inside the pool's subnets (a dual-stack pool then skips the pair at that
	// offset). Not recorded in the registry: the configuration gives them on every open. An
	// address already handed out keeps its owner; the engine reports the clash.
	Reserved []netip.Addr
}

// DefaultPool returns a pool with the documented defaults.
func DefaultPool(name string, subnets ...Subnet) Pool {
	return Pool{
		Name:          name,
		Subnets:       subnets,
		BlockSizeBits: DefaultBlockSizeBits,
		ExportTable:   DefaultExportTable,
		ReuseDelay:    DefaultReuseDelay,
	}
}

// Validate reports the first thing wrong with the pool definition.
func (p Pool) Validate() error {
	_, err := compile(p)
	return err
}

// poolDef is a validated pool with what the operations derive from it.
type poolDef struct {
	Pool
	layout  *layout
	allowed []IndexRange // sorted, disjoint, within the layout; the whole layout when unset
}

func compile(p Pool) (*poolDef, error) {
	if err := checkName(p.Name); err != nil {
		return nil, err
	}
	l, err := newLayout(p.BlockSizeBits, p.Subnets)
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	switch p.ExportTable {
	case 0, 252, 253, 254, 255:
		// unspec, compat, default, main, local: the kernel's own tables.
		return nil, fmt.Errorf("pool %s: export table %d is reserved by the kernel; use 1-251 or above 255 (default %d)",
			p.Name, p.ExportTable, DefaultExportTable)
	}
	if p.ReuseDelay < 0 {
		return nil, fmt.Errorf("pool %s: reuse delay %s is negative", p.Name, p.ReuseDelay)
	}
	allowed, err := normalizeRanges(p.AllowedBlocks, l.total)
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	p.Subnets = slices.Clone(p.Subnets)
	p.AllowedBlocks = slices.Clone(p.AllowedBlocks)
	return &poolDef{Pool: p, layout: l, allowed: allowed}, nil
}

func checkName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("pool name %q: must be 1-%d characters", name, maxNameLen)
	}
	for i, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && (c == '-' || c == '_' || c == '.')
		if !ok {
			return fmt.Errorf("pool name %q: use letters, digits and, after the first character, - _ . (the name is a file name)", name)
		}
	}
	return nil
}

// normalizeRanges sorts and merges ranges; no ranges means every block of the pool.
func normalizeRanges(ranges []IndexRange, total uint64) ([]IndexRange, error) {
	if len(ranges) == 0 {
		return []IndexRange{{0, total - 1}}, nil
	}
	out := slices.Clone(ranges)
	for _, r := range out {
		if r.First > r.Last {
			return nil, fmt.Errorf("allowed blocks %d-%d: first is after last", r.First, r.Last)
		}
		if r.Last >= total {
			return nil, fmt.Errorf("allowed blocks %d-%d: the pool has blocks 0-%d", r.First, r.Last, total-1)
		}
	}
	slices.SortFunc(out, func(a, b IndexRange) int { return cmp.Compare(a.First, b.First) })
	merged := out[:1]
	for _, r := range out[1:] {
		last := &merged[len(merged)-1]
		if r.First <= last.Last+1 {
			last.Last = max(last.Last, r.Last)
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}

func (p *poolDef) allows(index uint64) bool {
	for _, r := range p.allowed {
		if index >= r.First && index <= r.Last {
			return true
		}
	}
	return false
}

func (p *poolDef) allowedCount() uint64 {
	var n uint64
	for _, r := range p.allowed {
		n += r.Last - r.First + 1
	}
	return n
}

// checkPools validates each pool and what pools must not share: names and addresses.
func checkPools(pools []Pool) ([]*poolDef, error) {
	defs := make([]*poolDef, 0, len(pools))
	var errs []error
	for _, p := range pools {
		d, err := compile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range defs {
			if o.Name == d.Name {
				errs = append(errs, fmt.Errorf("pool %s is defined twice", d.Name))
			}
		}
		if err := checkOverlap(d, defs); err != nil {
			errs = append(errs, err)
		}
		defs = append(defs, d)
	}
	return defs, errors.Join(errs...)
}

func checkOverlap(d *poolDef, others []*poolDef) error {
	for _, o := range others {
		for _, s := range d.Subnets {
			for _, t := range o.Subnets {
				if s.IPv4.Overlaps(t.IPv4) || s.IPv6.Overlaps(t.IPv6) {
					return fmt.Errorf("pool %s: subnet %s overlaps %s of pool %s", d.Name, s, t, o.Name)
				}
			}
		}
	}
	return nil
}
