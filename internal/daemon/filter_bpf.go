package daemon

import (
	"encoding/binary"
	"slices"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
)

// The route socket's kernel-side prefilter. A routing daemon beside ours
// sends notifications by the hundred thousand; receiving each one, even to
// drop it at once, costs a system call and a decode (0.75 CPU-s per 100k,
// measured), and a backlog of them delays the one that matters and
// overflows the socket (ENOBUFS). A classic BPF socket filter runs in the
// sender's context, before the message is queued: what it drops costs the
// daemon nothing.
//
// It is coarse and may only err towards passing: it drops a route
// notification only when it is not of our protocol, its table is none the
// file's routes use, or it is IPv4, laid out as the kernel writes it (the
// table attribute first, then the destination) and its destination lies
// outside every range covering the file's IPv4 destinations. Everything it
// passes is judged again, exactly, by watchSet.route; anything it cannot
// read it passes. So it never drops what the exact filter would wake on
// (TestRoutePrefilterPassesWhatWakes). What it drops is not counted in
// netreconcile_events_total.

// Limits that keep the program well under the kernel's 4096 instructions
// (BPF_MAXINSNS) and its conditional jumps local: beyond them the
// prefilter widens (fewer, larger ranges; no table check).
const (
	prefilterMaxTables = 32
	prefilterMaxRanges = 256
)

// What the prefilter reads of a route notification, where the codec says
// the kernel puts it (rtnl.OffsetRoute*): the message type, the rtmsg's
// family, destination length and protocol, then RTA_TABLE's header and
// value, then RTA_DST's header and, for IPv4, its address.
const (
	offType     = uint32(rtnl.OffsetType)
	offFamily   = uint32(rtnl.OffsetRouteFamily)
	offDstLen   = uint32(rtnl.OffsetRouteDstLen)
	offProtocol = uint32(rtnl.OffsetRouteProtocol)
	offTable    = uint32(rtnl.OffsetRouteTable)
	offDst      = uint32(rtnl.OffsetRouteDst)
	// attrU32 is the length of an attribute of a u32 or an IPv4 address.
	attrU32 = unix.SizeofRtAttr + 4
)

// v4range is an inclusive range of IPv4 addresses, as numbers.
type v4range struct{ lo, hi uint32 }

// routePrefilter returns the program for w; nil means pass everything.
func routePrefilter(w *watchSet) []bpf.Instruction {
	if w == nil {
		return nil
	}
	tables := map[int]bool{}
	var ranges []v4range
	for _, k := range w.declared.keys {
		tables[int(k.table)] = true
		// A default route matches only notifications without a
		// destination, which pass anyway: its range would be everything.
		if k.is4 && k.bits > 0 {
			lo := binary.BigEndian.Uint32(k.addr[12:])
			ranges = append(ranges, v4range{lo, lo | uint32(uint64(1)<<(32-int(k.bits))-1)})
		}
	}
	ranges = coverRanges(ranges, prefilterMaxRanges)

	pass := bpf.RetConstant{Val: 0xffffffff}
	drop := bpf.RetConstant{Val: 0}
	var p []bpf.Instruction
	// A message too short for the loads below: pass (a load past the end
	// would end the program with a drop).
	p = append(p,
		bpf.LoadExtension{Num: bpf.ExtLen},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: offDst + attrU32, SkipTrue: 1},
		pass,
	)
	// Not a route notification (the socket's groups send only these): pass.
	p = append(p,
		bpf.LoadAbsolute{Off: offType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: be16(unix.RTM_NEWROUTE), SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: be16(unix.RTM_DELROUTE), SkipTrue: 1},
		pass,
		// Our protocol: pass.
		bpf.LoadAbsolute{Off: offProtocol, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(w.protocol), SkipFalse: 1},
		pass,
		// The first attribute is RTA_TABLE, a u32, or pass.
		bpf.LoadAbsolute{Off: offTable, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: be16pair(attrU32, unix.RTA_TABLE), SkipTrue: 1},
		pass,
	)
	if len(tables) <= prefilterMaxTables {
		// A table none of the file's routes use: drop.
		p = append(p, bpf.LoadAbsolute{Off: offTable + unix.SizeofRtAttr, Size: 4})
		ts := make([]int, 0, len(tables))
		for t := range tables {
			ts = append(ts, t)
		}
		slices.Sort(ts)
		for i, t := range ts {
			// Jump over the remaining checks and the drop.
			p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: be32(uint32(t)), SkipTrue: uint8(len(ts) - 1 - i + 1)})
		}
		p = append(p, drop)
	}
	p = append(p,
		// IPv6, or a default route (no RTA_DST): pass.
		bpf.LoadAbsolute{Off: offFamily, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipFalse: 6},
		bpf.LoadAbsolute{Off: offDstLen, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 4},
		// The second attribute is RTA_DST, an IPv4 address, or pass.
		bpf.LoadAbsolute{Off: offDst, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: be16pair(attrU32, unix.RTA_DST), SkipFalse: 2},
		bpf.LoadAbsolute{Off: offDst + unix.SizeofRtAttr, Size: 4},
		bpf.Jump{Skip: 1},
		pass,
	)
	// The destination, a big-endian number in A: pass if it lies in a
	// range, else drop.
	for _, r := range ranges {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: r.lo, SkipFalse: 2},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: r.hi, SkipTrue: 1},
			pass,
		)
	}
	return append(p, drop)
}

// coverRanges merges ranges into at most max ranges that cover them all,
// closing the smallest gaps first.
func coverRanges(rs []v4range, max int) []v4range {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b v4range) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	out := []v4range{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if uint64(r.lo) <= uint64(last.hi)+1 {
			last.hi = max32(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	for len(out) > max {
		// Close the smallest gaps: find the gap size that leaves at most
		// max ranges, then merge every gap up to it.
		gaps := make([]uint32, len(out)-1)
		for i := range gaps {
			gaps[i] = out[i+1].lo - out[i].hi
		}
		sorted := slices.Clone(gaps)
		slices.Sort(sorted)
		limit := sorted[len(out)-max-1]
		merged := []v4range{out[0]}
		for i, g := range gaps {
			if g <= limit {
				merged[len(merged)-1].hi = max32(merged[len(merged)-1].hi, out[i+1].hi)
			} else {
				merged = append(merged, out[i+1])
			}
		}
		out = merged
	}
	return out
}

func max32(a, b uint32) uint32 {
	if a > b {
		return a
	}
	return b
}

// BPF loads are big-endian; netlink headers and attributes are in host
// order. These give the value a load of a host-order field yields.
func be16(v uint16) uint32 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return uint32(binary.BigEndian.Uint16(b[:]))
}

func be32(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

// be16pair is a 4-byte load over an attribute header (length, type).
func be16pair(length, typ uint16) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint16(b[:], length)
	binary.NativeEndian.PutUint16(b[2:], typ)
	return binary.BigEndian.Uint32(b[:])
}
