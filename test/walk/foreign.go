package walk

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// ForeignPlan returns the shell commands (run in the namespace) that create
// the foreign objects of a walk: what someone else made, which netreconcile
// must leave exactly as it is. Names start with "f" and keys differ from the
// generator's, except where a known-defect switch asks for a clash.
func ForeignPlan(r *rand.Rand, d Defects) []string {
	cmds := []string{
		"ip link add fb0 type bridge",
		"ip link set fb0 up",
		"ip addr add 10.250.1.1/24 dev fb0",
		"ip -6 addr add fd25::1/64 dev fb0 nodad",
		"ip link add fv0a type veth peer name fv0b",
		"ip link set fv0a master fb0",
		"ip link set fv0a up",
		"ip link set fv0b up",
		"ip link add fx0 type vxlan id 999 remote 192.0.2.99 dstport 4789 dev fv0b",
		"ip addr add 10.251.0.1/32 dev lo",
		// Foreign objects the file may adopt (AdoptLink, AdoptTable).
		"ip link add fa0 type bridge; ip link set fa0 up; ip addr add 10.252.0.1/24 dev fa0",
		"nft add table ip nrwa; nft add chain ip nrwa theirs; nft add set ip nrwa fs '{ type ipv4_addr; }'",
	}
	opt := []string{
		"ip route add blackhole 192.168.7.0/24 proto static",
		"ip route add blackhole 192.168.8.0/24 table 100 proto zebra metric 10",
		"ip route add 10.250.2.0/24 via 10.250.1.254 dev fb0 proto static table 200",
		"ip route add 172.16.9.0/24 via 10.250.1.254 dev fb0 proto boot table 300",
		"ip -6 route add blackhole 2001:db8:f::/64 proto static table 100",
		"ip -6 route add 2001:db8:e::/64 via fd25::fe dev fb0 proto static",
		"ip rule add priority 150 from 192.168.0.0/16 lookup 100 proto static",
		"ip rule add priority 1000 from 192.168.9.0/24 lookup 200 proto static",
		"ip -6 rule add priority 2500 fwmark 0x99 lookup 200 proto boot",
		"nft add table inet fw; nft add chain inet fw c '{ type filter hook input priority 0; policy accept; }'; nft add rule inet fw c counter accept",
		// Same name as a declared table, another family: never touched.
		"nft add table ip6 nrw0; nft add set ip6 nrw0 fs '{ type ipv6_addr; }'",
	}
	for _, c := range opt {
		if r.Intn(4) != 0 {
			cmds = append(cmds, c)
		}
	}
	if d.ForeignSameKeyRoute {
		cmds = append(cmds, "ip route add blackhole 172.16.1.0/24 proto static", "ip route add blackhole 172.16.2.0/24 table 100 proto static metric 10")
	}
	if d.NftTableTakeover {
		cmds = append(cmds, "nft add table ip nrw1; nft add chain ip nrw1 theirs")
	}
	return cmds
}

// KindForeign returns the commands that make someone else's objects of the
// kinds the kernel at hand has beyond the host's veth, bridge and vxlan (the
// guest's: dummy, bond, vlan, vrf, ipvlan, macvlan, ipip, ip6tnl, a FoU port,
// WireGuard), so that show --all's round trip meets every kind as a foreign
// object too. It draws nothing from the walk's random source: a seed walks
// the same configurations with or without them. Names start with "f";
// tunnel endpoints and ports are outside what the generator picks.
func KindForeign(c Caps) []string {
	var cmds []string
	if c.Dummy {
		cmds = append(cmds, "ip link add fd0 type dummy; ip link set fd0 up; ip addr add 10.253.0.1/24 dev fd0")
		if c.IPVlan {
			cmds = append(cmds, "ip link add link fd0 name fiv0 type ipvlan mode l2; ip link set fiv0 up")
		}
		if c.Bond {
			// Left down: a bond up takes its carrier, and then an IPv6
			// link-local address, some time after its port joins, which
			// the check that foreign objects stay as they were would
			// take for a change (guest walk, seed 22, step 1, under load).
			cmds = append(cmds, "ip link add fbo0 type bond mode active-backup; ip link add fd1 type dummy; ip link set fd1 master fbo0")
		}
	}
	if c.VLAN {
		cmds = append(cmds, "ip link add link fv0b name fvl0 type vlan id 77; ip link set fvl0 up; ip addr add 10.253.1.1/24 dev fvl0")
	}
	if c.MACVlan {
		cmds = append(cmds, "ip link add link fv0b name fmv0 type macvlan mode bridge")
	}
	if c.VRF {
		cmds = append(cmds, "ip link add fvr0 type vrf table 1234; ip link set fvr0 up")
	}
	if c.IPIP {
		cmds = append(cmds, "ip link add fip0 type ipip remote 198.51.100.200 local 192.0.2.200")
	}
	if c.IP6Tnl {
		cmds = append(cmds, "ip link add fi60 type ip6tnl remote 2001:db8:fe::200 local 2001:db8:ff::200")
	}
	if c.Fou {
		cmds = append(cmds, "ip fou add port 7799 ipproto 4")
	}
	if c.WireGuardModule {
		cmds = append(cmds, "ip link add fwg0 type wireguard")
	}
	return cmds
}

// toolRE finds the programs a foreign command runs.
var toolRE = regexp.MustCompile(`(^|; )(ip|nft) `)

func shell(ns, cmd string) error {
	// By full path: the guest's sh is busybox, whose own ip applet runs
	// before $PATH and lacks most of iproute2.
	cmd = toolRE.ReplaceAllStringFunc(cmd, func(m string) string {
		prefix, tool := "", strings.TrimSpace(m)
		if strings.HasPrefix(m, "; ") {
			prefix, tool = "; ", strings.TrimSpace(m[2:])
		}
		if p, err := exec.LookPath(tool); err == nil {
			tool = p
		}
		return prefix + tool + " "
	})
	out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("foreign object %q: %w: %s", cmd, err, out)
	}
	return nil
}

// dumpForeign renders the foreign objects of a reading, one line each:
// links named f*, their addresses, routes and rules of protocols other than
// ours and the kernel's (and the kernel's on foreign links), nftables tables
// other than the walk's, with their handles. It also returns the addresses
// on lo.
func dumpForeign(k *Kernel, proto int, foreignTables, adopted map[string]bool) (string, []string) {
	var lines []string
	for _, l := range k.Raw.Links {
		name := fmt.Sprint(l["ifname"])
		if !strings.HasPrefix(name, "f") || adopted[name] {
			continue
		}
		m := map[string]any{}
		for _, key := range []string{"ifindex", "ifname", "link", "flags", "mtu", "master", "ifalias", "address"} {
			m[key] = l[key]
		}
		if li, ok := l["linkinfo"].(map[string]any); ok {
			m["kind"] = li["info_kind"]
			// Bridge timers and counters change on their own; a vxlan's
			// attributes are fixed.
			if li["info_kind"] == "vxlan" {
				m["data"] = li["info_data"]
			}
		}
		b, _ := json.Marshal(m)
		lines = append(lines, "link "+string(b))
	}
	var lo []string
	for _, a := range k.Addrs {
		for _, x := range a.Addrs {
			s := fmt.Sprintf("%s/%d scope %s", x.Local, x.Prefixlen, x.Scope)
			switch {
			case ipv6AutoAddr(a.Name, x.Local):
				// The kernel's: checked apart (dumpIPv6Auto).
			case a.Name == "lo":
				lo = append(lo, s)
			case strings.HasPrefix(a.Name, "f") && !adopted[a.Name]:
				lines = append(lines, "address "+a.Name+" "+s)
			}
		}
	}
	own := ipProto(proto)
	for _, rs := range [][]map[string]any{k.Raw.Routes4, k.Raw.Routes6} {
		for _, r := range rs {
			p, dev := fmt.Sprint(r["protocol"]), fmt.Sprint(r["dev"])
			if p == own || (p == "kernel" && !strings.HasPrefix(dev, "f")) || p == "245" || (p == "kernel" && adopted[dev]) {
				continue
			}
			if ipv6AutoRoute(r) {
				continue
			}
			b, _ := json.Marshal(r)
			lines = append(lines, "route "+string(b))
		}
	}
	for fam, rules := range map[string][]map[string]any{"-4": k.Raw.Rules4, "-6": k.Raw.Rules6} {
		for _, r := range rules {
			if fmt.Sprint(r["protocol"]) == own {
				continue
			}
			// The kernel's l3mdev rule (priority 1000, "lookup
			// [l3mdev-table]"), which it adds with the first vrf of a
			// namespace and keeps: the kernel's, as its default rules are.
			if _, l3mdev := r["l3mdev"]; l3mdev && fmt.Sprint(r["protocol"]) == "kernel" {
				continue
			}
			b, _ := json.Marshal(r)
			lines = append(lines, "rule "+fam+" "+string(b))
		}
	}
	// Tables are listed whole; the walk's own (inet/ip/ip6 nrw*) are
	// skipped, except ip6 nrw0 which the walk never declares.
	keep := false
	for _, line := range strings.Split(k.NftText, "\n") {
		if strings.HasPrefix(line, "table ") {
			f := strings.Fields(line)
			keep = !strings.HasPrefix(f[2], "nrw") || (f[1] == "ip6" && f[2] == "nrw0") || foreignTables[f[1]+" "+f[2]]
		}
		if keep && strings.TrimSpace(line) != "" {
			lines = append(lines, "nft "+counterRE.ReplaceAllString(line, ""))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), lo
}

// The kernel's IPv6 set-up of a link (addrconf): when a link is up with
// its carrier, the kernel gives it the multicast route ff00::/8 in table
// local (addrconf_add_mroute) and a link-local address with its fe80::/64
// route, and the address's local route once duplicate address detection
// is done, a second or so later. It does all of it again on every link
// whose value changes when a family-wide key that sets IPv6 up afresh is
// written (ipv6ResetKeys), up or down, with carrier or without: on a
// foreign link as on any other, by the kernel's design, so a file that
// declares such a key reaches every link. A bond's port, which the kernel
// otherwise gives no IPv6 set-up, gets it then too (guest walk, seed
// 9708058099391, step 35: ff00::/8 on the foreign bond port fd1). These
// lines are left out of dumpForeign and checked apart (ipv6AutoChanged).

// ipv6ResetKeys are the family-wide keys whose write sets IPv6 up afresh
// on each link whose own value it changes: all.addr_gen_mode
// (addrconf_init_auto_addrs) and all.disable_ipv6 (addrconf_notify, down
// then up).
var ipv6ResetKeys = map[string]bool{
	"net.ipv6.conf.all.addr_gen_mode": true,
	"net.ipv6.conf.all.disable_ipv6":  true,
}

// ipv6AutoAddr reports whether an address of link is the kernel's
// link-local one (lo has none).
func ipv6AutoAddr(link, local string) bool {
	return link != "lo" && strings.HasPrefix(local, "fe80:")
}

// ipv6AutoRoute reports whether an IPv6 route of ip -j is one the kernel's
// set-up of a link makes: its own (protocol kernel) to fe80::/64 or to a
// link-local address, or the multicast route ff00::/8 in table local.
func ipv6AutoRoute(r map[string]any) bool {
	if fmt.Sprint(r["protocol"]) != "kernel" {
		return false
	}
	dst := fmt.Sprint(r["dst"])
	return strings.HasPrefix(dst, "fe80") || (dst == "ff00::/8" && fmt.Sprint(r["table"]) == "local")
}

// dumpIPv6Auto renders the kernel's IPv6 set-up of the foreign links
// (ipv6AutoAddr, ipv6AutoRoute), one line each, sorted.
func dumpIPv6Auto(k *Kernel, adopted map[string]bool) []string {
	foreign := func(n string) bool { return strings.HasPrefix(n, "f") && !adopted[n] }
	var lines []string
	for _, a := range k.Addrs {
		for _, x := range a.Addrs {
			if foreign(a.Name) && ipv6AutoAddr(a.Name, x.Local) {
				lines = append(lines, fmt.Sprintf("address %s %s/%d", a.Name, x.Local, x.Prefixlen))
			}
		}
	}
	for _, r := range k.Raw.Routes6 {
		if dev := fmt.Sprint(r["dev"]); foreign(dev) && ipv6AutoRoute(r) {
			typ, table := "unicast", "main"
			if t, ok := r["type"]; ok {
				typ = fmt.Sprint(t)
			}
			if t, ok := r["table"]; ok {
				table = fmt.Sprint(t)
			}
			lines = append(lines, fmt.Sprintf("route %s %v dev %s table %s", typ, r["dst"], dev, table))
		}
	}
	sort.Strings(lines)
	return lines
}

// ipv6AutoChanged says how the kernel's IPv6 set-up of the foreign links
// changed from before to after a step that wrote none of ipv6ResetKeys:
// "" when it did not. Lines of link-local addresses may appear: the local
// route of one comes with the end of its duplicate address detection,
// which the walk's first reading, made as the foreign links come up, does
// not wait for.
func ipv6AutoChanged(before, after []string) string {
	var out []string
	for _, l := range before {
		if !contains(after, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range after {
		if !contains(before, l) && !strings.Contains(l, " fe80") {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// writesIPv6Reset reports whether a plan writes one of ipv6ResetKeys.
func writesIPv6Reset(ops []planOp) bool {
	for _, op := range ops {
		if op.Kind == "sysctl" && ipv6ResetKeys[op.ID] && len(op.Changes) > 0 {
			return true
		}
	}
	return false
}
