package model

import (
	"github.com/google/go-cmp/cmp"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func poolV4(prefix string) PoolSubnet { return PoolSubnet{IPv4: netip.MustParsePrefix(prefix)} }
func poolV6(prefix string) PoolSubnet { return PoolSubnet{IPv6: netip.MustParsePrefix(prefix)} }
func poolDual(p4, p6 string) PoolSubnet {
	return PoolSubnet{IPv4: netip.MustParsePrefix(p4), IPv6: netip.MustParsePrefix(p6)}
}

func TestPoolValidate(t *testing.T) {
	ok := DefaultPoolSpec("p", poolDual("10.2.0.0/16", "fd01:203:405:607::/112"))
	tests := []struct {
		name   string
		change func(*PoolSpec)
		want   string // "" for valid
	}{
		{"defaults", func(*PoolSpec) {}, ""},
		{"IPv6 only", func(p *PoolSpec) { p.Subnets = []PoolSubnet{poolV6("fd00::/64")} }, ""},
		{"appended subnet", func(p *PoolSpec) { p.Subnets = append(p.Subnets, poolDual("10.3.0.0/24", "fd01::/120")) }, ""},
		{"empty name", func(p *PoolSpec) { p.Name = "" }, `pool name "": must be 1-64 characters`},
		{"name with a slash", func(p *PoolSpec) { p.Name = "a/b" }, `pool name "a/b": use letters, digits`},
		{"name starting with a dot", func(p *PoolSpec) { p.Name = ".." }, `pool name ".."`},
		{"no subnets", func(p *PoolSpec) { p.Subnets = nil }, "pool p: no subnets"},
		{"empty subnet", func(p *PoolSpec) { p.Subnets = []PoolSubnet{{}} }, "neither an IPv4 nor an IPv6 prefix"},
		{"host bits set", func(p *PoolSpec) { p.Subnets = []PoolSubnet{poolV4("10.2.0.1/16")} }, "10.2.0.1/16 has host bits set; did you mean 10.2.0.0/16?"},
		{"IPv6 in the IPv4 field", func(p *PoolSpec) { p.Subnets = []PoolSubnet{{IPv4: netip.MustParsePrefix("fd00::/112")}} }, "fd00::/112 is not an IPv4 prefix"},
		{"different sizes", func(p *PoolSpec) { p.Subnets = []PoolSubnet{poolDual("10.2.0.0/16", "fd00::/64")} }, "same number of host bits (16 and 64)"},
		{"families differ between subnets", func(p *PoolSpec) { p.Subnets = append(p.Subnets, poolV4("10.3.0.0/16")) }, "same families as the first"},
		{"subnets overlap", func(p *PoolSpec) { p.Subnets = append(p.Subnets, poolDual("10.2.128.0/24", "fd02::/120")) }, "overlaps"},
		{"subnet smaller than a block", func(p *PoolSpec) { p.Subnets = []PoolSubnet{poolV4("10.2.0.0/28")} }, "smaller than a block"},
		{"block size too large", func(p *PoolSpec) { p.BlockSizeBits = 33 }, "blockSizeBits 33: must be 0-32"},
		{"too many blocks", func(p *PoolSpec) { p.Subnets = []PoolSubnet{poolV6("fd00::/32")} }, "2^91 blocks"},
		{"main table", func(p *PoolSpec) { p.ExportTable = 254 }, "export table 254 is reserved"},
		{"negative delay", func(p *PoolSpec) { p.ReuseDelay = -time.Second }, "reuse delay -1s is negative"},
		{"allowed range reversed", func(p *PoolSpec) { p.AllowedBlocks = []PoolRange{{5, 4}} }, "first is after last"},
		{"allowed range too far", func(p *PoolSpec) { p.AllowedBlocks = []PoolRange{{0, 2048}} }, "the pool has blocks 0-2047"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			p.Subnets = append([]PoolSubnet(nil), ok.Subnets...)
			tt.change(&p)
			err := p.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAllowedRanges(t *testing.T) {
	got, err := NormalizePoolRanges([]PoolRange{{10, 12}, {0, 3}, {4, 5}, {11, 20}, {30, 30}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]PoolRange{{0, 5}, {10, 20}, {30, 30}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// overlapping finds an overlap wherever the two subnets are in the list,
// in either family, and nothing among disjoint subnets.
func TestOverlappingSubnets(t *testing.T) {
	for _, c := range []struct {
		subnets []PoolSubnet
		i, j    int
		ok      bool
	}{
		{[]PoolSubnet{poolV4("10.0.0.0/24"), poolV4("10.1.0.0/24"), poolV4("10.2.0.0/24")}, 0, 0, false},
		{[]PoolSubnet{poolV4("10.0.0.0/24"), poolV4("10.1.0.0/24"), poolV4("10.0.0.128/25")}, 2, 0, true},
		{[]PoolSubnet{poolV4("10.0.0.128/25"), poolV4("10.5.0.0/24"), poolV4("10.0.0.0/8")}, 2, 0, true},
		{[]PoolSubnet{poolDual("10.0.0.0/24", "fd00::/120"), poolDual("10.1.0.0/24", "fd00::80/121")}, 1, 0, true},
		{[]PoolSubnet{poolV4("10.0.0.0/8"), poolV4("11.0.0.0/8"), poolV4("10.200.0.0/16"), poolV4("12.0.0.0/8")}, 2, 0, true},
	} {
		i, j, ok := overlapping(c.subnets)
		if ok != c.ok || ok && (i != c.i || j != c.j) {
			t.Errorf("%v: %d %d %v, want %d %d %v", c.subnets, i, j, ok, c.i, c.j, c.ok)
		}
	}
}
