package desired

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Prefix is a CIDR prefix; "default" means 0.0.0.0/0 or ::/0 (family from context).
type Prefix struct {
	P       netip.Prefix
	Default bool
}

func (p *Prefix) parse(s string) error {
	if s == "default" || s == "all" {
		p.Default = true
		return nil
	}
	if err := refuseZone(s); err != nil {
		return err
	}
	// The prefix length is required, as the docs say: a bare address read
	// as a host prefix would hide a forgotten /24.
	q, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or \"default\"), found %q", s)
	}
	if q.Masked() != q {
		return fmt.Errorf("%q has host bits set; the prefix is %s", s, q.Masked())
	}
	p.P = q
	return nil
}

// prefixFails reports whether parse fails on s, without making the
// message: a megabyte of "[x,x,…]" where subnets are expected is half a
// million errors, most of them only counted. It follows parse step by
// step (TestPrefixFails).
func prefixFails(s string) bool {
	if s == "default" || s == "all" {
		return false
	}
	if strings.Contains(s, "%") || !strings.Contains(s, "/") {
		// No "/": ParsePrefix fails, making an error value.
		return true
	}
	q, err := netip.ParsePrefix(s)
	return err != nil || q.Masked() != q
}

// refuseZone rejects an IPv6 zone ("fe80::1%eth0"): the kernel has no place
// for one in an address, route or rule, so it would be dropped silently and
// something else applied than what the file says.
func refuseZone(s string) error {
	if strings.Contains(s, "%") {
		return fmt.Errorf("%q has an IPv6 zone (%%...); zones are not accepted: the link is the one the address is declared on, or the route's dev", s)
	}
	return nil
}

// Interface address: the address with the subnet's prefix length (host bits allowed).
type IfAddr struct{ P netip.Prefix }

func (p *IfAddr) parse(s string) error {
	if err := refuseZone(s); err != nil {
		return err
	}
	// The prefix length is required (docs/config.md): the kernel would take
	// a bare address as /32 or /128, a subnet nobody asked for.
	q, err := netip.ParsePrefix(s)
	if err != nil {
		return foundError{"expected an address with its prefix length like 10.0.0.1/24 or fd00::1/64, found %q", s}
	}
	p.P = q
	return nil
}

// Addr is a single IP address.
type Addr struct{ A netip.Addr }

func (a *Addr) parse(s string) error {
	if err := refuseZone(s); err != nil {
		return err
	}
	v, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Errorf("expected an IP address like 192.0.2.1 or 2001:db8::1, found %q", s)
	}
	// An IPv4-mapped address (::ffff:192.0.2.1) stays IPv6, as the kernel
	// takes it (a gateway of an IPv6 route): unmapped, an IPv6 route
	// through one was refused as through an IPv4 gateway.
	a.A = v
	return nil
}

// Mark is a firewall mark with an optional mask: "0x40", "0x40/0x60", 64.
type Mark struct {
	Value, Mask uint32
	HasMask     bool
}

func (m *Mark) parse(s string) error {
	v, mask, hasMask := strings.Cut(s, "/")
	bad := fmt.Errorf("expected a mark like 0x40 or 0x40/0x60 (32-bit numbers), found %q", s)
	x, err := strconv.ParseUint(strings.TrimSpace(v), 0, 32)
	if err != nil {
		return bad
	}
	m.Value = uint32(x)
	if hasMask {
		y, err := strconv.ParseUint(strings.TrimSpace(mask), 0, 32)
		if err != nil {
			return bad
		}
		m.Mask, m.HasMask = uint32(y), true
	}
	return nil
}

// Table is a routing table: a number from 1 to 2^32-1 or main/local/default.
type Table struct{ N int }

func (t *Table) parse(s string) error {
	if n, ok := model.TableNames[s]; ok {
		t.N = n
		return nil
	}
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil || n == 0 {
		return fmt.Errorf("expected a table number from 1 to 4294967295 or main, local, default; found %q", s)
	}
	t.N = int(n)
	return nil
}

// Duration is a Go duration string such as 30s or 5m, which may start
// with whole days (2d12h), as nft writes a set's timeout: a timeout nft
// lists or takes is one the file takes.
type Duration struct{ D time.Duration }

func (d *Duration) parse(s string) error {
	// Made only for a bad one: ten thousand peers have ten thousand
	// keepalives.
	bad := func() error {
		return fmt.Errorf("expected a duration like 30s, 5m, 1h30m or 2d12h, found %q", s)
	}
	var days time.Duration
	rest := s
	if n, after, ok := strings.Cut(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		v, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return bad()
		}
		days, rest = time.Duration(v)*24*time.Hour, after
		if rest == "" {
			rest = "0"
		}
	}
	v, err := time.ParseDuration(rest)
	if err != nil || v < 0 || v > math.MaxInt64-days {
		return bad()
	}
	d.D = days + v
	return nil
}

// Sport is a FoU source port: a number or "auto".
type Sport struct {
	Port uint16
	Auto bool
}

func (p *Sport) parse(s string) error {
	if s == "auto" {
		p.Auto = true
		return nil
	}
	n, err := strconv.ParseUint(s, 0, 16)
	if err != nil || n == 0 {
		return errors.New(`expected a UDP port from 1 to 65535 or "auto", found ` + strconv.Quote(s))
	}
	p.Port = uint16(n)
	return nil
}

// Scope is an address or route scope.
type Scope struct{ N int }

func (sc *Scope) parse(s string) error {
	if n, ok := model.ScopeNames[s]; ok {
		sc.N = n
		return nil
	}
	return fmt.Errorf("expected one of global, site, link, host, nowhere; found %q", s)
}

// Family is ipv4, ipv6 or both.
type Family struct{ V4, V6 bool }

func (f *Family) parse(s string) error {
	switch s {
	case "ipv4", "inet", "4":
		f.V4 = true
	case "ipv6", "inet6", "6":
		f.V6 = true
	case "both", "all":
		f.V4, f.V6 = true, true
	default:
		return fmt.Errorf("expected ipv4, ipv6 or both, found %q", s)
	}
	return nil
}

// foundError is "expected …, found %q" formatted when asked for: a
// megabyte of "[x,x,…]" is half a million of them, of which MaxKeptErrors
// are kept.
type foundError struct{ format, found string }

func (e foundError) Error() string { return fmt.Sprintf(e.format, e.found) }
