package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestS2S3CoilEgress: a client, a NAT gateway and an "external" host on one
// L2 segment (a bridge in a fourth namespace). The client's traffic to
// 192.168.10.0/24 goes through the FoU tunnel to the gateway, which
// masquerades it out of eth0; replies come back through the gateway's
// per-client tunnel. The external side sees the gateway's address.
func TestS2S3CoilEgress(t *testing.T) {
	requireModules(t, "ipip", "fou", "ip6_tunnel", "fou6", "nf_tables", "nft_masq", "nf_nat", "bridge")
	lan := newNetNS(t, "lan")
	client := newNetNS(t, "client")
	gw := newNetNS(t, "gw")
	ext := newNetNS(t, "ext")
	lan.IP(t, "link", "add", "br0", "type", "bridge")
	lan.IP(t, "link", "set", "br0", "up")
	for _, n := range []struct {
		ns   *NetNS
		port string
	}{{client, "p-client"}, {gw, "p-gw"}, {ext, "p-ext"}} {
		lan.IP(t, "link", "add", n.port, "type", "veth", "peer", "name", "eth0", "netns", n.ns.Name)
		lan.IP(t, "link", "set", n.port, "master", "br0", "up")
		n.ns.IP(t, "link", "set", "eth0", "up")
	}
	client.IP(t, "addr", "add", "10.20.30.40/24", "dev", "eth0")
	ext.IP(t, "addr", "add", "192.168.10.5/24", "dev", "eth0")
	// The external host knows nothing of the pod network: replies can only
	// reach the client if the gateway translated the source. The example
	// declares the gateway's forwarding: it starts off, so that the
	// traffic below proves netreconcile turned it on.
	gw.Run(t, "/sbin/sysctl", "-w", "net.ipv4.ip_forward=0")

	applyExample(t, gw, example(t, "coil-egress-gateway.yaml"))
	applyExample(t, client, example(t, "coil-egress-client.yaml"))

	// What the kernel holds, in the words of docs/examples.md.
	mustContain(t, "client ip rule", client.IP(t, "rule"),
		"1800:\tfrom all to 169.254.0.0/16 lookup main proto 245",
		"1900:\tfrom all lookup 117 proto 245",
		"2000:\tfrom all to 10.0.0.0/8 lookup main proto 245",
		"2001:\tfrom all to 172.16.0.0/12 lookup main proto 245",
		"2002:\tfrom all to 192.168.0.0/16 lookup main proto 245",
		"2100:\tfrom all lookup 118 proto 245")
	mustContain(t, "client table 117", client.IP(t, "route", "show", "table", "117"), "192.168.10.0/24 dev fou4_0a141e01 proto 245")
	mustContain(t, "client table 118", client.IP(t, "route", "show", "table", "118"), "default dev fou4_0a141e02 proto 245")
	mustContain(t, "client fou", client.IP(t, "fou", "show"), "port 5555 ipproto 4", "port 5555 ipproto 41 -6")
	mustContain(t, "client tunnel", client.IP(t, "-d", "link", "show", "fou4_0a141e01"),
		"remote 10.20.30.1 local 10.20.30.40 ttl 225", "encap fou encap-sport auto encap-dport 5555")
	mustContain(t, "client external device", client.IP(t, "-d", "link", "show", "egress-ipip"), "external")
	mustContain(t, "gateway rule", gw.IP(t, "rule"), "2000:\tfrom all iif eth0 lookup 118 proto 245")
	mustContain(t, "gateway table 118", gw.IP(t, "route", "show", "table", "118"), "10.20.30.40 dev fou4_0a141e28 proto 245")
	mustContain(t, "gateway nat", gw.Nft(t, "list", "table", "ip", "coil_egress"), `oifname "eth0" ip saddr != 10.20.30.1 masquerade`)

	// TCP both ways through the tunnel: the server on the external host
	// reports the source it saw, which must be the gateway's address.
	listen(t, ext, "192.168.10.5:8080")
	got, err := dial(t, client, "192.168.10.5:8080", 5*time.Second)
	if err != nil {
		t.Fatalf("client to external 192.168.10.5:8080 through the gateway: %v", err)
	}
	t.Logf("external server said: %s", strings.TrimSpace(got))
	if !strings.Contains(got, " to 192.168.10.1:") {
		t.Errorf("the external host saw %q; want the gateway's address 192.168.10.1 as source", got)
	}
	if tx := counter(t, client, "fou4_0a141e01", "TX"); tx == 0 {
		t.Errorf("nothing went out through the client's FoU tunnel")
	}
	if rx := counter(t, client, "fou4_0a141e01", "RX"); rx == 0 {
		t.Errorf("no reply came back through the client's FoU tunnel")
	}

	// The flow-based device takes FoU traffic that no regular ipip link
	// takes: send some from a second gateway address. Observed on 6.1: while
	// the client's link to 10.20.30.1 is up, the kernel's tunnel lookup hands
	// it these packets too (its RX counter took them), so that link is taken
	// down first; what arrives then must land on the external device.
	client.IP(t, "link", "set", "fou4_0a141e01", "down")
	gw.IP(t, "addr", "add", "10.20.30.3/24", "dev", "eth0")
	gw.IP(t, "link", "add", "probe", "type", "ipip", "remote", "10.20.30.40", "local", "10.20.30.3",
		"ttl", "225", "encap", "fou", "encap-sport", "auto", "encap-dport", "5555")
	gw.IP(t, "link", "set", "probe", "up")
	gw.IP(t, "route", "add", "10.99.99.99/32", "dev", "probe")
	before := counter(t, client, "egress-ipip", "RX")
	_, _, _ = gw.Exec("", "/bin/ping", "-c", "3", "-W", "1", "10.99.99.99")
	if after := counter(t, client, "egress-ipip", "RX"); after <= before {
		t.Errorf("the flow-based device received nothing from an unknown gateway address (rx %d -> %d)\nclient:\n%s\ngateway:\n%s",
			before, after, client.IP(t, "-s", "-d", "link"), gw.IP(t, "-s", "-d", "link", "show", "probe"))
	}
}

var statsRe = regexp.MustCompile(`(?s)(RX|TX):[^\n]*\n\s*(\d+)\s+(\d+)`)

// counter returns a link's RX or TX packet count from `ip -s link`.
func counter(t *testing.T, ns *NetNS, link, dir string) int {
	t.Helper()
	out := ns.IP(t, "-s", "link", "show", link)
	for _, m := range statsRe.FindAllStringSubmatch(out, -1) {
		if m[1] == dir {
			n, _ := strconv.Atoi(m[3])
			return n
		}
	}
	t.Fatalf("no %s counters for %s in:\n%s", dir, link, out)
	return 0
}
