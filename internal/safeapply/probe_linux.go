package safeapply

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
)

// probeTimeout bounds one probe: long enough for a TCP handshake or an ARP
// answer over a slow link (a few RTTs), short enough that a rollback by a
// probe comes within about a second of the apply.
const probeTimeout = 1500 * time.Millisecond

// inNetns runs f on a locked OS thread inside the namespace at path ("":
// the caller's). Sockets f opens stay in that namespace.
func inNetns(path string, f func() error) error {
	if path == "" {
		return f()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("get current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", path, err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			// A thread left in the wrong namespace must not be reused.
			runtime.LockOSThread()
		}
	}()
	return f()
}

// handle opens a netlink handle in the probe's namespace.
func (e ProbeEnv) handle() (*netlink.Handle, error) {
	ns := netns.None()
	if e.Netns != "" {
		var err error
		if ns, err = netns.GetFromPath(e.Netns); err != nil {
			return nil, fmt.Errorf("open network namespace %s: %w", e.Netns, err)
		}
		defer ns.Close()
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	return h, nil
}

// tcpProbe connects to HOST:PORT.
type tcpProbe struct {
	env  ProbeEnv
	addr string
}

func (p *tcpProbe) String() string { return "tcp:" + p.addr }

func (p *tcpProbe) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return inNetns(p.env.Netns, func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", p.addr)
		if err != nil {
			return fmt.Errorf("connect %s: %w", p.addr, err)
		}
		return c.Close()
	})
}

// gatewayProbe asks each default route's next hop for its hardware address
// and requires an answer: an ARP request for an IPv4 next hop, a neighbour
// solicitation for an IPv6 one, on the route's link. The main table's first
// default route with a gateway of each family is probed, and every one
// probed must answer; with none at all the probe fails (before the apply:
// it is reported as skipped).
type gatewayProbe struct{ env ProbeEnv }

func (p *gatewayProbe) String() string { return "gateway" }

func (p *gatewayProbe) Check(ctx context.Context) error {
	h, err := p.env.handle()
	if err != nil {
		return err
	}
	defer h.Close()
	probed := 0
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		routes, err := h.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("list routes: %w", err)
		}
		var gw net.IP
		ifindex := 0
		for _, r := range routes {
			if (r.Dst == nil || r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask)) && r.Gw != nil && r.LinkIndex != 0 {
				gw, ifindex = r.Gw, r.LinkIndex
				break
			}
		}
		if gw == nil {
			continue
		}
		probed++
		link, err := h.LinkByIndex(ifindex)
		if err != nil {
			return fmt.Errorf("default route's link %d: %w", ifindex, err)
		}
		mac := link.Attrs().HardwareAddr
		if len(mac) != 6 {
			return fmt.Errorf("gateway %s via %s: not an Ethernet link", gw, link.Attrs().Name)
		}
		if family == unix.AF_INET {
			src := net.IPv4zero
			if rs, err := h.RouteGet(gw); err == nil && len(rs) > 0 && rs[0].Src != nil {
				src = rs[0].Src
			}
			err = inNetns(p.env.Netns, func() error { return arpPing(ctx, ifindex, mac, src.To4(), gw.To4()) })
		} else {
			err = inNetns(p.env.Netns, func() error { return ndPing(ctx, ifindex, mac, gw) })
		}
		if err != nil {
			return fmt.Errorf("gateway %s via %s: %w", gw, link.Attrs().Name, err)
		}
	}
	if probed == 0 {
		return errors.New("no default route with a gateway in the main table")
	}
	return nil
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

// arpPing sends ARP requests for target on ifindex (three, spread over the
// timeout) and waits for a reply from it.
func arpPing(ctx context.Context, ifindex int, mac net.HardwareAddr, src, target net.IP) error {
	proto := htons(unix.ETH_P_ARP)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return fmt.Errorf("packet socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		return fmt.Errorf("bind packet socket: %w", err)
	}
	req := make([]byte, 28)
	binary.BigEndian.PutUint16(req[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(req[2:], 0x0800) // IPv4
	req[4], req[5] = 6, 4
	binary.BigEndian.PutUint16(req[6:], 1) // request
	copy(req[8:], mac)
	copy(req[14:], src)
	copy(req[24:], target)
	to := &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	err = askAndWait(ctx, fd, req, to, func(b []byte) bool {
		return len(b) >= 28 && binary.BigEndian.Uint16(b[6:]) == 2 && net.IP(b[14:18]).Equal(target)
	})
	if err != nil {
		return fmt.Errorf("ARP: %w", err)
	}
	return nil
}

// askAndWait sends req to `to` on fd three times, spread over probeTimeout
// (or ctx's deadline, if sooner), and waits for a datagram answer accepts.
func askAndWait(ctx context.Context, fd int, req []byte, to unix.Sockaddr, answer func([]byte) bool) error {
	deadline := time.Now().Add(probeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	buf := make([]byte, 256)
	for try := 0; try < 3; try++ {
		if err := unix.Sendto(fd, req, 0, to); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		until := time.Now().Add(probeTimeout / 3)
		if until.After(deadline) {
			until = deadline
		}
		for {
			left := time.Until(until)
			if left <= 0 {
				break
			}
			tv := unix.NsecToTimeval(left.Nanoseconds())
			_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
					continue
				}
				return fmt.Errorf("read: %w", err)
			}
			if answer(buf[:n]) {
				return nil
			}
		}
	}
	return errors.New("no answer")
}

// ndPing sends neighbour solicitations for target on ifindex (three, spread
// over the timeout, to its solicited-node multicast address, as address
// resolution does: RFC 4861 7.2.2) and waits for an advertisement of it.
// The kernel picks the source (the link's link-local address) and fills in
// the checksum; neighbour discovery needs a hop limit of 255.
func ndPing(ctx context.Context, ifindex int, mac net.HardwareAddr, target net.IP) error {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
	if err != nil {
		return fmt.Errorf("icmpv6 socket: %w", err)
	}
	defer unix.Close(fd)
	for _, o := range []int{unix.IPV6_MULTICAST_HOPS, unix.IPV6_UNICAST_HOPS} {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, o, 255); err != nil {
			return fmt.Errorf("icmpv6 socket: hop limit: %w", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifindex); err != nil {
		return fmt.Errorf("icmpv6 socket: interface: %w", err)
	}
	// Only neighbour advertisements reach the socket.
	var filter unix.ICMPv6Filter
	for i := range filter.Data {
		filter.Data[i] = 0xffffffff
	}
	const nsType, naType = 135, 136
	filter.Data[naType>>5] &^= 1 << (naType & 31)
	if err := unix.SetsockoptICMPv6Filter(fd, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &filter); err != nil {
		return fmt.Errorf("icmpv6 socket: filter: %w", err)
	}
	t16 := target.To16()
	req := make([]byte, 32)
	req[0] = nsType
	copy(req[8:], t16)
	req[24], req[25] = 1, 1 // source link-layer address, 8 bytes
	copy(req[26:], mac)
	to := &unix.SockaddrInet6{ZoneId: uint32(ifindex), Addr: [16]byte{0: 0xff, 1: 0x02, 11: 0x01, 12: 0xff}}
	copy(to.Addr[13:], t16[13:])
	err = askAndWait(ctx, fd, req, to, func(b []byte) bool {
		return len(b) >= 24 && b[0] == naType && net.IP(b[8:24]).Equal(t16)
	})
	if err != nil {
		return fmt.Errorf("neighbour discovery: %w", err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// sshProbe checks that the client of the SSH session the command runs in
// ($SSH_CONNECTION) is still routed the way it was before the apply: the
// same output link, next hop and source address, as "ip route get CLIENT
// from SERVER" answers. A route that changed under the session, even one
// that still works, fails it: that is the change to roll back unless
// confirmed from a new session.
type sshProbe struct {
	env  ProbeEnv
	base string // the path before the apply
}

func (p *sshProbe) String() string { return "ssh" }

func (p *sshProbe) Check(ctx context.Context) error {
	conn := ""
	if p.env.Getenv != nil {
		conn = p.env.Getenv("SSH_CONNECTION")
	}
	f := strings.Fields(conn)
	if len(f) != 4 {
		return errors.New("not run from an SSH session ($SSH_CONNECTION is not set)")
	}
	client, err1 := netip.ParseAddr(f[0])
	server, err2 := netip.ParseAddr(f[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("$SSH_CONNECTION %q: not CLIENT PORT SERVER PORT", conn)
	}
	h, err := p.env.handle()
	if err != nil {
		return err
	}
	defer h.Close()
	rs, err := h.RouteGetWithOptions(net.IP(client.Unmap().AsSlice()), &netlink.RouteGetOptions{SrcAddr: net.IP(server.Unmap().AsSlice())})
	if err != nil || len(rs) == 0 {
		return fmt.Errorf("no route back to the SSH client %s from %s: %v", client, server, err)
	}
	r := rs[0]
	path := fmt.Sprintf("dev %d via %v src %v table %d", r.LinkIndex, r.Gw, r.Src, r.Table)
	if p.base == "" {
		p.base = path
		return nil
	}
	if path != p.base {
		return fmt.Errorf("the route to the SSH client %s changed: %s, was %s", client, path, p.base)
	}
	return nil
}

// wireguardProbe checks that LINK's handshakes are fresh: at least one
// peer before the apply, and after it every peer that was.
type wireguardProbe struct {
	env   ProbeEnv
	link  string
	fresh map[string]bool // the peers fresh before the apply
}

// handshakeFresh is WireGuard's REJECT_AFTER_TIME: a session whose last
// handshake is older carries no traffic until a new one.
const handshakeFresh = 180 * time.Second

func (p *wireguardProbe) String() string { return "wireguard:" + p.link }

func (p *wireguardProbe) Check(ctx context.Context) error {
	now := map[string]bool{}
	err := inNetns(p.env.Netns, func() error {
		c, err := wgctrl.New()
		if err != nil {
			return fmt.Errorf("wireguard: %w", err)
		}
		defer c.Close()
		dev, err := c.Device(p.link)
		if err != nil {
			return fmt.Errorf("wireguard device %s: %w", p.link, err)
		}
		for _, peer := range dev.Peers {
			if !peer.LastHandshakeTime.IsZero() && time.Since(peer.LastHandshakeTime) < handshakeFresh {
				now[peer.PublicKey.String()] = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if p.fresh == nil {
		if len(now) == 0 {
			return fmt.Errorf("wireguard %s: no peer has a handshake younger than %s", p.link, handshakeFresh)
		}
		p.fresh = now
		return nil
	}
	for k := range p.fresh {
		if !now[k] {
			// A prefix of the public key: a whole one would be hidden
			// as a key-like value (package redact).
			return fmt.Errorf("wireguard %s: peer %s… has no fresh handshake any more", p.link, k[:8])
		}
	}
	return nil
}
