package walk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// GlobalSysctls are the global keys the walk declares, with the values it
// picks from. net.ipv4.ip_forward sets every link's forwarding and
// default's (the oracle compares a link's undeclared key with default's:
// firstValueKnown); none changes what the other checks read: not
// net.ipv6.conf.all.forwarding (a router gets subnet-router anycast routes
// in table local, foreign to the walk), nor all.disable_ipv6 (it takes the
// IPv6 addresses), nor a "default" key (the oracle takes a link's first
// value from them).
var GlobalSysctls = map[string][]string{
	"net.ipv4.ip_forward":            {"0", "1"},
	"net.ipv4.conf.all.rp_filter":    {"0", "1", "2"},
	"net.ipv4.conf.all.accept_local": {"0", "1"},
	"net.ipv4.ip_nonlocal_bind":      {"0", "1"},
	"net.ipv4.ip_local_port_range":   {"32768 60999", "20000 40000"},
	"net.ipv6.ip_nonlocal_bind":      {"0", "1"},
}

// LinkSysctls are the per-link keys the walk declares: net.ipv4.conf,
// net.ipv6.conf and both neighbour tables. promote_secondaries is among
// them: apply turns it on to delete an address, and must give the file's
// value back. The IPv6 keys leave out forwarding (anycast routes in table
// local) and accept_dad; disable_ipv6 and mtu are drawn apart
// (MoreLinkSysctls), so that these draws stay make test's fixed seed's.
var LinkSysctls = map[string][]string{
	"ipv4.rp_filter":             {"0", "1", "2"},
	"ipv4.proxy_arp":             {"0", "1"},
	"ipv4.arp_ignore":            {"0", "1", "2"},
	"ipv4.promote_secondaries":   {"0", "1"},
	"ipv4.accept_local":          {"0", "1"},
	"ipv4.forwarding":            {"0", "1"},
	"ipv4.neigh.ucast_solicit":   {"3", "5"},
	"ipv6.accept_ra":             {"0", "1", "2"},
	"ipv6.hop_limit":             {"64", "32"},
	"ipv6.neigh.mcast_solicit":   {"3", "6"},
	"ipv6.neigh.retrans_time_ms": {"1000", "2500"},
}

// hasIPv6Conf tells whether the kernel keeps net.ipv6 keys for a link of
// this kind in the walk. An ipip or ip6tnl link takes its MTU from the
// path to its remote and may fall under 1280, where the kernel drops the
// link's IPv6 keys (the generator keeps every other kind at 1280 or more);
// a device the walk did not make is not known. A link the kernel holds
// below 1280 has none either (kernelMTU).
func hasIPv6Conf(c *Config, l *Link) bool {
	switch l.Kind {
	case "ipip", "ip6tnl", "device":
		return false
	}
	return !belowIPv6(c, l.Name)
}

// dedup returns keys without repeats, in their first order.
func dedup(keys []string) []string {
	seen := map[string]bool{}
	out := keys[:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// linkSysctlPath is where sysctl(8) shows a link's short key.
func linkSysctlPath(link, short string) string {
	fam, name, _ := strings.Cut(short, ".")
	dev := strings.ReplaceAll(link, ".", "/")
	if n, ok := strings.CutPrefix(name, "neigh."); ok {
		return "net." + fam + ".neigh." + dev + "." + n
	}
	return "net." + fam + ".conf." + dev + "." + name
}

// linkSysctlDefault is a key that holds a new link's first value: the
// "default" one of net.ipv4.conf or net.ipv6.conf, and lo's for the
// neighbour tables, whose defaults are global and shown only in the first
// namespace (a device's are copied from them, as lo's were; the oracle
// takes lo's from the baseline, read before the walk could declare them).
func linkSysctlDefault(short string) string {
	if strings.Contains(short, ".neigh.") {
		return linkSysctlPath("lo", short)
	}
	return linkSysctlPath("default", short)
}

// changeSysctls adds, changes or drops one global or per-link key.
func (g *Gen) changeSysctls(c *Config) string {
	pool, m, where := GlobalSysctls, &c.Sysctls, "global"
	keys := sortedKeys(pool)
	if g.chance(0.6) {
		n := g.pickLink(c, func(*Link) bool { return true })
		if n == "" {
			return "noop"
		}
		l := c.Links[n]
		pool, m, where = LinkSysctls, &l.Sysctls, "link "+n
		keys = keys[:0]
		for _, k := range sortedKeys(pool) {
			if !strings.HasPrefix(k, "ipv6.") || hasIPv6Conf(c, l) {
				keys = append(keys, k)
			}
		}
	}
	key := g.pick(keys)
	if _, ok := (*m)[key]; ok && g.chance(0.4) {
		delete(*m, key)
		return fmt.Sprintf("drop sysctl %s (%s)", key, where)
	}
	if *m == nil {
		*m = map[string]string{}
	}
	old, had := (*m)[key]
	(*m)[key] = g.pick(pool[key])
	if had && (*m)[key] == old {
		// A change, mostly (drawn from K: R's sequence stays a seed's).
		var others []string
		for _, v := range pool[key] {
			if v != old {
				others = append(others, v)
			}
		}
		if len(others) > 0 && g.kchance(0.7) {
			(*m)[key] = kpick(g, others)
		}
	}
	return fmt.Sprintf("sysctl %s = %s (%s)", key, (*m)[key], where)
}

// readSysctls reads keys in the namespace as sysctl(8) shows them there (ip
// netns exec), independently of netreconcile, in one run. A key the kernel
// does not have is left out of the map: the comparison reports it. Only the
// walk's keys are read: all of net.ipv4 and net.ipv6 is thousands of files,
// most of a guest step's time under TCG.
func readSysctls(ns string, keys []string) (map[string]string, error) {
	if len(keys) == 0 {
		return map[string]string{}, nil
	}
	var out, errb bytes.Buffer
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, "sysctl", "-e"}, keys...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// A missing key makes some sysctl(8)s fail even with -e
		// (busybox's in the guest exits 1 and says nothing; procps's
		// exits 0): a message that names a key asked for is that too;
		// anything else counts.
		for _, line := range strings.Split(errb.String(), "\n") {
			if line = strings.TrimSpace(line); line != "" && !namesAny(line, keys) {
				return nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args[:6], " "), err, errb.String())
			}
		}
	}
	m := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		k, v, ok := strings.Cut(line, " = ")
		if ok {
			m[strings.TrimSpace(k)] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m, nil
}

// linkMTUs reads the MTU of every link in the namespace (ip -j link).
func linkMTUs(ns string) (map[string]int, error) {
	out, err := exec.Command("ip", "-n", ns, "-j", "link", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("ip -n %s -j link show: %w", ns, err)
	}
	var links []struct {
		Name string `json:"ifname"`
		MTU  int    `json:"mtu"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("ip -n %s -j link show: %w", ns, err)
	}
	m := map[string]int{}
	for _, l := range links {
		m[l.Name] = l.MTU
	}
	return m, nil
}

// namesAny reports whether an error line of sysctl(8) names one of keys,
// dotted or as its /proc/sys path.
func namesAny(line string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(line, k) || strings.Contains(line, strings.ReplaceAll(k, ".", "/")) {
			return true
		}
	}
	return false
}

// sysctlBaseline reads the global keys of the walk as a fresh namespace has
// them, and lo's neighbour keys: a key the file no longer declares must be
// back at its value.
func sysctlBaseline(ns string) (map[string]string, error) {
	keys := sortedKeys(globalSysctls())
	for _, short := range sortedKeys(linkSysctls()) {
		if k := linkSysctlDefault(short); strings.Contains(k, ".neigh.lo.") {
			// lo's, as the namespace made it: the walk may declare
			// lo's keys later.
			keys = append(keys, k)
		}
	}
	return readSysctls(ns, keys)
}

// firstValueKnown reports whether the oracle knows the value of link l's
// key short when the file does not declare it: default's (lo's for a
// neighbour key; the link's MTU for ipv6.mtu). That is the value a link made under the file starts
// with, and the value netreconcile gives a key back when the file drops
// it; a family-wide key the walk declares (net.ipv4.ip_forward,
// net.ipv6.conf.all.ignore_routes_with_linkdown…) sets default's with
// every link's, so it holds after such a write too, for a link the walk
// made as for one it found. lo is the one device whose first value is
// known: the namespace makes it with default's values (the walk's keys;
// not its IPv6 MTU). Another device, or a link maybe without IPv6 keys,
// is left out.
func firstValueKnown(c *Config, l *Link, short string) bool {
	if l.Name == "lo" {
		return true
	}
	return l.Kind != "device" && (!strings.HasPrefix(short, "ipv6.") || hasIPv6Conf(c, l))
}

// CompareSysctls checks the walk's keys in the kernel: a declared key has
// its value; a global key the file does not declare has the value the
// namespace started with (netreconcile gave it back), and a link's key
// that of the "default" one (firstValueKnown), but for the keys "default"
// spreads on the links pinned (the runner's notePinned), which hold a value
// of their own. Links in skip are left out.
func CompareSysctls(ns string, c *Config, base map[string]string, skip, pinned map[string]bool) ([]string, error) {
	keys := sortedKeys(globalSysctls())
	for _, n := range c.LinkNames() {
		if skip[n] {
			continue
		}
		for _, short := range sortedKeys(linkSysctls()) {
			keys = append(keys, linkSysctlPath(n, short))
			if !strings.Contains(short, ".neigh.") {
				keys = append(keys, linkSysctlDefault(short))
			}
		}
	}
	all, err := readSysctls(ns, dedup(keys))
	if err != nil {
		return nil, err
	}
	var diffs []string
	var mtus map[string]int // the kernel's, read once needed
	for _, k := range sortedKeys(globalSysctls()) {
		want, declared := c.Sysctls[k]
		if !declared {
			want = base[k]
		}
		got, ok := all[k]
		if !ok || got != want {
			diffs = append(diffs, fmt.Sprintf("sysctl %s = %q, want %q (declared: %v)", k, got, want, declared))
		}
	}
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if skip[n] {
			continue
		}
		for _, short := range sortedKeys(linkSysctls()) {
			want, declared := l.Sysctls[short]
			if !declared {
				if !firstValueKnown(c, l, short) || (l.Adopt || n == AdoptLink || pinned[n]) && spreadByDefault(short) {
					// The link the walk adopts was someone else's,
					// made before any write of default's: it keeps
					// its own value, which the walk does not know,
					// adopted and after the file drops adopt alike
					// (the key is not the file's either way). So
					// does a link left in the kernel undeclared
					// while default's was written.
					continue
				}
				from := all
				if strings.Contains(short, ".neigh.") || n == "lo" && spreadByDefault(short) {
					// lo is no link of the file's: it keeps the
					// value it was made with, default's then.
					from = base
				}
				var ok bool
				if want, ok = from[linkSysctlDefault(short)]; !ok {
					return nil, fmt.Errorf("%s: not in sysctl's list", linkSysctlDefault(short))
				}
			}
			key := linkSysctlPath(n, short)
			got, ok := all[key]
			if !declared && short == "ipv6.mtu" {
				// The kernel's: the link's MTU, set again as the
				// link's MTU and state change, and what netreconcile
				// gives the key back (docs/config.md).
				if mtus == nil {
					if mtus, err = linkMTUs(ns); err != nil {
						return nil, err
					}
				}
				want = strconv.Itoa(mtus[n])
			}
			if !declared && short == "ipv4.promote_secondaries" && got == "1" {
				// netreconcile's own, to delete an address of a link
				// it owns (documented in docs/config.md, Ownership).
				continue
			}
			if !ok || got != want {
				diffs = append(diffs, fmt.Sprintf("sysctl %s = %q, want %q (declared: %v)", key, got, want, declared))
			}
		}
	}
	return diffs, nil
}

// spreadByDefault reports whether a write of the "default" key of a
// link's key short, one the walk declares (DefaultSysctls), sets the key
// on the links that never wrote it.
func spreadByDefault(short string) bool {
	return DefaultSysctls[linkSysctlDefault(short)] != nil
}

// foreignSysctls reads, for each link of names, its keys that a write of
// a "default" key the walk declares may move (spreadByDefault), by link
// and short key.
func foreignSysctls(ns string, names []string) (map[string]map[string]string, error) {
	var keys []string
	for _, n := range names {
		for _, short := range sortedKeys(linkSysctls()) {
			if spreadByDefault(short) {
				keys = append(keys, linkSysctlPath(n, short))
			}
		}
	}
	all, err := readSysctls(ns, keys)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, n := range names {
		out[n] = map[string]string{}
		for _, short := range sortedKeys(linkSysctls()) {
			if v, ok := all[linkSysctlPath(n, short)]; ok && spreadByDefault(short) {
				out[n][short] = v
			}
		}
	}
	return out, nil
}

// CompareForeignSysctls checks that the links someone else made (was:
// their keys as the walk found them, foreignSysctls) still hold those
// keys where the file names neither the link nor adopts it: netreconcile
// writes a foreign link's own value back after a write of "default"'s.
func CompareForeignSysctls(ns string, c *Config, was map[string]map[string]string, adopted map[string]bool) ([]string, error) {
	var names []string
	for _, n := range sortedKeys(was) {
		if c.Links[n] == nil && !adopted[n] {
			names = append(names, n)
		}
	}
	now, err := foreignSysctls(ns, names)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, n := range names {
		for _, short := range sortedKeys(was[n]) {
			if got, ok := now[n][short]; ok && got != was[n][short] {
				diffs = append(diffs, fmt.Sprintf("sysctl %s = %q, want %q (a foreign link's, as the walk found it)", linkSysctlPath(n, short), got, was[n][short]))
			}
		}
	}
	return diffs, nil
}
