// Package nftcache keeps, between one-shot commands, the elements of the
// nftables sets netreconcile read or wrote, in the namespace's state
// directory.
//
// Reading a 100k-element set takes the kernel hundreds of milliseconds (an
// interval set's dump restarts its tree walk at every message), and a
// one-shot apply of one more element otherwise dumps the whole set each run:
// slower than `nft -f`, which writes blind. The kernel counts every committed
// nftables transaction in a namespace (the ruleset generation, one GETGEN
// away); while it has not moved since the cache was written, the elements are
// known without reading them. The kernel side (kernel.Netlink's element
// cache) checks the generation before every use and updates the cache after
// its own batch; this package only carries it from one run to the next.
//
// A generation is a per-namespace counter that starts again with the
// namespace and with the boot, so the file also records the namespace's
// cookie (unique within a boot) and the boot's id: a snapshot of another
// namespace that once had the same name, or of the last boot, is never
// taken. Elements that change without a commit are never cached (sets with
// timeouts, dynamic sets: kernel.Netlink reads them every time).
//
// The file is a cache: one that is missing, unreadable, corrupt (a checksum
// covers it) or of another namespace is ignored and written again.
package nftcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// FileName is the cache's name in the namespace's state directory.
const FileName = "nft-elements.cache"

// MinElements is the size from which a snapshot is worth a file: smaller
// sets read back in a few milliseconds.
const MinElements = 1024

// maxFile bounds the file read back: a million IPv6 intervals take about
// 34 MB. An element costs 32 bytes in memory for as few as 3 in the file,
// so the bound is also what a damaged file can cost.
const maxFile = 64 << 20

// maxElements bounds the elements decoded from one file, all sets
// together: a million IPv6 intervals, the most the file's size allows for
// real sets, cost about 100 MB in memory. A file crafted of one-byte keys
// could otherwise hold 20 million elements within maxFile.
const maxElements = 1 << 20

const magic = "netreconcile nft element cache v1\n"

// Identity is what a snapshot belongs to: one namespace in one boot.
type Identity struct {
	Boot  string // /proc/sys/kernel/random/boot_id
	Netns uint64 // the namespace's cookie (SO_NETNS_COOKIE)
}

// CurrentIdentity returns the identity of the namespace with the given
// cookie in this boot; an error when either is unknown (then nothing is
// cached).
func CurrentIdentity(netnsCookie uint64) (Identity, error) {
	if netnsCookie == 0 {
		return Identity{}, errors.New("the namespace has no cookie (kernel before 5.14)")
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return Identity{}, fmt.Errorf("read the boot id: %w", err)
	}
	boot := strings.TrimSpace(string(b))
	if boot == "" {
		return Identity{}, errors.New("read the boot id: empty")
	}
	return Identity{Boot: boot, Netns: netnsCookie}, nil
}

// Load returns the snapshot in d if it belongs to id and was taken at the
// ruleset generation gen (the kernel's now); false otherwise (missing,
// unreadable, corrupt, another namespace or boot, or stale). The header is
// checked before any element is decoded: a file that cannot be used costs
// nothing more than its read.
func Load(d *statedir.Dir, id Identity, gen uint32) (kernel.NFTElemSnapshot, bool) {
	if d == nil {
		return kernel.NFTElemSnapshot{}, false
	}
	b, err := d.ReadFile(FileName, maxFile)
	if err != nil {
		return kernel.NFTElemSnapshot{}, false
	}
	if hid, hgen, ok := header(b); !ok || hid != id || hgen != uint64(gen) {
		return kernel.NFTElemSnapshot{}, false
	}
	got, s, err := Decode(b)
	if err != nil || got != id || s.Gen != gen {
		return kernel.NFTElemSnapshot{}, false
	}
	return s, true
}

// Save writes s for id to d, or removes the file when s is not worth one
// (fewer than minElements elements; MinElements but in tests), so that no
// stale snapshot outlives the sets.
func Save(d *statedir.Dir, id Identity, s kernel.NFTElemSnapshot, minElements int) error {
	n := 0
	for _, cs := range s.Sets {
		n += len(cs.Elems)
	}
	// Past maxElements, Load would refuse the file.
	if n < minElements || n > maxElements || len(s.Sets) == 0 {
		return d.Remove(FileName)
	}
	return d.WriteFile(FileName, Encode(id, s), 0o600)
}

// Same reports whether b holds what a does: the same generation and the
// same sets. At one generation a set has one content, so the elements need
// no comparing (an apply that changed nothing need not write the file
// again).
func Same(a, b kernel.NFTElemSnapshot) bool {
	if a.Gen != b.Gen || len(a.Sets) != len(b.Sets) {
		return false
	}
	for i := range a.Sets {
		if a.Sets[i].Table != b.Sets[i].Table || a.Sets[i].Set != b.Sets[i].Set {
			return false
		}
	}
	return true
}

// Encode renders a snapshot: the magic line, the SHA-256 of the rest, then
// the identity, the generation and each set with its elements, every string
// and count length-prefixed (uvarint).
func Encode(id Identity, s kernel.NFTElemSnapshot) []byte {
	var body []byte
	str := func(v string) {
		body = binary.AppendUvarint(body, uint64(len(v)))
		body = append(body, v...)
	}
	str(id.Boot)
	body = binary.AppendUvarint(body, id.Netns)
	body = binary.AppendUvarint(body, uint64(s.Gen))
	body = binary.AppendUvarint(body, uint64(len(s.Sets)))
	for _, cs := range s.Sets {
		str(cs.Table.Family)
		str(cs.Table.Name)
		str(cs.Set)
		body = binary.AppendUvarint(body, uint64(len(cs.Elems)))
		for _, e := range cs.Elems {
			str(e.Key)
			str(e.End)
		}
	}
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(magic)+len(sum)+len(body))
	out = append(out, magic...)
	out = append(out, sum[:]...)
	return append(out, body...)
}

// errCorrupt is any file Decode cannot take whole.
var errCorrupt = errors.New("nftables element cache: corrupt")

// Decode reads what Encode wrote; any other input is an error, never a
// panic nor a partial snapshot.
func Decode(b []byte) (Identity, kernel.NFTElemSnapshot, error) {
	var id Identity
	var s kernel.NFTElemSnapshot
	if !bytes.HasPrefix(b, []byte(magic)) || len(b) < len(magic)+sha256.Size {
		return id, s, errCorrupt
	}
	b = b[len(magic):]
	sum, body := b[:sha256.Size], b[sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return id, s, errCorrupt
	}
	r := reader{b: body}
	id.Boot = r.str()
	// The names are checked as the state directory's other records are
	// (it may be another user's): a boot id as the kernel writes it, the
	// families and names the configuration allows.
	if r.err == nil && statedir.CheckToken("boot id", id.Boot, 64, "-") != nil {
		r.err = errCorrupt
	}
	id.Netns = r.uint()
	gen := r.uint()
	if gen > 1<<32-1 {
		return id, s, errCorrupt
	}
	s.Gen = uint32(gen)
	// Every set and element takes at least a byte per field: counts above
	// what is left are corrupt, and are not allocated.
	nsets := r.count(4)
	total := 0
	for i := 0; i < nsets && r.err == nil; i++ {
		cs := kernel.NFTCachedSet{Table: model.NftTableKey{Family: r.str(), Name: r.str()}, Set: r.str()}
		if r.err == nil && (!slices.Contains(model.NftFamilies, cs.Table.Family) || !model.ValidNftName(cs.Table.Name) || !model.ValidNftName(cs.Set)) {
			r.err = errCorrupt
		}
		// Grown as read, not sized by the count: a count is only bounded
		// by the file's size, and an element takes 32 bytes in memory.
		nel := r.count(2)
		if total += nel; total > maxElements {
			r.err = errCorrupt
		}
		cs.Elems = []model.NftElem{}
		for j := 0; j < nel && r.err == nil; j++ {
			e := model.NftElem{Key: r.str(), End: r.str()}
			// In key order and unique, as the kernel side keeps them: a
			// duplicate would plan a delete of a declared element.
			if j > 0 && e.Key <= cs.Elems[j-1].Key {
				r.err = errCorrupt
			}
			cs.Elems = append(cs.Elems, e)
		}
		s.Sets = append(s.Sets, cs)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errCorrupt
	}
	if r.err != nil {
		return Identity{}, kernel.NFTElemSnapshot{}, r.err
	}
	return id, s, nil
}

// reader takes uvarints and strings off b; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	// Only the shortest form: one file per snapshot.
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count of items of at least minBytes each.
func (r *reader) count(minBytes int) int {
	v := r.uint()
	if r.err == nil && v > uint64(len(r.b)/minBytes) {
		r.err = errCorrupt
		return 0
	}
	return int(v)
}

func (r *reader) str() string {
	n := r.uint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = errCorrupt
	}
	if r.err != nil {
		return ""
	}
	v := string(r.b[:n])
	r.b = r.b[n:]
	return v
}

// header returns the identity and generation a file starts with, without
// decoding its elements or checking its sum.
func header(b []byte) (Identity, uint64, bool) {
	if !bytes.HasPrefix(b, []byte(magic)) || len(b) < len(magic)+sha256.Size {
		return Identity{}, 0, false
	}
	r := reader{b: b[len(magic)+sha256.Size:]}
	id := Identity{Boot: r.str(), Netns: r.uint()}
	gen := r.uint()
	return id, gen, r.err == nil
}
