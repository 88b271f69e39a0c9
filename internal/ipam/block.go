package ipam

import (
	"github.com/netreconcile/netreconcile/internal/model"

	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
)

// Block is an address block held by this host: the prefixes to export as routes dev lo in the
// pool's export table. In a dual-stack pool both prefixes are set.
type Block struct {
	Pool  string
	Index uint64
	IPv4  netip.Prefix
	IPv6  netip.Prefix
}

// Prefixes returns the block's valid prefixes, IPv4 first.
func (b Block) Prefixes() []netip.Prefix { return valid(b.IPv4, b.IPv6) }

// addrOrPrefix is a netip.Addr or a netip.Prefix: one family's half of a dual-stack pair.
type addrOrPrefix interface {
	IsValid() bool
	AppendTo([]byte) []byte
}

func valid[T addrOrPrefix](v4, v6 T) []T {
	var out []T
	for _, x := range []T{v4, v6} {
		if x.IsValid() {
			out = append(out, x)
		}
	}
	return out
}

func (b Block) describe() string {
	return Subnet{IPv4: b.IPv4, IPv6: b.IPv6}.String()
}

// layout numbers the blocks of a list of subnets: index 0 is the first block of the first
// subnet, and the numbering continues in the next subnet.
type layout struct {
	bits    int
	subnets []Subnet
	first   []uint64 // index of each subnet's first block
	total   uint64
}

func newLayout(blockBits int, subnets []Subnet) (*layout, error) {
	first, total, err := model.PoolLayout(blockBits, subnets)
	if err != nil {
		return nil, err
	}
	return &layout{bits: blockBits, subnets: slices.Clone(subnets), first: first, total: total}, nil
}

func (l *layout) size() uint64 { return 1 << l.bits }

func (l *layout) equal(o *layout) bool {
	return l.bits == o.bits && slices.Equal(l.subnets, o.subnets)
}

// block returns the prefixes of block index, which must be below l.total.
func (l *layout) block(index uint64) (v4, v6 netip.Prefix) {
	i := len(l.first) - 1
	for l.first[i] > index {
		i--
	}
	shift := u128{lo: index - l.first[i]}.shl(uint(l.bits))
	s := l.subnets[i]
	if s.IPv4.IsValid() {
		v4 = netip.PrefixFrom(addrAdd(s.IPv4.Addr(), shift), 32-l.bits)
	}
	if s.IPv6.IsValid() {
		v6 = netip.PrefixFrom(addrAdd(s.IPv6.Addr(), shift), 128-l.bits)
	}
	return v4, v6
}

// locate returns the block index of a and its offset in the block.
func (l *layout) locate(a netip.Addr) (index, off uint64, ok bool) {
	for i, s := range l.subnets {
		p := s.IPv6
		if a.Is4() {
			p = s.IPv4
		}
		if p.IsValid() && p.Contains(a) {
			d := addrSub(a, p.Addr())
			return l.first[i] + d.shr(uint(l.bits)).lo, d.lo & (l.size() - 1), true
		}
	}
	return 0, 0, false
}

// at returns the addresses at offset off of the block with prefixes v4 and v6.
func at(v4, v6 netip.Prefix, off uint64) (a4, a6 netip.Addr) {
	if v4.IsValid() {
		a4 = addrAdd(v4.Addr(), u128{lo: off})
	}
	if v6.IsValid() {
		a6 = addrAdd(v6.Addr(), u128{lo: off})
	}
	return a4, a6
}

// u128 is an address as a number, for carving blocks out of IPv6 subnets.
type u128 struct{ hi, lo uint64 }

func (x u128) shl(n uint) u128 {
	if n >= 64 {
		return u128{hi: x.lo << (n - 64)}
	}
	return u128{hi: x.hi<<n | x.lo>>(64-n), lo: x.lo << n}
}

func (x u128) shr(n uint) u128 {
	if n >= 64 {
		return u128{lo: x.hi >> (n - 64)}
	}
	return u128{hi: x.hi >> n, lo: x.lo>>n | x.hi<<(64-n)}
}

func toU128(a netip.Addr) u128 {
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

// addrAdd returns a+n; the caller keeps the result inside a's subnet, so an IPv4 address stays
// one.
func addrAdd(a netip.Addr, n u128) netip.Addr {
	x := toU128(a)
	lo, carry := bits.Add64(x.lo, n.lo, 0)
	hi, _ := bits.Add64(x.hi, n.hi, carry)
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	r := netip.AddrFrom16(b)
	if a.Is4() {
		return r.Unmap()
	}
	return r
}

// addrSub returns a-b for a >= b of the same family.
func addrSub(a, b netip.Addr) u128 {
	x, y := toU128(a), toU128(b)
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, borrow)
	return u128{hi: hi, lo: lo}
}
