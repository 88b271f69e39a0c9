package desired

import "testing"

// TestKernelRefusesAtValidation holds input that validation once passed and
// the kernel then refused at apply, after part of the file was applied.
// Walk finding 16 (host seed 90934393032559, step 62): a log with a level
// and a group; nft refuses it since rules are nft's (test/integration
// TestNftRefusalsAtTheirPlace).
// Walk finding 41 (host seed 125963786465382, step 45).
// Walk finding 66 (host).
// Walk finding 67 (guest seed 31120218735296, step 52).
func TestKernelRefusesAtValidation(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{{
		name: "reserved link names",
		file: "version: 1\nlinks:\n  all: {kind: bridge}\n  default: {kind: veth, veth: {peer: all}}\n",
		want: "f.yaml:3:8: links.all: \"all\" is not a valid interface name; expected " + linkNameRule + "\n" +
			"f.yaml:4:12: links.default: \"default\" is not a valid interface name; expected " + linkNameRule + "\n" +
			"f.yaml:4:38: links.default.veth.peer: \"all\" is not a valid interface name; expected " + linkNameRule,
	}, {
		name: "bridge and tunnels as bridge ports",
		file: "version: 1\nlinks:\n  y: {kind: bridge}\n  x: {kind: bridge, master: y}\n  t: {kind: ipip, master: y, ipip: {remote: 192.0.2.1}}\n  lo: {kind: device, master: y}\n  v: {kind: veth, master: y, veth: {peer: w}}\n  w: {kind: veth, veth: {peer: v}}\n  iv: {kind: ipvlan, ipvlan: {parent: v}}\n  zv: {kind: ipvlan, ipvlan: {parent: v}}\n  iu: {kind: ipvlan, ipvlan: {parent: v}}\n",
		want: "f.yaml:4:29: links.x.master: a bridge link cannot be a port of bridge \"y\": the kernel does not enslave a bridge to a bridge\n" +
			"f.yaml:5:27: links.t.master: a ipip link cannot be a port of bridge \"y\": a bridge takes only Ethernet links, and this is an IP tunnel\n" +
			"f.yaml:6:30: links.lo.master: a device link cannot be a port of bridge \"y\": a bridge does not take the loopback device\n" +
			"f.yaml:7:27: links.v.master: a veth link cannot be a port of bridge \"y\": it is the parent of ipvlan \"iu\", and a link has one receive handler, for the bridge or for the ipvlan",
	}, {
		name: "master cycle",
		file: "version: 1\nlinks:\n  x: {kind: device, master: y}\n  y: {kind: device, master: x}\n",
		want: "f.yaml:4:29: links.y.master: links reference each other in a cycle (x master y, y master x); each link's master, dev or parent must be created before it",
	}, {
		name: "vxlan dev and ipvlan parent cycles",
		file: "version: 1\nlinks:\n  vx: {kind: vxlan, vxlan: {id: 1, dev: iv}}\n  iv: {kind: ipvlan, ipvlan: {parent: vx}}\n  v1: {kind: vxlan, vxlan: {id: 2, dev: v1}}\n  a: {kind: veth, veth: {peer: b}}\n  b: {kind: veth, veth: {peer: a}}\n  v2: {kind: vxlan, vxlan: {id: 3, dev: b}}\n",
		want: "f.yaml:3:41: links.vx.vxlan.dev: links reference each other in a cycle (iv parent vx, vx dev iv); each link's master, dev or parent must be created before it\n" +
			"f.yaml:5:41: links.v1.vxlan.dev: links reference each other in a cycle (v1 dev v1); each link's master, dev or parent must be created before it",
	}, {
		name: "two scopes in one IPv4 subnet of a link",
		file: "version: 1\nlinks:\n  b: {kind: bridge, addresses: [{address: 10.1.0.2/24, scope: host}, {address: 10.1.0.4/24, scope: link}, 10.2.0.1/24]}\n",
		want: "f.yaml:3:80: links.b.addresses[1].address: 10.1.0.4/24 is in subnet 10.1.0.0/24 with 10.1.0.2 (declared at f.yaml:3:33), whose scope is host: the kernel keeps one scope per subnet on a link; give both the same scope",
	}, {
		// Host soak seed 125963786465382 step 45: the kernel's subnet of a
		// point-to-point address is its peer's (EINVAL on the second).
		name: "two scopes in one IPv4 subnet of a link, point-to-point",
		file: "version: 1\nlinks:\n  v: {kind: bridge, addresses: [{address: 10.18.9.2/32, peer: 10.18.9.10/32, scope: host}, {address: 10.18.9.1/32, peer: 10.18.9.10/32}, {address: 10.18.9.3/32, peer: 10.18.9.11/32}]}\n",
		want: "f.yaml:3:102: links.v.addresses[1].address: 10.18.9.1/32 is in subnet 10.18.9.10/32 with 10.18.9.2 (declared at f.yaml:3:33), whose scope is host: the kernel keeps one scope per subnet on a link (a point-to-point address's subnet is its peer's); give both the same scope",
	}, {
		name: "link-local gateway without dev",
		file: "version: 1\nroutes:\n  - {to: default, via: \"fe80::1\"}\n",
		want: "f.yaml:3:24: routes[0].via: gateway fe80::1 is link-local; give dev, the link it is on",
	}, {
		// Walk seed 31120218735296 (guest): EINVAL at apply.
		name: "IPv4 source in a VRF for a route outside its table",
		file: "version: 1\nlinks:\n  r1: {kind: vrf, vrf: {table: 1001}, addresses: [10.183.1.3/24]}\n  p: {kind: bridge, master: r1, addresses: [10.184.1.3/24]}\nroutes:\n  - {to: 172.16.5.0/24, via: 10.183.1.200, dev: r1, src: 10.183.1.3, table: 200}\n  - {to: 172.16.6.0/24, dev: p, src: 10.184.1.3}\n  - {to: 172.16.7.0/24, dev: p, src: 10.184.1.3, table: 1001}\n",
		want: "f.yaml:6:58: routes[0].src: source 10.183.1.3 is an address of r1, in VRF r1 (table 1001); the kernel takes an IPv4 source only from the route's table's local addresses or table local's, and a VRF's are in its table: give this route table 1001, or a source outside the VRF\n" +
			"f.yaml:7:38: routes[1].src: source 10.184.1.3 is an address of p, in VRF r1 (table 1001); the kernel takes an IPv4 source only from the route's table's local addresses or table local's, and a VRF's are in its table: give this route table 1001, or a source outside the VRF",
	}, {
		// The library would send them as IPv4 addresses.
		name: "IPv4-mapped vxlan endpoints",
		file: "version: 1\nlinks:\n  b: {kind: bridge}\n  x: {kind: vxlan, vxlan: {id: 1, local: \"::ffff:192.0.2.1\", remote: \"::ffff:192.0.2.2\"}}\n  y: {kind: vxlan, vxlan: {id: 2, dev: b, group: \"::ffff:239.1.1.1\"}}\n",
		want: "f.yaml:4:42: links.x.vxlan.local: ::ffff:192.0.2.1 is an IPv4-mapped IPv6 address, which a vxlan cannot take: write 192.0.2.1\n" +
			"f.yaml:4:70: links.x.vxlan.remote: ::ffff:192.0.2.2 is an IPv4-mapped IPv6 address, which a vxlan cannot take: write 192.0.2.2\n" +
			"f.yaml:5:50: links.y.vxlan.group: ::ffff:239.1.1.1 is an IPv4-mapped IPv6 address, which a vxlan cannot take: write 239.1.1.1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(t, src("f.yaml", tc.file)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
