package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// The file accepts exactly the link names the kernel creates under that
// very name: asked over netlink in a fresh namespace, name by name. A name
// the kernel mangles ('%' is a template) or refuses is refused by validate.
func TestLinkNamesAsTheKernelTakesThem(t *testing.T) {
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	names := []string{
		"a%d", "br%", "a/b", "a:b", "a b", "a\tb", "a\nb", "a\vb", ".", "..", "...", ".a",
		"abcdefghijklmno", "abcdefghijklmnop",
		"brücke-eins-zw",  // 14 characters, 15 bytes
		"brücke-eins-zwe", // 15 characters, 16 bytes
		"voilà",           // à is C3 A0: the kernel's isspace(0xa0) is true
		"a\u00a0b", "a#b", "-x", "a=b", "ü",
	}
	for i, name := range names {
		_ = k.AddLink(&model.Link{Name: name, Kind: model.KindBridge})
		ls, err := k.Links()
		if err != nil {
			t.Fatal(err)
		}
		kernelTakes := false
		for _, l := range ls {
			if l.Name == name {
				kernelTakes = true
			} else if l.Name != "lo" {
				// A mangled name: remove it so the next one starts clean.
				if err := k.DeleteLink(l.Name); err != nil {
					t.Fatal(err)
				}
			}
		}
		if kernelTakes {
			if err := k.DeleteLink(name); err != nil {
				t.Fatal(err)
			}
		}
		_, perr := desired.Parse([]desired.Source{{Name: "f.yaml", Data: []byte(fmt.Sprintf("version: 1\nlinks:\n  %s: {kind: bridge}\n", strconv.Quote(name)))}})
		if fileTakes := perr == nil; fileTakes != kernelTakes {
			t.Errorf("name %d %q: the kernel takes it: %t, the file: %t (%v)", i, name, kernelTakes, fileTakes, perr)
		}
		if perr != nil && !strings.Contains(perr.Error(), "f.yaml:3:") {
			t.Errorf("name %q: the error does not point at the name: %v", name, perr)
		}
	}
}

// Numbers wider than the kernel's field are refused with where they are and
// the accepted range, and nothing is applied.
func TestNumbersAtTheKernelsWidth(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ file, want string }{
		{"version: 1\nroutes:\n  - {to: 10.1.0.0/16, type: blackhole, metric: 4294967296}\n", "f.yaml:3:48: routes[0].metric: expected a metric from 0 to 4294967295, found 4294967296"},
		{"version: 1\nroutes:\n  - {to: 10.1.0.0/16, type: blackhole, table: 4294967296}\n", "f.yaml:3:47: routes[0].table: expected a table number from 1 to 4294967295"},
		{"version: 1\nrules:\n  - {priority: 4294967296, table: 100}\n", "f.yaml:3:16: rules[0].priority: expected a rule priority from 1 to 4294967295, found 4294967296"},
		{"version: 1\nrules:\n  - {priority: 100, fwmark: 0x100000000, table: 100}\n", "f.yaml:3:29: rules[0].fwmark: expected a mark like 0x40 or 0x40/0x60 (32-bit numbers)"},
		{"version: 1\nlinks:\n  vx: {kind: vxlan, vxlan: {id: 16777216, remote: 192.0.2.1}}\n", "links.vx.vxlan.id: expected a VXLAN network identifier from 0 to 16777215"},
		{"version: 1\nlinks:\n  vx: {kind: vxlan, vxlan: {id: 1, remote: 192.0.2.1, port: 65536}}\n", "links.vx.vxlan.port: expected an integer from 0 to 65535"},
		{"version: 1\nlinks:\n  vx: {kind: vxlan, vxlan: {id: 1, remote: 192.0.2.1, ttl: 256}}\n", "links.vx.vxlan.ttl: expected an integer from 0 to 255"},
		{"version: 1\nlinks:\n  br: {kind: bridge, mtu: 4294967296}\n", "links.br.mtu: expected an MTU from 68 to 65535"},
		{"version: 1\nnftables:\n  inet t:\n    chains:\n      c: {type: filter, hook: input, priority: filter + 4294967296}\n", "f.yaml:5:48: nftables.inet t.chains.c.priority: \"filter + 4294967296\" is out of range: a chain priority is from -2147483648 to 2147483647"},
		{"version: 1\nnftables:\n  inet t:\n    sets:\n      s: {type: ipv4_addr, flags: [timeout], timeout: 1500us}\n", "f.yaml:5:55: nftables.inet t.sets.s.timeout: expected a whole number of milliseconds (the kernel counts in milliseconds), found 1.5ms"},
		{"version: 1\nrules:\n  - {priority: 100, iif: \"a%d\", table: 100}\n", "f.yaml:3:26: rules[0].iif: \"a%d\" is not a valid interface name"},
		{"version: 1\nroutes:\n  - {to: 10.1.0.0/16, type: blackhole, tos: 3}\n", "f.yaml:3:45: routes[0].tos: expected a DS field without ECN bits (a multiple of 4, 0 to 252, like 0x10), found 3"},
		{"version: 1\nroutes:\n  - {to: \"2001:db8::/32\", type: blackhole, tos: 16}\n", "f.yaml:3:49: routes[0].tos: IPv6 routes take no tos; remove it"},
	} {
		f := nettest.WriteFile(t, e.dir, "f.yaml", tc.file)
		r := e.cli("apply", "-c", f)
		got := strings.ReplaceAll(r.Stderr, f, "f.yaml")
		if r.Code == 0 || !strings.Contains(got, tc.want) {
			t.Errorf("apply of\n%s: exit %d, want an error containing %q:\n%s%s", tc.file, r.Code, tc.want, r.Stdout, got)
		}
	}
	if out := e.ip("route", "show", "table", "all", "type", "blackhole"); out != "" {
		t.Errorf("a route was added: %s", out)
	}
}

// A protocol number another program owns (186 is bgp) is refused: an empty
// file of that protocol would otherwise delete the bgp daemon's routes.
// With protocol-override the file takes it on purpose.
func TestProtocolOfAnotherProgramRefused(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "pbr", "type", "bridge")
	e.ip("link", "set", "pbr", "up")
	e.ip("route", "add", "10.186.0.0/16", "dev", "pbr", "proto", "186")
	f := e.file("a.yaml", "version: 1\nsettings:\n  protocol: 186\n")
	r := e.cli("apply", "-c", f)
	if r.Code == 0 || !strings.Contains(r.Stderr, f+":3:13: settings.protocol: protocol 186 is \"bgp\"") {
		t.Errorf("apply: exit %d, want the protocol refused\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("route", "show", "10.186.0.0/16"); !strings.Contains(out, "10.186.0.0/16") {
		t.Errorf("the bgp route was deleted")
	}
	f = e.file("b.yaml", "version: 1\nsettings:\n  protocol: 186\n  protocol-override: true\n")
	if r := e.cli("diff", "-c", f); r.Code != 2 || !strings.Contains(r.Stdout, "- route 10.186.0.0/16") {
		t.Errorf("diff with the override: exit %d, want the route as ours to delete\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
