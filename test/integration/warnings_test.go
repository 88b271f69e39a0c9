package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
)

// The plan's warnings against the kernel as the oracle: in a fresh
// namespace, where the file's addresses and routes are all there is, the
// kernel refuses a route through a gateway exactly when the plan warns that
// no declared address reaches it, and refuses (or lowers) a child's MTU
// exactly when the plan warns that it is above its lower device's.

type appliedJSON struct {
	Failed []struct {
		diff.Op
		OpError string `json:"op_error"`
	} `json:"failed"`
}

type diffJSON struct {
	Ops      []diff.Op      `json:"ops"`
	Warnings []diff.Warning `json:"warnings"`
}

func (e *env) diffJSON(file string) diffJSON {
	e.t.Helper()
	r := e.cli("diff", "-c", file, "-o", "json")
	var d diffJSON
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		e.t.Fatalf("diff: %v\n%s%s", err, r.Stdout, r.Stderr)
	}
	return d
}

func (e *env) applyJSON(file string) appliedJSON {
	e.t.Helper()
	r := e.cli("apply", "-c", file, "-o", "json")
	var a appliedJSON
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil {
		e.t.Fatalf("apply: %v\n%s%s", err, r.Stdout, r.Stderr)
	}
	return a
}

func TestWarnGatewayGeneratedKernelOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 2))
	e := newEnv(t)
	links := []string{"g0", "g1", "g2", "g3"}
	checked, warned, blamedDown := 0, 0, 0
	for n := 0; n < 24; n++ {
		var y strings.Builder
		y.WriteString("version: 1\nlinks:\n")
		var prefixes []netip.Prefix
		var onDown []netip.Prefix // g3's, the link that stays down
		for i, l := range links {
			peer := l + "p"
			state := ""
			if i == 3 {
				state = ", state: down"
			}
			var addrs []string
			for range 1 + r.IntN(2) {
				var p netip.Prefix
				if r.IntN(3) == 0 {
					p = netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0, byte(n), byte(i), 0, 0, 0, byte(r.IntN(4)), 0, 0, 0, 0, 0, 0, 0, byte(1 + r.IntN(200))}), 56+8*r.IntN(3))
				} else {
					p = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(n), byte(16*i + r.IntN(16)), byte(1 + r.IntN(254))}), 20+r.IntN(11))
				}
				prefixes = append(prefixes, p)
				if i == 3 {
					onDown = append(onDown, p)
				}
				a := fmt.Sprintf("{address: %s", p)
				switch r.IntN(6) {
				case 0:
					a += ", noprefixroute: true"
				case 1:
					if p.Addr().Is4() {
						// The kernel gives an IPv6 address its scope by
						// its prefix (validation says so).
						a += ", scope: host"
					}
				}
				addrs = append(addrs, a+"}")
			}
			fmt.Fprintf(&y, "  %s: {kind: veth%s, veth: {peer: %s}, addresses: [%s]}\n  %s: {kind: veth, veth: {peer: %s}}\n", l, state, peer, strings.Join(addrs, ", "), peer, l)
		}
		y.WriteString("routes:\n")
		// A device route to a subnet reaches its gateways too.
		devNet := netip.MustParsePrefix(fmt.Sprintf("172.20.%d.0/24", n))
		fmt.Fprintf(&y, "  - {to: %s, dev: g1}\n", devNet)
		prefixes = append(prefixes, devNet)
		for j := range 24 {
			var g netip.Addr
			p := prefixes[r.IntN(len(prefixes))]
			switch r.IntN(4) {
			case 0: // somewhere else
				if p.Addr().Is4() {
					g = netip.AddrFrom4([4]byte{192, 0, 2, byte(r.IntN(256))})
				} else {
					g = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", 1+r.IntN(0xfff)))
				}
			case 1: // the address itself
				g = p.Addr()
			default: // a host of the subnet
				g = p.Addr()
				b := g.AsSlice()
				b[len(b)-1] ^= byte(1 + r.IntN(3))
				g, _ = netip.AddrFromSlice(b)
				if !p.Contains(g) {
					g = p.Addr()
				}
			}
			dst := fmt.Sprintf("198.18.%d.0/24", j)
			if g.Is6() {
				dst = fmt.Sprintf("2001:db8:%x:%x::/64", n+1, j)
			}
			dev := ""
			if r.IntN(2) == 0 {
				// Not through g3, which is down: validation refuses
				// an IPv4 route through it.
				dev = ", dev: " + links[r.IntN(len(links)-1)]
			}
			fmt.Fprintf(&y, "  - {to: %s, via: %s%s}\n", dst, g, dev)
		}
		f := e.file("g.yaml", y.String())
		d := e.diffJSON(f)
		if d.Ops == nil {
			t.Fatalf("case %d: no plan: %s\n%s", n, e.cli("diff", "-c", f).Stderr, y.String())
		}
		warnedRoutes := map[string]bool{}
		for _, w := range d.Warnings {
			for _, k := range w.Keys {
				if !strings.HasPrefix(k, "route ") {
					continue
				}
				dst, via, _ := strings.Cut(strings.TrimPrefix(k, "route "), " via ")
				warnedRoutes[dst] = true
				// A warning that blames a link that stays down names g3,
				// and a gateway that one of g3's addresses holds.
				if strings.Contains(w.Message, "link that will be down") {
					blamedDown++
					g := netip.MustParseAddr(strings.TrimSuffix(strings.Fields(via)[0], ","))
					in := false
					for _, p := range onDown {
						in = in || p.Contains(g)
					}
					if !in || !strings.Contains(w.Fix, "bring g3 up") || strings.Contains(w.Message, " on g0") || strings.Contains(w.Message, " on g1") || strings.Contains(w.Message, " on g2") {
						t.Errorf("case %d: %s: blames a link that is down, but gateway %s is in none of g3's subnets %v", n, w, g, onDown)
					}
				}
			}
		}
		a := e.applyJSON(f)
		refused := map[string]string{}
		for _, op := range a.Failed {
			if op.Kind == diff.KindRoute {
				refused[op.ID] = op.OpError
			}
		}
		var bad []string
		for _, op := range d.Ops {
			if op.Kind != diff.KindRoute || !strings.HasPrefix(op.ID, "198.18.") && !strings.HasPrefix(op.ID, "2001:db8:") {
				continue
			}
			checked++
			_, isRefused := refused[op.ID]
			if warnedRoutes[op.ID] {
				warned++
			}
			if isRefused != warnedRoutes[op.ID] {
				bad = append(bad, fmt.Sprintf("%s (%s): warned %v, refused by the kernel %v %s", op.ID, op.Summary, warnedRoutes[op.ID], isRefused, refused[op.ID]))
			}
		}
		t.Logf("case %d: %d ops, %d warnings, %d refused", n, len(d.Ops), len(d.Warnings), len(refused))
		if len(bad) > 0 {
			sort.Strings(bad)
			t.Fatalf("case %d: the warnings and the kernel disagree:\n  %s\nfile:\n%s", n, strings.Join(bad, "\n  "), y.String())
		}
		e.apply(e.file("empty.yaml", "version: 1\n"))
	}
	if warned == 0 || warned == checked || blamedDown == 0 {
		t.Fatalf("%d of %d routes warned, %d for a link that stays down: the cases test little", warned, checked, blamedDown)
	}
	t.Logf("%d routes, %d warned and refused (%d for a link that stays down), %d taken", checked, warned, blamedDown, checked-warned)
}

func TestWarnMTUGeneratedKernelOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 3))
	e := newEnv(t)
	checked, warned := 0, 0
	mtus := []int{1280, 1400, 1450, 1500, 1550, 9000}
	for n := 0; n < 16; n++ {
		pm, mm, vm := mtus[r.IntN(len(mtus))], mtus[r.IntN(len(mtus))], mtus[r.IntN(len(mtus))]
		y := fmt.Sprintf(`version: 1
links:
  up0: {kind: veth, mtu: %d, veth: {peer: up1}}
  up1: {kind: veth, veth: {peer: up0}}
  mv0: {kind: macvlan, mtu: %d, macvlan: {parent: up0}}
  vx0: {kind: vxlan, mtu: %d, vxlan: {id: 5, remote: 192.0.2.2, dev: up0}}
`, pm, mm, vm)
		f := e.file("m.yaml", y)
		d := e.diffJSON(f)
		warnedLinks := map[string]bool{}
		for _, w := range d.Warnings {
			if strings.HasPrefix(w.Keys[0], "links.") {
				warnedLinks[strings.Split(w.Keys[0], ".")[1]] = true
			}
		}
		a := e.applyJSON(f)
		refused := map[string]bool{}
		for _, op := range a.Failed {
			if op.Kind == diff.KindLink {
				refused[op.ID] = true
			}
		}
		// What the kernel holds now. A macvlan it refused or lowered
		// silently is not the file's; a vxlan it refused or clamped is
		// not either, and one left above its device's MTU less the
		// encapsulation has the kernel fragment or drop what it carries.
		mtuOf := func(l string) int {
			out, err := exec.Command("ip", "-n", e.ns, "-o", "link", "show", l).Output()
			if err != nil {
				return 0
			}
			var m int
			fmt.Sscanf(strings.SplitN(string(out), " mtu ", 2)[1], "%d", &m)
			return m
		}
		up := mtuOf("up0")
		for _, l := range []string{"mv0", "vx0"} {
			want := map[string]int{"mv0": mm, "vx0": vm}[l]
			if got := mtuOf(l); got != want || l == "vx0" && got > up-50 {
				refused[l] = true
			}
			checked++
			if warnedLinks[l] {
				warned++
			}
			if refused[l] != warnedLinks[l] {
				t.Fatalf("case %d (up0 %d, mv0 %d, vx0 %d): %s warned %v, refused or lowered by the kernel %v\nwarnings: %+v\napply: %+v\n%s",
					n, pm, mm, vm, l, warnedLinks[l], refused[l], d.Warnings, a, e.ip("-o", "link"))
			}
		}
		if n%4 == 3 {
			// Sometimes from scratch, sometimes an MTU change of what is there.
			e.apply(e.file("empty.yaml", "version: 1\n"))
		}
	}
	if warned == 0 || warned == checked {
		t.Fatalf("%d of %d links warned: the cases test little", warned, checked)
	}
	t.Logf("%d links, %d warned and refused, %d taken", checked, warned, checked-warned)
}
