package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// The batch path sends route requests in windows: up to routeBatcher.window
// messages (batchWindowMax at most) in one sendmsg, then every ACK of the window read back with
// recvmmsg. The kernel handles the messages of one datagram in order and
// answers each one (NLM_F_ACK), so a failing route gets its own error,
// matched to its request by sequence number, and the next ones still run.
// `ip -batch` waits for each ACK in turn: two system calls and a round trip
// per route.
const (
	// batchRcvBuf is the receive buffer forced on the batch socket. Every
	// ACK is a separate skb charged at its truesize (about 1 KiB however
	// short the message); one that does not fit is dropped and the socket
	// flagged ENOBUFS, and its request could not be told done or failed.
	batchRcvBuf = 4 << 20
	// batchAckCost is what one ACK is counted at against the buffer, with
	// margin over the truesize.
	batchAckCost = 2048
	// batchWindowMax bounds a window: more brings nothing once the system
	// calls are amortised.
	batchWindowMax = 1024
	// batchSendMax bounds a window's datagram (70 to 130 bytes a route): the
	// kernel refuses a sendmsg larger than the send buffer (EMSGSIZE), 208 KiB
	// by default and smaller on some hosts.
	batchSendMax = 64 << 10
	// batchAckSlot is the room for one ACK: header, error and the echoed
	// request header (NETLINK_CAP_ACK keeps the request's body out).
	batchAckSlot = 256
	// batchAckWait bounds the wait for a window's last ACK. The kernel
	// answers during the sendmsg itself; this only guards against a lost ACK.
	batchAckWait = 5000 // ms
)

// routeBatcher is the socket route batches are written and routes dumped
// on. It is a socket of its own so that no other request's answers mix with
// a window's ACKs.
//
// The buffers of a batch (a window's requests, its ACK slots: about 400 KiB
// at the largest window) live only during WriteRoutes: an idle daemon
// writes routes rarely, and holds none of them between passes.
type routeBatcher struct {
	sock   *nl.NetlinkSocket
	fd     int
	seq    uint32
	window int
	buf    []byte
	acks   []byte
	msgs   []unix.Mmsghdr
	iovs   []unix.Iovec
	// dumped is how many route messages the last dump received.
	dumped int
}

func openRouteBatcher(ns netns.NsHandle) (*routeBatcher, error) {
	sock, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	fd := sock.GetFd()
	// Forcing needs CAP_NET_ADMIN; without it the buffer is what rmem_max
	// allows, and the window shrinks to fit.
	if err := sock.SetReceiveBufferSize(batchRcvBuf, true); err != nil {
		_ = sock.SetReceiveBufferSize(batchRcvBuf, false)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	// Strict checking lets the kernel filter route dumps by protocol.
	// Kernels before 4.20 refuse the option; they still work, only slower.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1)
	rcv, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		sock.Close()
		return nil, err
	}
	w := min(max(rcv/batchAckCost, 1), batchWindowMax)
	return &routeBatcher{sock: sock, fd: fd, window: w}, nil
}

// slots makes the ACK slots of windows of up to n requests.
func (b *routeBatcher) slots(n int) {
	b.acks, b.msgs, b.iovs = make([]byte, n*batchAckSlot), make([]unix.Mmsghdr, n), make([]unix.Iovec, n)
	for i := range b.msgs {
		b.iovs[i].Base = &b.acks[i*batchAckSlot]
		b.iovs[i].SetLen(batchAckSlot)
		b.msgs[i].Hdr.Iov = &b.iovs[i]
		b.msgs[i].Hdr.SetIovlen(1)
	}
}

// release lets go of a batch's buffers.
func (b *routeBatcher) release() { b.buf, b.acks, b.msgs, b.iovs = nil, nil, nil, nil }

func (b *routeBatcher) close() { b.sock.Close() }

// openBatch opens the route socket on first use. Called with batchMu held.
func (k *Netlink) openBatch() error {
	if k.batch != nil {
		return nil
	}
	b, err := openRouteBatcher(k.ns)
	if err != nil {
		return err
	}
	k.batch = b
	return nil
}

// read reads one datagram into buf, waiting for it.
func (b *routeBatcher) read(buf []byte) (int, error) {
	for {
		n, _, err := unix.Recvfrom(b.fd, buf, unix.MSG_DONTWAIT)
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			if err := b.wait(); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("receive: %w", err)
		}
	}
}

// wait waits until the socket has something to read.
func (b *routeBatcher) wait() error {
	fds := []unix.PollFd{{Fd: int32(b.fd), Events: unix.POLLIN}}
	p, err := unix.Poll(fds, batchAckWait)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("wait for answer: %w", err)
	}
	if p == 0 && err == nil {
		return errors.New("no answer from the kernel")
	}
	return nil
}

// WriteRoutes writes a batch of routes, a window of requests at a time.
func (k *Netlink) WriteRoutes(ws []RouteWrite, protocol int) []error {
	errs := make([]error, len(ws))
	k.batchMu.Lock()
	defer k.batchMu.Unlock()
	if err := k.openBatch(); err != nil {
		for i, w := range ws {
			errs[i] = routeErr(w.Action, w.Route, fmt.Errorf("open netlink: %w", err))
		}
		return errs
	}
	b := k.batch
	// A repair of one route needs one slot, not a window's.
	b.slots(min(b.window, len(ws)))
	defer b.release()
	// seqs[j] is the sequence number of window request j; idx[j] its write.
	seqs := make([]uint32, 0, len(b.msgs))
	idx := make([]int, 0, len(b.msgs))
	for i := 0; i < len(ws); {
		b.buf, seqs, idx = b.buf[:0], seqs[:0], idx[:0]
		for ; i < len(ws) && len(seqs) < len(b.msgs) && len(b.buf) < batchSendMax; i++ {
			buf, err := k.routeRequest(b.buf, ws[i], protocol, b.seq+1)
			if err != nil {
				errs[i] = routeErr(ws[i].Action, ws[i].Route, err)
				continue
			}
			b.seq++
			b.buf = buf
			seqs = append(seqs, b.seq)
			idx = append(idx, i)
		}
		if len(seqs) == 0 {
			continue
		}
		k.writes.Add(uint64(len(seqs)))
		for j, err := range b.exchange(seqs) {
			errs[idx[j]] = routeErr(ws[idx[j]].Action, ws[idx[j]].Route, err)
		}
	}
	// The next list is sized for what the batch added and deleted: the
	// list after a first converge is otherwise grown from nothing, and the
	// daemon keeps it, a quarter of it empty, until its next full read.
	d := int64(0)
	for i, w := range ws {
		switch {
		case errs[i] != nil:
		case w.Action == RouteAdd:
			d++
		case w.Action == RouteDelete:
			d--
		}
	}
	if h := k.routeHint.Add(d); h < 0 {
		k.routeHint.Store(0)
	}
	return errs
}

// exchange sends the window in b.buf and returns each request's answer.
func (b *routeBatcher) exchange(seqs []uint32) []error {
	errs := make([]error, len(seqs))
	fail := func(err error) []error {
		for j := range errs {
			errs[j] = err
		}
		return errs
	}
	if err := unix.Sendto(b.fd, b.buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fail(fmt.Errorf("send: %w", err))
	}
	// Sequence numbers of a window are consecutive.
	first := seqs[0]
	answered := make([]bool, len(seqs))
	left := len(seqs)
	for left > 0 {
		n, err := b.recv(left)
		if err != nil {
			for j := range errs {
				if !answered[j] {
					errs[j] = err
				}
			}
			return errs
		}
		for m := 0; m < n; m++ {
			ack := b.acks[m*batchAckSlot : m*batchAckSlot+int(b.msgs[m].Len)]
			seq, errno, ok := parseAck(ack)
			j := int(seq - first)
			if !ok || j < 0 || j >= len(seqs) || answered[j] {
				continue // a late answer of an earlier, failed window
			}
			answered[j] = true
			left--
			if errno != 0 {
				errs[j] = errno
			}
		}
	}
	return errs
}

// recv reads up to n messages, waiting for the first one.
func (b *routeBatcher) recv(n int) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(b.fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := b.wait(); err != nil {
				return 0, err
			}
		case unix.ENOBUFS:
			// An ACK was dropped: the outcome of this window is unknown.
			return 0, fmt.Errorf("receive answers: %w", e)
		default:
			return 0, fmt.Errorf("receive answers: %w", e)
		}
	}
}

// parseAck reads an NLMSG_ERROR answer: the request's sequence number and
// its errno (0 for success).
func parseAck(b []byte) (seq uint32, errno syscall.Errno, ok bool) {
	if len(b) < unix.SizeofNlMsghdr+4 {
		return 0, 0, false
	}
	ne := binary.NativeEndian
	if ne.Uint16(b[4:6]) != unix.NLMSG_ERROR {
		return 0, 0, false
	}
	code := int32(ne.Uint32(b[unix.SizeofNlMsghdr:]))
	return ne.Uint32(b[8:12]), syscall.Errno(-code), true
}

// routeRequest encodes one write of a batch as the library's RouteAdd,
// RouteReplace and RouteDel would.
func (k *Netlink) routeRequest(buf []byte, w RouteWrite, protocol int, seq uint32) ([]byte, error) {
	r := w.Route
	var typ, flags uint16
	switch w.Action {
	case RouteAdd:
		typ, flags = unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK
	case RouteReplace:
		typ, flags = unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK
	case RouteDelete:
		typ, flags = unix.RTM_DELROUTE, unix.NLM_F_ACK
	default:
		return buf, fmt.Errorf("unknown route action %d", w.Action)
	}
	// Table 0 is main, as in the library's requests.
	rr := rtnl.Route{Family: unix.AF_INET, Dst: r.Dst, TOS: uint8(r.TOS), Table: unix.RT_TABLE_MAIN, Priority: uint32(r.Metric)}
	if r.Table > 0 {
		rr.Table = uint32(r.Table)
	}
	if r.IsIPv6() {
		rr.Family = unix.AF_INET6
	}
	if r.Type > 0 {
		rr.Type = uint8(r.Type)
	} else if w.Action != RouteDelete {
		rr.Type = unix.RTN_UNICAST
	}
	if w.Action == RouteDelete {
		// Only the key and the protocol identify the route to delete: sending
		// more (a device that is gone) would make the kernel refuse. Scope
		// nowhere matches a route of any scope, as `ip route del` does.
		rr.Scope = unix.RT_SCOPE_NOWHERE
		if r.Protocol > 0 {
			rr.Protocol = uint8(r.Protocol)
		}
	} else {
		rr.Protocol, rr.Scope, rr.Gateway, rr.PrefSrc, rr.MTU = uint8(protocol), uint8(r.Scope), r.Gateway, r.Src, uint32(r.MTU)
		if r.OnLink {
			rr.Flags |= unix.RTNH_F_ONLINK
		}
		for _, h := range r.NextHops {
			idx := 0
			if h.Dev != "" {
				i, err := k.index(h.Dev)
				if err != nil {
					return buf, err
				}
				idx = i
			}
			rr.NextHops = append(rr.NextHops, rtnl.NextHop{Ifindex: uint32(idx), Weight: h.Weight, Gateway: h.Gateway})
		}
		if r.Dev != "" && len(r.NextHops) == 0 {
			i, err := k.index(r.Dev)
			if err != nil {
				return buf, err
			}
			rr.OIF = uint32(i)
		}
	}
	body, err := rtnl.MarshalRoute(&rr)
	if err != nil {
		return buf, err
	}
	return rtnl.AppendRequest(buf, typ, flags, seq, body)
}

// routeErr words a route write's error with its action and key; nil stays
// nil.
func routeErr(a RouteAction, r *model.Route, err error) error {
	if err == nil {
		return nil
	}
	switch a {
	case RouteAdd:
		if errors.Is(err, unix.EEXIST) {
			// Whose it is, the caller finds out (apply reads the table):
			// another program's, or ours written by another run.
			return fmt.Errorf("add route %s: a route with this key exists: %w", r.Key(), err)
		}
		return fmt.Errorf("add route %s: %w", r.Key(), err)
	case RouteReplace:
		return fmt.Errorf("replace route %s: %w", r.Key(), err)
	}
	return fmt.Errorf("delete route %s: %w", r.Key(), err)
}
