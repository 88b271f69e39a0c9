package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/mdlayher/genetlink"
	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The kernel module's devices are read and written over its generic netlink
// family (include/uapi/linux/wireguard.h) by this file, not by wgctrl, for
// two reasons that show at ten thousand peers:
//
//   - wgctrl sends a configuration of more than 32 peers as one message per
//     peer, each waiting for its acknowledgement (10,000 round trips where
//     wg(8) sends about 300 and this file 17);
//   - wgctrl decodes a dump into net.IPNet values, two allocations per
//     allowed IP and a few per peer, which the model then copies again;
//     here the dump is decoded straight into the model, with no allocation
//     per peer (one array of every peer, one of every allowed IP).
//
// wireguard-go's devices (userspace, a text protocol on a unix socket) are
// still wgctrl's (wireguard_linux.go).

// wgNestMax is the most a nested attribute can hold: its length is 16 bits.
// A message's peers are one nest (WGDEVICE_A_PEERS), so a message carries
// at most this much of them, about 600 peers of one allowed IP each; a peer
// that does not fit in one message alone is continued in the next, as the
// kernel's own dumps do. The kernel applies each message under its locks
// (RTNL among them), so the cap also bounds how long one message holds
// them. A message of this size is far below the socket's default send
// buffer (net.core.wmem_default, 208 KiB).
const wgNestMax = 0xffff &^ 3

// Attribute sizes (header and data, aligned to 4 bytes).
const (
	nlaHdr        = 4
	wgKeyAttr     = nlaHdr + model.KeyLen
	wgU32Attr     = nlaHdr + 4
	wgU16Attr     = nlaHdr + 4 // 2 bytes of data, padded
	wgU8Attr      = nlaHdr + 4
	wgSockaddr4   = nlaHdr + unix.SizeofSockaddrInet4
	wgSockaddr6   = nlaHdr + unix.SizeofSockaddrInet6
	wgAllowedIPv4 = nlaHdr + wgU16Attr + nlaHdr + 4 + wgU8Attr
	wgAllowedIPv6 = nlaHdr + wgU16Attr + nlaHdr + 16 + wgU8Attr
)

// errNotKernelWG means the name is no device of the kernel module: the
// module is not loaded, no link has the name, or the link is of another
// kind (a wireguard-go tun). The caller asks wireguard-go next.
var errNotKernelWG = errors.New("not a kernel wireguard device")

// genl returns the generic netlink connection and WireGuard's family ID,
// opening the socket in the kernel's namespace on first use. The family is
// looked up until found: the module loads when the first device is made.
func (k *Netlink) genl() (*genetlink.Conn, uint16, error) {
	k.wg.genlMu.Lock()
	defer k.wg.genlMu.Unlock()
	if k.wg.genl == nil {
		var cfg *mdnetlink.Config
		if k.ns.IsOpen() {
			cfg = &mdnetlink.Config{NetNS: int(k.ns)}
		}
		c, err := genetlink.Dial(cfg)
		if err != nil {
			return nil, 0, fmt.Errorf("open generic netlink: %w", err)
		}
		// Error messages from the kernel (extended acks) name the
		// attribute it refused.
		_ = c.SetOption(mdnetlink.ExtendedAcknowledge, true)
		k.wg.genl = c
	}
	if k.wg.family == 0 {
		f, err := k.wg.genl.GetFamily(unix.WG_GENL_NAME)
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, errNotKernelWG
		}
		if err != nil {
			return nil, 0, fmt.Errorf("look up generic netlink family %s: %w", unix.WG_GENL_NAME, err)
		}
		k.wg.family = f.ID
	}
	return k.wg.genl, k.wg.family, nil
}

// notKernelDevice reports whether a request failed because name is no
// device of the module.
func notKernelDevice(err error) bool {
	return errors.Is(err, errNotKernelWG) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP)
}

// kernelWireGuardDevice reads a device of the kernel module in one dump
// (retried when interrupted by a change), decoded straight into the model.
func (k *Netlink) kernelWireGuardDevice(name string) (*model.WireGuard, error) {
	c, family, err := k.genl()
	if err != nil {
		return nil, err
	}
	ae := mdnetlink.NewAttributeEncoder()
	ae.String(unix.WGDEVICE_A_IFNAME, name)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	var w *model.WireGuard
	err = retry("wireguard device "+name, func() error {
		k.wg.genlMu.Lock()
		defer k.wg.genlMu.Unlock()
		req, err := c.Send(genetlink.Message{Header: genetlink.Header{Command: unix.WG_CMD_GET_DEVICE, Version: unix.WG_GENL_VERSION}, Data: attrs}, family, mdnetlink.Request|mdnetlink.Dump)
		if err != nil {
			return err
		}
		k.wg.reads.Add(1)
		gm, nm, err := c.Receive()
		if err != nil {
			return err
		}
		if err := mdnetlink.Validate(req, nm); err != nil {
			return err
		}
		d := wgDump{hint: k.wg.peerHint[name]}
		for i := range gm {
			if nm[i].Header.Flags&mdnetlink.DumpInterrupted != 0 {
				return netlink.ErrDumpInterrupted
			}
			if err := d.message(gm[i].Data); err != nil {
				return err
			}
		}
		w = d.device()
		if k.wg.peerHint == nil {
			k.wg.peerHint = map[string]int{}
		}
		k.wg.peerHint[name] = len(w.Peers)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// kernelConfigureWireGuard sends a patch to a device of the kernel module in
// as few messages as the kernel takes (wgMessages), each acknowledged before
// the next is sent. When one fails, those before it stay applied.
func (k *Netlink) kernelConfigureWireGuard(name string, cfg *WireGuardConfig) error {
	c, family, err := k.genl()
	if err != nil {
		return err
	}
	msgs, err := wgMessages(name, cfg)
	if err != nil {
		return err
	}
	k.wg.genlMu.Lock()
	defer k.wg.genlMu.Unlock()
	for i, m := range msgs {
		_, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: unix.WG_CMD_SET_DEVICE, Version: unix.WG_GENL_VERSION}, Data: m}, family, mdnetlink.Request|mdnetlink.Acknowledge)
		if i == 0 && notKernelDevice(err) {
			// No device of the module took it: not counted.
			return errNotKernelWG
		}
		k.wg.msgs.Add(1)
		if err != nil {
			return fmt.Errorf("message %d of %d: %w", i+1, len(msgs), err)
		}
	}
	return nil
}

// attrs iterates over the netlink attributes of a buffer without
// allocating (mdlayher/netlink's decoder allocates one per nest: per peer
// and per allowed IP here).
type attrs struct {
	b    []byte
	typ  uint16
	data []byte
	err  error
}

var errBadAttr = errors.New("malformed netlink attribute")

func (a *attrs) next() bool {
	if len(a.b) == 0 || a.err != nil {
		return false
	}
	if len(a.b) < nlaHdr {
		a.err = errBadAttr
		return false
	}
	l := int(binary.NativeEndian.Uint16(a.b))
	if l < nlaHdr || l > len(a.b) {
		a.err = errBadAttr
		return false
	}
	a.typ = binary.NativeEndian.Uint16(a.b[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
	a.data = a.b[nlaHdr:l]
	a.b = a.b[min(len(a.b), (l+3)&^3):]
	return true
}

func (a *attrs) u16() (uint16, bool) {
	if len(a.data) != 2 {
		a.err = errBadAttr
		return 0, false
	}
	return binary.NativeEndian.Uint16(a.data), true
}

func (a *attrs) u32() uint32 {
	if len(a.data) != 4 {
		a.err = errBadAttr
		return 0
	}
	return binary.NativeEndian.Uint32(a.data)
}

func (a *attrs) u64() uint64 {
	if len(a.data) != 8 {
		a.err = errBadAttr
		return 0
	}
	return binary.NativeEndian.Uint64(a.data)
}

func (a *attrs) key() model.Key {
	if len(a.data) != model.KeyLen {
		a.err = errBadAttr
		return model.Key{}
	}
	return model.Key(a.data)
}

// wgDump decodes the messages of one device dump. A peer whose allowed IPs
// do not fit in one message is continued at the start of the next one
// (its public key and more allowed IPs): it is merged with the peer before.
type wgDump struct {
	w    model.WireGuard
	hint int
	// ips holds every peer's allowed IPs in dump order; span[i] is where
	// the i-th peer's end, so that a continuation extends the last one.
	ips  []netip.Prefix
	span []int
}

func (d *wgDump) message(b []byte) error {
	a := attrs{b: b}
	for a.next() {
		switch a.typ {
		case unix.WGDEVICE_A_PRIVATE_KEY:
			// Never kept: wiped from the receive buffer.
			clear(a.data)
		case unix.WGDEVICE_A_PUBLIC_KEY:
			d.w.PublicKey = a.key()
		case unix.WGDEVICE_A_LISTEN_PORT:
			if p, ok := a.u16(); ok {
				d.w.ListenPort = int(p)
			}
		case unix.WGDEVICE_A_FWMARK:
			d.w.FwMark = a.u32()
		case unix.WGDEVICE_A_PEERS:
			if d.w.Peers == nil {
				d.w.Peers = make([]model.WireGuardPeer, 0, d.hint)
				d.span = make([]int, 0, d.hint)
				d.ips = make([]netip.Prefix, 0, d.hint)
			}
			ps := attrs{b: a.data}
			for ps.next() {
				if err := d.peer(ps.data); err != nil {
					return err
				}
			}
			if ps.err != nil {
				return fmt.Errorf("decode wireguard peers: %w", ps.err)
			}
		}
	}
	if a.err != nil {
		return fmt.Errorf("decode wireguard device: %w", a.err)
	}
	return nil
}

func (d *wgDump) peer(b []byte) error {
	p := model.WireGuardPeer{EndpointCandidate: -1}
	start := len(d.ips)
	a := attrs{b: b}
	for a.next() {
		switch a.typ {
		case unix.WGPEER_A_PUBLIC_KEY:
			p.PublicKey = a.key()
		case unix.WGPEER_A_PRESHARED_KEY:
			if k := a.key(); k != (model.Key{}) {
				p.PresharedKey = model.NewSecret(k)
			}
			clear(a.data)
		case unix.WGPEER_A_ENDPOINT:
			p.Endpoint = sockaddrAddrPort(a.data)
		case unix.WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL:
			if s, ok := a.u16(); ok {
				p.Keepalive = time.Duration(s) * time.Second
			}
		case unix.WGPEER_A_LAST_HANDSHAKE_TIME:
			p.LastHandshake = timespec(a.data)
		case unix.WGPEER_A_RX_BYTES:
			p.RxBytes = int64(a.u64())
		case unix.WGPEER_A_TX_BYTES:
			p.TxBytes = int64(a.u64())
		case unix.WGPEER_A_ALLOWEDIPS:
			ips := attrs{b: a.data}
			for ips.next() {
				pf, err := allowedIP(ips.data)
				if err != nil {
					return err
				}
				d.ips = append(d.ips, pf)
			}
			if ips.err != nil {
				return fmt.Errorf("decode wireguard allowed ips: %w", ips.err)
			}
		}
	}
	if a.err != nil {
		return fmt.Errorf("decode wireguard peer: %w", a.err)
	}
	if n := len(d.w.Peers); n > 0 && d.w.Peers[n-1].PublicKey == p.PublicKey && d.span[n-1] == start {
		d.span[n-1] = len(d.ips)
		return nil
	}
	d.w.Peers = append(d.w.Peers, p)
	d.span = append(d.span, len(d.ips))
	return nil
}

// device returns the decoded device: peers sorted by public key, each one's
// allowed IPs sorted, masked and apart from the others' (a full slice).
func (d *wgDump) device() *model.WireGuard {
	w := d.w
	w.Implementation = WireGuardKernel
	start := 0
	for i := range w.Peers {
		end := d.span[i]
		if end > start {
			ips := d.ips[start:end:end]
			if len(ips) > 1 {
				model.SortPrefixes(ips)
			}
			w.Peers[i].AllowedIPs = ips
		}
		start = end
	}
	model.SortPeers(w.Peers)
	// A peer the dump listed twice (not the continuation of the one before:
	// the kernel never does so) is merged, so that the diff sees one.
	for i := 1; i < len(w.Peers); i++ {
		if w.Peers[i].PublicKey == w.Peers[i-1].PublicKey {
			m := &w.Peers[i-1]
			m.AllowedIPs = append(slices.Clip(m.AllowedIPs), w.Peers[i].AllowedIPs...)
			model.SortPrefixes(m.AllowedIPs)
			w.Peers = slices.Delete(w.Peers, i, i+1)
			i--
		}
	}
	return &w
}

func allowedIP(b []byte) (netip.Prefix, error) {
	var fam uint16
	var addr []byte
	bits := -1
	a := attrs{b: b}
	for a.next() {
		switch a.typ {
		case unix.WGALLOWEDIP_A_FAMILY:
			fam, _ = a.u16()
		case unix.WGALLOWEDIP_A_IPADDR:
			addr = a.data
		case unix.WGALLOWEDIP_A_CIDR_MASK:
			if len(a.data) == 1 {
				bits = int(a.data[0])
			}
		}
	}
	var ip netip.Addr
	switch {
	case fam == unix.AF_INET && len(addr) == 4:
		ip = netip.AddrFrom4([4]byte(addr))
	case fam == unix.AF_INET6 && len(addr) == 16:
		ip = netip.AddrFrom16([16]byte(addr))
	}
	pf, err := ip.Prefix(bits)
	if a.err != nil || !ip.IsValid() || err != nil {
		return netip.Prefix{}, fmt.Errorf("decode wireguard allowed ip: family %d, %d address bytes, /%d: %w", fam, len(addr), bits, errBadAttr)
	}
	return pf, nil
}

// sockaddrAddrPort decodes a struct sockaddr_in or sockaddr_in6 (family in
// host order, port in network order); anything else is no endpoint.
func sockaddrAddrPort(b []byte) netip.AddrPort {
	if len(b) < 4 {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) >= 8 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
		}
	case unix.AF_INET6:
		if len(b) >= 24 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port)
		}
	}
	return netip.AddrPort{}
}

// timespec decodes a struct __kernel_timespec (or the 32-bit timespec of
// an old kernel); zero is "never".
func timespec(b []byte) time.Time {
	var sec, nsec int64
	switch len(b) {
	case 16:
		sec, nsec = int64(binary.NativeEndian.Uint64(b)), int64(binary.NativeEndian.Uint64(b[8:]))
	case 8:
		sec, nsec = int64(int32(binary.NativeEndian.Uint32(b))), int64(int32(binary.NativeEndian.Uint32(b[4:])))
	}
	if sec == 0 && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, nsec)
}

// wgMessages packs a patch into WG_CMD_SET_DEVICE messages (their
// attributes): the device's settings in the first, then as many peers per
// message as the peers nest holds (wgNestMax). Peers keep their order
// (removes before the adds that take their allowed IPs); a peer too big for
// one message is split, its later parts adding allowed IPs without
// replacing them. A patch with nothing in it is no message.
func wgMessages(name string, cfg *WireGuardConfig) ([][]byte, error) {
	var out [][]byte
	var peers []PeerPatch // the current message's, parts of split peers included
	used := nlaHdr
	device := cfg.PrivateKey != nil || cfg.ListenPort != nil || cfg.FwMark != nil
	flush := func() error {
		if len(peers) == 0 && !(device && len(out) == 0) {
			return nil
		}
		m, err := wgMessage(name, cfg, len(out) == 0, peers)
		if err != nil {
			return err
		}
		out = append(out, m)
		peers, used = peers[:0], nlaHdr
		return nil
	}
	for _, p := range cfg.Peers {
		if p.Remove {
			p = PeerPatch{PublicKey: p.PublicKey, Remove: true}
		}
		size := peerSize(&p, p.AllowedIPs)
		if used+size > wgNestMax && len(peers) > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		if used+size <= wgNestMax {
			peers = append(peers, p)
			used += size
			continue
		}
		// Alone in a message and still too big: its allowed IPs in parts.
		rest := p.AllowedIPs
		part := p
		for first := true; first || len(rest) > 0; first = false {
			n := 0
			for n < len(rest) && used+peerSize(&part, rest[:n+1]) <= wgNestMax {
				n++
			}
			if n == 0 && !first {
				return nil, fmt.Errorf("wireguard peer %s: an allowed ip does not fit in a message", p.PublicKey.Short())
			}
			part.AllowedIPs = rest[:n]
			rest = rest[n:]
			peers = append(peers, part)
			used += peerSize(&part, part.AllowedIPs)
			if len(rest) > 0 {
				if err := flush(); err != nil {
					return nil, err
				}
				// The parts after the first add to what the first set.
				part = PeerPatch{PublicKey: p.PublicKey, UpdateOnly: p.UpdateOnly}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// peerSize is the size of p's nest with the allowed IPs ips.
func peerSize(p *PeerPatch, ips []netip.Prefix) int {
	s := nlaHdr + wgKeyAttr
	if peerFlags(p) != 0 {
		s += wgU32Attr
	}
	if p.Remove {
		return s
	}
	if p.PresharedKey != nil {
		s += wgKeyAttr
	}
	if p.Endpoint.IsValid() {
		if p.Endpoint.Addr().Is4() {
			s += wgSockaddr4
		} else {
			s += wgSockaddr6
		}
	}
	if p.Keepalive != nil {
		s += wgU16Attr
	}
	if len(ips) > 0 || p.ReplaceAllowedIPs {
		s += nlaHdr
	}
	for _, a := range ips {
		if a.Addr().Is4() {
			s += wgAllowedIPv4
		} else {
			s += wgAllowedIPv6
		}
	}
	return s
}

func peerFlags(p *PeerPatch) uint32 {
	var f uint32
	if p.Remove {
		return unix.WGPEER_F_REMOVE_ME
	}
	if p.ReplaceAllowedIPs {
		f |= unix.WGPEER_F_REPLACE_ALLOWEDIPS
	}
	if p.UpdateOnly {
		f |= unix.WGPEER_F_UPDATE_ONLY
	}
	return f
}

// wgMessage encodes one message's attributes, in one buffer of the size
// peerSize computes (mdlayher/netlink's encoder makes a buffer and a
// closure per nest: twenty allocations a peer).
func wgMessage(name string, cfg *WireGuardConfig, first bool, peers []PeerPatch) ([]byte, error) {
	size := nlaHdr + (len(name)+1+3)&^3 + wgKeyAttr + wgU16Attr + wgU32Attr + nlaHdr
	for i := range peers {
		size += peerSize(&peers[i], peers[i].AllowedIPs)
	}
	b := make(nlAttrs, 0, size)
	b = b.str(unix.WGDEVICE_A_IFNAME, name)
	if first {
		if cfg.PrivateKey != nil {
			key := cfg.PrivateKey.Bytes()
			b = b.bytes(unix.WGDEVICE_A_PRIVATE_KEY, key[:])
			clear(key[:])
		}
		if cfg.ListenPort != nil {
			b = b.u16(unix.WGDEVICE_A_LISTEN_PORT, uint16(*cfg.ListenPort))
		}
		if cfg.FwMark != nil {
			b = b.u32(unix.WGDEVICE_A_FWMARK, *cfg.FwMark)
		}
	}
	if len(peers) > 0 {
		var nest int
		b, nest = b.begin(unix.WGDEVICE_A_PEERS)
		for i := range peers {
			var pn int
			b, pn = b.begin(uint16(i))
			b = encodePeer(b, &peers[i])
			b.end(pn)
		}
		b.end(nest)
		if l := len(b) - nest; l > wgNestMax {
			return nil, fmt.Errorf("encode wireguard configuration of %s: a peers nest of %d bytes", name, l)
		}
	}
	return b, nil
}

func encodePeer(b nlAttrs, p *PeerPatch) nlAttrs {
	b = b.bytes(unix.WGPEER_A_PUBLIC_KEY, p.PublicKey[:])
	if f := peerFlags(p); f != 0 {
		b = b.u32(unix.WGPEER_A_FLAGS, f)
	}
	if p.Remove {
		return b
	}
	if p.PresharedKey != nil {
		// A zero key clears the peer's.
		psk := p.PresharedKey.Bytes()
		b = b.bytes(unix.WGPEER_A_PRESHARED_KEY, psk[:])
		clear(psk[:])
	}
	if p.Endpoint.IsValid() {
		var sa [unix.SizeofSockaddrInet6]byte
		b = b.bytes(unix.WGPEER_A_ENDPOINT, putSockaddr(sa[:], p.Endpoint))
	}
	if p.Keepalive != nil {
		b = b.u16(unix.WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, uint16(p.Keepalive.Seconds()))
	}
	if len(p.AllowedIPs) > 0 || p.ReplaceAllowedIPs {
		var ips int
		b, ips = b.begin(unix.WGPEER_A_ALLOWEDIPS)
		for i, a := range p.AllowedIPs {
			var n int
			b, n = b.begin(uint16(i))
			addr := a.Addr().Unmap()
			if addr.Is4() {
				a4 := addr.As4()
				b = b.u16(unix.WGALLOWEDIP_A_FAMILY, unix.AF_INET).bytes(unix.WGALLOWEDIP_A_IPADDR, a4[:])
			} else {
				a16 := addr.As16()
				b = b.u16(unix.WGALLOWEDIP_A_FAMILY, unix.AF_INET6).bytes(unix.WGALLOWEDIP_A_IPADDR, a16[:])
			}
			b = b.u8(unix.WGALLOWEDIP_A_CIDR_MASK, uint8(a.Bits()))
			b.end(n)
		}
		b.end(ips)
	}
	return b
}

// nlAttrs appends netlink attributes (header, data, padding to 4 bytes).
type nlAttrs []byte

func (b nlAttrs) bytes(typ uint16, data []byte) nlAttrs {
	b = binary.NativeEndian.AppendUint16(b, uint16(nlaHdr+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func (b nlAttrs) str(typ uint16, s string) nlAttrs {
	return b.bytes(typ, append([]byte(s), 0))
}

func (b nlAttrs) u8(typ uint16, v uint8) nlAttrs { return b.bytes(typ, []byte{v}) }

func (b nlAttrs) u16(typ uint16, v uint16) nlAttrs {
	var d [2]byte
	binary.NativeEndian.PutUint16(d[:], v)
	return b.bytes(typ, d[:])
}

func (b nlAttrs) u32(typ uint16, v uint32) nlAttrs {
	var d [4]byte
	binary.NativeEndian.PutUint32(d[:], v)
	return b.bytes(typ, d[:])
}

// begin opens a nest (NLA_F_NESTED, as the kernel's own nla_nest_start);
// end(at) closes it.
func (b nlAttrs) begin(typ uint16) (nlAttrs, int) {
	at := len(b)
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint16(b, typ|unix.NLA_F_NESTED)
	return b, at
}

func (b nlAttrs) end(at int) {
	binary.NativeEndian.PutUint16(b[at:], uint16(min(len(b)-at, 0xffff)))
}

// putSockaddr encodes an endpoint as struct sockaddr_in or sockaddr_in6
// into b (of sockaddr_in6's size) and returns the part used.
func putSockaddr(b []byte, ap netip.AddrPort) []byte {
	clear(b)
	addr := ap.Addr().Unmap()
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	if addr.Is4() {
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		a4 := addr.As4()
		copy(b[4:], a4[:])
		return b[:unix.SizeofSockaddrInet4]
	}
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	a16 := addr.As16()
	copy(b[8:], a16[:])
	return b[:unix.SizeofSockaddrInet6]
}
