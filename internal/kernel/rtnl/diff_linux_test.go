package rtnl_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// The differential tests: routes, addresses and rules generated at random
// are written with `ip -batch`, then the codec's decoding of the kernel's
// dump is held to what `ip -N -j -d` shows of the same state, field by
// field. ip is the independent oracle: iproute2 decodes the same messages
// with code of its own. -N makes it print numbers, not the names of
// /etc/iproute2, which differ from one machine to the next.

var diffSeed = flag.Uint64("rtnl.seed", envSeed(), "seed of the generated routes, addresses and rules (0: random, printed; RTNL_SEED)")

// defaultSeed is what go test ./... generates: the same state on every run.
const defaultSeed = 20261129

func envSeed() uint64 {
	if s := os.Getenv("RTNL_SEED"); s != "" {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n
		}
	}
	return defaultSeed
}

func seedRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (reproduce with -rtnl.seed=%d or RTNL_SEED)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed>>32|1))
}

// diffNS makes a namespace with two veth ends up, nrd0 addressed, and DAD
// off (a tentative flag must not change between the two reads).
func diffNS(t *testing.T) string {
	t.Helper()
	ns := nettest.NewNetNS(t)
	nettest.InNS(t, ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	nettest.IP(t, ns, "link", "add", "nrd0", "type", "veth", "peer", "name", "nrd1")
	for _, l := range []string{"lo", "nrd0", "nrd1"} {
		nettest.IP(t, ns, "link", "set", l, "up")
	}
	nettest.IP(t, ns, "addr", "add", "10.200.0.1/24", "dev", "nrd0")
	nettest.IP(t, ns, "addr", "add", "2001:db8:200::1/64", "dev", "nrd0")
	settleIPv6(t, ns, "nrd0", "nrd1")
	return ns
}

// settleIPv6 waits until each link has its link-local address and the
// kernel's local route for it: the kernel makes them from a work queue once
// the veth's carrier is up, which a loaded machine runs late, so a read
// before and one after would differ by routes neither side made.
func settleIPv6(t *testing.T, ns string, links ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		local := nettest.IP(t, ns, "-6", "route", "show", "table", "local")
		ready := true
		for _, l := range links {
			addr := nettest.IP(t, ns, "-6", "-br", "addr", "show", "dev", l, "scope", "link")
			f := strings.Fields(addr)
			if len(f) < 3 || !strings.HasPrefix(f[2], "fe80::") || strings.Contains(addr, "tentative") ||
				!strings.Contains(local, "local "+strings.TrimSuffix(f[2], "/64")+" dev "+l) {
				ready = false
			}
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel made no link-local address and route on %v in 10 s:\n%s", links, local)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batch runs lines with `ip -force -batch` (and options, such as -6):
// the kernel refuses some of what is generated (an invalid combination),
// which is left out.
func batch(t *testing.T, ns string, lines []string, opts ...string) {
	t.Helper()
	if len(lines) == 0 {
		return
	}
	f, err := os.CreateTemp(t.TempDir(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_ = nettest.ExecErr("ip", append(append([]string{"-n", ns}, opts...), "-force", "-batch", f.Name())...)
}

// dump returns the bodies of a dump of typ in ns, read on a socket of the
// test's own and kept whole (an interrupted dump is read again).
func dump(t *testing.T, ns string, typ uint16, body []byte) [][]byte {
	t.Helper()
	c := dial(t, ns)
	defer c.Close()
	for range 5 {
		msgs, err := c.Execute(netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(typ), Flags: netlink.Request | netlink.Dump}, Data: body})
		if err != nil {
			t.Fatalf("dump %d: %v", typ, err)
		}
		var out [][]byte
		intr := false
		for _, m := range msgs {
			intr = intr || m.Header.Flags&netlink.DumpInterrupted != 0
			out = append(out, m.Data)
		}
		if !intr {
			return out
		}
	}
	t.Fatalf("dump %d interrupted 5 times", typ)
	return nil
}

// linkNames maps the indexes of ns's links to their names, as ip shows them.
func linkNames(t *testing.T, ns string) map[uint32]string {
	t.Helper()
	names := map[uint32]string{}
	for _, l := range parseIPJSON(t, nettest.IP(t, ns, "-j", "link", "show")) {
		names[uint32(l.num(t, "ifindex"))] = l.str("ifname")
	}
	return names
}

// compareViews fails the test with the lines one side has and the other
// lacks.
func compareViews(t *testing.T, what string, codec, ip []string) {
	t.Helper()
	slices.Sort(codec)
	slices.Sort(ip)
	if slices.Equal(codec, ip) {
		t.Logf("%d %s: the codec and ip agree", len(ip), what)
		return
	}
	var onlyCodec, onlyIP []string
	i, j := 0, 0
	for i < len(codec) || j < len(ip) {
		switch {
		case j == len(ip) || i < len(codec) && codec[i] < ip[j]:
			onlyCodec = append(onlyCodec, codec[i])
			i++
		case i == len(codec) || codec[i] > ip[j]:
			onlyIP = append(onlyIP, ip[j])
			j++
		default:
			i++
			j++
		}
	}
	t.Errorf("%s differ: %d as the codec reads them only:\n  %s\n%d as ip shows them only:\n  %s", what,
		len(onlyCodec), strings.Join(onlyCodec, "\n  "), len(onlyIP), strings.Join(onlyIP, "\n  "))
}

// ---- routes ----

// genRoutes writes n `route add` lines of every type, both families and
// IPv4-mapped IPv6 destinations, multipath, encapsulations, metrics,
// sources, tables above 255 and RFC 5549 gateways.
func genRoutes(rng *rand.Rand, n int) []string {
	gw4 := func() string { return fmt.Sprintf("10.200.0.%d", 2+rng.IntN(250)) }
	gw6 := func() string { return fmt.Sprintf("2001:db8:200::%x", 2+rng.IntN(4000)) }
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	encap := func(v6 bool) string {
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprintf("encap ip id %d dst 10.200.0.%d ttl %d%s", rng.IntN(1000), 2+rng.IntN(200), rng.IntN(64), pick("", " key", " csum", " key csum seq"))
		case 1:
			return fmt.Sprintf("encap ip6 id %d dst %s hoplimit %d tc %d", rng.IntN(1000), gw6(), rng.IntN(64), rng.IntN(16))
		case 2:
			mode := pick("encap", "l2encap")
			if v6 {
				mode = pick("encap", "inline")
			}
			return fmt.Sprintf("encap seg6 mode %s segs fc00::%x,fc00::%x", mode, 1+rng.IntN(100), 1+rng.IntN(100))
		}
		return ""
	}
	var lines []string
	for range n {
		var dst string
		v6, mapped := false, false
		switch f := rng.IntN(10); {
		case f < 6:
			dst = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(1 + rng.IntN(199)), byte(rng.IntN(256)), byte(rng.IntN(256))}), 8+rng.IntN(25)).Masked().String()
		case f < 9:
			v6 = true
			var b [16]byte
			b[0], b[1], b[2], b[3], b[4], b[5] = 0x20, 0x01, 0x0d, 0xb8, byte(rng.IntN(256)), byte(rng.IntN(256))
			b[15] = byte(rng.IntN(256))
			dst = netip.PrefixFrom(netip.AddrFrom16(b), 32+rng.IntN(97)).Masked().String()
		default:
			v6, mapped = true, true
			dst = netip.PrefixFrom(netip.AddrFrom16(netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), 0}).As16()), 104+rng.IntN(25)).Masked().String()
		}
		_ = mapped
		typ := "unicast"
		if rng.IntN(3) == 0 {
			typ = pick("local", "broadcast", "anycast", "multicast", "blackhole", "unreachable", "prohibit", "throw")
		}
		if typ == "multicast" {
			if v6 {
				dst = fmt.Sprintf("ff0e::%x/128", 1+rng.IntN(1000))
			} else {
				dst = fmt.Sprintf("239.%d.%d.0/24", rng.IntN(256), rng.IntN(256))
			}
		}
		w := []string{"route", "add", typ, dst, "table", pick("main", "100", "1000", "253", "70000"), "proto", pick("3", "4", "245", "99")}
		if rng.IntN(3) == 0 {
			w = append(w, "metric", strconv.Itoa(1+rng.IntN(5000)))
		}
		if !v6 && rng.IntN(5) == 0 {
			w = append(w, "tos", pick("0x10", "0x08", "0x04"))
		}
		switch typ {
		case "blackhole", "unreachable", "prohibit", "throw":
		case "unicast":
			switch k := rng.IntN(10); {
			case k < 3: // multipath
				for h := 2 + rng.IntN(2); h > 0; h-- {
					w = append(w, "nexthop")
					if v6 {
						w = append(w, "via", gw6())
					} else if rng.IntN(5) == 0 {
						w = append(w, "via", "inet6", gw6())
					} else {
						w = append(w, "via", gw4())
					}
					w = append(w, "dev", "nrd0", "weight", strconv.Itoa(1+rng.IntN(256)))
					if !v6 && rng.IntN(4) == 0 {
						w = append(w, strings.Fields(encap(false))...)
					}
				}
				lines = append(lines, strings.Join(w, " "))
				continue
			case k < 5:
				w = append(w, "dev", "nrd0")
				if rng.IntN(2) == 0 {
					w = append(w, "scope", "link")
				}
			case !v6 && k == 5:
				w = append(w, "via", "inet6", gw6(), "dev", "nrd0")
			default:
				if v6 {
					w = append(w, "via", gw6())
				} else {
					w = append(w, "via", gw4())
					if rng.IntN(4) == 0 {
						w = append(w, "dev", "nrd0", "onlink")
					}
				}
			}
			if rng.IntN(4) == 0 {
				w = append(w, "mtu", strconv.Itoa(1280+rng.IntN(8000)))
			}
			if rng.IntN(4) == 0 {
				w = append(w, "src", map[bool]string{false: "10.200.0.1", true: "2001:db8:200::1"}[v6])
			}
			if rng.IntN(4) == 0 {
				w = append(w, strings.Fields(encap(v6))...)
			}
		default: // local, broadcast, anycast, multicast
			w = append(w, "dev", "nrd0")
		}
		lines = append(lines, strings.Join(w, " "))
	}
	return lines
}

// rtFlags are the route and next hop flags ip names (print_rt_flags).
var rtFlags = []struct {
	bit  uint32
	name string
}{
	{unix.RTNH_F_DEAD, "dead"}, {unix.RTNH_F_ONLINK, "onlink"}, {unix.RTNH_F_PERVASIVE, "pervasive"},
	{unix.RTNH_F_OFFLOAD, "offload"}, {unix.RTNH_F_TRAP, "trap"}, {unix.RTM_F_NOTIFY, "notify"},
	{unix.RTNH_F_LINKDOWN, "linkdown"}, {unix.RTNH_F_UNRESOLVED, "unresolved"},
	{unix.RTM_F_OFFLOAD, "rt_offload"}, {unix.RTM_F_TRAP, "rt_trap"}, {unix.RTM_F_OFFLOAD_FAILED, "rt_offload_failed"},
}

func flagNames(f uint32) string {
	var out []string
	for _, n := range rtFlags {
		if f&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ",")
}

var seg6Modes = []string{"inline", "encap", "l2encap", "encap.red", "l2encap.red"}

var encapNames = map[uint16]string{unix.LWTUNNEL_ENCAP_MPLS: "mpls", unix.LWTUNNEL_ENCAP_IP: "ip", unix.LWTUNNEL_ENCAP_ILA: "ila",
	unix.LWTUNNEL_ENCAP_IP6: "ip6", unix.LWTUNNEL_ENCAP_SEG6: "seg6", unix.LWTUNNEL_ENCAP_BPF: "bpf",
	unix.LWTUNNEL_ENCAP_SEG6_LOCAL: "seg6local", unix.LWTUNNEL_ENCAP_RPL: "rpl", unix.LWTUNNEL_ENCAP_IOAM6: "ioam6", unix.LWTUNNEL_ENCAP_XFRM: "xfrm"}

// Tunnel flags of an ip or ip6 encapsulation (if_tunnel.h), as ip names them.
var tunnelFlags = []struct {
	bit  uint16
	name string
}{{0x04, "key"}, {0x01, "csum"}, {0x08, "seq"}}

func encapView(e *rtnl.Encap) string {
	if e == nil {
		return ""
	}
	w := []string{encapNames[e.Type]}
	switch e.Type {
	case unix.LWTUNNEL_ENCAP_IP, unix.LWTUNNEL_ENCAP_IP6:
		ttl, tos := "ttl", "tos"
		if e.Type == unix.LWTUNNEL_ENCAP_IP6 {
			ttl, tos = "hoplimit", "tc"
		}
		w = append(w, fmt.Sprintf("id=%d src=%s dst=%s %s=%d %s=%d", e.ID, addrText(e.Src), addrText(e.Dst), ttl, e.TTL, tos, e.TOS))
		for _, f := range tunnelFlags {
			if e.Flags&f.bit != 0 {
				w = append(w, f.name)
			}
		}
	case unix.LWTUNNEL_ENCAP_SEG6:
		w = append(w, "mode="+seg6Modes[e.Seg6Mode], fmt.Sprint(e.Segments))
	}
	return strings.Join(w, " ")
}

// encapKeys are the keys ip prints after "encap" for each kind.
var encapKeys = map[string][]string{
	"ip":   {"id", "src", "dst", "ttl", "tos", "key", "csum", "seq"},
	"ip6":  {"id", "src", "dst", "hoplimit", "tc", "key", "csum", "seq"},
	"seg6": {"mode", "segs"},
}

// ipEncap splits what ip printed of a route or next hop into its
// encapsulation's view and the rest: "encap", then its keys, up to the
// first key that is not one of them or that repeats (ip prints a route's
// "tos" right after its encapsulation's).
func ipEncap(o ipObject) (string, ipObject) {
	at := slices.IndexFunc(o, func(f ipField) bool { return f.key == "encap" })
	if at < 0 {
		return "", o
	}
	kind := text(o[at].val)
	var e ipObject
	end := at + 1
	for ; end < len(o) && slices.Contains(encapKeys[kind], o[end].key) && !e.has(o[end].key); end++ {
		e = append(e, o[end])
	}
	rest := append(append(ipObject{}, o[:at]...), o[end:]...)
	w := []string{kind}
	switch kind {
	case "ip", "ip6":
		ttl, tos := "ttl", "tos"
		if kind == "ip6" {
			ttl, tos = "hoplimit", "tc"
		}
		w = append(w, fmt.Sprintf("id=%s src=%s dst=%s %s=%s %s=%s", e.str("id"), e.str("src"), e.str("dst"), ttl, e.str(ttl), tos, e.str(tos)))
		for _, f := range tunnelFlags {
			if e.get(f.name) == true {
				w = append(w, f.name)
			}
		}
	case "seg6":
		w = append(w, "mode="+e.str("mode"), fmt.Sprint(e.strings("segs")))
	}
	return strings.Join(w, " "), rest
}

func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// prefs are RTA_PREF's values (ICMPV6_ROUTER_PREF_*) as ip names them.
var prefs = map[uint8]string{0: "medium", 1: "high", 3: "low", 2: "invalid"}

func routeView(r *rtnl.Route, names map[uint32]string) string {
	fam, pref := "inet", ""
	if r.Family == unix.AF_INET6 {
		fam, pref = "inet6", prefs[r.Pref]
	}
	from := ""
	if r.Src.IsValid() && r.Src.Bits() > 0 {
		from = r.Src.String()
	}
	v := fmt.Sprintf("%s %s type=%d table=%d proto=%d scope=%d tos=%d from=%s metric=%d via=%s dev=%s prefsrc=%s flags=[%s] mtu=%d pref=%s encap=[%s]",
		fam, r.Dst, r.Type, r.Table, r.Protocol, r.Scope, r.TOS, from, r.Priority, addrText(r.Gateway), names[r.OIF], addrText(r.PrefSrc),
		flagNames(r.Flags), r.MTU, pref, encapView(r.Encap))
	for _, h := range r.NextHops {
		v += fmt.Sprintf(" nexthop{via=%s dev=%s weight=%d flags=[%s] encap=[%s]}", addrText(h.Gateway), names[h.Ifindex], h.Weight, flagNames(uint32(h.Flags)), encapView(h.Encap))
	}
	return v
}

// ipPrefix reads a destination as ip prints it: "default", or an address
// without its length for a host route.
func ipPrefix(s, fam string) string {
	bits := map[string]int{"inet": 32, "inet6": 128}[fam]
	switch {
	case s == "default":
		return map[string]string{"inet": "0.0.0.0/0", "inet6": "::/0"}[fam]
	case !strings.Contains(s, "/"):
		return fmt.Sprintf("%s/%d", s, bits)
	}
	return s
}

// ipGateway is "gateway", or the host of "via" (an RFC 5549 gateway).
func ipGateway(o ipObject) string {
	if via, ok := o.get("via").(ipObject); ok {
		return via.str("host")
	}
	return o.str("gateway")
}

func ipRouteView(t *testing.T, o ipObject, fam string) string {
	t.Helper()
	encap, o := ipEncap(o)
	mtu := ""
	for _, m := range o.list("metrics") {
		if m.has("mtu") {
			mtu = m.str("mtu")
		}
	}
	if mtu == "" {
		mtu = "0"
	}
	from := ""
	if o.has("from") {
		from = ipPrefix(o.str("from"), fam)
	}
	v := fmt.Sprintf("%s %s type=%d table=%d proto=%d scope=%d tos=%d from=%s metric=%d via=%s dev=%s prefsrc=%s flags=[%s] mtu=%s pref=%s encap=[%s]",
		fam, ipPrefix(o.str("dst"), fam), o.num(t, "type"), o.num(t, "table"), o.num(t, "protocol"), o.num(t, "scope"), o.num(t, "tos"), from,
		o.num(t, "metric"), ipGateway(o), o.str("dev"), o.str("prefsrc"), strings.Join(o.strings("flags"), ","), mtu, o.str("pref"), encap)
	for _, h := range o.list("nexthops") {
		encap, h := ipEncap(h)
		v += fmt.Sprintf(" nexthop{via=%s dev=%s weight=%d flags=[%s] encap=[%s]}", ipGateway(h), h.str("dev"), h.num(t, "weight"),
			strings.Join(h.strings("flags"), ","), encap)
	}
	return v
}

// The codec reads every route of a dump as ip shows it: generated routes of
// every type, both families, IPv4-mapped destinations, multipath,
// encapsulations, and the kernel's own.
func TestRoutesAsIPShowsThem(t *testing.T) {
	ns := diffNS(t)
	rng := seedRand(t)
	const n = 400
	batch(t, ns, genRoutes(rng, n))
	names := linkNames(t, ns)
	req, err := rtnl.MarshalRoute(&rtnl.Route{})
	if err != nil {
		t.Fatal(err)
	}
	var codec []string
	seen := map[string]int{}
	for _, b := range dump(t, ns, unix.RTM_GETROUTE, req) {
		var r rtnl.Route
		if err := rtnl.DecodeRoute(b, &r); errors.Is(err, rtnl.ErrFamily) {
			continue
		} else if err != nil {
			t.Fatalf("decode a route the kernel sent: %v", err)
		}
		if r.Flags&unix.RTM_F_CLONED != 0 {
			continue // ip leaves the route cache out
		}
		codec = append(codec, routeView(&r, names))
		seen[fmt.Sprintf("type %d", r.Type)]++
		if len(r.NextHops) > 0 {
			seen["multipath"]++
		}
		if r.Encap != nil {
			seen["encap "+encapNames[r.Encap.Type]]++
		}
		for _, h := range r.NextHops {
			if h.Encap != nil {
				seen["next hop encap"]++
			}
			if r.Family == unix.AF_INET && h.Gateway.Is6() {
				seen["next hop via inet6"]++
			}
		}
		if r.Family == unix.AF_INET6 && r.Dst.Addr().Is4In6() {
			seen["IPv4-mapped"]++
		}
		if r.Family == unix.AF_INET && r.Gateway.Is6() {
			seen["via inet6"]++
		}
		if r.Table > 255 {
			seen["table above 255"]++
		}
		if r.MTU > 0 {
			seen["mtu"]++
		}
	}
	var ip []string
	for _, fam := range []string{"inet", "inet6"} {
		flag := map[string]string{"inet": "-4", "inet6": "-6"}[fam]
		for _, o := range parseIPJSON(t, nettest.IP(t, ns, flag, "-N", "-j", "-d", "route", "show", "table", "all")) {
			ip = append(ip, ipRouteView(t, o, fam))
		}
	}
	compareViews(t, "routes", codec, ip)
	// A generation that left a kind out proves nothing of it.
	for _, want := range []string{"type 1", "type 2", "type 3", "type 4", "type 5", "type 6", "type 7", "type 8", "type 9",
		"multipath", "encap ip", "encap ip6", "encap seg6", "next hop encap", "IPv4-mapped", "via inet6", "next hop via inet6",
		"table above 255", "mtu"} {
		if seen[want] == 0 {
			t.Errorf("no route of %s among the %d routes read", want, len(codec))
		}
	}
	if len(codec) < n/3 {
		t.Errorf("%d routes read of %d generated: the kernel refused most", len(codec), n)
	}
}

// ---- addresses ----

// genAddresses writes n `addr add` lines on nrd0 and nrd1: both families,
// IPv4-mapped IPv6, peers, broadcasts, labels, scopes and flags.
func genAddresses(rng *rand.Rand, n int) []string {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	var lines []string
	for i := range n {
		dev := pick("nrd0", "nrd1")
		var w []string
		switch f := rng.IntN(10); {
		case f < 5:
			a := netip.AddrFrom4([4]byte{10, byte(1 + rng.IntN(199)), byte(rng.IntN(256)), byte(1 + rng.IntN(254))})
			w = []string{"addr", "add", fmt.Sprintf("%s/%d", a, 8+rng.IntN(25))}
			switch rng.IntN(4) {
			case 0:
				w = []string{"addr", "add", a.String(), "peer", fmt.Sprintf("10.250.%d.%d/%d", rng.IntN(256), 1+rng.IntN(254), 16+rng.IntN(17))}
			case 1:
				w = append(w, "broadcast", fmt.Sprintf("10.251.%d.%d", rng.IntN(256), rng.IntN(256)))
			}
			if rng.IntN(3) == 0 {
				w = append(w, "label", fmt.Sprintf("%s:%d", dev, i%100))
			}
		case f < 9:
			var b [16]byte
			b[0], b[1], b[2], b[3], b[4], b[15] = 0x20, 0x01, 0x0d, 0xb8, byte(rng.IntN(256)), byte(1+rng.IntN(254))
			w = []string{"addr", "add", fmt.Sprintf("%s/%d", netip.AddrFrom16(b), 48+rng.IntN(81))}
			if rng.IntN(4) == 0 {
				b[15]++
				w = []string{"addr", "add", netip.AddrFrom16(b).String(), "peer", fmt.Sprintf("2001:db8:ffff::%x/128", 1+rng.IntN(1000))}
			}
			for _, fl := range []string{"nodad", "noprefixroute", "home", "optimistic", "mngtmpaddr"} {
				if rng.IntN(5) == 0 {
					w = append(w, fl)
				}
			}
		default:
			a := netip.AddrFrom16(netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(1 + rng.IntN(254))}).As16())
			w = []string{"addr", "add", fmt.Sprintf("%s/%d", a, 104+rng.IntN(25))}
		}
		w = append(w, "dev", dev)
		if rng.IntN(5) == 0 {
			w = append(w, "scope", pick("link", "host", "global", "200"))
		}
		lines = append(lines, strings.Join(w, " "))
	}
	return lines
}

// ifaFlags are the address flags ip prints (print_ifa_flags), the
// secondary flag being "temporary" for IPv6; a missing permanent flag is
// "dynamic".
var ifaFlags = []struct {
	bit  uint32
	name string
}{
	{unix.IFA_F_SECONDARY, "secondary"}, {unix.IFA_F_NODAD, "nodad"}, {unix.IFA_F_OPTIMISTIC, "optimistic"},
	{unix.IFA_F_DADFAILED, "dadfailed"}, {unix.IFA_F_HOMEADDRESS, "home"}, {unix.IFA_F_DEPRECATED, "deprecated"},
	{unix.IFA_F_TENTATIVE, "tentative"}, {unix.IFA_F_MANAGETEMPADDR, "mngtmpaddr"}, {unix.IFA_F_NOPREFIXROUTE, "noprefixroute"},
	{unix.IFA_F_MCAUTOJOIN, "autojoin"}, {unix.IFA_F_STABLE_PRIVACY, "stable-privacy"},
}

func lifetime(n uint32) string {
	if n == 0xffffffff {
		return "forever"
	}
	return "finite" // it counts down between the two reads
}

func addressView(a *rtnl.Address, names map[uint32]string) string {
	fam := map[uint8]string{unix.AF_INET: "inet", unix.AF_INET6: "inet6"}[a.Family]
	local, peer := a.Address, netip.Addr{}
	if a.Local.IsValid() {
		local = a.Local
		if a.Address.IsValid() && a.Address != a.Local {
			peer = a.Address
		}
	}
	var flags []string
	for _, f := range ifaFlags {
		if a.Flags&f.bit != 0 {
			n := f.name
			if n == "secondary" && a.Family == unix.AF_INET6 {
				n = "temporary"
			}
			flags = append(flags, n)
		}
	}
	if a.Flags&unix.IFA_F_PERMANENT == 0 {
		flags = append(flags, "dynamic")
	}
	slices.Sort(flags)
	return fmt.Sprintf("%s %s %s/%d peer=%s brd=%s scope=%d label=%s flags=%v valid=%s preferred=%s", names[a.Index], fam, local, a.PrefixLen,
		addrText(peer), addrText(a.Broadcast), a.Scope, a.Label, flags, lifetime(a.ValidLft), lifetime(a.PreferredLft))
}

func ipAddressView(t *testing.T, dev string, o ipObject) string {
	t.Helper()
	var flags []string
	for _, f := range ifaFlags {
		for _, n := range []string{f.name, "temporary"} {
			if o.get(n) == true && (n == f.name || f.name == "secondary") && !slices.Contains(flags, n) {
				flags = append(flags, n)
			}
		}
	}
	if o.get("dynamic") == true {
		flags = append(flags, "dynamic")
	}
	slices.Sort(flags)
	return fmt.Sprintf("%s %s %s/%d peer=%s brd=%s scope=%d label=%s flags=%v valid=%s preferred=%s", dev, o.str("family"), o.str("local"), o.num(t, "prefixlen"),
		o.str("address"), o.str("broadcast"), o.num(t, "scope"), o.str("label"), flags,
		lifetime(uint32(o.num(t, "valid_life_time"))), lifetime(uint32(o.num(t, "preferred_life_time"))))
}

// The codec reads every address of a dump as ip shows it.
func TestAddressesAsIPShowsThem(t *testing.T) {
	ns := diffNS(t)
	rng := seedRand(t)
	const n = 200
	batch(t, ns, genAddresses(rng, n))
	// Finite lifetimes, which the file cannot declare but the kernel
	// holds, and a secondary, which random prefixes seldom make.
	nettest.IP(t, ns, "addr", "add", "2001:db8:201::1/64", "dev", "nrd1", "valid_lft", "1000", "preferred_lft", "500")
	nettest.IP(t, ns, "addr", "add", "10.200.0.2/24", "dev", "nrd0")
	// With DAD off, the kernel still adds an IPv6 address tentative and
	// clears the flag a moment later, from a work queue.
	for deadline := time.Now().Add(5 * time.Second); strings.TrimSpace(nettest.IP(t, ns, "-6", "addr", "show", "tentative")) != ""; {
		if time.Now().After(deadline) {
			t.Fatalf("addresses still tentative after 5 s:\n%s", nettest.IP(t, ns, "-6", "addr", "show", "tentative"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	names := linkNames(t, ns)
	req, err := rtnl.MarshalAddress(&rtnl.Address{})
	if err != nil {
		t.Fatal(err)
	}
	var codec []string
	seen := map[string]int{}
	for _, b := range dump(t, ns, unix.RTM_GETADDR, req) {
		var a rtnl.Address
		if err := rtnl.DecodeAddress(b, &a); errors.Is(err, rtnl.ErrFamily) {
			continue
		} else if err != nil {
			t.Fatalf("decode an address the kernel sent: %v", err)
		}
		codec = append(codec, addressView(&a, names))
		switch {
		case a.Family == unix.AF_INET6 && a.Address.Is4In6():
			seen["IPv4-mapped"]++
		case a.Local.IsValid() && a.Local != a.Address:
			seen[fmt.Sprintf("peer %d", a.Family)]++
		}
		if a.Broadcast.IsValid() {
			seen["broadcast"]++
		}
		if a.Flags&unix.IFA_F_SECONDARY != 0 {
			seen["secondary"]++
		}
		if a.Flags&unix.IFA_F_NOPREFIXROUTE != 0 {
			seen["noprefixroute"]++
		}
		if a.ValidLft != 0xffffffff {
			seen["lifetime"]++
		}
		if strings.Contains(a.Label, ":") {
			seen["label"]++
		}
	}
	var ip []string
	for _, l := range parseIPJSON(t, nettest.IP(t, ns, "-N", "-j", "-d", "addr", "show")) {
		for _, a := range l.list("addr_info") {
			ip = append(ip, ipAddressView(t, l.str("ifname"), a))
		}
	}
	compareViews(t, "addresses", codec, ip)
	for _, want := range []string{"IPv4-mapped", "peer 2", "peer 10", "broadcast", "secondary", "noprefixroute", "lifetime", "label"} {
		if seen[want] == 0 {
			t.Errorf("no address of %s among the %d read", want, len(codec))
		}
	}
	if len(codec) < n/3 {
		t.Errorf("%d addresses read of %d generated: the kernel refused most", len(codec), n)
	}
}

// ---- rules ----

// genRules writes n `rule add` lines with every selector ip has a word
// for, the IPv4 ones and the IPv6 ones (for `ip -6 -batch`).
func genRules(rng *rand.Rand, n int) (v4, v6lines []string) {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	for i := range n {
		v6 := rng.IntN(3) == 0
		w := []string{"rule", "add", "priority", strconv.Itoa(1000 + i)}
		prefix := func() string {
			if v6 {
				if rng.IntN(4) == 0 {
					return netip.PrefixFrom(netip.AddrFrom16(netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), 0, 0}).As16()), 104+rng.IntN(25)).Masked().String()
				}
				return fmt.Sprintf("2001:db8:%x::/%d", rng.IntN(65536), 32+rng.IntN(17))
			}
			return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), 0}), 8+rng.IntN(17)).Masked().String()
		}
		sel := func(p int, words ...string) {
			if rng.IntN(p) == 0 {
				w = append(w, words...)
			}
		}
		sel(2, "from", prefix())
		sel(3, "to", prefix())
		sel(4, "not")
		sel(5, "tos", pick("0x10", "0x08"))
		sel(4, "fwmark", pick("0x10", "0", "0x10/0xff", "0/0xff", "0xffff0000/0xffff0000"))
		sel(4, "iif", pick("nrd0", "nrd1", "lo", "gone0"))
		sel(5, "oif", pick("nrd0", "gone1"))
		sel(5, "uidrange", fmt.Sprintf("%d-%d", 100, 100+rng.IntN(1000)))
		if rng.IntN(4) == 0 {
			w = append(w, "ipproto", pick("tcp", "udp"))
			sel(2, "sport", pick("80", "1000-2000"))
			sel(2, "dport", pick("443", "5000-6000"))
		}
		sel(6, "tun_id", strconv.Itoa(1+rng.IntN(1000)))
		sel(6, "realms", pick("3/4", "5"))
		sel(3, "proto", pick("245", "4", "99"))
		switch rng.IntN(8) {
		case 0:
			w = append(w, pick("blackhole", "unreachable", "prohibit"))
		case 1:
			w = append(w, "goto", strconv.Itoa(1000+n+rng.IntN(10)))
		case 2:
			w = append(w, "nop")
		default:
			w = append(w, "lookup", pick("100", "1000", "main", "70000"))
			sel(3, "suppress_prefixlength", strconv.Itoa(rng.IntN(33)))
			sel(5, "suppress_ifgroup", strconv.Itoa(1+rng.IntN(10)))
		}
		if v6 {
			v6lines = append(v6lines, strings.Join(w, " "))
		} else {
			v4 = append(v4, strings.Join(w, " "))
		}
	}
	return v4, v6lines
}

// ruleView renders a rule as ip prints it (print_rule): the selectors it
// has, a mark's mask only when it is not all ones, the suppressors only
// with a table.
func ruleView(r *rtnl.Rule) string {
	w := []string{map[uint8]string{unix.AF_INET: "inet", unix.AF_INET6: "inet6"}[r.Family], fmt.Sprintf("priority=%d", r.Priority)}
	if r.Flags&unix.FIB_RULE_INVERT != 0 {
		w = append(w, "not")
	}
	src := "all"
	if r.Src.IsValid() {
		src = r.Src.String()
	}
	w = append(w, "from="+src)
	if r.Dst.IsValid() {
		w = append(w, "to="+r.Dst.String())
	}
	if r.TOS != 0 {
		w = append(w, fmt.Sprintf("tos=%#02x", r.TOS))
	}
	if r.Mark != 0 || r.Mask != 0 {
		w = append(w, fmt.Sprintf("fwmark=%#x", r.Mark))
		if r.Mask != 0xffffffff {
			w = append(w, fmt.Sprintf("fwmask=%#x", r.Mask))
		}
	}
	if r.IIFName != "" {
		w = append(w, "iif="+r.IIFName)
	}
	if r.OIFName != "" {
		w = append(w, "oif="+r.OIFName)
	}
	if r.L3mdev != 0 {
		w = append(w, "l3mdev")
	}
	if u := r.UIDRange; u != nil {
		w = append(w, fmt.Sprintf("uid=%d-%d", u.Start, u.End))
	}
	if r.IPProto != 0 {
		w = append(w, fmt.Sprintf("ipproto=%d", r.IPProto))
	}
	for _, p := range []struct {
		name string
		r    *rtnl.PortRange
	}{{"sport", r.SportRange}, {"dport", r.DportRange}} {
		if p.r != nil {
			w = append(w, fmt.Sprintf("%s=%d-%d", p.name, p.r.Start, p.r.End))
		}
	}
	if r.TunID != 0 {
		w = append(w, fmt.Sprintf("tun_id=%d", r.TunID))
	}
	if r.Table != 0 {
		w = append(w, fmt.Sprintf("table=%d", r.Table))
		if r.SuppressPrefixLen != -1 {
			w = append(w, fmt.Sprintf("suppress_prefixlen=%d", r.SuppressPrefixLen))
		}
		if r.SuppressIfgroup != -1 {
			w = append(w, fmt.Sprintf("suppress_ifgroup=%d", r.SuppressIfgroup))
		}
	}
	if r.Flow != 0 {
		w = append(w, fmt.Sprintf("realms=%d/%d", r.Flow>>16, r.Flow&0xffff))
	}
	switch r.Action {
	case unix.FR_ACT_GOTO:
		w = append(w, fmt.Sprintf("goto=%d", r.Goto))
		if r.Flags&unix.FIB_RULE_UNRESOLVED != 0 {
			w = append(w, "unresolved")
		}
	case unix.FR_ACT_NOP:
		w = append(w, "nop")
	case unix.FR_ACT_TO_TBL:
	default:
		w = append(w, fmt.Sprintf("action=%d", r.Action))
	}
	return strings.Join(append(w, fmt.Sprintf("protocol=%d", r.Protocol)), " ")
}

// ipRange reads "sport" or "sport_start"/"sport_end".
func ipRange(t *testing.T, o ipObject, name string) string {
	t.Helper()
	switch {
	case o.has(name):
		return fmt.Sprintf("%s=%d-%d", name, o.num(t, name), o.num(t, name))
	case o.has(name + "_start"):
		return fmt.Sprintf("%s=%d-%d", name, o.num(t, name+"_start"), o.num(t, name+"_end"))
	}
	return ""
}

func ipRuleView(t *testing.T, o ipObject, fam string) string {
	t.Helper()
	w := []string{fam, fmt.Sprintf("priority=%d", o.num(t, "priority"))}
	if o.has("not") {
		w = append(w, "not")
	}
	prefix := func(key string) string {
		if l := o.str(key + "len"); l != "" {
			return o.str(key) + "/" + l
		}
		return ipPrefix(o.str(key), fam)
	}
	if src := o.str("src"); src == "all" {
		w = append(w, "from=all")
	} else {
		w = append(w, "from="+prefix("src"))
	}
	if o.has("dst") {
		w = append(w, "to="+prefix("dst"))
	}
	if o.has("tos") {
		w = append(w, fmt.Sprintf("tos=%#02x", o.num(t, "tos")))
	}
	if o.has("fwmark") {
		w = append(w, fmt.Sprintf("fwmark=%#x", o.num(t, "fwmark")))
		if o.has("fwmask") {
			w = append(w, fmt.Sprintf("fwmask=%#x", o.num(t, "fwmask")))
		}
	}
	for _, k := range []string{"iif", "oif"} {
		if o.has(k) {
			w = append(w, k+"="+o.str(k))
		}
	}
	if o.has("l3mdev") {
		w = append(w, "l3mdev")
	}
	if o.has("uid_start") {
		w = append(w, fmt.Sprintf("uid=%d-%d", o.num(t, "uid_start"), o.num(t, "uid_end")))
	}
	if p := o.str("ipproto"); p != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p, "ipproto-"))
		if err != nil {
			t.Fatalf("ipproto %q", p)
		}
		w = append(w, fmt.Sprintf("ipproto=%d", n))
	}
	for _, k := range []string{"sport", "dport"} {
		if r := ipRange(t, o, k); r != "" {
			w = append(w, r)
		}
	}
	if o.has("tun_id") {
		w = append(w, fmt.Sprintf("tun_id=%d", o.num(t, "tun_id")))
	}
	if o.has("table") {
		w = append(w, fmt.Sprintf("table=%d", o.num(t, "table")))
		if o.has("suppress_prefixlen") {
			w = append(w, fmt.Sprintf("suppress_prefixlen=%d", o.num(t, "suppress_prefixlen")))
		}
		if o.has("suppress_ifgroup") {
			w = append(w, fmt.Sprintf("suppress_ifgroup=%d", o.num(t, "suppress_ifgroup")))
		}
	}
	if o.has("flow_to") {
		w = append(w, fmt.Sprintf("realms=%d/%d", o.num(t, "flow_from"), o.num(t, "flow_to")))
	}
	switch {
	case o.has("goto"):
		w = append(w, fmt.Sprintf("goto=%d", o.num(t, "goto")))
		if o.has("unresolved") {
			w = append(w, "unresolved")
		}
	case o.has("nop"):
		w = append(w, "nop")
	case o.has("action"):
		w = append(w, fmt.Sprintf("action=%d", o.num(t, "action")))
	}
	return strings.Join(append(w, fmt.Sprintf("protocol=%d", o.num(t, "protocol"))), " ")
}

// The codec reads every rule of a dump as ip shows it: generated rules with
// every selector, both families and IPv4-mapped prefixes, and the kernel's
// default rules.
func TestRulesAsIPShowsThem(t *testing.T) {
	ns := diffNS(t)
	rng := seedRand(t)
	const n = 200
	v4, v6 := genRules(rng, n)
	batch(t, ns, v4)
	batch(t, ns, v6, "-6")
	var codec []string
	seen := map[string]int{}
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		req, err := rtnl.MarshalLink(&rtnl.Link{Family: fam}) // an ifinfomsg of the family: what a rule dump takes
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range dump(t, ns, unix.RTM_GETRULE, req) {
			var r rtnl.Rule
			if err := rtnl.DecodeRule(b, &r); err != nil {
				t.Fatalf("decode a rule the kernel sent: %v", err)
			}
			codec = append(codec, ruleView(&r))
			for k, ok := range map[string]bool{"from": r.Src.IsValid(), "to": r.Dst.IsValid(), "not": r.Flags&unix.FIB_RULE_INVERT != 0,
				"tos": r.TOS != 0, "fwmark": r.Mark != 0 || r.Mask != 0, "iif": r.IIFName != "", "oif": r.OIFName != "",
				"uidrange": r.UIDRange != nil, "ipproto": r.IPProto != 0, "sport": r.SportRange != nil, "dport": r.DportRange != nil,
				"tun_id": r.TunID != 0, "realms": r.Flow != 0, "goto": r.Action == unix.FR_ACT_GOTO, "nop": r.Action == unix.FR_ACT_NOP,
				"blackhole": r.Action == unix.FR_ACT_BLACKHOLE, "suppress_prefixlength": r.SuppressPrefixLen >= 0,
				"suppress_ifgroup": r.SuppressIfgroup >= 0, "table above 255": r.Table > 255,
				"IPv4-mapped": r.Src.Addr().Is4In6() || r.Dst.Addr().Is4In6()} {
				if ok {
					seen[k]++
				}
			}
		}
	}
	var ip []string
	for _, fam := range []string{"inet", "inet6"} {
		flag := map[string]string{"inet": "-4", "inet6": "-6"}[fam]
		for _, o := range parseIPJSON(t, nettest.IP(t, ns, flag, "-N", "-j", "-d", "rule", "show")) {
			ip = append(ip, ipRuleView(t, o, fam))
		}
	}
	compareViews(t, "rules", codec, ip)
	for _, want := range []string{"from", "to", "not", "tos", "fwmark", "iif", "oif", "uidrange", "ipproto", "sport", "dport",
		"tun_id", "realms", "goto", "nop", "blackhole", "suppress_prefixlength", "suppress_ifgroup", "table above 255", "IPv4-mapped"} {
		if seen[want] == 0 {
			t.Errorf("no rule with %s among the %d read", want, len(codec))
		}
	}
	if len(codec) < n/3 {
		t.Errorf("%d rules read of %d generated: the kernel refused most", len(codec), n)
	}
}
