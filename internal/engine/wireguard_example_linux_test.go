package engine_test

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// examples/kubespan.yaml applied to a real kernel (wireguard-go here), read
// back with wg, ip and nft. The link is renamed: wireguard-go's control
// sockets are shared by every namespace on the host.
func TestExampleKubeSpanApplies(t *testing.T) {
	nettest.RequireTool(t, "nft")
	n := newNode(t, 1)
	conf, dev := nettest.KubeSpanExample(t, "../../examples/kubespan.yaml", n.dir, n.ns)
	copyFile(t, n.keyFile, n.dir+"/kubespan.key")
	n.apply(t, conf)
	dump := nettest.InNS(t, n.ns, "wg", "show", dev, "dump")
	lines := strings.Split(strings.TrimSpace(dump), "\n")
	if len(lines) != 3 {
		t.Fatalf("wg show dump: want the device and 2 peers:\n%s", dump)
	}
	// private-key public-key listen-port fwmark
	if f := strings.Fields(lines[0]); f[1] != n.priv.PublicKey().String() || f[2] != "51820" || f[3] != "0x20" {
		t.Errorf("device line: %s", lines[0])
	}
	for _, want := range []string{"xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", "192.168.1.12:51820", "10.100.0.2/32,10.244.2.0/24,fd7a:115c:a1e0::2/128", "192.168.1.13:51820", "\t25\n"} {
		if !strings.Contains(dump+"\n", want) {
			t.Errorf("wg show dump lacks %q:\n%s", want, dump)
		}
	}
	if r := n.cli(t, "apply"); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if mtu := nettest.IP(t, n.ns, "link", "show", dev); !strings.Contains(mtu, "mtu 1420") {
		t.Errorf("link: %s", mtu)
	}
	for _, fam := range []string{"-4", "-6"} {
		if got := nettest.IP(t, n.ns, fam, "route", "show", "table", "180"); !strings.Contains(got, "default dev "+dev+" proto 245 ") || !strings.Contains(got, " metric 1 ") || !strings.Contains(got, "mtu 1420") {
			t.Errorf("ip %s route show table 180:\n%s", fam, got)
		}
		if got := nettest.IP(t, n.ns, fam, "rule", "show"); !strings.Contains(got, "32500:\tfrom all fwmark 0x40/0x60 lookup 180 proto 245") {
			t.Errorf("ip %s rule show:\n%s", fam, got)
		}
	}
	// No peer is reachable, so none is up: the target sets are empty.
	for _, set := range []string{"kubespan_targets_ipv4", "kubespan_targets_ipv6"} {
		if got := nettest.InNS(t, n.ns, "nft", "list", "set", "inet", "talos_kubespan", set); strings.Contains(got, "elements") {
			t.Errorf("set %s holds elements with no peer up:\n%s", set, got)
		}
	}
}
