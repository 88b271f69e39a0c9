package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// dumpBufSize is the receive buffer of a route dump read: the kernel fills
// at most 32 KiB per message batch (netlink_dump caps max_recvmsg_len).
const dumpBufSize = 64 << 10

// dumpRoutes lists routes of protocol (all when 0), parsing the kernel's
// messages straight into model.Route. The request carries rtm_protocol and
// the socket has strict checking on, so the kernel itself skips the
// routes of other protocols (kernel ≥ 4.20); the check here covers older
// ones. n is how many route messages the kernel sent.
//
// table, when not 0, asks for the routes of that table only (RTA_TABLE in
// the request; also filtered in the kernel under strict checking); family,
// when not 0 (AF_UNSPEC), those of one family: the other's tables are not
// walked at all. keep,
// when not nil, says which of the routes read to keep, before they are
// made model routes: the others cost their decoding only.
func (k *Netlink) dumpRoutes(family uint8, protocol, table int, out []model.Route, keep func(*rtnl.Route) bool) (_ []model.Route, n int, err error) {
	k.batchMu.Lock()
	defer k.batchMu.Unlock()
	if err := k.openBatch(); err != nil {
		return nil, 0, fmt.Errorf("open netlink: %w", err)
	}
	b := k.batch
	body, err := rtnl.MarshalRoute(&rtnl.Route{Family: family, Protocol: uint8(protocol), Table: uint32(table)})
	if err != nil {
		return nil, 0, err
	}
	b.seq++
	seq := b.seq
	req, err := rtnl.AppendRequest(nil, unix.RTM_GETROUTE, unix.NLM_F_DUMP, seq, body)
	if err != nil {
		return nil, 0, err
	}
	if err := unix.Sendto(b.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, 0, fmt.Errorf("send: %w", err)
	}
	// Made per dump, not kept: a daemon dumps routes only in passes that
	// read them.
	buf := make([]byte, dumpBufSize)
	ne := binary.NativeEndian
	intr := false
	var dev lastName
	var rm rtnl.Route
	for {
		r, err := b.read(buf)
		if err != nil {
			return nil, n, err
		}
		data := buf[:r]
		for len(data) >= unix.SizeofNlMsghdr {
			l := int(ne.Uint32(data[0:4]))
			if l < unix.SizeofNlMsghdr || l > len(data) {
				return nil, n, fmt.Errorf("malformed netlink message")
			}
			m := data[:l]
			data = data[min(nlmAlign(l), len(data)):]
			typ, flags, got := ne.Uint16(m[4:6]), ne.Uint16(m[6:8]), ne.Uint32(m[8:12])
			if got != seq {
				continue // an answer to an earlier, abandoned request
			}
			if flags&unix.NLM_F_DUMP_INTR != 0 {
				intr = true
			}
			switch typ {
			case unix.NLMSG_DONE:
				if intr {
					return nil, n, netlink.ErrDumpInterrupted
				}
				if len(m) >= unix.SizeofNlMsghdr+4 {
					if code := int32(ne.Uint32(m[unix.SizeofNlMsghdr:])); code < 0 {
						return nil, n, unix.Errno(-code)
					}
				}
				b.dumped = n
				return out, n, nil
			case unix.NLMSG_ERROR:
				if code := int32(ne.Uint32(m[unix.SizeofNlMsghdr:])); code < 0 {
					return nil, n, unix.Errno(-code)
				}
			case unix.RTM_NEWROUTE:
				n++
				switch err := rtnl.DecodeRoute(m[unix.SizeofNlMsghdr:], &rm); {
				case errors.Is(err, rtnl.ErrFamily):
				case err != nil:
					return nil, n, fmt.Errorf("read route: %w", err)
				case rm.Flags&unix.RTM_F_CLONED != 0, protocol != 0 && int(rm.Protocol) != protocol, keep != nil && !keep(&rm):
				default:
					out = append(out, model.Route{})
					k.fillRoute(&out[len(out)-1], &rm, &dev)
				}
			}
		}
	}
}

// lastName remembers the last link looked up: the routes of a dump mostly
// share a few links, and each lookup takes the cache's lock.
type lastName struct {
	k     *Netlink
	index int
	name  string
}

func nlmAlign(l int) int { return (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// fillRoute sets r, a zero route, to a route of a dump as the model holds
// it: links by name, next hops in model order. It fills r in place: a
// model.Route built aside and copied into the dump's slice cost a tenth
// of a dump.
func (k *Netlink) fillRoute(r *model.Route, rm *rtnl.Route, dev *lastName) {
	dev.k = k
	fillRoute(r, rm, dev)
}

// linkNamer names links by index, "" for 0 (or one it does not know).
type linkNamer interface{ of(index uint32) string }

func fillRoute[N linkNamer](r *model.Route, rm *rtnl.Route, dev N) {
	r.Table, r.Dst, r.TOS, r.Metric, r.Type = rm.Table, rm.Dst, rm.TOS, rm.Priority, rm.Type
	r.Gateway, r.Dev, r.Src, r.Scope = rm.Gateway, dev.of(rm.OIF), rm.PrefSrc, rm.Scope
	r.OnLink, r.MTU, r.Protocol = rm.Flags&unix.RTNH_F_ONLINK != 0, rm.MTU, rm.Protocol
	if len(rm.NextHops) > 0 {
		r.NextHops = make([]model.NextHop, len(rm.NextHops))
		for i, h := range rm.NextHops {
			r.NextHops[i] = model.NextHop{Gateway: h.Gateway, Dev: dev.of(h.Ifindex), Weight: h.Weight}
		}
		model.SortNextHops(r.NextHops)
	}
}

// namerFunc is a linkNamer of a function.
type namerFunc func(index uint32) string

func (f namerFunc) of(index uint32) string {
	if index == 0 {
		return ""
	}
	return f(index)
}

// RouteOf is the route of a route notification's body (RTM_NEWROUTE,
// RTM_DELROUTE: the kernel fills it as it fills a dump's), as a dump lists
// it, with links named by name (index 0 is never asked). ok is false when
// it does not decode, is a cached clone (RTM_F_CLONED, which no dump of
// ours lists), or names a link name does not know ("").
func RouteOf(body []byte, name func(index uint32) string) (r model.Route, ok bool) {
	var rm rtnl.Route
	if rtnl.DecodeRoute(body, &rm) != nil || rm.Flags&unix.RTM_F_CLONED != 0 {
		return r, false
	}
	known := true
	fillRoute(&r, &rm, namerFunc(func(i uint32) string {
		n := name(i)
		known = known && n != ""
		return n
	}))
	return r, known
}

// of is the name of link index, "" for 0.
func (d *lastName) of(index uint32) string {
	if index == 0 {
		return ""
	}
	if int(index) != d.index {
		d.index, d.name = int(index), d.k.name(int(index))
	}
	return d.name
}
