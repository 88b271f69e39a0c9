package model

import (
	"sort"
	"strings"
)

// Sysctl is one kernel parameter under /proc/sys/net, global
// (net.ipv4.ip_forward) or of one link (net.ipv4.conf.eth0.rp_filter).
//
// The kernel keeps no owner for a parameter, and every parameter always
// has a value: "ours" means netreconcile wrote it, and the ownership ledger
// holds the value it found before the first write, which is put back when
// the key leaves the file (package ledger).
type Sysctl struct {
	// Key is the dotted name as sysctl(8) prints it. A dot in a link name
	// is written '/' there, as sysctl(8) does: net.ipv4.conf.eth0/100.rp_filter
	// is /proc/sys/net/ipv4/conf/eth0.100/rp_filter.
	Key string
	// Value is the value as the kernel prints it, with its fields separated
	// by one space (NormalizeSysctl).
	Value string
	// Link is the link a per-link key belongs to ("" for a global key).
	Link string

	// Owned says the ledger holds the value found before netreconcile
	// first wrote the key: Original (actual only).
	Owned    bool
	Original string
	Origin   string
}

// NormalizeSysctl returns a value as the diff compares it: the kernel
// prints several fields separated by tabs (net.ipv4.ip_local_port_range is
// "32768\t60999") and reads any blanks.
func NormalizeSysctl(v string) string { return strings.Join(strings.Fields(v), " ") }

// SysctlPath is the file of key below /proc/sys.
func SysctlPath(key string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, key)
}

// sysctlLinkWord is the word in a link's own name of a key that is not a
// link: every link takes its first values from "default", and "all" sets
// (or combines with) every link's.
func sysctlLinkWord(w string) bool { return w == "all" || w == "default" }

// PerLinkSysctl returns the full key of a per-link key as the file writes
// it under a link: ipv4.rp_filter is net.ipv4.conf.LINK.rp_filter, and
// ipv6.neigh.base_reachable_time_ms is net.ipv6.neigh.LINK.base_reachable_time_ms.
// ok is false when short names neither family.
func PerLinkSysctl(link, short string) (key string, ok bool) {
	fam, rest, found := strings.Cut(short, ".")
	if !found || (fam != "ipv4" && fam != "ipv6") || rest == "" {
		return "", false
	}
	dir := "conf"
	if n, r, ok := strings.Cut(rest, "."); ok && n == "neigh" {
		dir, rest = "neigh", r
	}
	if rest == "" {
		return "", false
	}
	return "net." + fam + "." + dir + "." + strings.ReplaceAll(link, ".", "/") + "." + rest, true
}

// SysctlLink returns the link of a per-link key (net.ipv{4,6}.{conf,neigh}.LINK.…,
// LINK neither all nor default), its short form under the link (ipv4.rp_filter,
// ipv6.neigh.X) and the key that tells a link's first value (template); ok is
// false for a global key.
//
// A conf key's template is the same key of "default", whose value a new
// link takes. A neigh key's is lo's: a namespace other than the first has
// no neigh "default" directory (the table's defaults are not shown there),
// and lo, in every namespace, has every neigh key, with the defaults unless
// someone changed them. SysctlExactTemplate tells the two apart.
func SysctlLink(key string) (link, short, template string, ok bool) {
	parts := strings.SplitN(key, ".", 5)
	if len(parts) != 5 || parts[0] != "net" || (parts[1] != "ipv4" && parts[1] != "ipv6") ||
		(parts[2] != "conf" && parts[2] != "neigh") || sysctlLinkWord(parts[3]) {
		return "", "", "", false
	}
	short = parts[1] + "." + parts[4]
	if parts[2] == "neigh" {
		short = parts[1] + ".neigh." + parts[4]
	}
	template = strings.Join([]string{parts[0], parts[1], parts[2], "default", parts[4]}, ".")
	if parts[2] == "neigh" {
		template = strings.Join([]string{parts[0], parts[1], parts[2], "lo", parts[4]}, ".")
	}
	return strings.ReplaceAll(parts[3], "/", "."), short, template, true
}

// SysctlExactTemplate reports whether a per-link key's template holds the
// value a new link starts with for certain (a conf key's "default"), not
// only probably (a neigh key's lo).
func SysctlExactTemplate(key string) bool { return strings.Contains(key, ".conf.") }

// SortSysctls orders sysctls by key.
func SortSysctls(ss []Sysctl) {
	sort.Slice(ss, func(i, j int) bool { return ss[i].Key < ss[j].Key })
}

// FindSysctl returns the sysctl of key in ss, sorted by key; nil if absent.
func FindSysctl(ss []Sysctl, key string) *Sysctl {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].Key >= key })
	if i < len(ss) && ss[i].Key == key {
		return &ss[i]
	}
	return nil
}

// SysctlSecret reports whether key holds a secret: an IPv6 conf key's
// stable_secret (default's, all's or a link's), the key from which the
// kernel derives the stable privacy addresses (RFC 7217). Its value is
// never printed.
func SysctlSecret(key string) bool {
	p := strings.Split(key, ".")
	return len(p) == 5 && p[0] == "net" && p[1] == "ipv6" && p[2] == "conf" && p[4] == "stable_secret"
}

// SecretShown is what a message prints in place of a secret's value.
const SecretShown = "(a secret, not shown)"

// SysctlDefaultSpreads returns the short key of the links' key that a write
// of key, a "default" key, sets on the links the kernel has already: ok is
// false for any other key. The kernel copies an IPv4 conf key of default
// to every link whose own key was never written (devinet_conf_proc,
// devinet_copy_dflt_conf: a bit per key and link, set by any write of the
// link's key, through /proc or netlink, by an IPv4 address added to the
// link, which sets them all, and copied from default's when the link is
// made, so a link made after a write of default's key holds its own), and
// a neighbour key of default likewise (neigh_proc_update; only the first
// namespace has those). No dump shows the bits. Not so IPv4's forwarding
// (all's sets every link's: a master key), nor the keys whose write
// flushes the route cache instead (disable_xfrm, disable_policy,
// promote_secondaries, route_localnet), nor any IPv6 conf key of default
// (measured on 6.18).
func SysctlDefaultSpreads(key string) (short string, ok bool) {
	p := strings.Split(key, ".")
	if len(p) != 5 || p[0] != "net" || p[3] != "default" {
		return "", false
	}
	switch {
	case p[2] == "neigh" && (p[1] == "ipv4" || p[1] == "ipv6"):
		return p[1] + ".neigh." + p[4], true
	case p[1] == "ipv4" && p[2] == "conf":
		switch p[4] {
		case "forwarding", "mc_forwarding", "disable_xfrm", "disable_policy", "promote_secondaries", "route_localnet":
			return "", false
		}
		return "ipv4." + p[4], true
	}
	return "", false
}
