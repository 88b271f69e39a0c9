package diff_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// raOracle is the kernel, as ip-sysctl.rst states it, kept apart from the
// diff's own reasoning: new links copy the "default" keys when they are
// made (before any sysctl is written), a write of net.ipv6.conf.all.forwarding
// that changes it sets every link's forwarding and the default's, and the
// other keys are written as declared. A link ignores router advertisements
// when accept_ra is 1 and forwarding is on.
type raOracle struct {
	links  map[string]map[string]string // link -> "forwarding"/"accept_ra" -> value
	all    string                       // net.ipv6.conf.all.forwarding
	dflt   map[string]string            // default forwarding, accept_ra
	exists map[string]bool
}

func (o *raOracle) clone() *raOracle {
	c := &raOracle{links: map[string]map[string]string{}, all: o.all, dflt: map[string]string{}, exists: map[string]bool{}}
	for l, m := range o.links {
		c.links[l] = map[string]string{"forwarding": m["forwarding"], "accept_ra": m["accept_ra"]}
	}
	for k, v := range o.dflt {
		c.dflt[k] = v
	}
	for k, v := range o.exists {
		c.exists[k] = v
	}
	return c
}

// apply plays the file on the kernel: links first, then sysctls.
func (o *raOracle) apply(newLinks []string, declared map[string]string) {
	for _, l := range newLinks {
		o.links[l] = map[string]string{"forwarding": o.dflt["forwarding"], "accept_ra": o.dflt["accept_ra"]}
		o.exists[l] = true
	}
	if v, ok := declared["net.ipv6.conf.all.forwarding"]; ok && v != o.all {
		o.all = v
		o.dflt["forwarding"] = v
		for _, m := range o.links {
			m["forwarding"] = v
		}
	}
	for k, v := range declared {
		p := strings.Split(k, ".")
		switch {
		case p[3] == "all":
		case p[3] == "default":
			o.dflt[p[4]] = v
		default:
			o.links[p[3]][p[4]] = v
		}
	}
}

func (o *raOracle) ignored(l string) bool {
	m := o.links[l]
	return m != nil && m["accept_ra"] == "1" && m["forwarding"] == "1"
}

var warnedLinks = regexp.MustCompile(`ignores router advertisements on ([^ ]+(?:, [^ ]+)*) \(`)

// TestWarnRAGenerated: random hosts and files; the plan warns about the
// links whose router advertisements the kernel stops taking because of
// the plan (a link that is new only when the file turns forwarding on for
// it), and about no other.
func TestWarnRAGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	vals := []string{"0", "1", "2"}
	warned := 0
	const cases = 2000
	defer func() {
		// Both outcomes are common, or the cases test little.
		if !t.Failed() && (warned < cases/10 || warned > cases*9/10) {
			t.Errorf("%d of %d cases warn", warned, cases)
		}
	}()
	for n := 0; n < cases; n++ {
		k := newKernel()
		o := &raOracle{links: map[string]map[string]string{}, all: fmt.Sprint(r.IntN(2)), dflt: map[string]string{"forwarding": fmt.Sprint(r.IntN(2)), "accept_ra": vals[r.IntN(3)]}, exists: map[string]bool{}}
		var sys []model.Sysctl
		put := func(key, v string) {
			s := model.Sysctl{Key: key, Value: v}
			s.Link, _, _, _ = model.SysctlLink(key)
			sys = append(sys, s)
		}
		put("net.ipv6.conf.all.forwarding", o.all)
		put("net.ipv6.conf.default.forwarding", o.dflt["forwarding"])
		put("net.ipv6.conf.default.accept_ra", o.dflt["accept_ra"])
		var file strings.Builder
		file.WriteString("links:\n")
		var newLinks []string
		declared := map[string]string{}
		links := []string{"d0", "d1", "d2", "d3"}
		for _, l := range links {
			exists := r.IntN(4) != 0
			declare := !exists || r.IntN(2) == 0
			if exists {
				k.link(model.Link{Name: l, Kind: model.KindDummy, Owned: true, Up: true})
				o.exists[l] = true
				o.links[l] = map[string]string{"forwarding": fmt.Sprint(r.IntN(2)), "accept_ra": vals[r.IntN(3)]}
				put("net.ipv6.conf."+l+".forwarding", o.links[l]["forwarding"])
				put("net.ipv6.conf."+l+".accept_ra", o.links[l]["accept_ra"])
			} else {
				newLinks = append(newLinks, l)
			}
			if !declare {
				continue
			}
			fmt.Fprintf(&file, "  %s:\n    kind: dummy\n", l)
			var ks []string
			if r.IntN(3) == 0 {
				v := fmt.Sprint(r.IntN(2))
				ks = append(ks, "ipv6.forwarding: "+v)
				declared["net.ipv6.conf."+l+".forwarding"] = v
			}
			if r.IntN(3) == 0 {
				v := vals[r.IntN(3)]
				ks = append(ks, "ipv6.accept_ra: "+v)
				declared["net.ipv6.conf."+l+".accept_ra"] = v
			}
			if len(ks) > 0 {
				fmt.Fprintf(&file, "    sysctls: {%s}\n", strings.Join(ks, ", "))
			}
		}
		// Undeclared links that exist stay: they are not ours to delete
		// unless owned, so make those foreign.
		for _, l := range links {
			if o.exists[l] && !strings.Contains(file.String(), "  "+l+":\n") {
				k.st.Links[l].Owned = false
			}
		}
		var glob []string
		for _, key := range []string{"net.ipv6.conf.all.forwarding", "net.ipv6.conf.default.forwarding", "net.ipv6.conf.default.accept_ra"} {
			if r.IntN(3) == 0 {
				v := fmt.Sprint(r.IntN(2))
				if strings.HasSuffix(key, "accept_ra") {
					v = vals[r.IntN(3)]
				}
				glob = append(glob, fmt.Sprintf("  %s: %s", key, v))
				declared[key] = v
			}
		}
		if len(glob) > 0 {
			file.WriteString("sysctls:\n" + strings.Join(glob, "\n") + "\n")
		}
		model.SortSysctls(sys)
		k.st.Sysctls = sys

		before := o.clone()
		o.apply(newLinks, declared)
		fwdDeclared := func(l string) bool {
			for _, key := range []string{"net.ipv6.conf." + l + ".forwarding", "net.ipv6.conf.all.forwarding", "net.ipv6.conf.default.forwarding"} {
				if declared[key] == "1" {
					return true
				}
			}
			return false
		}
		var want []string
		for _, l := range links {
			if !o.exists[l] || !o.ignored(l) {
				continue
			}
			if before.exists[l] && !before.ignored(l) || !before.exists[l] && fwdDeclared(l) {
				want = append(want, l)
			}
		}
		text := strings.Replace(file.String(), "links:\n", "links: {}\n", 1)
		if strings.Contains(file.String(), "links:\n  ") {
			text = file.String()
		}
		if len(want) > 0 {
			warned++
		}
		plan, err := diff.Compute(parse(t, text), k.st)
		if err != nil {
			t.Fatalf("case %d: %v\n%s", n, err, file.String())
		}
		var got []string
		for _, w := range plan.Warnings {
			if m := warnedLinks.FindStringSubmatch(w.Message); m != nil {
				got = append(got, strings.Split(m[1], ", ")...)
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: warned about %v, the kernel stops taking router advertisements on %v\nfile:\n%s\nkernel: %+v\nplan:\n%s",
				n, got, want, file.String(), before, plan)
		}
	}
}

// A warning names the keys and the fix.
func TestWarningsNameKeysAndFix(t *testing.T) {
	k := newKernel().link(model.Link{Name: "eth0", Kind: model.KindDevice, Up: true})
	k.st.Sysctls = []model.Sysctl{
		{Key: "net.ipv6.conf.all.forwarding", Value: "0"},
		{Key: "net.ipv6.conf.default.accept_ra", Value: "1"},
		{Key: "net.ipv6.conf.default.forwarding", Value: "0"},
		{Key: "net.ipv6.conf.eth0.accept_ra", Value: "1", Link: "eth0"},
		{Key: "net.ipv6.conf.eth0.forwarding", Value: "0", Link: "eth0"},
	}
	file := "links:\n  eth0: {kind: device}\n  p0: {kind: veth, mtu: 1500, veth: {peer: p1}}\n  p1: {kind: veth, veth: {peer: p0}}\n" +
		"  mv0: {kind: macvlan, mtu: 9000, macvlan: {parent: p0}}\n" +
		"sysctls: {net.ipv6.conf.all.forwarding: 1}\n" +
		"routes:\n  - {to: 198.51.100.0/24, via: 192.0.2.1}\n"
	plan, err := diff.Compute(parse(t, file), k.st)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	diff.WriteWarnings(&text, plan.Warnings)
	want := []string{
		"warning: net.ipv6.conf.all.forwarding (t.yaml:7:11): with IPv6 forwarding on, the kernel ignores router advertisements on eth0, mv0, p0, p1 (accept_ra 1",
		"fix: set ipv6.accept_ra: 2 in the sysctls of each link",
		"warning: links.mv0.mtu (t.yaml:6:8), links.p0.mtu (t.yaml:4:7): link mv0's MTU 9000 is above its parent p0's 1500",
		"fix: set links.mv0.mtu to at most 1500, or raise p0's",
		"warning: route 198.51.100.0/24 table main via 192.0.2.1 (t.yaml:9:5): no address the file declares reaches gateway 192.0.2.1",
		"fix: declare an address in a subnet that holds 192.0.2.1, a device route to it, or onlink: true",
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("warnings:\n%s\nwant %q", text.String(), w)
		}
	}
	if len(plan.Warnings) != 3 {
		t.Errorf("%d warnings, want 3:\n%s", len(plan.Warnings), text.String())
	}
	// The same file applied: nothing to do, nothing to warn about.
	applied := parse(t, file)
	if p2, err := diff.Compute(applied, k.st); err == nil && len(p2.Ops) == 0 && len(p2.Warnings) > 0 {
		t.Errorf("an empty plan warns: %v", p2.Warnings)
	}
}

// A child made on a lower device whose MTU the plan raises is made
// without its MTU, which it gets after the raise: the kernel refuses a
// macvlan above its parent at creation and clamps a vxlan (the MTU
// warnings' kernel oracle met it, test/integration).
func TestChildMadeAboveItsParentGetsItsMTUAfter(t *testing.T) {
	run(t, []tc{{
		name:   "macvlan and vxlan on a parent going from 1500 to 9000",
		file:   "links:\n  p0: {kind: dummy, mtu: 9000}\n  mv0: {kind: macvlan, mtu: 9000, macvlan: {parent: p0}}\n  vx0: {kind: vxlan, mtu: 8950, vxlan: {id: 5, remote: 192.0.2.2, dev: p0}}\n",
		kernel: newKernel().link(model.Link{Name: "p0", Kind: model.KindDummy, Owned: true, Up: true}),
		plan: `
+ link mv0 (macvlan parent p0 mode bridge)
+ link vx0 (vxlan id 5 remote 192.0.2.2 dev p0 dstport 4789)
~ link p0
    mtu: 1500 -> 9000
~ link vx0
    mtu: p0's, when made -> 8950
~ link mv0
    mtu: p0's, when made -> 9000
`,
	}, {
		name:   "within the parent's MTU now: made with it",
		file:   "links:\n  p0: {kind: dummy, mtu: 9000}\n  mv0: {kind: macvlan, mtu: 1400, macvlan: {parent: p0}}\n",
		kernel: newKernel().link(model.Link{Name: "p0", Kind: model.KindDummy, Owned: true, Up: true}),
		plan: `
+ link mv0 (macvlan parent p0 mode bridge mtu 1400)
~ link p0
    mtu: 1500 -> 9000
`,
	}})
}

// A vxlan that joins an IPv6 group on a device the plan raises from below
// 1280 is made down and set up after the raise: the kernel refuses the
// join (EINVAL) on a device without IPv6. A vxlan over IPv4, or on a device
// that had IPv6, is set up in its create.
func TestVXLANJoinsItsIPv6GroupAfterTheRaise(t *testing.T) {
	low := newKernel().link(model.Link{Name: "d0", Kind: model.KindBridge, Owned: true, Up: true, MTU: 1200})
	run(t, []tc{{
		name:   "IPv6 group",
		file:   "links:\n  d0: {kind: bridge, mtu: 1500}\n  a0: {kind: vxlan, vxlan: {id: 5, group: \"ff05::100\", dev: d0}}\n",
		kernel: low,
		plan: `
+ link a0 (vxlan id 5 remote ff05::100 dev d0 dstport 4789)
~ link d0
    mtu: 1200 -> 1500
~ link a0
    mtu: d0's, when made -> 1430 (d0's, once raised)
    state: down (until its device has IPv6) -> up
`,
	}, {
		name:   "IPv4 group",
		file:   "links:\n  d0: {kind: bridge, mtu: 1500}\n  a0: {kind: vxlan, vxlan: {id: 5, group: 239.1.1.1, dev: d0}}\n",
		kernel: low,
		plan: `
+ link a0 (vxlan id 5 remote 239.1.1.1 dev d0 dstport 4789)
~ link d0
    mtu: 1200 -> 1500
~ link a0
    mtu: d0's, when made -> 1450 (d0's, once raised)
`,
	}})
}

// An IPv4 gateway that is an address of another link of the file, given
// with a dev whose declared subnet holds it, is reached: the kernel takes
// the route (its lookup through dev finds dev's subnet). The warning said
// no address on dev reached it. IPv6 refuses a local address as a gateway
// ("Gateway can not be a local address"): still warned. Found by an
// adversarial review.
func TestGatewayThatIsAnAddressOfAnotherLink(t *testing.T) {
	file := "links:\n  v2a: {kind: veth, veth: {peer: v2b}, addresses: [10.2.0.1/24, 2001:db8:2::1/64]}\n" +
		"  v2b: {kind: veth, veth: {peer: v2a}, addresses: [10.2.0.2/24, 2001:db8:2::2/64]}\n" +
		"routes:\n  - {to: 10.9.0.0/16, via: 10.2.0.2, dev: v2a}\n  - {to: 2001:db8:9::/48, via: 2001:db8:2::2, dev: v2a}\n"
	plan, err := diff.Compute(parse(t, file), newKernel().st)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	diff.WriteWarnings(&text, plan.Warnings)
	if strings.Contains(text.String(), "gateway 10.2.0.2") || !strings.Contains(text.String(), "gateway 2001:db8:2::2") || len(plan.Warnings) != 1 {
		t.Errorf("warnings:\n%s\nwant one, about the IPv6 gateway only", text.String())
	}
}

// A gateway in a declared subnet of a link that stays down is refused by
// the kernel (no route to a down link's subnets): the warning says so and
// names the link, rather than that no address reaches it; the same route
// once the link is up warns about nothing.
func TestGatewayOnALinkThatStaysDown(t *testing.T) {
	k := newKernel().link(model.Link{Name: "eth0", Kind: model.KindDevice})
	file := func(state string) string {
		return "links:\n  eth0: {kind: device" + state + ", addresses: [10.1.0.1/24]}\n" +
			"routes:\n  - {to: 10.50.0.0/16, via: 10.1.0.254, table: 100}\n  - {to: 10.60.0.0/16, via: 10.9.0.1}\n"
	}
	plan, err := diff.Compute(parse(t, file("")), k.st)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	diff.WriteWarnings(&text, plan.Warnings)
	for _, w := range []string{
		"warning: route 10.50.0.0/16 table 100 via 10.1.0.254 (t.yaml:5:5): gateway 10.1.0.254 on eth0 is in a subnet of a link that will be down",
		"fix: bring eth0 up (state: up)",
		"warning: route 10.60.0.0/16 table main via 10.9.0.1 (t.yaml:6:5): no address the file declares reaches gateway 10.9.0.1",
	} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("warnings:\n%s\nwant %q", text.String(), w)
		}
	}
	if len(plan.Warnings) != 2 {
		t.Errorf("%d warnings, want 2:\n%s", len(plan.Warnings), text.String())
	}
	plan, err = diff.Compute(parse(t, file(", state: up")), k.st)
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	diff.WriteWarnings(&text, plan.Warnings)
	if strings.Contains(text.String(), "10.1.0.254") || len(plan.Warnings) != 1 {
		t.Errorf("eth0 up: warnings:\n%s\nwant one, about 10.9.0.1 only", text.String())
	}
}
