package kernel

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	mdnetlink "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The codec of the kernel module's messages, without a kernel: dumps are
// encoded here with mdlayher/netlink's encoder as the kernel lays them out
// (drivers/net/wireguard/netlink.c), and our messages are read back with its
// decoder. The guest runs the same against the module, with wg(8) as the
// oracle (test/e2e TestWireGuardNetlinkAgainstWG).

func testKey(i int) model.Key {
	var k model.Key
	binary.BigEndian.PutUint32(k[:], uint32(i)*2654435761)
	k[31] = byte(i)
	return k
}

// dumpPeer is a peer as the kernel dumps it.
type dumpPeer struct {
	key       model.Key
	psk       model.Key
	endpoint  []byte
	keepalive uint16
	handshake [16]byte
	ips       []netip.Prefix
	// cont: a continuation (the key and allowed IPs only).
	cont bool
}

func encodeDump(t testing.TB, dev bool, priv model.Key, peers []dumpPeer) []byte {
	t.Helper()
	ae := mdnetlink.NewAttributeEncoder()
	if dev {
		ae.Uint16(unix.WGDEVICE_A_LISTEN_PORT, 51820)
		ae.Uint32(unix.WGDEVICE_A_FWMARK, 0x20)
		ae.Uint32(unix.WGDEVICE_A_IFINDEX, 7)
		ae.String(unix.WGDEVICE_A_IFNAME, "wg0")
		ae.Bytes(unix.WGDEVICE_A_PRIVATE_KEY, priv[:])
		pub := testKey(999)
		ae.Bytes(unix.WGDEVICE_A_PUBLIC_KEY, pub[:])
	}
	ae.Nested(unix.WGDEVICE_A_PEERS, func(pe *mdnetlink.AttributeEncoder) error {
		for i, p := range peers {
			pe.Nested(uint16(i), func(e *mdnetlink.AttributeEncoder) error {
				e.Bytes(unix.WGPEER_A_PUBLIC_KEY, p.key[:])
				if !p.cont {
					e.Bytes(unix.WGPEER_A_PRESHARED_KEY, p.psk[:])
					e.Bytes(unix.WGPEER_A_LAST_HANDSHAKE_TIME, p.handshake[:])
					e.Uint16(unix.WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, p.keepalive)
					e.Uint64(unix.WGPEER_A_TX_BYTES, 100)
					e.Uint64(unix.WGPEER_A_RX_BYTES, 200)
					e.Uint32(unix.WGPEER_A_PROTOCOL_VERSION, 1)
					if p.endpoint != nil {
						e.Bytes(unix.WGPEER_A_ENDPOINT, p.endpoint)
					}
				}
				e.Nested(unix.WGPEER_A_ALLOWEDIPS, func(ie *mdnetlink.AttributeEncoder) error {
					for j, a := range p.ips {
						ie.Nested(uint16(j), func(x *mdnetlink.AttributeEncoder) error {
							fam := uint16(unix.AF_INET6)
							if a.Addr().Is4() {
								fam = unix.AF_INET
							}
							x.Uint16(unix.WGALLOWEDIP_A_FAMILY, fam)
							x.Bytes(unix.WGALLOWEDIP_A_IPADDR, a.Addr().AsSlice())
							x.Uint8(unix.WGALLOWEDIP_A_CIDR_MASK, uint8(a.Bits()))
							return nil
						})
					}
					return nil
				})
				return nil
			})
		}
		return nil
	})
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sockaddr4(a string, port uint16) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], port)
	ip := netip.MustParseAddr(a).As4()
	copy(b[4:], ip[:])
	return b
}

func sockaddr6(a string, port uint16) []byte {
	b := make([]byte, 28)
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], port)
	ip := netip.MustParseAddr(a).As16()
	copy(b[8:], ip[:])
	return b
}

func pfx(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, x := range s {
		out[i] = netip.MustParsePrefix(x)
	}
	return out
}

// TestWGDumpDecode: every attribute of the device and its peers; a peer
// continued in the next message is one peer; peers and allowed IPs come out
// sorted; the private key is wiped from the buffer, never kept.
func TestWGDumpDecode(t *testing.T) {
	priv := testKey(1000)
	var hs [16]byte
	binary.NativeEndian.PutUint64(hs[:], 1700000000)
	binary.NativeEndian.PutUint64(hs[8:], 5)
	a, b, c := testKey(3), testKey(1), testKey(2)
	m1 := encodeDump(t, true, priv, []dumpPeer{
		{key: a, psk: testKey(50), endpoint: sockaddr4("192.0.2.1", 51820), keepalive: 25, handshake: hs, ips: pfx("10.0.0.2/32", "10.0.0.1/32")},
		{key: b, endpoint: sockaddr6("2001:db8::1", 443), ips: pfx("fd00::/64")},
	})
	m2 := encodeDump(t, false, model.Key{}, []dumpPeer{
		{key: b, cont: true, ips: pfx("10.9.0.0/16")},
		{key: c, endpoint: sockaddr6("::ffff:192.0.2.9", 1), ips: nil},
	})
	d := wgDump{}
	for _, m := range [][]byte{m1, m2} {
		if err := d.message(m); err != nil {
			t.Fatal(err)
		}
	}
	w := d.device()
	if w.ListenPort != 51820 || w.FwMark != 0x20 || w.PublicKey != testKey(999) || w.Implementation != WireGuardKernel {
		t.Errorf("device = port %d mark %#x key %v %s", w.ListenPort, w.FwMark, w.PublicKey, w.Implementation)
	}
	if w.PrivateKey.IsSet() {
		t.Error("the private key was kept")
	}
	if slices.Contains(m1, priv[0]) && containsKey(m1, priv) {
		t.Error("the private key is still in the receive buffer")
	}
	if len(w.Peers) != 3 {
		t.Fatalf("%d peers, want 3: %+v", len(w.Peers), w.Peers)
	}
	want := []struct {
		key model.Key
		ep  string
		ips string
	}{
		{testKey(1), "[2001:db8::1]:443", "[10.9.0.0/16 fd00::/64]"},
		{testKey(2), "192.0.2.9:1", "[]"},
		{testKey(3), "192.0.2.1:51820", "[10.0.0.1/32 10.0.0.2/32]"},
	}
	model.SortPeers(w.Peers) // already: checked below
	for i, p := range w.Peers {
		var wantKey model.Key
		for _, x := range want {
			if x.key == p.PublicKey {
				wantKey = x.key
				if got := p.Endpoint.String(); got != x.ep {
					t.Errorf("peer %v endpoint %s, want %s", p.PublicKey.Short(), got, x.ep)
				}
				if got := fmt.Sprint(p.AllowedIPs); got != x.ips {
					t.Errorf("peer %v allowed ips %s, want %s", p.PublicKey.Short(), got, x.ips)
				}
			}
		}
		if wantKey.IsZero() {
			t.Errorf("peer %d: unexpected key %v", i, p.PublicKey)
		}
		if p.EndpointCandidate != -1 {
			t.Errorf("peer %v: EndpointCandidate %d, want -1", p.PublicKey.Short(), p.EndpointCandidate)
		}
	}
	pa := w.Peers[slices.IndexFunc(w.Peers, func(p model.WireGuardPeer) bool { return p.PublicKey == a })]
	if !pa.PresharedKey.Equal(model.NewSecret(testKey(50))) || pa.Keepalive != 25*time.Second || pa.TxBytes != 100 || pa.RxBytes != 200 ||
		!pa.LastHandshake.Equal(time.Unix(1700000000, 5)) {
		t.Errorf("peer a = %+v", pa)
	}
	pb := w.Peers[slices.IndexFunc(w.Peers, func(p model.WireGuardPeer) bool { return p.PublicKey == b })]
	if pb.PresharedKey.IsSet() || !pb.LastHandshake.IsZero() {
		t.Errorf("peer b: a zero preshared key or handshake is none: %+v", pb)
	}
	if !slices.IsSortedFunc(w.Peers, func(x, y model.WireGuardPeer) int { return slices.Compare(x.PublicKey[:], y.PublicKey[:]) }) {
		t.Error("peers are not sorted")
	}
	// Allowed IPs are apart: appending to one peer's leaves the others'.
	before := fmt.Sprint(w.Peers)
	for i := range w.Peers {
		_ = append(w.Peers[i].AllowedIPs, netip.MustParsePrefix("1.1.1.1/32"))
	}
	if after := fmt.Sprint(w.Peers); after != before {
		t.Errorf("allowed IPs share their array:\n%s\n%s", before, after)
	}
}

func containsKey(b []byte, k model.Key) bool {
	for i := 0; i+len(k) <= len(b); i++ {
		if [32]byte(b[i:i+32]) == k {
			return true
		}
	}
	return false
}

// TestWGDumpAllocations: decoding allocates per dump, not per peer (with
// the size of the last read as the hint, as reads after the first have).
func TestWGDumpAllocations(t *testing.T) {
	const n = 2000
	var msgs [][]byte
	var batch []dumpPeer
	for i := range n {
		batch = append(batch, dumpPeer{key: testKey(i), endpoint: sockaddr4("192.0.2.1", uint16(i)), keepalive: 25,
			ips: pfx(fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), fmt.Sprintf("fd00:%x::/64", i))})
		if len(batch) == 100 {
			msgs = append(msgs, encodeDump(t, len(msgs) == 0, model.Key{}, batch))
			batch = nil
		}
	}
	allocs := testing.AllocsPerRun(20, func() {
		d := wgDump{hint: n}
		for _, m := range msgs {
			if err := d.message(m); err != nil {
				t.Fatal(err)
			}
		}
		if w := d.device(); len(w.Peers) != n {
			t.Fatalf("%d peers", len(w.Peers))
		}
	})
	// The peers, their spans, the allowed IPs (grown once past the hint,
	// which counts peers), the device.
	if allocs > 10 {
		t.Errorf("decoding %d peers allocated %.0f times, want at most 10", n, allocs)
	}
}

// TestWGDumpMalformed: truncated and inconsistent input is an error, never
// a panic or a made-up peer.
func TestWGDumpMalformed(t *testing.T) {
	good := encodeDump(t, true, model.Key{}, []dumpPeer{{key: testKey(1), ips: pfx("10.0.0.0/8")}})
	for i := 1; i < len(good); i++ {
		d := wgDump{}
		_ = d.message(good[:i]) // an error, or a shorter message that decodes
		_ = d.device()
	}
	bad := encodeDump(t, false, model.Key{}, []dumpPeer{{key: testKey(1), ips: []netip.Prefix{netip.PrefixFrom(netip.MustParseAddr("10.0.0.0"), 8)}}})
	// A /33 for IPv4.
	i := len(bad) - 4
	bad[i] = 33
	d := wgDump{}
	if err := d.message(bad); err == nil {
		t.Error("an IPv4 /33 decoded")
	}
}

func FuzzWGDump(f *testing.F) {
	f.Add(encodeDump(f, true, testKey(3), []dumpPeer{{key: testKey(1), endpoint: sockaddr6("2001:db8::1", 1), ips: pfx("10.0.0.0/8", "fd00::/8")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := wgDump{}
		if d.message(b) == nil {
			for _, p := range d.device().Peers {
				for _, a := range p.AllowedIPs {
					if !a.IsValid() {
						t.Fatalf("invalid prefix decoded from %x", b)
					}
				}
			}
		}
	})
}

// decodedMsg is a message of ours read back with mdlayher/netlink.
type decodedMsg struct {
	ifname string
	priv   bool
	port   int
	peers  []PeerPatch
	flags  []uint32
	nest   int // length of the peers nest
}

func decodeSet(t *testing.T, b []byte) decodedMsg {
	t.Helper()
	var m decodedMsg
	ad, err := mdnetlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.WGDEVICE_A_IFNAME:
			m.ifname = ad.String()
		case unix.WGDEVICE_A_PRIVATE_KEY:
			m.priv = true
		case unix.WGDEVICE_A_LISTEN_PORT:
			m.port = int(ad.Uint16())
		case unix.WGDEVICE_A_PEERS:
			m.nest = len(ad.Bytes()) + 4
			ad.Nested(func(pd *mdnetlink.AttributeDecoder) error {
				for pd.Next() {
					var p PeerPatch
					var fl uint32
					pd.Nested(func(d *mdnetlink.AttributeDecoder) error {
						for d.Next() {
							switch d.Type() {
							case unix.WGPEER_A_PUBLIC_KEY:
								p.PublicKey = model.Key(d.Bytes())
							case unix.WGPEER_A_FLAGS:
								fl = d.Uint32()
							case unix.WGPEER_A_ENDPOINT:
								p.Endpoint = sockaddrAddrPort(d.Bytes())
							case unix.WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL:
								ka := time.Duration(d.Uint16()) * time.Second
								p.Keepalive = &ka
							case unix.WGPEER_A_ALLOWEDIPS:
								d.Nested(func(id *mdnetlink.AttributeDecoder) error {
									for id.Next() {
										pf, err := allowedIP(id.Bytes())
										if err != nil {
											return err
										}
										p.AllowedIPs = append(p.AllowedIPs, pf)
									}
									return nil
								})
							}
						}
						return nil
					})
					m.peers = append(m.peers, p)
					m.flags = append(m.flags, fl)
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWGMessagesPack: ten thousand peers go in as few messages as the
// 16-bit nest length allows, in order; each one's size is what peerSize
// says; one peer is one message; an empty patch is none.
func TestWGMessagesPack(t *testing.T) {
	ka := 25 * time.Second
	port := 51820
	secret := model.NewSecret(testKey(7))
	cfg := &WireGuardConfig{ListenPort: &port, PrivateKey: &secret}
	for i := range 10000 {
		cfg.Peers = append(cfg.Peers, PeerPatch{PublicKey: testKey(i), Keepalive: &ka, ReplaceAllowedIPs: true,
			Endpoint:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 51820),
			AllowedIPs: pfx(fmt.Sprintf("10.%d.%d.1/32", i/250, i%250))})
	}
	cfg.Peers[17].Remove = true
	cfg.Peers[18].Endpoint = netip.MustParseAddrPort("[2001:db8::1]:7")
	cfg.Peers[19].AllowedIPs = pfx("fd00::/64", "10.200.0.0/16")
	msgs, err := wgMessages("wg0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	per := wgNestMax / peerSize(&cfg.Peers[0], cfg.Peers[0].AllowedIPs)
	if want := (10000 + per - 1) / per; len(msgs) != want {
		t.Errorf("%d messages for 10,000 peers, want %d (%d a message)", len(msgs), want, per)
	}
	var got []PeerPatch
	for i, b := range msgs {
		m := decodeSet(t, b)
		if m.ifname != "wg0" || m.priv != (i == 0) || (m.port == port) != (i == 0) {
			t.Errorf("message %d: ifname %q, private key %v, port %d: the device's settings go in the first only", i, m.ifname, m.priv, m.port)
		}
		if m.nest > 0xffff {
			t.Errorf("message %d: peers nest of %d bytes", i, m.nest)
		}
		sum := nlaHdr
		for j := range m.peers {
			p := &cfg.Peers[len(got)+j]
			sum += peerSize(p, p.AllowedIPs)
			want := peerFlags(p)
			if m.flags[j] != want {
				t.Errorf("peer %d: flags %#x, want %#x", len(got)+j, m.flags[j], want)
			}
		}
		if sum != m.nest {
			t.Errorf("message %d: peers nest of %d bytes, peerSize says %d", i, m.nest, sum)
		}
		got = append(got, m.peers...)
	}
	if len(got) != len(cfg.Peers) {
		t.Fatalf("%d peers sent, want %d", len(got), len(cfg.Peers))
	}
	for i, p := range got {
		w := cfg.Peers[i]
		if p.PublicKey != w.PublicKey {
			t.Fatalf("peer %d out of order", i)
		}
		if w.Remove {
			if p.Endpoint.IsValid() || len(p.AllowedIPs) > 0 {
				t.Errorf("peer %d: a removal carries attributes", i)
			}
			continue
		}
		if p.Endpoint != w.Endpoint || !slices.Equal(p.AllowedIPs, w.AllowedIPs) || p.Keepalive == nil || *p.Keepalive != ka {
			t.Errorf("peer %d = %+v, want %+v", i, p, w)
		}
	}

	one := &WireGuardConfig{Peers: cfg.Peers[:1]}
	if msgs, _ := wgMessages("wg0", one); len(msgs) != 1 {
		t.Errorf("one peer: %d messages, want 1", len(msgs))
	}
	if msgs, _ := wgMessages("wg0", &WireGuardConfig{}); len(msgs) != 0 {
		t.Errorf("an empty patch: %d messages, want 0", len(msgs))
	}
	if msgs, _ := wgMessages("wg0", &WireGuardConfig{ListenPort: &port}); len(msgs) != 1 {
		t.Errorf("a port alone: %d messages, want 1", len(msgs))
	}
}

// TestWGMessagesSplitPeer: a peer with more allowed IPs than a message
// holds is split; the first part replaces the list, the others add to it,
// and together they carry every allowed IP once.
func TestWGMessagesSplitPeer(t *testing.T) {
	var ips []netip.Prefix
	for i := range 5000 {
		ips = append(ips, netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0, byte(i >> 8), byte(i)}), 64))
	}
	ka := time.Second
	cfg := &WireGuardConfig{Peers: []PeerPatch{
		{PublicKey: testKey(1), AllowedIPs: pfx("10.0.0.1/32"), ReplaceAllowedIPs: true},
		{PublicKey: testKey(2), AllowedIPs: ips, ReplaceAllowedIPs: true, UpdateOnly: true, Keepalive: &ka},
		{PublicKey: testKey(3), AllowedIPs: pfx("10.0.0.3/32"), ReplaceAllowedIPs: true},
	}}
	msgs, err := wgMessages("wg0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 5000 IPv6 allowed IPs of 40 bytes, 200 KB: four parts, after the
	// first peer's message and with the last peer in the last.
	if len(msgs) != 5 {
		t.Errorf("%d messages, want 5", len(msgs))
	}
	var all []netip.Prefix
	parts := 0
	for i, b := range msgs {
		m := decodeSet(t, b)
		if m.nest > 0xffff {
			t.Errorf("message %d: nest of %d bytes", i, m.nest)
		}
		for j, p := range m.peers {
			if p.PublicKey != testKey(2) {
				continue
			}
			want := uint32(unix.WGPEER_F_UPDATE_ONLY)
			if parts == 0 {
				want |= unix.WGPEER_F_REPLACE_ALLOWEDIPS
				if p.Keepalive == nil {
					t.Error("the first part lacks the keepalive")
				}
			} else if p.Keepalive != nil {
				t.Errorf("part %d repeats the keepalive", parts)
			}
			if m.flags[j] != want {
				t.Errorf("part %d: flags %#x, want %#x", parts, m.flags[j], want)
			}
			parts++
			all = append(all, p.AllowedIPs...)
		}
	}
	if !slices.Equal(all, ips) {
		t.Errorf("the parts carry %d allowed IPs, want the %d in order", len(all), len(ips))
	}
}

// BenchmarkWGMessages encodes a patch of 10,000 new peers.
func BenchmarkWGMessages(b *testing.B) {
	ka := 25 * time.Second
	cfg := &WireGuardConfig{}
	for i := range 10000 {
		cfg.Peers = append(cfg.Peers, PeerPatch{PublicKey: testKey(i), Keepalive: &ka, ReplaceAllowedIPs: true,
			Endpoint:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 51820),
			AllowedIPs: pfx(fmt.Sprintf("10.%d.%d.1/32", i/250, i%250))})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wgMessages("wg0", cfg); err != nil {
			b.Fatal(err)
		}
	}
}
