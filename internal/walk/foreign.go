package walk

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os/exec"
	"sort"
	"strconv"
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

func shell(ns, cmd string) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("foreign object %q: %w: %s", cmd, err, out)
	}
	return nil
}

// dumpForeign renders the foreign objects of ns, one line each: links named
// f*, their addresses, routes and rules of protocols other than ours and the
// kernel's (and the kernel's on foreign links), nftables tables other than
// the walk's. It also returns the addresses on lo.
func dumpForeign(ns string, proto int) (string, []string, error) {
	var lines []string
	var ls []map[string]any
	if err := ipJSON(ns, &ls, "-d", "link", "show"); err != nil {
		return "", nil, err
	}
	for _, l := range ls {
		name := fmt.Sprint(l["ifname"])
		if !strings.HasPrefix(name, "f") {
			continue
		}
		for _, k := range []string{"stats", "stats64", "operstate", "linkmode", "qdisc", "txqlen", "group", "num_tx_queues", "num_rx_queues", "inet6_addr_gen_mode", "promiscuity", "allmulti", "min_mtu", "max_mtu", "gso_max_size", "gso_max_segs", "tso_max_size", "tso_max_segs", "gro_max_size", "gso_ipv4_max_size", "gro_ipv4_max_size", "parentbus", "parentdev"} {
			delete(l, k)
		}
		if li, ok := l["linkinfo"].(map[string]any); ok {
			// Bridge timers and counters change on their own.
			delete(li, "info_data")
			delete(li, "info_slave_data")
		}
		b, _ := json.Marshal(l)
		lines = append(lines, "link "+string(b))
	}
	var as []*kAddrLink
	if err := ipJSON(ns, &as, "addr", "show"); err != nil {
		return "", nil, err
	}
	var lo []string
	for _, a := range as {
		for _, x := range a.Addrs {
			s := fmt.Sprintf("%s/%d scope %s", x.Local, x.Prefixlen, x.Scope)
			switch {
			case a.Name == "lo":
				lo = append(lo, s)
			case strings.HasPrefix(a.Name, "f"):
				lines = append(lines, "address "+a.Name+" "+s)
			}
		}
	}
	own := strconv.Itoa(proto)
	for _, fam := range []string{"-4", "-6"} {
		var rs []map[string]any
		if err := ipJSON(ns, &rs, fam, "-d", "route", "show", "table", "all"); err != nil {
			return "", nil, err
		}
		for _, r := range rs {
			p, dev := fmt.Sprint(r["protocol"]), fmt.Sprint(r["dev"])
			if p == own || (p == "kernel" && !strings.HasPrefix(dev, "f")) || p == "245" {
				continue
			}
			if p == "kernel" && strings.HasPrefix(fmt.Sprint(r["dst"]), "fe80") {
				continue
			}
			b, _ := json.Marshal(r)
			lines = append(lines, "route "+string(b))
		}
		var rules []map[string]any
		if err := ipJSON(ns, &rules, fam, "rule", "show"); err != nil {
			return "", nil, err
		}
		for _, r := range rules {
			if fmt.Sprint(r["protocol"]) == own {
				continue
			}
			b, _ := json.Marshal(r)
			lines = append(lines, "rule "+fam+" "+string(b))
		}
	}
	out, err := run("ip", "netns", "exec", ns, "nft", "-a", "list", "ruleset")
	if err != nil {
		return "", nil, err
	}
	// Tables are listed whole; the walk's own (inet/ip/ip6 nrw*) are
	// skipped, except ip6 nrw0 which the walk never declares.
	keep := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "table ") {
			f := strings.Fields(line)
			keep = !strings.HasPrefix(f[2], "nrw") || (f[1] == "ip6" && f[2] == "nrw0")
		}
		if keep && strings.TrimSpace(line) != "" {
			lines = append(lines, "nft "+counterRE.ReplaceAllString(line, ""))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), lo, nil
}
