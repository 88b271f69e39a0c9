package integration

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// 101. An on-link IPv4 route whose gateway the kernel's local table types
// other than unicast (an address of the host, one in the subnet of an
// address on lo, a subnet's broadcast address, multicast) validated, then
// the kernel refused it ("Nexthop has invalid gateway") and the apply
// failed. Walk finding 101 (host soak seed 84241386452614, step 81: lo up
// with 10.60.0.5/24, a route via 10.60.0.201 dev lo onlink; shrunk to one
// file).
//
// The kernel is the oracle: gateways drawn around the file's addresses
// (each address, its subnet's first and last, neighbours, inside and
// outside lo's subnet, loopback, multicast) are each given to the kernel
// by ip route in a namespace holding the same addresses, and validate
// must refuse exactly the routes the kernel refuses.
func TestWalkFinding101OnLinkGatewayTheKernelTakesAsLocal(t *testing.T) {
	e := newEnv(t)
	addrs := map[string][]string{
		"lo": {"10.60.0.5/24", "10.61.0.7/32"},
		"d0": {"10.70.0.1/24", "10.71.0.1/31", "10.72.0.9/30", "10.73.0.1/32"},
	}
	e.ip("link", "set", "lo", "up")
	e.ip("link", "add", "d0", "type", "veth", "peer", "name", "d1")
	e.ip("link", "set", "d0", "up")
	var pfx []netip.Prefix
	for _, link := range []string{"lo", "d0"} {
		for _, a := range addrs[link] {
			e.ip("addr", "add", a, "dev", link)
			pfx = append(pfx, netip.MustParsePrefix(a))
		}
	}
	rng := rand.New(rand.NewPCG(101, 0))
	seen := map[netip.Addr]bool{}
	var gws []netip.Addr
	add := func(a netip.Addr) {
		if !seen[a] {
			seen[a] = true
			gws = append(gws, a)
		}
	}
	off := func(a netip.Addr, d int) netip.Addr {
		b := a.As4()
		binary.BigEndian.PutUint32(b[:], uint32(int(binary.BigEndian.Uint32(b[:]))+d))
		return netip.AddrFrom4(b)
	}
	for _, p := range pfx {
		first := p.Masked().Addr()
		last := off(first, 1<<(32-p.Bits())-1)
		for _, a := range []netip.Addr{p.Addr(), first, last, off(first, -1), off(last, 1), off(p.Addr(), 1), off(first, rng.IntN(1<<(32-p.Bits())))} {
			add(a)
		}
	}
	for _, a := range []string{"127.0.0.1", "127.1.2.3", "224.0.0.1", "239.1.1.1", "255.255.255.255", "10.80.0.9", "192.0.2.1"} {
		add(netip.MustParseAddr(a))
	}
	devs := []string{"lo", "d0"}
	var routes strings.Builder
	kernelRefuses := map[int]string{}
	for i, gw := range gws {
		dev := devs[i%2]
		to := fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256)
		fmt.Fprintf(&routes, "  - {to: %s, via: %s, dev: %s, table: 300, onlink: true}\n", to, gw, dev)
		out, err := exec.Command("ip", "-n", e.ns, "route", "add", to, "via", gw.String(), "dev", dev, "onlink", "table", "300").CombinedOutput()
		if err != nil {
			kernelRefuses[i] = strings.TrimSpace(string(out))
		}
	}
	if len(kernelRefuses) == 0 || len(kernelRefuses) == len(gws) {
		t.Fatalf("the kernel refused %d of %d gateways: the draw tests nothing", len(kernelRefuses), len(gws))
	}
	var links strings.Builder
	links.WriteString("links:\n  lo: {kind: device, state: up, addresses: [" + strings.Join(addrs["lo"], ", ") + "]}\n")
	links.WriteString("  d0: {kind: veth, veth: {peer: d1}, addresses: [" + strings.Join(addrs["d0"], ", ") + "]}\n  d1: {kind: veth, veth: {peer: d0}}\n")
	f := e.file("gw.yaml", "version: 1\n"+links.String()+"routes:\n"+routes.String())
	r := e.cli("validate", "-c", f)
	refused := map[int]string{}
	for _, m := range regexp.MustCompile(`routes\[(\d+)\]\.via: (.*)`).FindAllStringSubmatch(r.Stdout+r.Stderr, -1) {
		i, _ := strconv.Atoi(m[1])
		refused[i] = m[2]
	}
	for i, gw := range gws {
		k, kok := kernelRefuses[i]
		v, vok := refused[i]
		if kok != vok {
			t.Errorf("gateway %s dev %s onlink: the kernel refuses: %v (%s); validate refuses: %v (%s)", gw, devs[i%2], kok, k, vok, v)
		}
	}
	t.Logf("%d gateways: the kernel and validate refuse %d", len(gws), len(kernelRefuses))
}
