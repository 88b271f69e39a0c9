package model

import "testing"

func TestValidIfname(t *testing.T) {
	for s, want := range map[string]bool{
		"eth0": true, "br-x.100": true, "brücke-eins-z": true, "a..b": true,
		"": false, ".": false, "..": false, "1234567890123456": false, "a/b": false, "a:b": false, "br%d": false,
		"a b": false, "a\tb": false, "a\x00b": false, "a\x1b[2J": false, "a\x7f": false, "a\u009bb": false, "a\u0085": false,
	} {
		if got := ValidIfname(s); got != want {
			t.Errorf("ValidIfname(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidSysctlKey(t *testing.T) {
	for s, want := range map[string]bool{
		"net.ipv4.ip_forward": true, "net.ipv4.conf.eth0/100.rp_filter": true, "net.ipv4.conf.a///b.x": true,
		"net.//.kernel.core_pattern": false, "net./.x": false, "net..x": false, "net.x.": false, "net.a b": false, "net.a\x1b": false,
	} {
		if got := ValidSysctlKey(s); got != want {
			t.Errorf("ValidSysctlKey(%q) = %v, want %v", s, got, want)
		}
	}
}
