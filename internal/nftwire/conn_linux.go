package nftwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
	"golang.org/x/sys/unix"
)

// SockBuf is the least the socket's buffers are sized to, as Talos does
// (8 MiB): dumps of big sets come in 32 KiB messages, and a failing batch
// queues an error per refused message. A batch larger than the send buffer
// is refused whole (EMSGSIZE): Send sizes the send buffer to the batch, as
// nft does, so that a set of a million elements loads in one transaction.
// The FORCE variants pass net.core.{w,r}mem_max, which caps plain
// SO_SNDBUF at about 200 KiB. A variable so that a test can start a
// socket below the batch it sends.
var SockBuf = 8 << 20

// Conn is a netlink socket to nf_tables.
type Conn struct {
	c   *netlink.Conn
	seq uint32
	// sndbuf is the send buffer's size as last set.
	sndbuf int
	// forced says SO_SNDBUFFORCE worked (CAP_NET_ADMIN).
	forced bool
}

// Dial opens a socket in the namespace of netnsFd (-1: the caller's).
func Dial(netnsFd int) (*Conn, error) {
	cfg := &netlink.Config{}
	if netnsFd >= 0 {
		cfg.NetNS = netnsFd
	}
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		return nil, fmt.Errorf("open nftables socket: %w", err)
	}
	n := &Conn{c: c}
	// Errors without a copy of the message refused (a refused element
	// message would be echoed whole). The kernel's reason (extended
	// acknowledgements) only while a batch is answered: mdlayher/netlink
	// misreads a capped acknowledgement with one.
	_ = c.SetOption(netlink.CapAcknowledge, true)
	if err := n.setBuffers(SockBuf); err != nil {
		c.Close()
		return nil, fmt.Errorf("size nftables socket buffers: %w", err)
	}
	if err := n.primeDumps(); err != nil {
		c.Close()
		return nil, err
	}
	return n, nil
}

// Close closes the socket.
func (n *Conn) Close() error { return n.c.Close() }

func (n *Conn) setBuffers(size int) error {
	rc, err := n.c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, size); serr != nil {
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, max(size, SockBuf))
	}); err != nil {
		return err
	}
	n.sndbuf = size
	if serr != nil {
		// Without CAP_NET_ADMIN: what wmem_max and rmem_max allow.
		if err := n.c.SetWriteBuffer(size); err != nil {
			return err
		}
		return n.c.SetReadBuffer(max(size, SockBuf))
	}
	n.forced = true
	return nil
}

// primeDumps makes the kernel fill dump messages up to 32 KiB instead of one
// page. The kernel sizes a dump's messages by the largest buffer the socket
// has read with (max_recvmsg_len, capped at 32 KiB), and mdlayher/netlink
// first reads with one page. Interval sets are rbtrees whose dump restarts
// from the first element at every message, so reading 200k elements costs
// O(n²/elements per message): 17 s with 4 KiB messages, 8 times less with
// 32 KiB. One GETGEN request answered into a 32 KiB buffer sets the size.
func (n *Conn) primeDumps() error {
	rc, err := n.c.SyscallConn()
	if err != nil {
		return err
	}
	m := request(MsgGetGen, 0, unix.AF_UNSPEC, nil)
	m.Header.Length = uint32(unix.NLMSG_HDRLEN + len(m.Data))
	req, err := m.MarshalBinary()
	if err != nil {
		return fmt.Errorf("prime nftables dumps: %w", err)
	}
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		_, werr = unix.Write(int(fd), req)
		return werr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("prime nftables dumps: %w", werr)
	}
	buf := make([]byte, 32<<10)
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		_, rerr = unix.Read(int(fd), buf)
		return rerr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if rerr != nil {
		return fmt.Errorf("prime nftables dumps: %w", rerr)
	}
	return nil
}

func request(typ uint16, flags netlink.HeaderFlags, family byte, attrs []byte) netlink.Message {
	data := make([]byte, nfgenmsgLen, nfgenmsgLen+len(attrs))
	data[0], data[1] = family, nfnetlinkV0
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(subsysNFTables<<8 | typ), Flags: netlink.Request | flags},
		Data:   append(data, attrs...),
	}
}

// Dump runs a dump request (GETTABLE, GETCHAIN, GETRULE, GETSET, GETOBJ…)
// with attrs as its filter, and returns each answer's payload. An
// interrupted dump (the ruleset changed under it) is an error wrapping
// netlink.ErrDumpInterrupted... or unix.EINTR: the caller reads again.
//
// The answers are read here rather than by mdlayher/netlink's Execute,
// whose Receive peeks into a page and doubles the buffer until a datagram
// fits: five allocations and five copies for each 32 KiB datagram of a
// dump, a few megabytes to read a table of a thousand rules, most of the
// cost of that read in a short-lived process (page faults and the garbage
// collector). Here each datagram is peeked for its length and read once
// into a buffer of its own, which the payloads returned share. The checks
// are Execute's: the sequence and port of every answer, an error message
// or a DONE with an error number ending the dump with that errno.
func (n *Conn) Dump(typ uint16, family byte, attrs []byte) ([][]byte, error) {
	req, err := n.c.Send(request(typ, netlink.Dump, family, attrs))
	if err != nil {
		return nil, err
	}
	rc, err := n.c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	interrupted := false
	for {
		b, err := recvDatagram(rc)
		if err != nil {
			return nil, &netlink.OpError{Op: "receive", Err: err}
		}
		if err := checkDatagram(b); err != nil {
			return nil, &netlink.OpError{Op: "receive", Err: err}
		}
		for len(b) >= unix.NLMSG_HDRLEN {
			h, data, rest := splitMessage(b)
			b = rest
			if h.Seq != req.Header.Sequence {
				return nil, &netlink.OpError{Op: "validate", Err: errors.New("mismatched sequence in netlink reply")}
			}
			if h.Pid != req.Header.PID && req.Header.PID != 0 && h.Pid != 0 {
				return nil, &netlink.OpError{Op: "validate", Err: errors.New("mismatched PID in netlink reply")}
			}
			if h.Flags&unix.NLM_F_DUMP_INTR != 0 {
				interrupted = true
			}
			switch {
			case h.Type == unix.NLMSG_ERROR || h.Type == unix.NLMSG_DONE && h.Flags&unix.NLM_F_MULTI != 0:
				if h.Type == unix.NLMSG_DONE && len(data) == 0 {
					return dumped(out, interrupted)
				}
				if len(data) < 4 {
					return nil, &netlink.OpError{Op: "receive", Err: errors.New("not enough data for netlink error code")}
				}
				if code := nlenc.Int32(data[:4]); code != 0 {
					return nil, &netlink.OpError{Op: "receive", Err: syscall.Errno(-code)}
				}
				if h.Type == unix.NLMSG_DONE {
					return dumped(out, interrupted)
				}
			default:
				out = append(out, data)
			}
			if h.Flags&unix.NLM_F_MULTI == 0 {
				return dumped(out, interrupted)
			}
		}
	}
}

// checkDatagram fails where syscall.ParseNetlinkMessage fails: a message
// shorter than its header or running past the datagram. Dump reads the
// messages in place (splitMessage) rather than into the slice that
// allocates, one per datagram of a dump.
func checkDatagram(b []byte) error {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := binary.NativeEndian.Uint32(b)
		if l < unix.NLMSG_HDRLEN || nlmAlign(int(l)) > len(b) {
			return syscall.EINVAL
		}
		b = b[nlmAlign(int(l)):]
	}
	return nil
}

// splitMessage returns the first message of a checked datagram, its
// payload in place, and the rest.
func splitMessage(b []byte) (h syscall.NlMsghdr, data, rest []byte) {
	h = syscall.NlMsghdr{
		Len:   binary.NativeEndian.Uint32(b),
		Type:  binary.NativeEndian.Uint16(b[4:]),
		Flags: binary.NativeEndian.Uint16(b[6:]),
		Seq:   binary.NativeEndian.Uint32(b[8:]),
		Pid:   binary.NativeEndian.Uint32(b[12:]),
	}
	return h, b[unix.NLMSG_HDRLEN:h.Len:h.Len], b[nlmAlign(int(h.Len)):]
}

func nlmAlign(l int) int { return (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// dumped is a dump's answers, or the error of an interrupted one.
func dumped(out [][]byte, interrupted bool) ([][]byte, error) {
	if interrupted {
		return nil, fmt.Errorf("nftables dump: %w", unix.EINTR)
	}
	return out, nil
}

// recvDatagram reads the next datagram into a buffer of its size: its
// length peeked first (MSG_TRUNC gives the whole length whatever the
// buffer), so that nothing is cut short.
func recvDatagram(rc syscall.RawConn) ([]byte, error) {
	var n int
	var rerr error
	read := func(b []byte, flags int) error {
		return rc.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), b, flags)
			return rerr != unix.EAGAIN && rerr != unix.EINTR
		})
	}
	if err := read(nil, unix.MSG_PEEK|unix.MSG_TRUNC); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	b := make([]byte, n)
	if err := read(b, 0); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	if n != len(b) {
		return nil, fmt.Errorf("netlink datagram of %d bytes read as %d", len(b), n)
	}
	return b, nil
}

// Get runs a request for one object (GETTABLE by name…).
func (n *Conn) Get(typ uint16, family byte, attrs []byte) ([][]byte, error) {
	msgs, err := n.c.Execute(request(typ, 0, family, attrs))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Data)
	}
	return out, nil
}

// Gen returns the ruleset generation: the kernel counts every committed
// nftables transaction of the namespace, whoever made it.
func (n *Conn) Gen() (uint32, error) {
	msgs, err := n.Get(MsgGetGen, unix.AF_UNSPEC, nil)
	if err != nil {
		return 0, fmt.Errorf("get nftables generation: %w", err)
	}
	for _, m := range msgs {
		if g, err := DecodeGen(m); err == nil {
			return g, nil
		}
	}
	return 0, errors.New("get nftables generation: no generation in the answer")
}

// BatchError is the kernel's refusal of a batch: the first message it
// refused (its index among the batch's changes, -1 for the commit) and why.
type BatchError struct {
	Index int
	Err   error
	// Msg is the kernel's extended acknowledgement text, if any.
	Msg string
}

func (e *BatchError) Error() string {
	s := e.Err.Error()
	if e.Msg != "" {
		s += " (" + e.Msg + ")"
	}
	if e.Index < 0 {
		return "commit: " + s
	}
	return fmt.Sprintf("change %d: %s", e.Index+1, s)
}

func (e *BatchError) Unwrap() error { return e.Err }

// Send sends a batch and waits for the kernel's answer: nil when it
// committed. The send buffer is grown to the batch first.
func (n *Conn) Send(b *Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if need := b.Size() + 4096; need > n.sndbuf {
		if err := n.setBuffers(need); err != nil {
			return fmt.Errorf("size the nftables send buffer to the batch's %d bytes: %w", b.Size(), err)
		}
	}
	msgs := b.Messages()
	for i := range msgs {
		n.seq++
		if n.seq == 0 {
			n.seq++
		}
		msgs[i].Header.Sequence = n.seq
	}
	begin, last := msgs[0].Header.Sequence, msgs[len(msgs)-2].Header.Sequence
	_ = n.c.SetOption(netlink.ExtendedAcknowledge, true)
	defer func() { _ = n.c.SetOption(netlink.ExtendedAcknowledge, false) }()
	if _, err := n.c.SendMessages(msgs); err != nil {
		if errors.Is(err, unix.EMSGSIZE) && !n.forced {
			return fmt.Errorf("send a batch of %d bytes: %w (without CAP_NET_ADMIN the send buffer is capped by net.core.wmem_max)", b.Size(), err)
		}
		return fmt.Errorf("send a batch of %d bytes: %w", b.Size(), err)
	}
	return n.answer(begin, last)
}

// answer reads the kernel's answers to a batch up to the acknowledgement of
// its last change (or an error for its begin: the batch was cut short or
// its commit failed). The first error read is the batch's.
func (n *Conn) answer(begin, last uint32) error {
	rc, err := n.c.SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	var first *BatchError
	for {
		var nr int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			nr, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			return rerr != unix.EAGAIN
		}); err != nil {
			return err
		}
		if rerr != nil {
			return fmt.Errorf("read the answer to a batch: %w", rerr)
		}
		done := false
		for b := buf[:nr]; len(b) >= unix.NLMSG_HDRLEN; {
			// The framing of a datagram of answers: each message's
			// length, then mdlayher/netlink's reading of it.
			l := int(nlenc.Uint32(b[:4]))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return fmt.Errorf("read the answer to a batch: a message of %d bytes in %d", l, len(b))
			}
			var m netlink.Message
			if err := m.UnmarshalBinary(b[:l]); err != nil {
				return fmt.Errorf("read the answer to a batch: %w", err)
			}
			b = b[min(len(b), (l+3)&^3):]
			if m.Header.Type != netlink.Error || len(m.Data) < 4 {
				continue
			}
			seq := m.Header.Sequence
			code := nlenc.Int32(m.Data[:4])
			if code != 0 && first == nil {
				first = &BatchError{Index: int(seq-begin) - 1, Err: syscall.Errno(-code), Msg: extackMsg(m.Data, m.Header.Flags)}
				if seq == begin {
					first.Index = -1
				}
			}
			if seq == last || (seq == begin && code != 0) {
				done = true
			}
		}
		if done {
			break
		}
	}
	if first != nil {
		return first
	}
	return nil
}

// extackMsg returns NLMSGERR_ATTR_MSG of an error message, which follows
// the original header (the socket caps acknowledgements: no payload).
func extackMsg(body []byte, flags netlink.HeaderFlags) string {
	const nlmFAckTLVs, nlmFCapped = 0x200, 0x100
	if flags&nlmFAckTLVs == 0 || len(body) < 4+unix.NLMSG_HDRLEN {
		return ""
	}
	skip := unix.NLMSG_HDRLEN
	if flags&nlmFCapped == 0 { // the original payload follows
		skip = int(nlenc.Uint32(body[4:8]))
	}
	skip = (skip + 3) &^ 3
	if skip > len(body)-4 {
		return ""
	}
	ad, err := netlink.NewAttributeDecoder(body[4+skip:])
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NLMSGERR_ATTR_MSG {
			return ad.String()
		}
	}
	return ""
}
