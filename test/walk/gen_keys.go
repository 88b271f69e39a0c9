package walk

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
)

// The keys below are drawn from K, a sequence of their own, so that R's
// draws (and the walks of the seeds make test replays) stay as they were:
// the family-wide IPv6 keys, a link's disable_ipv6 and ipv6.mtu, and MTUs
// below 1280, IPv6's minimum, where the kernel takes IPv6 off a link.

// KeysSeed turns a walk's seed into the seed of its K sequence.
const KeysSeed = 0x6b657973

// MoreGlobalSysctls are the family-wide IPv6 keys the walk declares: each
// sets that key of every link when written (and, but for force_forwarding,
// default's), and the file's keys of links are written again after it.
// all.disable_ipv6 is left out: it takes the IPv6 addresses of every link,
// the foreign ones the walk checks are left alone included.
var MoreGlobalSysctls = map[string][]string{
	"net.ipv6.conf.all.addr_gen_mode":               {"0", "1"},
	"net.ipv6.conf.all.ignore_routes_with_linkdown": {"0", "1"},
	"net.ipv6.conf.all.force_forwarding":            {"0", "1"},
}

// MoreLinkSysctls are a link's keys drawn from K: disable_ipv6 (1 takes
// the link's IPv6 addresses and routes, which Repair leaves out), mtu (at
// most the link's MTU: Repair keeps it only on a link whose MTU the file
// gives) and ignore_routes_with_linkdown, which all.'s sets.
var MoreLinkSysctls = map[string][]string{
	"ipv6.disable_ipv6":                {"0", "1"},
	"ipv6.mtu":                         {"1280", "1400"},
	"ipv6.ignore_routes_with_linkdown": {"0", "1"},
}

// DefaultSysctls are the "default" keys the walk declares (interact, with
// a link's own key in the same step): the kernel copies each to every link
// that never wrote the key, and the plan keeps the links' keys as the file
// says (the file's value, default's on a link of the file that declares
// none, a foreign link's own).
var DefaultSysctls = map[string][]string{
	"net.ipv4.conf.default.rp_filter":    {"0", "1", "2"},
	"net.ipv4.conf.default.accept_local": {"0", "1"},
}

// globalSysctls and linkSysctls are every key of the walk, with its values.
func globalSysctls() map[string][]string {
	return sysctlUnion(sysctlUnion(GlobalSysctls, MoreGlobalSysctls), DefaultSysctls)
}
func linkSysctls() map[string][]string { return sysctlUnion(LinkSysctls, MoreLinkSysctls) }

func sysctlUnion(a, b map[string][]string) map[string][]string {
	m := map[string][]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		if k == "net.ipv6.conf.all.force_forwarding" && !hasForceForwarding {
			continue
		}
		m[k] = v
	}
	return m
}

// hasForceForwarding: the key came with Linux 6.17 (the guest's 6.1 lacks
// it, and diff refuses a file that declares a key the kernel lacks).
var hasForceForwarding = func() bool {
	_, err := os.Stat("/proc/sys/net/ipv6/conf/all/force_forwarding")
	return err == nil
}()

func (g *Gen) k() *rand.Rand {
	if g.K == nil {
		g.K = rand.New(rand.NewSource(1))
	}
	return g.K
}

func (g *Gen) kchance(p float64) bool { return g.k().Float64() < p }

func kpick[T any](g *Gen, xs []T) T { return xs[g.k().Intn(len(xs))] }

// lowMTUs are the MTUs below IPv6's minimum the walk draws.
var lowMTUs = []int{1000, 1200}

// changeKeys changes, now and then, several of the keys above in one step:
// a link's MTU across 1280 with its IPv6 keys, a family-wide key with a
// link's, a link's IPv6 keys alone.
func (g *Gen) changeKeys(c *Config) string {
	if !g.kchance(0.3) || g.NoIPv6Keys {
		return ""
	}
	var ns []string
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; hasIPv6Conf(c, l) || lowMTUKind(l) {
			ns = append(ns, n)
		}
	}
	setKey := func(l *Link, short string) string {
		if _, ok := l.Sysctls[short]; ok && g.kchance(0.35) {
			delete(l.Sysctls, short)
			return "drop " + short
		}
		if l.Sysctls == nil {
			l.Sysctls = map[string]string{}
		}
		var vs []string
		for _, v := range linkSysctls()[short] {
			if v != l.Sysctls[short] {
				vs = append(vs, v)
			}
		}
		l.Sysctls[short] = kpick(g, vs)
		return short + " " + l.Sysctls[short]
	}
	// A link's IPv6 keys, the walk's older ones too.
	var v6 []string
	for _, k := range sortedKeys(linkSysctls()) {
		if strings.HasPrefix(k, "ipv6.") {
			v6 = append(v6, k)
		}
	}
	switch g.k().Intn(3) {
	case 0:
		if len(ns) == 0 {
			return ""
		}
		n := kpick(g, ns)
		l := c.Links[n]
		if !lowMTUKind(l) {
			return ""
		}
		if l.MTU != 0 && l.MTU < ipv6MinMTU {
			l.MTU = kpick(g, []int{1280, 1400, 1500})
		} else {
			l.MTU = kpick(g, lowMTUs)
		}
		what := []string{"mtu " + strconv.Itoa(l.MTU)}
		for _, short := range sortedKeys(MoreLinkSysctls) {
			if g.kchance(0.4) {
				what = append(what, setKey(l, short))
			}
		}
		return fmt.Sprintf("keys of %s: %v", n, what)
	case 1:
		pool := sysctlUnion(sysctlUnion(nil, MoreGlobalSysctls), DefaultSysctls)
		global := kpick(g, sortedKeys(pool))
		if c.Sysctls == nil {
			c.Sysctls = map[string]string{}
		}
		what := ""
		if _, ok := c.Sysctls[global]; ok && g.kchance(0.35) {
			delete(c.Sysctls, global)
			what = "drop " + global
		} else {
			c.Sysctls[global] = kpick(g, pool[global])
			what = global + " " + c.Sysctls[global]
		}
		if len(ns) > 0 {
			n := kpick(g, ns)
			l := c.Links[n]
			if short := "ipv4." + strings.TrimPrefix(global, "net.ipv4.conf.default."); DefaultSysctls[global] != nil {
				// default's beside a link's own, which the
				// kernel's copy of default's must not move.
				if g.kchance(0.5) {
					what += ", " + setKey(l, short) + " of " + n
				}
			} else if hasIPv6Conf(c, l) {
				what += ", " + setKey(l, kpick(g, sortedKeys(MoreLinkSysctls))) + " of " + n
			}
		}
		return what
	default:
		if len(ns) == 0 {
			return ""
		}
		n := kpick(g, ns)
		l := c.Links[n]
		if !hasIPv6Conf(c, l) {
			return ""
		}
		return setKey(l, kpick(g, v6)) + " of " + n
	}
}

// lowMTUKind says whether the walk gives a link of l's kind an MTU below
// 1280: not a WireGuard device (1280 at least), a device it did not make,
// or a tunnel whose MTU follows its path.
func lowMTUKind(l *Link) bool {
	switch l.Kind {
	case "veth", "bridge", "dummy", "vxlan", "macvlan", "vlan", "ipvlan":
		return true
	}
	return false
}

// keepLowMTU writes back an MTU below 1280 that a step would take out of
// the file as 1500: a link keeps the MTU it has when the file stops giving
// one, which the generator, working from the files, cannot see (kernelMTU).
// With KeptLowMTU, a third of them stay out: the kernel keeps the link
// below 1280, the runner finds it so (Config.KeptLow), and diff and apply
// refuse the steps that declare IPv6 on it.
func (g *Gen) keepLowMTU(before, n *Config) {
	for _, name := range n.LinkNames() {
		l, b := n.Links[name], before.Links[name]
		if b != nil && b.Kind == l.Kind && b.MTU != 0 && b.MTU < ipv6MinMTU && l.MTU == 0 {
			if g.Defects.KeptLowMTU && g.k().Intn(3) == 0 {
				continue
			}
			l.MTU = 1500
		}
	}
}
