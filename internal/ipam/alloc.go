package ipam

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// maxOwnerLen bounds an owner ID; container IDs (64 hex digits) and netns paths fit easily.
const maxOwnerLen = 256

var (
	// ErrPoolExhausted: no free address in the blocks this host may hold.
	ErrPoolExhausted = errors.New("pool exhausted")
	// ErrPoolInUse: the pool definition changed in a way that would move blocks still held.
	ErrPoolInUse = errors.New("pool definition conflicts with held blocks")
)

// Allocation is an address handed out to an owner; in a dual-stack pool, an IPv4 and an IPv6
// address at the same offset of the same block index.
//
// Every address of a block is handed out, the first and the last included: like Coil, the
// addresses are host addresses (/32, /128) routed to the host, not members of an on-link subnet,
// so there is no network or broadcast address to keep free.
//
// The registry's types carry no JSON: the command line's output has its own
// (internal/cli, docs/json.md), and the registry its line format (format.go).
type Allocation struct {
	Pool        string
	Owner       string
	Iface       string
	Block       uint64
	IPv4        netip.Addr
	IPv6        netip.Addr
	AllocatedAt time.Time
}

// Addrs returns the allocated addresses, IPv4 first.
func (a Allocation) Addrs() []netip.Addr { return valid(a.IPv4, a.IPv6) }

func (a Allocation) describe() string {
	d := "owner=" + a.Owner
	if a.Iface != "" {
		d += " iface=" + a.Iface
	}
	return d
}

// Usage counts what a pool uses on this host, for metrics.
type Usage struct {
	Pool string
	// BlocksHeld and BlocksAllowed: blocks held now, and how many this host may hold.
	BlocksHeld    int
	BlocksAllowed uint64
	// Addresses in the held blocks; in a dual-stack pool a v4+v6 pair counts once.
	Addresses uint64
	Allocated int
	// Cooling counts released addresses still waiting out the reuse delay.
	Cooling int
}

// state is one pool's registry in memory: what the file holds.
type state struct {
	pool    string
	layout  *layout // as recorded in the file, or the configured one once adopted
	blocks  []heldBlock
	allocs  []record   // in the order they were made
	cooling []released // in the order they were released
	// conflict says why the configured pool cannot be adopted; allocating is refused, while
	// releasing (which is how the conflict goes away) still works on the recorded layout.
	conflict error
}

type heldBlock struct {
	index uint64
	next  uint64 // offset to try first: the one after the last handed out
}

// slot is the place of an address, or of a dual-stack pair, in the layout.
type slot struct{ index, off uint64 }

type record struct {
	Allocation
	off uint64 // in block Allocation.Block
}

type released struct {
	ipv4, ipv6 netip.Addr
	at         time.Time
}

func newState(p *poolDef) *state {
	return &state{pool: p.Name, layout: p.layout}
}

// adopt switches the state to the configured layout of its pool, unless that would change the
// prefixes of a held block: appending subnets is fine, and so is any change while nothing is held.
func (s *state) adopt(p *poolDef) {
	s.conflict = nil
	if s.layout.equal(p.layout) {
		return
	}
	if len(s.blocks) > 0 && s.layout.bits != p.layout.bits {
		s.conflict = fmt.Errorf("%w: blockSizeBits cannot change from %d to %d while blocks are held (%d): release their addresses first",
			ErrPoolInUse, s.layout.bits, p.layout.bits, len(s.blocks))
		return
	}
	for _, b := range s.blocks {
		old4, old6 := s.layout.block(b.index)
		var new4, new6 netip.Prefix
		if b.index < p.layout.total {
			new4, new6 = p.layout.block(b.index)
		}
		if old4 != new4 || old6 != new6 {
			now := "no block " + strconv.FormatUint(b.index, 10)
			if new4.IsValid() || new6.IsValid() {
				now = "block " + strconv.FormatUint(b.index, 10) + " at " + Block{IPv4: new4, IPv6: new6}.describe()
			}
			s.conflict = fmt.Errorf("%w: block %d (%s) is held, but the new subnets have %s; subnets may only be appended while blocks are held: release its addresses first",
				ErrPoolInUse, b.index, Block{IPv4: old4, IPv6: old6}.describe(), now)
			return
		}
	}
	s.layout = p.layout
}

func (s *state) find(owner, iface string) int {
	return slices.IndexFunc(s.allocs, func(r record) bool { return r.Owner == owner && r.Iface == iface })
}

// expire forgets released addresses whose reuse delay has passed.
func (s *state) expire(now time.Time, delay time.Duration) {
	s.cooling = slices.DeleteFunc(s.cooling, func(r released) bool { return now.Sub(r.at) >= delay })
}

// allocate hands out a new address to owner, who holds none yet: the next free one after the
// last handed out in the lowest held block that has one, else the first of the lowest free block.
func (s *state) allocate(p *poolDef, owner, iface string, now time.Time) (Allocation, error) {
	if s.conflict != nil {
		return Allocation{}, s.conflict
	}
	taken := make(map[slot]struct{}, len(s.allocs)+len(s.cooling))
	inBlock := make(map[uint64]uint64, len(s.blocks))
	mark := func(at slot) {
		if _, dup := taken[at]; !dup {
			taken[at] = struct{}{}
			inBlock[at.index]++
		}
	}
	for _, r := range s.allocs {
		mark(slot{r.Block, r.off})
	}
	// A reserved address is the configuration's own (declared statically on a link): handing
	// it out would put it on two links, or twice on one.
	for _, a := range p.Reserved {
		if index, off, ok := s.layout.locate(a); ok {
			mark(slot{index, off})
		}
	}
	// A released address is located anew: it may come from a layout since replaced.
	for _, r := range s.cooling {
		for _, a := range []netip.Addr{r.ipv4, r.ipv6} {
			if index, off, ok := s.layout.locate(a); ok {
				mark(slot{index, off})
			}
		}
	}
	free := func(index, start uint64) (uint64, bool) {
		size := s.layout.size()
		if inBlock[index] >= size {
			return 0, false
		}
		for k := range size {
			off := (start + k) & (size - 1)
			if _, t := taken[slot{index, off}]; !t {
				return off, true
			}
		}
		return 0, false
	}

	held := make(map[uint64]bool, len(s.blocks))
	for i, b := range s.blocks {
		held[b.index] = true
		if !p.allows(b.index) {
			continue
		}
		if off, ok := free(b.index, b.next); ok {
			return s.take(i, off, owner, iface, now), nil
		}
	}
	for _, r := range p.allowed {
		for index := r.First; ; index++ {
			if !held[index] {
				if off, ok := free(index, 0); ok {
					i, _ := slices.BinarySearchFunc(s.blocks, index, func(b heldBlock, x uint64) int { return cmp.Compare(b.index, x) })
					s.blocks = slices.Insert(s.blocks, i, heldBlock{index: index})
					return s.take(i, off, owner, iface, now), nil
				}
			}
			if index == r.Last {
				break
			}
		}
	}
	return Allocation{}, fmt.Errorf("%w: no free address in the blocks this host may hold (%d)",
		ErrPoolExhausted, p.allowedCount())
}

func (s *state) take(i int, off uint64, owner, iface string, now time.Time) Allocation {
	b := &s.blocks[i]
	v4, v6 := s.layout.block(b.index)
	ip4, ip6 := at(v4, v6, off)
	a := Allocation{Pool: s.pool, Owner: owner, Iface: iface, Block: b.index, IPv4: ip4, IPv6: ip6, AllocatedAt: now}
	s.allocs = append(s.allocs, record{a, off})
	b.next = (off + 1) & (s.layout.size() - 1)
	return a
}

// release frees allocation i: its address cools for the reuse delay, and its block is given back
// if nothing else is allocated in it.
func (s *state) release(i int, now time.Time, delay time.Duration) Allocation {
	a := s.allocs[i].Allocation
	s.allocs = slices.Delete(s.allocs, i, i+1)
	if delay > 0 {
		s.cooling = append(s.cooling, released{ipv4: a.IPv4, ipv6: a.IPv6, at: now})
	}
	if !slices.ContainsFunc(s.allocs, func(r record) bool { return r.Block == a.Block }) {
		s.blocks = slices.DeleteFunc(s.blocks, func(b heldBlock) bool { return b.index == a.Block })
	}
	return a
}

func (s *state) heldBlocks() []Block {
	out := make([]Block, 0, len(s.blocks))
	for _, b := range s.blocks {
		v4, v6 := s.layout.block(b.index)
		out = append(out, Block{Pool: s.pool, Index: b.index, IPv4: v4, IPv6: v6})
	}
	return out
}

func (s *state) usage(p *poolDef) Usage {
	return Usage{
		Pool:          s.pool,
		BlocksHeld:    len(s.blocks),
		BlocksAllowed: p.allowedCount(),
		Addresses:     uint64(len(s.blocks)) * s.layout.size(),
		Allocated:     len(s.allocs),
		Cooling:       len(s.cooling),
	}
}

// checkOwner keeps owner IDs and interface names to printable ASCII without spaces: they are
// fields of the registry's lines.
func checkOwner(owner, iface string) error {
	if owner == "" || len(owner) > maxOwnerLen || !printable(owner) {
		return fmt.Errorf("owner %q: must be 1-%d printable ASCII characters without spaces", owner, maxOwnerLen)
	}
	if iface == "" {
		return nil
	}
	// The kernel's dev_valid_name, restricted to ASCII.
	if len(iface) > 15 || iface == "." || iface == ".." || !printable(iface) ||
		slices.ContainsFunc([]byte(iface), func(c byte) bool { return c == '/' || c == ':' }) {
		return fmt.Errorf("interface name %q: must be 1-15 printable ASCII characters without spaces, '/' or ':'", iface)
	}
	return nil
}

func printable(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
