package desired

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// errorsOf parses the sources and returns every error, one per line.
func errorsOf(t *testing.T, srcs ...Source) string {
	t.Helper()
	_, err := Parse(srcs)
	if err == nil {
		return ""
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %v is not Errors", err)
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func src(name, y string) Source { return Source{Name: name, Data: []byte(y)} }

func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{{
		name: "unknown key",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, mtuu: 1500}\n",
		want: "f.yaml:3:23: links.br0.mtuu: unknown key; expected one of: addresses, adopt, alias, bond, ip6tnl, ipip, ipvlan, kind, macvlan, master, mtu, state, sysctls, veth, vlan, vrf, vxlan, wireguard",
	}, {
		name: "wrong type",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, mtu: big}\nroutes: {to: default}\n",
		want: "f.yaml:3:28: links.br0.mtu: expected an integer, found \"big\"\n" +
			"f.yaml:4:9: routes: expected a list, found a mapping",
	}, {
		name: "reference to an undeclared link",
		file: "version: 1\nlinks:\n  vx0: {kind: vxlan, master: br9, vxlan: {id: 1, dev: eth9}}\nroutes:\n  - {to: 10.1.0.0/16, dev: eth7}\n",
		want: "f.yaml:3:30: links.vx0.master: link \"br9\" is not declared; declare it (kind bridge, vrf or bond, or kind device for an existing one)\n" +
			"f.yaml:3:55: links.vx0.vxlan.dev: link \"eth9\" is not declared; declare it (kind device for an existing NIC)\n" +
			"f.yaml:5:28: routes[0].dev: link \"eth7\" is not declared; declare it (kind device for an existing NIC)",
	}, {
		name: "reserved rule priorities",
		file: "version: 1\nrules:\n  - {priority: 0, table: 100}\n  - {priority: 32766, table: 100}\n  - {priority: 32767, table: 100}\n",
		want: "f.yaml:3:16: rules[0].priority: priority 0 belongs to the kernel's default rules (0 local, 32766 main, 32767 default); choose another\n" +
			"f.yaml:4:16: rules[1].priority: priority 32766 belongs to the kernel's default rules (0 local, 32766 main, 32767 default); choose another\n" +
			"f.yaml:5:16: rules[2].priority: priority 32767 belongs to the kernel's default rules (0 local, 32766 main, 32767 default); choose another",
	}, {
		name: "onlink without dev, and a route through a link declared down",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, state: down}\nroutes:\n  - {to: 10.1.0.0/16, via: 10.0.0.1, onlink: true}\n  - {to: 10.2.0.0/16, dev: br0}\n",
		want: "f.yaml:5:46: routes[0].onlink: onlink needs dev: the gateway is taken as on-link on that device\n" +
			"f.yaml:6:28: routes[1].dev: link br0 is declared state: down; the kernel refuses routes through a link that is down",
	}, {
		name: "gateway family mismatch",
		file: "version: 1\nroutes:\n  - {to: 2001:db8::/32, via: 192.0.2.1}\n  - {to: 10.0.0.0/8, via: 2001:db8::1}\n",
		// An IPv6 gateway of an IPv4 route is RFC 5549 (accepted).
		want: "f.yaml:3:30: routes[0].via: gateway 192.0.2.1 is not of the destination's family (IPv6)",
	}, {
		name: "duplicate names and objects",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, addresses: [10.0.0.1/24, 10.0.0.1/16]}\n  br0: {kind: bridge}\nroutes:\n  - {to: 10.1.0.0/16, type: blackhole}\n  - {to: 10.1.0.0/16, type: unreachable}\nrules:\n  - {priority: 10, table: 5, family: ipv4}\n  - {priority: 10, table: 5, family: ipv4}\n",
		want: "f.yaml:3:48: links.br0.addresses[1].address: 10.0.0.1 is already on br0 (declared at f.yaml:3:35)\n" +
			"f.yaml:4:3: links.br0: name given twice\n" +
			"f.yaml:7:5: routes[1]: route 10.1.0.0/16 table main is declared twice (first at f.yaml:6:5); a route is identified by table, destination, tos and metric\n" +
			"f.yaml:10:5: rules[1]: rule 10: from all lookup 5 (ipv4) is declared twice (first at f.yaml:9:5)",
	}, {
		// Its low 32 bits would make it the first route's key: the
		// metric is reported, and nothing is declared twice.
		name: "a metric past 32 bits beside the route its cut value names",
		file: "version: 1\nroutes:\n  - {to: 10.1.0.0/16, type: blackhole}\n  - {to: 10.1.0.0/16, type: blackhole, metric: 4294967296}\n",
		want: "f.yaml:4:48: routes[1].metric: expected a metric from 0 to 4294967295, found 4294967296",
	}, {
		name: "missing version",
		file: "links: {}\n",
		want: "f.yaml:1:1: version: missing; expected \"version: 1\" at the top of the main file",
	}, {
		name: "unsupported version",
		file: "version: 2\n",
		want: "f.yaml:1:10: version: unsupported version 2; this netreconcile reads version 1",
	}, {
		name: "every error of a file, in file order",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, mtu: 20}\n  x0: {kind: tap}\nroutes:\n  - {via: 10.0.0.1}\nrules:\n  - {table: 100}\n",
		want: "f.yaml:3:28: links.br0.mtu: expected an MTU from 68 to 65535 for a bridge link, found 20\n" +
			"f.yaml:4:14: links.x0.kind: unknown kind \"tap\"; expected one of: device, veth, bridge, vxlan, dummy, ipvlan, ipip, ip6tnl, wireguard, vlan, macvlan, vrf, bond\n" +
			"f.yaml:6:5: routes[0].to: missing; expected a destination prefix like 10.0.0.0/24 or default\n" +
			"f.yaml:8:5: rules[0].priority: missing; expected a rule priority from 1 to 32765 or 32768 to 4294967295",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(t, src("f.yaml", tc.file)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestDropInFragments(t *testing.T) {
	main := "version: 1\nlinks:\n  br0: {kind: bridge}\nroutes:\n  - {to: 10.1.0.0/16, dev: br0}\n"
	for _, tc := range []struct {
		name     string
		fragment string
		want     string
	}{{
		name:     "a fragment may use the main file's links",
		fragment: "version: 1\nroutes:\n  - {to: 10.2.0.0/16, dev: br0}\n",
	}, {
		name:     "a link declared twice across fragments",
		fragment: "version: 1\nlinks:\n  br0: {kind: bridge}\n",
		want:     "conf.d/10-a.yaml:3:8: links.br0: link declared again (first at main.yaml:3:8); each fragment must own its links",
	}, {
		name:     "a route declared twice across fragments",
		fragment: "version: 1\nroutes:\n  - {to: 10.1.0.0/16, dev: br0}\n",
		want:     "conf.d/10-a.yaml:3:5: routes[0]: route 10.1.0.0/16 table main is declared twice (first at main.yaml:5:5); a route is identified by table, destination, tos and metric",
	}, {
		name:     "a fragment with another version",
		fragment: "version: 2\n",
		want:     "conf.d/10-a.yaml:1:10: version: drop-in files must use version 1 like the main file",
	}, {
		name:     "conflicting settings",
		fragment: "version: 1\nsettings: {protocol: 200}\n",
		want:     "",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := errorsOf(t, src("main.yaml", main), src("conf.d/10-a.yaml", tc.fragment))
			if got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestProtocolConflictBetweenFragments(t *testing.T) {
	got := errorsOf(t,
		src("main.yaml", "version: 1\nsettings: {protocol: 200}\n"),
		src("conf.d/10-a.yaml", "version: 1\nsettings: {protocol: 201}\n"))
	want := "conf.d/10-a.yaml:2:22: settings.protocol: conflicts with protocol 200 set at main.yaml:2:22"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

// TestLoadReadsDropInsInNameOrder checks the files Load reads, and that a
// later fragment's conflict is reported at the later file.
func TestLoadReadsDropInsInNameOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n")
	write("conf.d/20-b.yaml", "version: 1\nlinks:\n  br1: {kind: bridge}\n")
	write("conf.d/10-a.yaml", "version: 1\nlinks:\n  br1: {kind: bridge}\n")
	write("conf.d/README", "not yaml: [")
	write("conf.d/.hidden.yaml", "not yaml: [")
	main := filepath.Join(dir, "main.yaml")
	_, err := Load(main, DropInDir(main))
	want := filepath.Join(dir, "conf.d/20-b.yaml") + ":3:8: links.br1: link declared again (first at " + filepath.Join(dir, "conf.d/10-a.yaml") + ":3:8)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	write("conf.d/20-b.yaml", "version: 1\nlinks:\n  br2: {kind: bridge}\n")
	cfg, err := Load(main, DropInDir(main))
	if err != nil {
		t.Fatal(err)
	}
	files := strings.Join(cfg.Files, " ")
	if wantF := main + " " + filepath.Join(dir, "conf.d/10-a.yaml") + " " + filepath.Join(dir, "conf.d/20-b.yaml"); files != wantF {
		t.Errorf("files %s, want %s", files, wantF)
	}
	if len(cfg.State.Links) != 3 {
		t.Errorf("links %v, want br0 br1 br2", cfg.State.SortedLinkNames())
	}
}

// A prefix that failed to parse is reported once, where it is written, and
// never again as a duplicate of another bad prefix.
func TestBadPrefixReportedOnce(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nroutes:\n  - {to: 10.0.0.0/33, type: blackhole}\n  - {to: 10.0.0.1/24, type: blackhole}\nrules:\n  - {priority: 10, from: 10.0.0.0/33, table: 5}\n  - {priority: 10, from: 10.0.0.1/8, table: 5}\n"))
	want := "f.yaml:3:10: routes[0].to: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or \"default\"), found \"10.0.0.0/33\"\n" +
		"f.yaml:4:10: routes[1].to: \"10.0.0.1/24\" has host bits set; the prefix is 10.0.0.0/24\n" +
		"f.yaml:6:26: rules[0].from: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or \"default\"), found \"10.0.0.0/33\"\n" +
		"f.yaml:7:26: rules[1].from: \"10.0.0.1/8\" has host bits set; the prefix is 10.0.0.0/8"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

// An IPv6 zone or a missing prefix length is refused where it is written,
// never applied as some other address (fd00::1%zz/64 was fd00::1/128).
func TestZoneAndMissingLengthRefused(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nlinks:\n  d0:\n    kind: dummy\n    addresses: [\"fd00::1%zz/64\", 10.0.0.1, {address: fd00::2, peer: \"fd00::9%zz/128\"}]\nroutes:\n  - {to: \"fd01::%zz/64\", type: blackhole}\n  - {to: 10.1.0.0, type: blackhole}\n  - {to: fd02::/64, via: \"fe80::1%d0\", dev: d0}\n"))
	want := "f.yaml:5:17: links.d0.addresses[0]: \"fd00::1%zz/64\" has an IPv6 zone (%...); zones are not accepted: the link is the one the address is declared on, or the route's dev\n" +
		"f.yaml:5:34: links.d0.addresses[1]: expected an address with its prefix length like 10.0.0.1/24 or fd00::1/64, found \"10.0.0.1\"\n" +
		"f.yaml:5:54: links.d0.addresses[2].address: expected an address with its prefix length like 10.0.0.1/24 or fd00::1/64, found \"fd00::2\"\n" +
		"f.yaml:5:69: links.d0.addresses[2].peer: \"fd00::9%zz/128\" has an IPv6 zone (%...); zones are not accepted: the link is the one the address is declared on, or the route's dev\n" +
		"f.yaml:7:10: routes[0].to: \"fd01::%zz/64\" has an IPv6 zone (%...); zones are not accepted: the link is the one the address is declared on, or the route's dev\n" +
		"f.yaml:8:10: routes[1].to: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or \"default\"), found \"10.1.0.0\"\n" +
		"f.yaml:9:26: routes[2].via: \"fe80::1%d0\" has an IPv6 zone (%...); zones are not accepted: the link is the one the address is declared on, or the route's dev"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

// An IPv6 address's scope is the kernel's to derive: the default is what it
// will be, and a scope that differs is refused where it is written.
func TestIPv6AddressScope(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nlinks:\n  d0:\n    kind: dummy\n    addresses: [{address: \"fd23::1/64\", scope: link}, {address: \"fe80::2/64\", scope: global}]\n"))
	want := "f.yaml:5:48: links.d0.addresses[0].scope: the kernel gives IPv6 address fd23::1 scope global whatever is asked (fe80::/10 link, fec0::/10 site, ::1 host, else global); write scope: global or leave scope out\n" +
		"f.yaml:5:86: links.d0.addresses[1].scope: the kernel gives IPv6 address fe80::2 scope link whatever is asked (fe80::/10 link, fec0::/10 site, ::1 host, else global); write scope: link or leave scope out"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
	cfg, err := Parse([]Source{src("f.yaml", "version: 1\nlinks:\n  d0:\n    kind: dummy\n    addresses: [\"fe80::1/64\", \"fec0::1/64\", \"fd22::1/64\", {address: \"fe80::2/64\", scope: link}]\n")})
	if err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, a := range cfg.State.Addresses {
		scopes = append(scopes, a.Prefix.String()+" "+model.ScopeName(a.Scope))
	}
	if g, w := strings.Join(scopes, ", "), "fd22::1/64 global, fe80::1/64 link, fe80::2/64 link, fec0::1/64 site"; g != w {
		t.Errorf("scopes: %s, want %s", g, w)
	}
}

// With a peer the kernel keeps the peer's prefix length only: an address
// whose length differs is refused, saying what to write.
func TestPeerPrefixLength(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nlinks:\n  d0:\n    kind: dummy\n    addresses: [{address: 10.30.0.1/24, peer: 10.30.0.2/32}, {address: 10.31.0.1/32, peer: 10.31.0.2/32}]\n"))
	want := "f.yaml:5:27: links.d0.addresses[0].address: with a peer the kernel keeps one prefix length, the peer's: address 10.30.0.1/24 has /24 and peer 10.30.0.2/32 has /32; write 10.30.0.1/32 (or give the peer /24)"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

// A fwmark mask of 0 matches every packet and is refused; a /0 from or to
// is the rule without one, as the kernel stores it.
func TestRuleMarkMaskZeroAndZeroPrefix(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nrules:\n  - {priority: 16, fwmark: 0x40/0, table: 5}\n"))
	want := "f.yaml:3:28: rules[0].fwmark: a mask of 0 matches every packet; leave fwmark out, or give a non-zero mask like 0x40/0xff"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
	cfg, err := Parse([]Source{src("f.yaml", "version: 1\nrules:\n  - {priority: 16, from: 0.0.0.0/0, fwmark: 0, table: 5}\n")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.State.Rules) != 1 || cfg.State.Rules[0].String() != "16: from all fwmark 0x0 lookup 5 (ipv4)" {
		t.Errorf("rules: %v", cfg.State.Rules)
	}
}

// Two rules that differ only in not are one rule to the kernel: refused.
func TestRulesDifferingOnlyInNot(t *testing.T) {
	got := errorsOf(t, src("f.yaml", "version: 1\nrules:\n  - {priority: 18, from: 10.1.0.0/16, table: 5}\n  - {priority: 18, not: true, from: 10.1.0.0/16, table: 5}\n"))
	want := "f.yaml:4:5: rules[1]: rule 18: not from 10.1.0.0/16 lookup 5 (ipv4) differs from the rule at f.yaml:3:5 only in not; the kernel takes them for the same rule: give one another priority"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

// Two ipvlans of different modes on one parent: the kernel keeps one mode
// per parent, so the second would silently switch the first. Refused, with
// both links and their positions (walk finding 13).
func TestIPVlanModesOnOneParent(t *testing.T) {
	got := errorsOf(t, src("f.yaml", `version: 1
links:
  d1: {kind: dummy}
  i0: {kind: ipvlan, ipvlan: {parent: d1}}
  i1: {kind: ipvlan, ipvlan: {parent: d1, mode: l3}}
  i2: {kind: ipvlan, ipvlan: {parent: d1, mode: l2}}
`))
	want := `f.yaml:5:49: links.i1.ipvlan.mode: ipvlan i1 is in mode l3 on parent "d1", ipvlan i0 (at f.yaml:4:30) in mode l2; the kernel keeps one mode per parent: give both the same mode`
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Parse([]Source{src("f.yaml", "version: 1\nlinks:\n  d1: {kind: dummy}\n  i0: {kind: ipvlan, ipvlan: {parent: d1, mode: l3}}\n  i1: {kind: ipvlan, ipvlan: {parent: d1, mode: l3}}\n")}); err != nil {
		t.Errorf("two ipvlans of one mode on one parent: %v", err)
	}
}

// Links that would sit above themselves in the kernel's stack of devices
// (a port below its master, a vxlan above its dev): the kernel refuses the
// one that closes the loop (EBUSY), in any order (walk finding 24).
func TestLinksStackedInALoop(t *testing.T) {
	got := errorsOf(t, src("f.yaml", `version: 1
links:
  b2: {kind: bridge}
  br: {kind: bridge}
  x0: {kind: vxlan, master: br, vxlan: {id: 20, remote: 192.0.2.4, dev: b2}}
  x2: {kind: vxlan, master: b2, vxlan: {id: 21, remote: 192.0.2.8, dev: br}}
`))
	want := "f.yaml:6:29: links.x2.master: links stack on each other in a loop (x0 dev b2, x0 master br, x2 dev br, x2 master b2): each would be above itself in the kernel's stack of devices, which the kernel refuses (EBUSY); break the loop"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
	got = errorsOf(t, src("f.yaml", "version: 1\nlinks:\n  b2: {kind: bridge}\n  x0: {kind: vxlan, master: b2, vxlan: {id: 20, remote: 192.0.2.4, dev: b2}}\n"))
	if !strings.Contains(got, "links stack on each other in a loop (x0 dev b2, x0 master b2)") {
		t.Errorf("a vxlan whose dev is its master: %s", got)
	}
}

// Two rules of one priority and action where one leaves from or to unset
// that the other sets: the kernel compares from and to only where the rule
// being added sets them, so the second add fails (file exists) whichever
// order. Refused; rules that differ in a set from or to, or in what else the
// kernel compares, are not (walk finding 36).
func TestRulesThatClashOnAdd(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"{priority: 1000, family: ipv6, to: 2001:db8:50::/48, action: blackhole}", "{priority: 1000, family: ipv6, action: blackhole}"},
		{"{priority: 1000, family: ipv6, action: blackhole}", "{priority: 1000, family: ipv6, to: 2001:db8:50::/48, action: blackhole}"},
		{"{priority: 7, from: 10.1.0.0/16, to: 10.2.0.0/16, table: 5}", "{priority: 7, from: 10.1.0.0/16, table: 5}"},
		{"{priority: 7, to: 10.2.0.0/16, table: 5}", "{priority: 7, not: true, from: 10.1.0.0/16, to: 10.2.0.0/16, table: 5}"},
	} {
		got := errorsOf(t, src("f.yaml", "version: 1\nrules:\n  - "+tc.a+"\n  - "+tc.b+"\n"))
		if !strings.Contains(got, "f.yaml:4:5: rules[1]: rule ") || !strings.Contains(got, "and the rule at f.yaml:3:5 differ only in from or to, which one of them leaves unset") {
			t.Errorf("%s then %s: errors:\n%s", tc.a, tc.b, got)
		}
	}
	for _, ok := range []string{
		"  - {priority: 7, from: 10.1.0.0/16, table: 5}\n  - {priority: 7, from: 10.3.0.0/16, table: 5}\n  - {priority: 7, to: 10.3.0.0/16, table: 5}\n",
		"  - {priority: 7, table: 5}\n  - {priority: 7, table: 6}\n  - {priority: 7, fwmark: 0x1, table: 5}\n  - {priority: 7, iif: lo, table: 5}\n  - {priority: 8, table: 5}\n",
	} {
		if _, err := Parse([]Source{src("f.yaml", "version: 1\nrules:\n"+ok)}); err != nil {
			t.Errorf("refused:\n%s%v", ok, err)
		}
	}
}

func TestMaxDisruptionSetting(t *testing.T) {
	for _, c := range []struct{ main, frag, want string }{
		{"version: 1\nsettings: {max-disruption: link-flapped}\n", "version: 1\n", ""},
		{"version: 1\nsettings: {max-disruption: flapped}\n", "version: 1\n",
			`main.yaml:2:28: settings.max-disruption: expected one of in-place, table-replaced, readded, link-flapped, link-recreated, found "flapped"`},
		{"version: 1\nsettings: {max-disruption: in-place}\n", "version: 1\nsettings: {max-disruption: link-recreated}\n",
			"conf.d/10-a.yaml:2:28: settings.max-disruption: conflicts with in-place set at main.yaml:2:28"},
	} {
		if got := errorsOf(t, src("main.yaml", c.main), src("conf.d/10-a.yaml", c.frag)); got != c.want {
			t.Errorf("errors:\n%s\nwant:\n%s", got, c.want)
		}
	}
	cfg, err := Parse([]Source{src("main.yaml", "version: 1\nsettings: {max-disruption: table-replaced}\n")})
	if err != nil || cfg.State.MaxDisruption != "table-replaced" {
		t.Fatalf("%v %v", cfg, err)
	}
}
