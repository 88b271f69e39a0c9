package diff

import "net/netip"

func addrStr(a netip.Addr) string {
	if !a.IsValid() {
		return "none"
	}
	return a.String()
}

func prefixStr(p netip.Prefix) string {
	if !p.IsValid() {
		return "none"
	}
	return p.String()
}

func boolStr(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
