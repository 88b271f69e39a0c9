package model

// An address pool as the configuration defines it (PoolSpec): its subnets, block size, export
// table, reuse delay, the blocks this host may take and the addresses it never hands out, with
// the documented defaults and the checks a definition must pass. Package ipam carves pools into
// blocks and keeps their registries; the model holds the definition, so the desired stage builds
// it without the allocator.

import (
	"cmp"
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

	// MaxBlockSizeBits caps a block at 2^32 addresses, far more than any host hands out, so that
	// an address's offset in its block always fits in the low 64 bits of the address.
	MaxBlockSizeBits = 32
	// MaxIndexBits caps a subnet at 2^62 blocks, so the block indexes of a handful of subnets add
	// up in a uint64 without overflow.
	MaxIndexBits = 62
	// MaxPoolNameLen keeps a pool's file names (<name>.registry.tmp) far below NAME_MAX.
	MaxPoolNameLen = 64
)

// PoolSubnet is one entry of a pool: an IPv4 prefix, an IPv6 prefix, or both. In a dual-stack pool
// both have the same number of host bits, so a block index names a v4 block and a v6 block of the
// same size (Coil's pairing), and an allocation gets the address at the same offset in each.
type PoolSubnet struct {
	IPv4 netip.Prefix
	IPv6 netip.Prefix
}

// String writes the subnet's prefixes joined by "+", as in error messages and `ipam list`.
func (s PoolSubnet) String() string {
	switch {
	case s.IPv4.IsValid() && s.IPv6.IsValid():
		return s.IPv4.String() + "+" + s.IPv6.String()
	case s.IPv4.IsValid():
		return s.IPv4.String()
	default:
		return s.IPv6.String()
	}
}

// PoolRange is an inclusive range of block indexes.
type PoolRange struct {
	First, Last uint64
}

// PoolSpec is the definition of an address pool, with every default already filled in: the config
// parser starts from DefaultPool and overrides what the file sets, so that "show" can print the
// effective values and a zero here means zero.
type PoolSpec struct {
	// Name keys the pool in the configuration and names its registry file.
	Name string
	// Subnets are carved into blocks in this order. Subnets may be appended while blocks are
	// held; removing, reordering or changing one is refused until its blocks are released.
	Subnets []PoolSubnet
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
	AllowedBlocks []PoolRange
	// Reserved are addresses the pool never hands out: those the configuration declares
	// statically inside the pool's subnets (a dual-stack pool then skips the pair at that
	// offset). Not recorded in the registry: the configuration gives them on every open. An
	// address already handed out keeps its owner; the engine reports the clash.
	Reserved []netip.Addr
}

// DefaultPoolSpec returns a pool with the documented defaults.
func DefaultPoolSpec(name string, subnets ...PoolSubnet) PoolSpec {
	return PoolSpec{
		Name:          name,
		Subnets:       subnets,
		BlockSizeBits: DefaultBlockSizeBits,
		ExportTable:   DefaultExportTable,
		ReuseDelay:    DefaultReuseDelay,
	}
}

// Validate reports the first thing wrong with the pool definition.
func (p PoolSpec) Validate() error {
	if err := CheckPoolName(p.Name); err != nil {
		return err
	}
	_, total, err := PoolLayout(p.BlockSizeBits, p.Subnets)
	if err != nil {
		return fmt.Errorf("pool %s: %w", p.Name, err)
	}
	switch p.ExportTable {
	case 0, 252, 253, 254, 255:
		// unspec, compat, default, main, local: the kernel's own tables.
		return fmt.Errorf("pool %s: export table %d is reserved by the kernel; use 1-251 or above 255 (default %d)",
			p.Name, p.ExportTable, DefaultExportTable)
	}
	if p.ReuseDelay < 0 {
		return fmt.Errorf("pool %s: reuse delay %s is negative", p.Name, p.ReuseDelay)
	}
	if _, err := NormalizePoolRanges(p.AllowedBlocks, total); err != nil {
		return fmt.Errorf("pool %s: %w", p.Name, err)
	}
	return nil
}

// CheckPoolName refuses a pool name that cannot name the pool's registry file.
func CheckPoolName(name string) error {
	if name == "" || len(name) > MaxPoolNameLen {
		return fmt.Errorf("pool name %q: must be 1-%d characters", name, MaxPoolNameLen)
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

// NormalizePoolRanges sorts and merges ranges; no ranges means every block of the pool.
func NormalizePoolRanges(ranges []PoolRange, total uint64) ([]PoolRange, error) {
	if len(ranges) == 0 {
		return []PoolRange{{0, total - 1}}, nil
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
	slices.SortFunc(out, func(a, b PoolRange) int { return cmp.Compare(a.First, b.First) })
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

// PoolLayout numbers the blocks of a list of subnets cut into blocks of blockBits host bits: index 0
// is the first block of the first subnet, and the numbering continues in the next subnet. first
// holds the index of each subnet's first block, total the number of blocks. It refuses subnets
// that cannot be numbered so: of other families than the first, with host bits set, smaller than
// a block, of more than 2^MaxIndexBits blocks, overlapping.
func PoolLayout(blockBits int, subnets []PoolSubnet) (first []uint64, total uint64, err error) {
	if blockBits < 0 || blockBits > MaxBlockSizeBits {
		return nil, 0, fmt.Errorf("blockSizeBits %d: must be 0-%d", blockBits, MaxBlockSizeBits)
	}
	if len(subnets) == 0 {
		return nil, 0, fmt.Errorf("no subnets")
	}
	v4, v6 := subnets[0].IPv4.IsValid(), subnets[0].IPv6.IsValid()
	if !v4 && !v6 {
		return nil, 0, fmt.Errorf("the first subnet has neither an IPv4 nor an IPv6 prefix")
	}
	for _, s := range subnets {
		hostBits, err := checkSubnet(s, v4, v6)
		if err != nil {
			return nil, 0, err
		}
		if hostBits < blockBits {
			return nil, 0, fmt.Errorf("subnet %s is smaller than a block of blockSizeBits %d", s, blockBits)
		}
		if hostBits-blockBits > MaxIndexBits {
			return nil, 0, fmt.Errorf("subnet %s has 2^%d blocks, more than 2^%d: use a larger blockSizeBits or a smaller subnet",
				s, hostBits-blockBits, MaxIndexBits)
		}
		n := uint64(1) << (hostBits - blockBits)
		if total+n < total {
			return nil, 0, fmt.Errorf("subnets have more than 2^64 blocks in all")
		}
		first = append(first, total)
		total += n
	}
	if i, j, ok := overlapping(subnets); ok {
		return nil, 0, fmt.Errorf("subnet %s overlaps subnet %s", subnets[i], subnets[j])
	}
	return first, total, nil
}

// overlapping finds two subnets that overlap, i after j in the list, by
// sorting: prefixes are nested or disjoint, so after sorting by address
// (shorter first) an overlap shows between neighbours. A pool of 50k
// subnets was checked pair by pair, in seconds.
func overlapping(subnets []PoolSubnet) (i, j int, ok bool) {
	for _, family := range []func(PoolSubnet) netip.Prefix{func(s PoolSubnet) netip.Prefix { return s.IPv4 }, func(s PoolSubnet) netip.Prefix { return s.IPv6 }} {
		idx := make([]int, 0, len(subnets))
		for k, s := range subnets {
			if family(s).IsValid() {
				idx = append(idx, k)
			}
		}
		slices.SortFunc(idx, func(a, b int) int {
			p, q := family(subnets[a]).Masked(), family(subnets[b]).Masked()
			if c := p.Addr().Compare(q.Addr()); c != 0 {
				return c
			}
			return cmp.Compare(p.Bits(), q.Bits())
		})
		for k := 1; k < len(idx); k++ {
			a, b := idx[k-1], idx[k]
			if family(subnets[a]).Overlaps(family(subnets[b])) {
				return max(a, b), min(a, b), true
			}
		}
	}
	return 0, 0, false
}

// checkSubnet checks a subnet of a pool whose first subnet has the families v4 and v6, and
// returns its number of host bits.
func checkSubnet(s PoolSubnet, v4, v6 bool) (int, error) {
	if s.IPv4.IsValid() != v4 || s.IPv6.IsValid() != v6 {
		return 0, fmt.Errorf("subnet %s: every subnet of a pool must have the same families as the first", s)
	}
	if v4 && !s.IPv4.Addr().Is4() {
		return 0, fmt.Errorf("subnet %s: %s is not an IPv4 prefix", s, s.IPv4)
	}
	if v6 && (!s.IPv6.Addr().Is6() || s.IPv6.Addr().Is4In6()) {
		return 0, fmt.Errorf("subnet %s: %s is not an IPv6 prefix", s, s.IPv6)
	}
	hostBits := -1
	for _, p := range []netip.Prefix{s.IPv4, s.IPv6} {
		if !p.IsValid() {
			continue
		}
		if p != p.Masked() {
			return 0, fmt.Errorf("subnet %s: %s has host bits set; did you mean %s?", s, p, p.Masked())
		}
		h := p.Addr().BitLen() - p.Bits()
		if hostBits >= 0 && h != hostBits {
			return 0, fmt.Errorf("subnet %s: IPv4 and IPv6 prefixes must have the same number of host bits (%d and %d)", s, hostBits, h)
		}
		hostBits = h
	}
	return hostBits, nil
}
