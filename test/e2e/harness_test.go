package e2e

// Tests of the VM harness itself: the guest kernel has what the scenarios need, and the
// helpers work. They double as examples for the scenario tests.

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// tunnelEncapFOU is TUNNEL_ENCAP_FOU from linux/if_tunnel.h (netlink has no constant).
const tunnelEncapFOU = 1

func TestHarnessModules(t *testing.T) {
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	t.Logf("guest kernel %s", strings.TrimSpace(string(release)))
	requireModules(t, "wireguard", "fou", "fou6", "ipip", "ip6_tunnel", "dummy", "ipvlan",
		"macvlan", "veth", "bridge", "vxlan", "nf_tables")
}

// TestHarnessLinks creates the link kinds this host's kernel lacks and reads them back.
func TestHarnessLinks(t *testing.T) {
	requireModules(t, "dummy", "fou", "ipip", "ipvlan")
	withNetNS(t, func(ns *NetNS) {
		// S4: a dummy link holding a host-scope address.
		dummy := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "nr-dummy0"}}
		if err := netlink.LinkAdd(dummy); err != nil {
			t.Fatalf("add dummy: %v", err)
		}
		addr, _ := netlink.ParseAddr("10.0.0.1/32")
		addr.Scope = unix.RT_SCOPE_HOST
		if err := netlink.AddrAdd(dummy, addr); err != nil {
			t.Fatalf("add address: %v", err)
		}
		if err := netlink.LinkSetUp(dummy); err != nil {
			t.Fatalf("set dummy up: %v", err)
		}

		// S2: a FoU receive port and an ipip link encapsulated in FoU.
		fou := netlink.Fou{Family: netlink.FAMILY_V4, Port: 5555, Protocol: unix.IPPROTO_IPIP, EncapType: netlink.FOU_ENCAP_DIRECT}
		if err := netlink.FouAdd(fou); err != nil {
			t.Fatalf("add fou port: %v", err)
		}
		tun := &netlink.Iptun{
			LinkAttrs:  netlink.LinkAttrs{Name: "fou4_c0000202"},
			Local:      net.ParseIP("10.0.0.1"),
			Remote:     net.ParseIP("192.0.2.2"),
			Ttl:        225,
			EncapType:  tunnelEncapFOU,
			EncapSport: 0, // auto
			EncapDport: 5555,
		}
		if err := netlink.LinkAdd(tun); err != nil {
			t.Fatalf("add ipip: %v", err)
		}

		// S6: an ipvlan link in L2 mode on a parent.
		if err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "nr-parent0"}}); err != nil {
			t.Fatalf("add parent: %v", err)
		}
		parent, err := netlink.LinkByName("nr-parent0") // LinkAdd does not fill in the index
		if err != nil {
			t.Fatal(err)
		}
		ipvl := &netlink.IPVlan{
			LinkAttrs: netlink.LinkAttrs{Name: "nr-ipvl0", ParentIndex: parent.Attrs().Index},
			Mode:      netlink.IPVLAN_MODE_L2,
		}
		if err := netlink.LinkAdd(ipvl); err != nil {
			t.Fatalf("add ipvlan: %v", err)
		}

		// Read back through a handle, from outside the thread's namespace switch.
		l, err := ns.NL.LinkByName("nr-dummy0")
		if err != nil {
			t.Fatal(err)
		}
		if l.Type() != "dummy" || l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("nr-dummy0: type %s flags %v, want dummy and up", l.Type(), l.Attrs().Flags)
		}
		addrs, err := ns.NL.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		if len(addrs) != 1 || addrs[0].IPNet.String() != "10.0.0.1/32" || addrs[0].Scope != unix.RT_SCOPE_HOST {
			t.Errorf("nr-dummy0 addresses %v, want 10.0.0.1/32 scope host", addrs)
		}

		l, err = ns.NL.LinkByName("fou4_c0000202")
		if err != nil {
			t.Fatal(err)
		}
		got, ok := l.(*netlink.Iptun)
		if !ok {
			t.Fatalf("fou4_c0000202 is %T, want *netlink.Iptun", l)
		}
		if got.EncapType != tunnelEncapFOU || got.EncapDport != 5555 || got.EncapSport != 0 || got.Ttl != 225 ||
			!got.Local.Equal(tun.Local) || !got.Remote.Equal(tun.Remote) {
			t.Errorf("ipip read back as %+v", got)
		}
		fous, err := ns.NL.FouList(netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		if len(fous) != 1 || fous[0].Port != 5555 || fous[0].Protocol != unix.IPPROTO_IPIP {
			t.Errorf("fou ports %+v, want port 5555 ipproto 4", fous)
		}

		l, err = ns.NL.LinkByName("nr-ipvl0")
		if err != nil {
			t.Fatal(err)
		}
		gotIpvl, ok := l.(*netlink.IPVlan)
		if !ok || gotIpvl.Mode != netlink.IPVLAN_MODE_L2 || gotIpvl.ParentIndex != parent.Attrs().Index {
			t.Errorf("nr-ipvl0 read back as %#v", l)
		}

		// The same state in the words of iproute2.
		out := ns.IP(t, "-d", "link", "show", "fou4_c0000202")
		if !strings.Contains(out, "encap fou encap-sport auto encap-dport 5555") {
			t.Errorf("ip -d link show fou4_c0000202:\n%s", out)
		}
		out = ns.IP(t, "fou", "show")
		if !strings.Contains(out, "port 5555 ipproto 4") {
			t.Errorf("ip fou show:\n%s", out)
		}
	})
}

// TestHarnessWireGuard creates a kernel WireGuard device with iproute2 and configures it
// with wgctrl.
func TestHarnessWireGuard(t *testing.T) {
	requireModules(t, "wireguard")
	withNetNS(t, func(ns *NetNS) {
		ns.IP(t, "link", "add", "wg0", "type", "wireguard")

		// wgctrl's netlink socket belongs to the namespace of the thread that opens it.
		c, err := wgctrl.New()
		if err != nil {
			t.Fatalf("wgctrl: %v", err)
		}
		defer c.Close()

		key := mustKey(t)
		peer := mustKey(t).PublicKey()
		port, mark, keepalive := 51820, 0x20, 25*time.Second
		_, allowed, _ := net.ParseCIDR("198.51.100.0/24")
		err = c.ConfigureDevice("wg0", wgtypes.Config{
			PrivateKey:   &key,
			ListenPort:   &port,
			FirewallMark: &mark,
			Peers: []wgtypes.PeerConfig{{
				PublicKey:                   peer,
				Endpoint:                    &net.UDPAddr{IP: net.ParseIP("192.0.2.2"), Port: 51820},
				PersistentKeepaliveInterval: &keepalive,
				AllowedIPs:                  []net.IPNet{*allowed},
			}},
		})
		if err != nil {
			t.Fatalf("configure wg0: %v", err)
		}

		d, err := c.Device("wg0")
		if err != nil {
			t.Fatalf("read wg0: %v", err)
		}
		if d.Type != wgtypes.LinuxKernel || d.PublicKey != key.PublicKey() || d.ListenPort != port || d.FirewallMark != mark {
			t.Errorf("wg0: type %v port %d mark %#x, want kernel, %d, %#x", d.Type, d.ListenPort, d.FirewallMark, port, mark)
		}
		if len(d.Peers) != 1 || d.Peers[0].PublicKey != peer || d.Peers[0].PersistentKeepaliveInterval != keepalive ||
			len(d.Peers[0].AllowedIPs) != 1 || d.Peers[0].AllowedIPs[0].String() != "198.51.100.0/24" {
			t.Errorf("wg0 peers read back as %+v", d.Peers)
		}

		l, err := ns.NL.LinkByName("wg0")
		if err != nil || l.Type() != "wireguard" {
			t.Errorf("wg0 link: %v, %v", l, err)
		}
		if out := ns.WG(t, "show", "wg0"); !strings.Contains(out, "listening port: 51820") || !strings.Contains(out, "fwmark: 0x20") {
			t.Errorf("wg show wg0:\n%s", out)
		}
	})
}

// TestHarnessWireGuardHandshake connects two namespaces over veth with WireGuard and pings
// through the tunnel: a real handshake in the guest kernel.
func TestHarnessWireGuardHandshake(t *testing.T) {
	requireModules(t, "wireguard", "veth")
	a, b := newNetNS(t, "a"), newNetNS(t, "b")

	// Underlay: a veth pair, one end in each namespace.
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "nr-a"}, PeerName: "nr-b", PeerNamespace: netlink.NsFd(b.Handle)}
	if err := a.NL.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	type side struct {
		ns           *NetNS
		link, under  string
		outer, inner string
		key          wgtypes.Key
	}
	sides := []*side{
		{ns: a, link: "wg-a", under: "nr-a", outer: "192.0.2.1/24", inner: "198.51.100.1/24", key: mustKey(t)},
		{ns: b, link: "wg-b", under: "nr-b", outer: "192.0.2.2/24", inner: "198.51.100.2/24", key: mustKey(t)},
	}
	for i, s := range sides {
		o := sides[1-i]
		s.ns.IP(t, "addr", "add", s.outer, "dev", s.under)
		s.ns.IP(t, "link", "set", s.under, "up")
		s.ns.IP(t, "link", "add", s.link, "type", "wireguard")
		s.ns.IP(t, "addr", "add", s.inner, "dev", s.link)
		port := 51820 + i
		peerPort := 51820 + 1 - i
		outerIP, _, _ := net.ParseCIDR(o.outer)
		innerIP, _, _ := net.ParseCIDR(o.inner)
		s.ns.Do(t, func() {
			c, err := wgctrl.New()
			if err != nil {
				t.Fatalf("wgctrl: %v", err)
			}
			defer c.Close()
			err = c.ConfigureDevice(s.link, wgtypes.Config{
				PrivateKey: &s.key,
				ListenPort: &port,
				Peers: []wgtypes.PeerConfig{{
					PublicKey:  o.key.PublicKey(),
					Endpoint:   &net.UDPAddr{IP: outerIP, Port: peerPort},
					AllowedIPs: []net.IPNet{{IP: innerIP, Mask: net.CIDRMask(32, 32)}},
				}},
			})
			if err != nil {
				t.Fatalf("configure %s: %v", s.link, err)
			}
		})
		s.ns.IP(t, "link", "set", s.link, "up")
	}

	a.Run(t, "/bin/ping", "-c", "1", "-W", "10", "198.51.100.2")

	b.Do(t, func() {
		c, err := wgctrl.New()
		if err != nil {
			t.Fatalf("wgctrl: %v", err)
		}
		defer c.Close()
		d, err := c.Device("wg-b")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Peers) != 1 || d.Peers[0].LastHandshakeTime.IsZero() {
			t.Errorf("wg-b: no handshake with its peer: %+v", d.Peers)
		}
	})
}

// TestHarnessNftables loads a ruleset with nft; the limit expression is not loaded at boot,
// so this also shows the kernel autoloading a module through /sbin/modprobe.
func TestHarnessNftables(t *testing.T) {
	requireModules(t, "nf_tables")
	withNetNS(t, func(ns *NetNS) {
		ns.NftApply(t, `
table inet nr_test {
	set targets4 { type ipv4_addr; flags interval; elements = { 192.0.2.0/24, 198.51.100.7 } }
	chain out {
		type route hook output priority 0; policy accept;
		oifname "lo" accept
		ip daddr @targets4 meta mark set meta mark & 0xffffffdf | 0x00000040 accept
		limit rate 10/second accept
	}
}
`)
		out := ns.Nft(t, "list", "ruleset")
		for _, want := range []string{"table inet nr_test", "192.0.2.0/24", "limit rate 10/second"} {
			if !strings.Contains(out, want) {
				t.Errorf("nft list ruleset lacks %q:\n%s", want, out)
			}
		}
		if _, err := os.Stat("/sys/module/nft_limit"); err != nil && !builtinModule("nft_limit") {
			t.Errorf("nft_limit was not autoloaded: %v", err)
		}
	})
}

// TestHarnessNetreconcileBinary checks that the static netreconcile binary runs in the
// guest.
func TestHarnessNetreconcileBinary(t *testing.T) {
	bin := netreconcileBin(t)
	withNetNS(t, func(ns *NetNS) {
		out, errOut, err := ns.Exec("", bin, "--help")
		if err != nil || !strings.HasPrefix(out, "netreconcile - make a Linux host's network match one YAML file") {
			t.Fatalf("%s --help: %v\n%s%s", bin, err, out, errOut)
		}
	})
}

func mustKey(t testing.TB) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
