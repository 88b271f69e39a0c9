package pooldef

import (
	"github.com/google/go-cmp/cmp"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func v4(prefix string) Subnet { return Subnet{IPv4: netip.MustParsePrefix(prefix)} }
func v6(prefix string) Subnet { return Subnet{IPv6: netip.MustParsePrefix(prefix)} }
func dual(p4, p6 string) Subnet {
	return Subnet{IPv4: netip.MustParsePrefix(p4), IPv6: netip.MustParsePrefix(p6)}
}

func TestPoolValidate(t *testing.T) {
	ok := Default("p", dual("10.2.0.0/16", "fd01:203:405:607::/112"))
	tests := []struct {
		name   string
		change func(*Pool)
		want   string // "" for valid
	}{
		{"defaults", func(*Pool) {}, ""},
		{"IPv6 only", func(p *Pool) { p.Subnets = []Subnet{v6("fd00::/64")} }, ""},
		{"appended subnet", func(p *Pool) { p.Subnets = append(p.Subnets, dual("10.3.0.0/24", "fd01::/120")) }, ""},
		{"empty name", func(p *Pool) { p.Name = "" }, `pool name "": must be 1-64 characters`},
		{"name with a slash", func(p *Pool) { p.Name = "a/b" }, `pool name "a/b": use letters, digits`},
		{"name starting with a dot", func(p *Pool) { p.Name = ".." }, `pool name ".."`},
		{"no subnets", func(p *Pool) { p.Subnets = nil }, "pool p: no subnets"},
		{"empty subnet", func(p *Pool) { p.Subnets = []Subnet{{}} }, "neither an IPv4 nor an IPv6 prefix"},
		{"host bits set", func(p *Pool) { p.Subnets = []Subnet{v4("10.2.0.1/16")} }, "10.2.0.1/16 has host bits set; did you mean 10.2.0.0/16?"},
		{"IPv6 in the IPv4 field", func(p *Pool) { p.Subnets = []Subnet{{IPv4: netip.MustParsePrefix("fd00::/112")}} }, "fd00::/112 is not an IPv4 prefix"},
		{"different sizes", func(p *Pool) { p.Subnets = []Subnet{dual("10.2.0.0/16", "fd00::/64")} }, "same number of host bits (16 and 64)"},
		{"families differ between subnets", func(p *Pool) { p.Subnets = append(p.Subnets, v4("10.3.0.0/16")) }, "same families as the first"},
		{"subnets overlap", func(p *Pool) { p.Subnets = append(p.Subnets, dual("10.2.128.0/24", "fd02::/120")) }, "overlaps"},
		{"subnet smaller than a block", func(p *Pool) { p.Subnets = []Subnet{v4("10.2.0.0/28")} }, "smaller than a block"},
		{"block size too large", func(p *Pool) { p.BlockSizeBits = 33 }, "blockSizeBits 33: must be 0-32"},
		{"too many blocks", func(p *Pool) { p.Subnets = []Subnet{v6("fd00::/32")} }, "2^91 blocks"},
		{"main table", func(p *Pool) { p.ExportTable = 254 }, "export table 254 is reserved"},
		{"negative delay", func(p *Pool) { p.ReuseDelay = -time.Second }, "reuse delay -1s is negative"},
		{"allowed range reversed", func(p *Pool) { p.AllowedBlocks = []IndexRange{{5, 4}} }, "first is after last"},
		{"allowed range too far", func(p *Pool) { p.AllowedBlocks = []IndexRange{{0, 2048}} }, "the pool has blocks 0-2047"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			p.Subnets = append([]Subnet(nil), ok.Subnets...)
			tt.change(&p)
			err := p.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAllowedRanges(t *testing.T) {
	got, err := NormalizeRanges([]IndexRange{{10, 12}, {0, 3}, {4, 5}, {11, 20}, {30, 30}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]IndexRange{{0, 5}, {10, 20}, {30, 30}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// overlapping finds an overlap wherever the two subnets are in the list,
// in either family, and nothing among disjoint subnets.
func TestOverlappingSubnets(t *testing.T) {
	for _, c := range []struct {
		subnets []Subnet
		i, j    int
		ok      bool
	}{
		{[]Subnet{v4("10.0.0.0/24"), v4("10.1.0.0/24"), v4("10.2.0.0/24")}, 0, 0, false},
		{[]Subnet{v4("10.0.0.0/24"), v4("10.1.0.0/24"), v4("10.0.0.128/25")}, 2, 0, true},
		{[]Subnet{v4("10.0.0.128/25"), v4("10.5.0.0/24"), v4("10.0.0.0/8")}, 2, 0, true},
		{[]Subnet{dual("10.0.0.0/24", "fd00::/120"), dual("10.1.0.0/24", "fd00::80/121")}, 1, 0, true},
		{[]Subnet{v4("10.0.0.0/8"), v4("11.0.0.0/8"), v4("10.200.0.0/16"), v4("12.0.0.0/8")}, 2, 0, true},
	} {
		i, j, ok := overlapping(c.subnets)
		if ok != c.ok || ok && (i != c.i || j != c.j) {
			t.Errorf("%v: %d %d %v, want %d %d %v", c.subnets, i, j, ok, c.i, c.j, c.ok)
		}
	}
}
