package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const tunnelFile = `version: 1
fou:
  - {port: 5555, ipproto: 4}
links:
  fou4_c0000202:
    kind: ipip
    mtu: MTU
    ipip:
      remote: 192.0.2.2
      local: 192.0.2.1
      ttl: 225
      encap: {type: fou, sport: SPORT, dport: 5555}
`

var ifindexRe = regexp.MustCompile(`^(\d+): `)

func ifindex(t *testing.T, ns *NetNS, name string) string {
	t.Helper()
	m := ifindexRe.FindStringSubmatch(ns.IP(t, "-o", "link", "show", name))
	if m == nil {
		t.Fatalf("no ifindex for %s", name)
	}
	return m[1]
}

// TestInPlaceChanges: an MTU change keeps the tunnel (same ifindex), and so
// does a FoU source port change (the kernel's changelink sets the
// encapsulation: ip_tunnel_encap_setup).
func TestInPlaceChanges(t *testing.T) {
	requireModules(t, "ipip", "fou")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "tunnel.yaml")
	write := func(mtu, sport string) {
		cfg := strings.NewReplacer("MTU", mtu, "SPORT", sport).Replace(tunnelFile)
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apply := func() string { return runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state) }

	write("1400", "5555")
	apply()
	link := ns.IP(t, "-d", "link", "show", "fou4_c0000202")
	mustContain(t, "ip -d link", link, "mtu 1400", "remote 192.0.2.2 local 192.0.2.1 ttl 225", "encap fou encap-sport 5555 encap-dport 5555", "alias netreconcile")
	mustContain(t, "ip fou show", ns.IP(t, "fou", "show"), "port 5555 ipproto 4")
	first := ifindex(t, ns, "fou4_c0000202")

	write("1380", "5555")
	out := apply()
	mustContain(t, "apply mtu", out, "~ link fou4_c0000202", "mtu: 1400 -> 1380")
	if got := ifindex(t, ns, "fou4_c0000202"); got != first {
		t.Errorf("an MTU change recreated the link: ifindex %s -> %s", first, got)
	}

	write("1380", "auto")
	out = apply()
	mustContain(t, "apply sport", out, "~ link fou4_c0000202", "encap: fou encap-sport 5555 encap-dport 5555 -> fou encap-sport auto encap-dport 5555")
	if got := ifindex(t, ns, "fou4_c0000202"); got != first {
		t.Errorf("a FoU source port change recreated the link: ifindex %s -> %s", first, got)
	}
	mustContain(t, "ip -d link after sport change", ns.IP(t, "-d", "link", "show", "fou4_c0000202"), "encap-sport auto", "mtu 1380")
	if out := apply(); !strings.Contains(out, "No changes") {
		t.Errorf("apply after the change is not empty:\n%s", out)
	}
}

// TestTunnelInPlace (issue 17): the kernel changes a tunnel's endpoints,
// ttl, mode and encapsulation in place (ip_tunnel_changelink,
// ip6_tnl_changelink), so netreconcile keeps the link (same ifindex) and
// the kernel reads back each new value; an ipip whose remote goes is made
// again (it would stop being point-to-point: EINVAL).
func TestTunnelInPlace(t *testing.T) {
	requireModules(t, "ipip", "ip6_tunnel", "fou")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "t.yaml")
	// Each tunnel carries an address and a route: an in-place change keeps
	// them, as it keeps the ifindex.
	const routes = "routes:\n  - {to: 10.61.0.0/24, dev: ti0}\n  - {to: 'fd61::/64', dev: ts0}\n"
	apply := func(links string) string {
		if err := os.WriteFile(file, []byte("version: 1\nlinks:\n"+links+routes), 0o644); err != nil {
			t.Fatal(err)
		}
		out := runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		// A second diff exits 0 (runNetreconcile fails the test otherwise).
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		return out
	}
	type step struct{ ipip, ip6, wantIPIP, wantIP6 string }
	steps := []step{
		{"{remote: 192.0.2.2, local: 192.0.2.1, ttl: 64}", "{mode: ip6ip6, remote: \"2001:db8::2\", local: \"2001:db8::1\", ttl: 64}",
			"remote 192.0.2.2 local 192.0.2.1 ttl 64", "ip6ip6 remote 2001:db8::2 local 2001:db8::1"},
		{"{remote: 192.0.2.3, local: 192.0.2.1, ttl: 64}", "{mode: ip6ip6, remote: \"2001:db8::3\", local: \"2001:db8::1\", ttl: 64}",
			"remote 192.0.2.3 local 192.0.2.1", "remote 2001:db8::3 local 2001:db8::1"},
		{"{remote: 192.0.2.3, local: 192.0.2.9, ttl: 225}", "{mode: ipip6, remote: \"2001:db8::3\", local: \"2001:db8::9\", ttl: 225}",
			"remote 192.0.2.3 local 192.0.2.9 ttl 225", "ipip6 remote 2001:db8::3 local 2001:db8::9"},
		{"{remote: 192.0.2.3, local: 192.0.2.9, ttl: 225, encap: {type: fou, dport: 5555}}", "{mode: any, remote: \"2001:db8::3\", local: \"2001:db8::9\", ttl: 225, encap: {type: gue, dport: 5556}}",
			"encap fou encap-sport auto encap-dport 5555", "encap gue encap-sport auto encap-dport 5556"},
		{"{remote: 192.0.2.3, local: 192.0.2.9, ttl: 225, encap: {type: gue, sport: 4000, dport: 5557}}", "{mode: any, remote: \"2001:db8::3\", local: \"2001:db8::9\", ttl: 225}",
			"encap gue encap-sport 4000 encap-dport 5557", "any remote 2001:db8::3"},
	}
	var first [2]string
	for i, s := range steps {
		out := apply(fmt.Sprintf("  ti0: {kind: ipip, addresses: [10.60.0.1/30], ipip: %s}\n  ts0: {kind: ip6tnl, addresses: ['fd60::1/64'], ip6tnl: %s}\n", s.ipip, s.ip6))
		if i > 0 {
			mustContain(t, fmt.Sprintf("step %d plan", i), out, "~ link ti0", "~ link ts0")
		}
		for j, n := range []string{"ti0", "ts0"} {
			idx := ifindex(t, ns, n)
			if i == 0 {
				first[j] = idx
			} else if idx != first[j] {
				t.Errorf("step %d: %s was made again (ifindex %s -> %s)", i, n, first[j], idx)
			}
		}
		mustContain(t, fmt.Sprintf("step %d: ip -d link show ti0", i), ns.IP(t, "-d", "link", "show", "ti0"), s.wantIPIP)
		mustContain(t, fmt.Sprintf("step %d: ip -d link show ts0", i), ns.IP(t, "-d", "link", "show", "ts0"), s.wantIP6)
		if i > 0 {
			// Nothing but the links was planned: the addresses and the
			// routes stayed.
			for _, w := range []string{"address", "route"} {
				if strings.Contains(out, "+ "+w) || strings.Contains(out, "- "+w) {
					t.Errorf("step %d: an in-place change planned %ss again:\n%s", i, w, out)
				}
			}
		}
		mustContain(t, fmt.Sprintf("step %d: addresses", i), ns.IP(t, "addr", "show"), "inet 10.60.0.1/30", "inet6 fd60::1/64")
		mustContain(t, fmt.Sprintf("step %d: routes", i), ns.IP(t, "route", "show")+ns.IP(t, "-6", "route", "show"), "10.61.0.0/24 dev ti0", "fd61::/64 dev ts0")
	}
	// What the kernel refuses in place: a new link each time, its
	// address and route made again with it.
	for _, r := range []struct{ what, ipip string }{
		{"remote removed", "{local: 192.0.2.9, ttl: 225}"},
		{"remote given", "{remote: 192.0.2.4, local: 192.0.2.9, ttl: 225}"},
		{"external on", "{external: true}"},
		{"external off", "{remote: 192.0.2.4, local: 192.0.2.9}"},
	} {
		before := ifindex(t, ns, "ti0")
		out := apply("  ti0: {kind: ipip, addresses: [10.60.0.1/30], ipip: " + r.ipip + "}\n  ts0: {kind: ip6tnl, addresses: ['fd60::1/64'], ip6tnl: {mode: any, remote: \"2001:db8::3\", local: \"2001:db8::9\", ttl: 225}}\n")
		mustContain(t, r.what, out, "± link ti0")
		if ifindex(t, ns, "ti0") == before {
			t.Errorf("%s: ti0 kept its ifindex %s, the plan said it is recreated", r.what, before)
		}
		mustContain(t, r.what+": address and route", ns.IP(t, "addr", "show", "dev", "ti0")+ns.IP(t, "route", "show"), "inet 10.60.0.1/30", "10.61.0.0/24 dev ti0")
	}
}

// TestWalkFinding156AdoptedTunnelKeepsWhatTheFileDoesNotModel: the kernel takes a
// tunnel's whole parameter set in a change (a parameter left out is
// reset), so an in-place change of an adopted tunnel's ttl must send back
// the TOS, fwmark, traffic class, flow label and encapsulation limit the
// tunnel was made with, which the schema has no key for.
func TestWalkFinding156AdoptedTunnelKeepsWhatTheFileDoesNotModel(t *testing.T) {
	requireModules(t, "ipip", "ip6_tunnel")
	ns := newNetNS(t, "")
	ns.IP(t, "link", "add", "ta0", "type", "ipip", "remote", "192.0.2.2", "local", "192.0.2.1", "ttl", "64", "tos", "0x10", "fwmark", "7")
	ns.IP(t, "link", "add", "ta6", "type", "ip6tnl", "mode", "ip6ip6", "remote", "2001:db8::2", "local", "2001:db8::1", "hoplimit", "64",
		"encaplimit", "none", "tclass", "0x20", "flowlabel", "0x12345", "fwmark", "7")
	kept := map[string][]string{
		"ta0": {"tos 0x10", "fwmark 0x7"},
		"ta6": {"encaplimit none", "tclass 0x20", "flowlabel 0x12345", "fwmark 0x7"},
	}
	for n, want := range kept {
		mustContain(t, "ip -d link show "+n+" as made", ns.IP(t, "-d", "link", "show", n), want...)
	}
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "t.yaml")
	apply := func(ttl int) string {
		cfg := fmt.Sprintf("version: 1\nlinks:\n"+
			"  ta0: {kind: ipip, adopt: true, ipip: {remote: 192.0.2.2, local: 192.0.2.1, ttl: %d}}\n"+
			"  ta6: {kind: ip6tnl, adopt: true, ip6tnl: {mode: ip6ip6, remote: \"2001:db8::2\", local: \"2001:db8::1\", ttl: %d}}\n", ttl, ttl)
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	}
	apply(64)
	before := [2]string{ifindex(t, ns, "ta0"), ifindex(t, ns, "ta6")}
	out := apply(200)
	mustContain(t, "apply of ttl 200", out, "~ link ta0", "~ link ta6")
	if after := [2]string{ifindex(t, ns, "ta0"), ifindex(t, ns, "ta6")}; after != before {
		t.Errorf("an adopted tunnel was made again: ifindex %v -> %v", before, after)
	}
	mustContain(t, "ip -d link show ta0", ns.IP(t, "-d", "link", "show", "ta0"), append(kept["ta0"], "ttl 200")...)
	mustContain(t, "ip -d link show ta6", ns.IP(t, "-d", "link", "show", "ta6"), append(kept["ta6"], "hoplimit 200")...)
	if out := apply(200); !strings.Contains(out, "No changes") {
		t.Errorf("apply after the change is not empty:\n%s", out)
	}
}

// TestVXLANInPlace: the kernel's vxlan_changelink changes a vxlan's local,
// remote, ttl and learning in place (the oldest kernel supported, 6.1, as
// newer ones), so netreconcile keeps the link (same ifindex), its address
// and its route, and the kernel reads back each new value; an id, port,
// family, multicast group or dev change makes it again.
func TestVXLANInPlace(t *testing.T) {
	requireModules(t, "vxlan", "veth")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "v.yaml")
	apply := func(vxlan string) string {
		cfg := "version: 1\nlinks:\n  vx0: {kind: vxlan, addresses: [10.70.0.1/24], vxlan: {" + vxlan + "}}\n" +
			"  u0: {kind: veth, veth: {peer: u1}}\n  u1: {kind: veth, veth: {peer: u0}}\nroutes:\n  - {to: 10.71.0.0/24, dev: vx0}\n"
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out := runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
		runNetreconcile(t, ns, "diff", "-c", file, "--state-dir", state)
		return out
	}
	apply("id: 7, remote: 192.0.2.1, local: 192.0.2.2")
	first := ifindex(t, ns, "vx0")
	for i, s := range []struct{ vxlan, show string }{
		{"id: 7, remote: 192.0.2.3, local: 192.0.2.2", "remote 192.0.2.3 local 192.0.2.2"},
		{"id: 7, remote: 192.0.2.3, local: 192.0.2.9, ttl: 64", "ttl 64"},
		{"id: 7, remote: 192.0.2.3, local: 192.0.2.9, ttl: 64, learning: false", "nolearning"},
		{"id: 7, local: 192.0.2.9", "vxlan id 7 local 192.0.2.9"},
		{"id: 7", "vxlan id 7 srcport"},
	} {
		out := apply(s.vxlan)
		mustContain(t, fmt.Sprintf("step %d plan", i), out, "~ link vx0")
		if strings.Contains(out, "address") || strings.Contains(out, "route") {
			t.Errorf("step %d: an in-place change planned addresses or routes again:\n%s", i, out)
		}
		if got := ifindex(t, ns, "vx0"); got != first {
			t.Errorf("step %d: vx0 was made again (ifindex %s -> %s)", i, first, got)
		}
		mustContain(t, fmt.Sprintf("step %d: ip -d link show vx0", i), ns.IP(t, "-d", "link", "show", "vx0"), s.show)
	}
	for i, s := range []struct{ vxlan, reason string }{
		{"id: 8", "vxlan id 7 -> 8"},
		{"id: 8, port: 4790", "vxlan port 4789 -> 4790"},
		{"id: 8, port: 4790, remote: '2001:db8::1'", "vxlan family IPv4 -> IPv6"},
		{"id: 8, port: 4790, remote: 192.0.2.1", "vxlan family IPv6 -> IPv4"},
		{"id: 8, port: 4790, group: 239.1.1.1, dev: u0", "vxlan group 192.0.2.1 -> 239.1.1.1"},
		{"id: 8, port: 4790, group: 239.1.1.1, dev: u1", "vxlan dev u0 -> u1"},
	} {
		before := ifindex(t, ns, "vx0")
		mustContain(t, fmt.Sprintf("replace %d plan", i), apply(s.vxlan), "± link vx0", s.reason)
		if got := ifindex(t, ns, "vx0"); got == before {
			t.Errorf("replace %d: %s: vx0 was not made again", i, s.reason)
		}
	}
}
