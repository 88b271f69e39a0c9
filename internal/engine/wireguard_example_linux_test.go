package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nettest"
)

// examples/kubespan-wireguard.yaml applied to a real kernel (wireguard-go
// here), read back with wg. The link is renamed: wireguard-go's control
// sockets are shared by every namespace on the host.
func TestExampleKubeSpanWireGuardApplies(t *testing.T) {
	n := newNode(t, 1)
	data, err := os.ReadFile("../../examples/kubespan-wireguard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, n.keyFile, n.dir+"/kubespan.key")
	writePSK(t, n.dir, "node2.psk")
	conf := strings.ReplaceAll(string(data), "/etc/netreconcile/", n.dir+"/")
	conf = strings.Replace(conf, "\n  kubespan:\n", "\n  "+n.dev+":\n", 1)
	n.apply(t, conf)
	dump := nettest.InNS(t, n.ns, "wg", "show", n.dev, "dump")
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
	if mtu := nettest.IP(t, n.ns, "link", "show", n.dev); !strings.Contains(mtu, "mtu 1420") {
		t.Errorf("link: %s", mtu)
	}
}
