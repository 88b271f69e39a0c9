package desired

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/model"
)

func TestPoolParse(t *testing.T) {
	cfg, err := Parse([]Source{src("f.yaml", `version: 1
pools:
  kubespan:
    subnets:
      - {ipv4: 10.2.0.0/16, ipv6: "fd01:203:405:607::/112"}
      - ipv4: 10.3.0.0/16
        ipv6: fd01:203:405:608::/112
    blocks: ["0-15", 40]
  v4only:
    subnets: [10.9.0.0/24, 10.9.1.0/24]
    block-size-bits: 3
    export-table: 120
    reuse-delay: 5s
links:
  kube0:
    kind: bridge
    addresses:
      - pool: kubespan
        ipv6-prefix-length: 64
      - pool: v4only
        prefix-length: 24
        scope: link
`)})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Pool{{
		PoolSpec: model.PoolSpec{Name: "kubespan", Subnets: []model.PoolSubnet{
			{IPv4: netip.MustParsePrefix("10.2.0.0/16"), IPv6: netip.MustParsePrefix("fd01:203:405:607::/112")},
			{IPv4: netip.MustParsePrefix("10.3.0.0/16"), IPv6: netip.MustParsePrefix("fd01:203:405:608::/112")},
		}, BlockSizeBits: 5, ExportTable: 119, ReuseDelay: time.Minute,
			AllowedBlocks: []model.PoolRange{{First: 0, Last: 15}, {First: 40, Last: 40}}},
		Origin: "f.yaml:4:5",
	}, {
		PoolSpec: model.PoolSpec{Name: "v4only", Subnets: []model.PoolSubnet{
			{IPv4: netip.MustParsePrefix("10.9.0.0/24")}, {IPv4: netip.MustParsePrefix("10.9.1.0/24")},
		}, BlockSizeBits: 3, ExportTable: 120, ReuseDelay: 5 * time.Second},
		Origin: "f.yaml:10:5",
	}}
	if d := cmp.Diff(want, cfg.State.Pools, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("pools (-want +got):\n%s", d)
	}
	wantAddrs := []model.PoolAddress{
		{Link: "kube0", Pool: "kubespan", IPv4Bits: 32, IPv6Bits: 64, Origin: "f.yaml:18:9"},
		{Link: "kube0", Pool: "v4only", IPv4Bits: 24, IPv6Bits: 128, Scope: model.ScopeLink, Origin: "f.yaml:20:9"},
	}
	if d := cmp.Diff(wantAddrs, cfg.State.PoolAddresses); d != "" {
		t.Errorf("pool addresses (-want +got):\n%s", d)
	}
}

func TestPoolValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{{
		name: "mixed families in a plain list",
		file: "version: 1\npools:\n  p:\n    subnets: [10.2.0.0/16, \"fd01::/112\"]\n",
		want: "f.yaml:4:28: pools.p.subnets[1]: subnet fd01::/112 has other families than the first, 10.2.0.0/16; a dual-stack pair is written {ipv4: P4, ipv6: P6}",
	}, {
		name: "pair of different sizes, wrong family",
		file: "version: 1\npools:\n  p:\n    subnets:\n      - {ipv4: 10.2.0.0/16, ipv6: \"fd01::/120\"}\n      - {ipv4: \"fd02::/112\"}\n",
		want: "f.yaml:5:35: pools.p.subnets[0].ipv6: a dual-stack pair needs prefixes of the same size in host bits: 10.2.0.0/16 has 16, fd01::/120 has 8\n" +
			"f.yaml:6:16: pools.p.subnets[1].ipv4: expected an IPv4 subnet, found fd02::/112",
	}, {
		name: "items that are not subnets or block indexes",
		file: "version: 1\npools:\n  p:\n    subnets: [x, default, \"fe80::%e/64\", 10.0.0.1/24, [y], ~]\n    blocks: [\"a-1\", [2], \" 3 - x \", 18446744073709551616, ~]\n  q: {subnets: [10.9.0.0/16], blocks: x}\n",
		want: "f.yaml:4:5: pools.p: no subnets\n" +
			"f.yaml:4:15: pools.p.subnets[0]: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or \"default\"), found \"x\"\n" +
			"f.yaml:4:18: pools.p.subnets[1]: expected a subnet like 10.2.0.0/16, found \"default\"\n" +
			"f.yaml:4:27: pools.p.subnets[2]: \"fe80::%e/64\" has an IPv6 zone (%...); zones are not accepted: the link is the one the address is declared on, or the route's dev\n" +
			"f.yaml:4:42: pools.p.subnets[3]: \"10.0.0.1/24\" has host bits set; the prefix is 10.0.0.0/24\n" +
			"f.yaml:4:55: pools.p.subnets[4]: expected a mapping, found a list\n" +
			"f.yaml:4:60: pools.p.subnets[5]: empty list item; expected a value or a mapping\n" +
			"f.yaml:5:14: pools.p.blocks[0]: expected a block index or a range like \"0-15\", found \"a-1\"\n" +
			"f.yaml:5:21: pools.p.blocks[1]: expected a block index or a range like \"0-15\", found a list\n" +
			"f.yaml:5:26: pools.p.blocks[2]: expected a block index or a range like \"0-15\", found \" 3 - x \"\n" +
			"f.yaml:5:37: pools.p.blocks[3]: expected a block index or a range like \"0-15\", found \"18446744073709551616\"\n" +
			"f.yaml:5:59: pools.p.blocks[4]: expected a block index or a range like \"0-15\", found nothing\n" +
			"f.yaml:6:39: pools.q.blocks: expected a block index or a range like \"0-15\", found \"x\"",
	}, {
		name: "block size, table, blocks out of range, host bits",
		file: "version: 1\npools:\n  p:\n    subnets: [10.2.0.0/24, 10.2.1.1/24]\n    block-size-bits: 40\n    export-table: main\n    blocks: 9-3\n",
		want: "f.yaml:4:28: pools.p.subnets[1]: \"10.2.1.1/24\" has host bits set; the prefix is 10.2.1.0/24\n" +
			"f.yaml:5:22: pools.p.block-size-bits: expected 0 to 32 host bits per block (5 gives /27 and /123 blocks), found 40\n" +
			"f.yaml:6:19: pools.p.export-table: table main is the kernel's own; expected 1-251 or above 255 (default 119)\n" +
			"f.yaml:7:13: pools.p.blocks: range 9-3: the first index is after the last",
	}, {
		name: "blocks beyond the pool, overlap across pools",
		file: "version: 1\npools:\n  a:\n    subnets: [10.2.0.0/24]\n    blocks: [\"0-7\", \"5-8\"]\n  b:\n    subnets: [10.2.0.128/25]\n  c:\n    subnets: [10.2.0.0/24]\n",
		want: "f.yaml:5:21: pools.a.blocks: range 5-8: the pool has blocks 0-7\n" +
			"f.yaml:9:14: pools.c.subnets: subnet 10.2.0.0/24 overlaps 10.2.0.128/25 of pool b (declared at f.yaml:7:5)",
	}, {
		name: "pool address errors",
		file: "version: 1\npools:\n  d:\n    subnets: [{ipv4: 10.2.0.0/16, ipv6: \"fd01::/112\"}]\n  s:\n    subnets: [\"fd02::/112\"]\n" +
			"links:\n  br0:\n    kind: bridge\n    addresses:\n      - {pool: d, prefix-length: 24}\n      - {pool: s, ipv4-prefix-length: 24}\n      - {pool: nope}\n      - {pool: d}\n      - {address: 10.0.0.1/24, prefix-length: 24}\n      - {pool: s, address: 10.0.0.2/24}\n",
		want: "f.yaml:11:34: links.br0.addresses[0].prefix-length: pool d is dual-stack (declared at f.yaml:4:5): give ipv4-prefix-length and ipv6-prefix-length instead\n" +
			"f.yaml:12:39: links.br0.addresses[1].ipv4-prefix-length: pool s has no IPv4 subnets\n" +
			"f.yaml:13:16: links.br0.addresses[2].pool: pool \"nope\" is not declared under pools\n" +
			"f.yaml:14:16: links.br0.addresses[3].pool: link br0 already takes an address from pool d (at f.yaml:11:9); a link takes one address per pool\n" +
			"f.yaml:15:47: links.br0.addresses[4].prefix-length: applies to an address taken from a pool; give pool, or write the length in address\n" +
			"f.yaml:16:28: links.br0.addresses[5].address: an address taken from a pool has no address: give either address or pool",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(t, src("f.yaml", tc.file)); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// The subnet index finds what pair-by-pair checks found: a subnet inside
// another, around another, equal to another, in either family.
func TestSubnetIndexOverlap(t *testing.T) {
	p := netip.MustParsePrefix
	var x subnetIndex
	for _, s := range []string{"10.0.0.0/16", "10.2.0.0/24", "fd00::/64"} {
		sub := model.PoolSubnet{}
		if q := p(s); q.Addr().Is4() {
			sub.IPv4 = q
		} else {
			sub.IPv6 = q
		}
		x.add(sub, poolSubnet{subnet: sub, pool: s})
	}
	for s, want := range map[string]string{
		"10.0.3.0/24": "10.0.0.0/16", "10.0.0.0/16": "10.0.0.0/16", "10.0.0.0/8": "10.0.0.0/16", "0.0.0.0/0": "10.0.0.0/16",
		"10.2.0.128/25": "10.2.0.0/24", "10.2.0.0/23": "10.2.0.0/24", "fd00::1/128": "fd00::/64", "fd00::/16": "fd00::/64",
		"10.1.0.0/16": "", "10.2.1.0/24": "", "10.3.0.0/16": "", "fd01::/64": "", "11.0.0.0/8": "",
	} {
		sub := model.PoolSubnet{}
		if q := p(s); q.Addr().Is4() {
			sub.IPv4 = q
		} else {
			sub.IPv6 = q
		}
		got, ok := x.overlap(sub)
		if ok != (want != "") || ok && got.pool != want {
			t.Errorf("%s: overlaps %q (%v), want %q", s, got.pool, ok, want)
		}
	}
}
