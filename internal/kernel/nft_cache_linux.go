package kernel

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// nftElemCache keeps the elements of the sets read or written at one
// ruleset generation. Reading a 100k-element interval set takes the kernel
// seconds (its rbtree dump restarts at every message), while the generation
// (one GETGEN) tells whether anything committed since: when nothing did, the
// elements are known without reading them. After our own batch, the
// generation must have moved by exactly one (ours) for the cache to be
// updated with the batch's element changes; anything else drops it.
type nftElemCache struct {
	valid bool
	gen   uint32
	sets  map[nftSetKey][]model.NftElem
}

type nftSetKey struct {
	table model.NftTableKey
	set   string
}

func (c *nftElemCache) reset(gen uint32) {
	c.valid, c.gen, c.sets = true, gen, map[nftSetKey][]model.NftElem{}
}

// applied updates the cache after a batch committed: the generation was
// before when the batch was sent, and is gen now.
//
// Only a cache that was valid at before (nothing committed between the
// read and the batch) is carried forward:
//   - a commit in between may have made a set the batch then "creates" (an
//     add of an existing set is a silent no-op in the kernel), so after it
//     nothing is known (a foreign set made in that window would be taken
//     for ours and empty);
//   - with nothing in between, the plan was made from reads of the ruleset
//     at before (NFTTable reads the generation first, absent tables too),
//     so a set the batch adds did not exist: it starts empty and takes the
//     batch's elements, and a first load is not dumped back (bench-nft:
//     the first one-shot load of a 100k-element set went from 0.9x to 2x
//     of nft -f when it was);
//   - a rule the batch adds or replaces may change sets from the packet
//     path (add @s, update @s, delete @s: no commit): fromPackets, the sets
//     its rules name so, are dropped, the ones it adds among them. A rule
//     the kernel already held that does so makes its set volatile, read
//     every time (NFTTable), so it is never in the cache.
func (c *nftElemCache) applied(ops []model.NftOp, fromPackets map[nftSetKey]bool, before, gen uint32) {
	if gen != before+1 || !c.valid || c.gen != before {
		c.valid = false
		return
	}
	c.gen = gen
	for _, op := range ops {
		switch op.Op {
		case model.NftDelTable:
			for k := range c.sets {
				if k.table == op.Table {
					delete(c.sets, k)
				}
			}
		case model.NftAddSet:
			if op.Set.Raw != nil || op.Set.Decl != "" {
				// A set nft declared is read every time.
				continue
			}
			c.sets[nftSetKey{op.Table, op.Set.Name}] = []model.NftElem{}
		case model.NftDelSet:
			delete(c.sets, nftSetKey{op.Table, op.Set.Name})
		case model.NftAddElems, model.NftDelElems:
			if op.RawElems != nil {
				continue
			}
			k := nftSetKey{op.Table, op.Set.Name}
			have, ok := c.sets[k]
			if !ok {
				continue
			}
			c.sets[k] = mergeElems(have, op.Elems, op.Op == model.NftDelElems)
		}
	}
	for k := range fromPackets {
		delete(c.sets, k)
	}
}

// mergeElems returns sorted have with change added (or removed), as a new
// slice: O(len(have)) for a small change.
func mergeElems(have, change []model.NftElem, remove bool) []model.NftElem {
	ch := append([]model.NftElem(nil), change...)
	model.SortNftElems(ch)
	out := make([]model.NftElem, 0, len(have)+len(ch))
	i, j := 0, 0
	for i < len(have) || j < len(ch) {
		switch {
		case j == len(ch) || i < len(have) && have[i].Key < ch[j].Key:
			out = append(out, have[i])
			i++
		case i == len(have) || ch[j].Key < have[i].Key:
			if !remove {
				out = append(out, ch[j])
			}
			j++
		default: // same key
			if !remove {
				out = append(out, ch[j])
			}
			i++
			j++
		}
	}
	return out
}

// NFTElems returns the element cache as it stands, in table and set order;
// false when it holds nothing valid.
func (k *Netlink) NFTElems() (NFTElemSnapshot, bool) {
	c := &k.nftElems
	if !c.valid || len(c.sets) == 0 {
		return NFTElemSnapshot{}, false
	}
	s := NFTElemSnapshot{Gen: c.gen}
	for key, es := range c.sets {
		s.Sets = append(s.Sets, NFTCachedSet{Table: key.table, Set: key.set, Elems: es})
	}
	slices.SortFunc(s.Sets, func(a, b NFTCachedSet) int {
		if c := cmp.Compare(a.Table.Family, b.Table.Family); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Table.Name, b.Table.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Set, b.Set)
	})
	return s, true
}

// SeedNFTElems loads a snapshot into an empty cache: it counts only while
// the ruleset is at s.Gen (every read checks the generation first). The
// caller vouches that the snapshot was taken in this namespace, in this
// boot: a generation is a per-namespace counter that starts again with
// the namespace.
func (k *Netlink) SeedNFTElems(s NFTElemSnapshot) {
	if k.nftElems.valid {
		return
	}
	k.nftElems.reset(s.Gen)
	for _, cs := range s.Sets {
		k.nftElems.sets[nftSetKey{cs.Table, cs.Set}] = cs.Elems
	}
}

// NFTGen returns the namespace's nftables ruleset generation (GETGEN): a
// counter of committed transactions, which a snapshot is taken at.
func (k *Netlink) NFTGen() (uint32, error) { return k.nftGen() }

// NetnsCookie returns the cookie of the namespace the kernel's sockets are
// in (SO_NETNS_COOKIE, Linux 5.14; 0 before): the identity a cached
// snapshot is checked against, taken from the sockets themselves so that a
// namespace replaced under its name between two opens is never mistaken
// for the one a snapshot belongs to.
func (k *Netlink) NetnsCookie() (uint64, error) {
	s := k.sockets[unix.NETLINK_ROUTE]
	if s == nil || s.Socket == nil {
		return 0, errors.New("no route socket")
	}
	v, err := unix.GetsockoptUint64(s.Socket.GetFd(), unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if errors.Is(err, unix.ENOPROTOOPT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("SO_NETNS_COOKIE: %w", err)
	}
	return v, nil
}
