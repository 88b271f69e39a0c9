package diff_test

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Every op carries its disruption, derived from what the kernel does: the
// cases name the op and the level the plan must give it. The real kernel
// checks the same classes in test/integration (disruption_test.go) and in
// the guest (test/e2e, bond and vrf).
func TestDisruptionClasses(t *testing.T) {
	eth := model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}
	br := func(name string) model.Link {
		return model.Link{Name: name, Kind: model.KindBridge, Owned: true, Up: true}
	}
	passthru := func(up bool, master string) model.Link {
		return model.Link{Name: "mv0", Kind: model.KindMACVlan, Owned: true, Up: up, Master: master, Lower: "eth0", MACVlan: &model.MACVlan{Parent: "eth0", Mode: model.MACVlanPassthru}}
	}
	bond := model.Link{Name: "bond0", Kind: model.KindBond, Owned: true, Up: true, Bond: &model.Bond{Mode: "balance-rr", Miimon: 100}}
	vrf := model.Link{Name: "blue", Kind: model.KindVRF, Owned: true, Up: true, VRF: &model.VRF{Table: 10}}
	dummy := func(name string, up bool, master string) model.Link {
		return model.Link{Name: name, Kind: model.KindDummy, Owned: true, Up: up, Master: master}
	}
	vx := model.Link{Name: "vx0", Kind: model.KindVXLAN, Owned: true, Up: true, VXLAN: &model.VXLAN{ID: 100, Remote: ip("192.0.2.2"), Port: 4789, Learning: true}}
	for _, c := range []struct {
		name   string
		file   string
		kernel *kernel
		want   map[string]diff.Disruption // "kind id" -> level; every op of the plan is listed
		reason string                     // in the flapped op's reason
	}{{
		name:   "an MTU change is in place",
		file:   "links:\n  br0: {kind: bridge, mtu: 1400}\n",
		kernel: newKernel().link(br("br0")),
		want:   map[string]diff.Disruption{"link br0": diff.InPlace},
	}, {
		name:   "a vxlan id is fixed at creation: recreated",
		file:   "links:\n  vx0: {kind: vxlan, vxlan: {id: 200, remote: 192.0.2.2}}\n",
		kernel: newKernel().link(vx),
		want:   map[string]diff.Disruption{"link vx0": diff.LinkRecreated},
	}, {
		name:   "a passthru macvlan that is up changes master down and up",
		file:   "links:\n  eth0: {kind: device}\n  br0: {kind: bridge}\n  mv0: {kind: macvlan, master: br0, macvlan: {parent: eth0, mode: passthru}}\n",
		kernel: newKernel().link(eth).link(br("br0")).link(passthru(true, "")),
		want:   map[string]diff.Disruption{"link mv0": diff.LinkFlapped},
		reason: "passthru macvlan",
	}, {
		name:   "a passthru macvlan that is down does not flap",
		file:   "links:\n  eth0: {kind: device}\n  br0: {kind: bridge}\n  mv0: {kind: macvlan, master: br0, state: down, macvlan: {parent: eth0, mode: passthru}}\n",
		kernel: newKernel().link(eth).link(br("br0")).link(passthru(false, "")),
		want:   map[string]diff.Disruption{"link mv0": diff.InPlace},
	}, {
		name:   "a port moving between bridges is in place",
		file:   "links:\n  br0: {kind: bridge}\n  br1: {kind: bridge}\n  d0: {kind: dummy, master: br1}\n",
		kernel: newKernel().link(br("br0")).link(br("br1")).link(dummy("d0", true, "br0")),
		want:   map[string]diff.Disruption{"link d0": diff.InPlace},
	}, {
		name:   "a bond's mode on a bond that is up: flapped",
		file:   "links:\n  bond0: {kind: bond, bond: {mode: active-backup}}\n",
		kernel: newKernel().link(bond),
		want:   map[string]diff.Disruption{"link bond0": diff.LinkFlapped},
		reason: "bond's mode",
	}, {
		name:   "a link joining a bond: flapped",
		file:   "links:\n  bond0: {kind: bond}\n  d0: {kind: dummy, master: bond0}\n",
		kernel: newKernel().link(bond).link(dummy("d0", true, "")),
		want:   map[string]diff.Disruption{"link d0": diff.LinkFlapped},
		reason: "joins a bond",
	}, {
		name:   "a link that is down joining a bond: in place",
		file:   "links:\n  bond0: {kind: bond}\n  d0: {kind: dummy, state: down, master: bond0}\n",
		kernel: newKernel().link(bond).link(dummy("d0", false, "")),
		want:   map[string]diff.Disruption{"link d0": diff.InPlace},
	}, {
		name:   "a link set down by the file: in place",
		file:   "links:\n  d0: {kind: dummy, state: down}\n",
		kernel: newKernel().link(dummy("d0", true, "")),
		want:   map[string]diff.Disruption{"link d0": diff.InPlace},
	}, {
		name: "a link joining a vrf, with its vlan: flapped, the vlan named",
		file: "links:\n  blue: {kind: vrf, vrf: {table: 10}}\n  d0: {kind: dummy, master: blue}\n  v5: {kind: vlan, vlan: {parent: d0, id: 5}, addresses: [fd00::5/64]}\n",
		kernel: newKernel().link(vrf).link(dummy("d0", true, "")).
			link(model.Link{Name: "v5", Kind: model.KindVLAN, Owned: true, Up: true, Lower: "d0", VLAN: &model.VLAN{Parent: "d0", ID: 5, Protocol: model.VLAN8021Q}}).
			addr("v5", "fd00::5/64", 0),
		want:   map[string]diff.Disruption{"link d0": diff.LinkFlapped, "address fd00::5/64 dev v5": diff.InPlace},
		reason: "vlans on it: v5",
	}, {
		name:   "a stale link's delete is in place",
		file:   "links: {}\n",
		kernel: newKernel().link(dummy("d0", true, "")),
		want:   map[string]diff.Disruption{"link d0": diff.InPlace},
	}} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := diff.Compute(parse(t, c.file), c.kernel.st)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]diff.Disruption{}
			for _, op := range plan.Ops {
				got[string(op.Kind)+" "+op.ID] = op.Disruption
				if op.Disruption == diff.LinkFlapped && !strings.Contains(op.Reason, c.reason) {
					t.Errorf("%s %s: reason %q does not say %q", op.Kind, op.ID, op.Reason, c.reason)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("plan:\n%s\nwant the ops %v", plan, c.want)
			}
			for k, w := range c.want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("%s: %v, want %v\nplan:\n%s", k, g, w, plan)
				}
			}
		})
	}
}

// A table rebuilt whole is table-replaced; its other ops, and the ops of
// tables changed in place, are in place.
func TestDisruptionTableReplaced(t *testing.T) {
	file := "nftables:\n  inet t:\n    sets:\n      s: {type: SETTYPE, elements: []}\n"
	k := newKernel()
	k.st.NFTables = parse(t, strings.Replace(file, "SETTYPE", "ipv4_addr", 1)).NFTables
	k.st.NFTables[0].Owned = true
	plan, err := diff.Compute(parse(t, strings.Replace(file, "SETTYPE", "ipv6_addr", 1)), k.st)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Ops) == 0 || plan.Ops[0].Disruption != diff.TableReplaced {
		t.Fatalf("plan:\n%s\nwant a table replaced first", plan)
	}
	for _, op := range plan.Ops[1:] {
		if op.Disruption != diff.InPlace {
			t.Errorf("%s %s: %v, want in place", op.Kind, op.ID, op.Disruption)
		}
	}
	if plan.Most() != diff.TableReplaced {
		t.Errorf("Most: %v", plan.Most())
	}
}

// Inputs.MaxDisruption holds a link whose op is above it, with what needs
// it, and lists both; the rest of the plan goes on.
func TestMaxDisruptionHolds(t *testing.T) {
	bond := model.Link{Name: "bond0", Kind: model.KindBond, Owned: true, Up: true, Bond: &model.Bond{Mode: "balance-rr", Miimon: 100}}
	file := "links:\n  bond0: {kind: bond, bond: {mode: active-backup}, addresses: [10.0.0.1/24]}\n  d1: {kind: dummy, mtu: 1400}\n" +
		"routes:\n  - {to: 192.0.2.0/24, dev: bond0}\n"
	k := newKernel().link(bond).link(model.Link{Name: "d1", Kind: model.KindDummy, Owned: true, Up: true})
	for _, c := range []struct {
		max  diff.Disruption
		plan string
		held []string
	}{{
		max:  diff.InPlace,
		plan: "~ link d1\n    mtu: 1500 -> 1400\n",
		held: []string{"link bond0"},
	}, {
		max: diff.LinkFlapped,
		plan: "~ link bond0: down and up: the kernel changes a bond's mode only while it is down [link flapped]\n    bond mode: balance-rr -> active-backup\n" +
			"~ link d1\n    mtu: 1500 -> 1400\n+ address 10.0.0.1/24 dev bond0\n+ route 192.0.2.0/24 table main (dev bond0 scope link)\n",
	}} {
		t.Run(c.max.String(), func(t *testing.T) {
			max := c.max
			plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.String(); got != c.plan {
				t.Errorf("plan:\n%s\nwant:\n%s", got, c.plan)
			}
			var held []string
			for _, op := range plan.Held {
				held = append(held, string(op.Kind)+" "+op.ID)
			}
			if strings.Join(held, ",") != strings.Join(c.held, ",") {
				t.Errorf("held %v, want %v", held, c.held)
			}
			if len(c.held) > 0 {
				deps := strings.Join(plan.HeldDependents, "\n")
				for _, w := range []string{"address 10.0.0.1/24 dev bond0 is held", "route 192.0.2.0/24 table main is held"} {
					if !strings.Contains(deps, w) {
						t.Errorf("held dependents:\n%s\nwant %q", deps, w)
					}
				}
			}
		})
	}
}

func TestDisruptionNames(t *testing.T) {
	for _, d := range diff.Disruptions() {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back diff.Disruption
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Errorf("%s: %s back as %v (%v)", d, b, back, err)
		}
		if p, err := diff.ParseDisruption(d.String()); err != nil || p != d {
			t.Errorf("parse %s: %v %v", d, p, err)
		}
	}
	if _, err := diff.ParseDisruption("flapped"); err == nil || !strings.Contains(err.Error(), "in-place, table-replaced, readded, link-flapped, link-recreated") {
		t.Errorf("a bad level: %v", err)
	}
	var d diff.Disruption
	if err := json.Unmarshal([]byte(`"everything"`), &d); err == nil {
		t.Error("an unknown level decoded")
	}
}

// A veth end held back (its pair would be made again, with another peer)
// keeps the stale end it is paired with: the kernel deletes a pair whole,
// so that delete would take the held end with it. Walk finding 85 (host
// seed 24484846813659, step 108, shrunk to two steps: p9a/p9b, then
// p9c/p9b under max-disruption in-place).
func TestWalkFinding85HeldVethKeepsItsPeer(t *testing.T) {
	veth := func(name, peer string) model.Link {
		return model.Link{Name: name, Kind: model.KindVeth, Owned: true, Up: true, Veth: &model.Veth{Peer: peer, PeerNSID: -1}}
	}
	k := newKernel().link(veth("p9a", "p9b")).link(veth("p9b", "p9a"))
	file := "links:\n  p9b: {kind: veth, veth: {peer: p9c}}\n  p9c: {kind: veth, veth: {peer: p9b}}\n"
	max := diff.InPlace
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range plan.Ops {
		if op.Kind == diff.KindLink {
			t.Errorf("a link op beside the held pair: %s %s", op.Action, op.ID)
		}
	}
	if len(plan.Held) != 1 || plan.Held[0].ID != "p9b" {
		t.Errorf("held %v, want link p9b", plan.Held)
	}
	if deps := strings.Join(plan.HeldDependents, "\n"); !strings.Contains(deps, "p9a") {
		t.Errorf("held dependents:\n%s\nwant the delete of p9a", deps)
	}
	// Without a limit, the pair is made again, and the stale end goes
	// with it.
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "± link p9b (veth peer p9c)") {
		t.Errorf("without a limit:\n%s\nwant the pair made again", plan)
	}
}

// An address or FoU port the plan would delete and add again is readded:
// a limit below that holds it as the kernel has it, lists it as held, and
// plans the rest; the address keeps the routes that take it as source, and
// an IPv6 address of another prefix length is not deleted as stale.
func TestMaxDisruptionHoldsReadded(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}
	k := newKernel().link(br).
		addr("br0", "10.0.0.1/32", 0).
		addr("br0", "fd00::1/64", 0).
		addr("br0", "10.1.0.1/24", 0).
		addr("br0", "10.1.0.2/24", 0).
		fou(model.FouPort{Port: 5555, IPProto: 4, Owned: true})
	// 10.1.0.0/24 changes scope with two addresses in the file: each is a
	// delete and a create of its key rather than one replace.
	file := "links:\n  br0: {kind: bridge, mtu: 1400, addresses: [{address: 10.0.0.1/32, scope: host}, fd00::1/80, {address: 10.1.0.1/24, scope: link}, {address: 10.1.0.2/24, scope: link}]}\n" +
		"fou:\n  - {port: 5555, ipproto: 41}\n"
	all, err := diff.Compute(parse(t, file), k.st)
	if err != nil {
		t.Fatal(err)
	}
	readded := map[string]bool{}
	for _, op := range all.Ops {
		if op.Disruption == diff.Readded {
			readded[string(op.Kind)+" "+op.ID] = true
		}
	}
	for _, w := range []string{"address 10.0.0.1/32 dev br0", "address fd00::1/80 dev br0", "address 10.1.0.1/24 dev br0", "address 10.1.0.2/24 dev br0", "fou fou port 5555"} {
		if !readded[w] {
			t.Errorf("%s is not readded in the plan:\n%s", w, all)
		}
	}
	for _, max := range []diff.Disruption{diff.InPlace, diff.TableReplaced} {
		plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := plan.String(), "~ link br0\n    mtu: 1500 -> 1400\n"; got != want {
			t.Errorf("%s: plan:\n%s\nwant:\n%s", max, got, want)
		}
		var held []string
		for _, op := range plan.Held {
			held = append(held, string(op.Kind)+" "+op.ID)
		}
		if len(held) != 5 {
			t.Errorf("%s: held %q, want the five readded", max, held)
		}
	}
	max := diff.Readded
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Held) != 0 || plan.String() != all.String() {
		t.Errorf("readded holds %v; plan:\n%s\nwant:\n%s", plan.Held, plan, all)
	}
}

// A delete that would take a held link with it waits, as the veth pair's
// other end does (walk finding 85): the delete of the veth pair a held
// vxlan is on, of a held link's master. Walk finding 180 (host soak
// seed 61494414667499, step 20).
func TestHeldLinkKeepsItsLowerAndMaster(t *testing.T) {
	veth := func(name, peer string) model.Link {
		return model.Link{Name: name, Kind: model.KindVeth, Owned: true, Up: true, Veth: &model.Veth{Peer: peer, PeerNSID: -1}}
	}
	k := newKernel().link(veth("p9a", "p9d")).link(veth("p9d", "p9a")).
		link(model.Link{Name: "b0", Kind: model.KindBridge, Owned: true, Up: true}).
		link(model.Link{Name: "x0", Kind: model.KindVXLAN, Owned: true, Up: true, Master: "b0", VXLAN: &model.VXLAN{ID: 100, Remote: ip("198.51.100.1"), Port: 4789, Dev: "p9a", Learning: true}})
	// x0 loses its dev (a recreate, held), and the file drops the pair
	// it was on and its master.
	file := "links:\n  x0: {kind: vxlan, vxlan: {id: 100, remote: 198.51.100.1}}\n"
	max := diff.LinkFlapped
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range plan.Ops {
		if op.Kind == diff.KindLink {
			t.Errorf("a link op beside the held vxlan: %s %s", op.Action, op.ID)
		}
	}
	if len(plan.Held) != 1 || plan.Held[0].ID != "x0" {
		t.Errorf("held %v, want link x0", plan.Held)
	}
	deps := strings.Join(plan.HeldDependents, "\n")
	for _, w := range []string{"link b0 is not deleted: the kernel would release x0 from its master with it, which is held", "link p9a is not deleted: the kernel would delete x0 with it, which is held"} {
		if !strings.Contains(deps, w) {
			t.Errorf("held dependents:\n%s\nwant %q", deps, w)
		}
	}
}

// A pool address whose prefix length the file changes is the kernel's
// address replaced (IPv6 knows an address by the address alone). Held
// back by max-disruption, it stays as the kernel has it: the pool still
// gives the link that address, so it is not given back either, on a link
// netreconcile owns or not. Walk finding 204 (host soak seed
// 124038022870303, step 15).
func TestWalkFinding204HeldPoolAddressIsNotGivenBack(t *testing.T) {
	for _, link := range []model.Link{
		{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true},
		{Name: "eth0", Kind: "dummy", Up: true},
	} {
		kind := "bridge"
		if !link.Owned {
			kind = "device"
		}
		k := newKernel().link(link).addr(link.Name, "fd98::1/120", 0).addr(link.Name, "10.98.0.1/24", 0)
		file := "links:\n  " + link.Name + ": {kind: " + kind + ", addresses: [fd98::1/128, 10.98.0.1/24]}\n"
		in := func(max diff.Disruption) diff.Inputs {
			return diff.Inputs{MaxDisruption: &max, PoolAddrs: map[string]map[netip.Addr]bool{
				link.Name: {netip.MustParseAddr("fd98::1"): true, netip.MustParseAddr("10.98.0.1"): true},
			}}
		}
		plan, err := diff.ComputeWith(parse(t, file), k.st, in(diff.InPlace))
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Ops) != 0 {
			t.Errorf("%s: in-place plans:\n%s\nwant nothing: the replace is held", link.Name, plan)
		}
		if len(plan.Held) != 1 || plan.Held[0].ID != "fd98::1/128 dev "+link.Name {
			t.Errorf("%s: held %v, want the replace of fd98::1/128", link.Name, plan.Held)
		}
		plan, err = diff.ComputeWith(parse(t, file), k.st, in(diff.Readded))
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Ops) != 1 || plan.Ops[0].Action != diff.Replace || plan.Ops[0].ID != "fd98::1/128 dev "+link.Name {
			t.Errorf("%s: readded plans:\n%s\nwant the replace of fd98::1/128 alone", link.Name, plan)
		}
	}
}

// The kernel keeps one scope per IPv4 subnet. An address whose scope
// change max-disruption holds keeps its subnet's scope, so the file's
// other address of that subnet, in the new scope, waits with it: created
// beside it, the kernel refuses it (EINVAL) and the service's pass
// fails. Walk finding 205 (found by reading the fix of 204).
func TestWalkFinding205AddressWaitsForItsSubnetsHeldScope(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}
	k := newKernel().link(br).addr("br0", "10.1.0.1/24", 0).addr("br0", "10.2.0.1/24", 0)
	file := "links:\n  br0: {kind: bridge, addresses: [{address: 10.1.0.1/24, scope: link}, {address: 10.1.0.2/24, scope: link}, 10.2.0.1/24, 10.2.0.2/24]}\n"
	max := diff.InPlace
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.String(), "+ address 10.2.0.2/24 dev br0\n"; got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	if want := []string{"address 10.1.0.2/24 dev br0 is held: its subnet keeps scope global with held address 10.1.0.1/24 dev br0"}; !slices.Equal(plan.HeldDependents, want) {
		t.Errorf("held dependents %q, want %q", plan.HeldDependents, want)
	}
	// Once the scope is changed, the address comes.
	max = diff.Readded
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "+ address 10.1.0.2/24 dev br0 (scope link)") || len(plan.HeldDependents) != 0 {
		t.Errorf("readded plan:\n%s\nheld dependents %q", plan, plan.HeldDependents)
	}
}

// A route whose gateway only the new form of an address reaches (its
// subnet's prefix route, a new peer, a wider IPv6 prefix) needs that
// form: max-disruption holds the address as the kernel has it, so the
// kernel refuses the route ("Nexthop has invalid gateway", "No route to
// host") and the service's pass fails. The route waits with the address.
func TestWalkFinding206RouteWaitsForItsGatewaysHeldAddress(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}
	for _, tc := range []struct {
		name, kaddr, addr, route string
		noprefix                 bool
	}{
		{"prefix route", "10.5.0.1/24", "10.5.0.1/24", "{to: 10.99.0.0/24, via: 10.5.0.254, dev: br0}", true},
		{"prefix route, no dev", "10.5.0.1/24", "10.5.0.1/24", "{to: 10.99.0.0/24, via: 10.5.0.254}", true},
		{"peer", "10.6.0.1/32", "{address: 10.6.0.1/32, peer: 10.6.0.3/32}", "{to: 10.99.0.0/24, via: 10.6.0.3, dev: br0}", false},
		{"ipv6 prefix length", "fd00::1/64", "fd00::1/56", "{to: 2001:db8::/64, via: 'fd00:0:0:10::1', dev: br0}", false},
		// A secondary of the subnet gets no prefix route of its own.
		{"secondary", "10.5.0.1/24", "10.5.0.1/24, 10.5.0.2/24", "{to: 10.99.0.0/24, via: 10.5.0.254, dev: br0}", true},
	} {
		k := newKernel().link(br).addr("br0", tc.kaddr, 0)
		k.st.Addresses[0].NoPrefixRoute = tc.noprefix
		if tc.name == "peer" {
			k.st.Addresses[0].Peer = pfx("10.6.0.2/32")
		}
		file := "links:\n  br0: {kind: bridge, addresses: [" + tc.addr + "]}\nroutes:\n  - " + tc.route + "\n"
		max := diff.InPlace
		plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if strings.Contains(plan.String(), "route") || len(plan.Held) != 1 || len(plan.HeldDependents) != 1 || !strings.Contains(plan.HeldDependents[0], "is held: its gateway") {
			t.Errorf("%s: in-place plans:\n%s\nheld %d, dependents %q; want the address held and the route waiting", tc.name, plan, len(plan.Held), plan.HeldDependents)
		}
		max = diff.Readded
		plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if last := plan.Ops[len(plan.Ops)-1]; last.Kind != diff.KindRoute || last.Action != diff.Create || len(plan.HeldDependents) != 0 {
			t.Errorf("%s: readded plans:\n%s\ndependents %q; want the replace and the route", tc.name, plan, plan.HeldDependents)
		}
	}
}

// A gateway the held address's old form reaches, or another address of
// the file, needs nothing held: its route is written.
func TestWalkFinding206RouteReachedOtherwiseIsWritten(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}
	for _, tc := range []struct{ name, kaddrs, addrs, route string }{
		{"old prefix", "fd00::1/64", "fd00::1/56", "{to: 2001:db8::/64, via: 'fd00::9', dev: br0}"},
		{"other subnet", "10.5.0.1/24", "10.5.0.1/24, 10.5.1.2/23", "{to: 10.99.0.0/24, via: 10.5.0.254, dev: br0}"},
	} {
		k := newKernel().link(br)
		for _, a := range strings.Split(tc.kaddrs, ", ") {
			k.addr("br0", a, 0)
		}
		k.st.Addresses[0].NoPrefixRoute = tc.name == "other subnet"
		file := "links:\n  br0: {kind: bridge, addresses: [" + tc.addrs + "]}\nroutes:\n  - " + tc.route + "\n"
		max := diff.InPlace
		plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(plan.Held) != 1 || len(plan.HeldDependents) != 0 || !strings.Contains(plan.String(), "+ route ") {
			t.Errorf("%s: in-place plans:\n%s\nheld %d, dependents %q; want the route written", tc.name, plan, len(plan.Held), plan.HeldDependents)
		}
	}
}

// An address that waits with a held address of its subnet (205) is not in
// the kernel, which refuses a route from it ("Invalid prefsrc address"):
// the route waits too. Walk finding 207.
func TestWalkFinding207RouteWaitsForItsSourceThatWaits(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}
	k := newKernel().link(br).addr("br0", "10.1.0.1/24", 0)
	file := "links:\n  br0: {kind: bridge, addresses: [{address: 10.1.0.1/24, scope: link}, {address: 10.1.0.2/24, scope: link}]}\n" +
		"routes:\n  - {to: 10.99.0.0/24, dev: br0, src: 10.1.0.2}\n  - {to: 10.98.0.0/24, dev: br0, src: 10.1.0.1}\n"
	max := diff.InPlace
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.String(), "+ route 10.98.0.0/24 table main (dev br0 src 10.1.0.1 scope link)\n"; got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	if want := "route 10.99.0.0/24 table main is held: its source 10.1.0.2 waits with held address 10.1.0.1/24 dev br0"; !slices.Contains(plan.HeldDependents, want) {
		t.Errorf("held dependents %q, want %q among them", plan.HeldDependents, want)
	}
	// Once it is in the kernel, the route is written.
	k.addr("br0", "10.1.0.2/24", 0)
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "+ route 10.99.0.0/24") {
		t.Errorf("with 10.1.0.2 in the kernel, plan:\n%s\nwant the route", plan)
	}
}

// A link whose MTU write waits for a held link (the kernel would move the
// held one's with it) keeps its MTU, and so does the kernel's IPv6 route
// through it: written again as if moved with the link's, the route was
// written on every pass. Walk finding 208.
func TestWalkFinding208RouteMTUStaysWithALinkMTUThatWaits(t *testing.T) {
	k := newKernel().link(model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true, MTU: 1500}).
		link(model.Link{Name: "m0", Kind: model.KindMACVlan, Owned: true, Up: true, MTU: 1500, Lower: "br0", MACVlan: &model.MACVlan{Parent: "br0", Mode: model.MACVlanBridge}}).
		route(model.Route{Dst: pfx("2001:db8:1::/64"), Dev: "br0", Table: 254, Metric: 1024, MTU: 1300, Protocol: 245})
	file := "links:\n  br0: {kind: bridge, mtu: 1280}\n  m0: {kind: macvlan, macvlan: {parent: br0, mode: passthru}}\nroutes:\n  - {to: '2001:db8:1::/64', dev: br0, mtu: 1300}\n"
	max := diff.InPlace
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Ops) != 0 || len(plan.Held) != 1 {
		t.Errorf("in-place plans:\n%s\nheld %d; want nothing, m0 held", plan, len(plan.Held))
	}
	// With the link's MTU written, the route is written again after it.
	max = diff.LinkRecreated
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "mtu: 1300 (moved to 1280 with br0's) -> 1300") {
		t.Errorf("link-recreated plans:\n%s\nwant the route written again", plan)
	}
}

// A link whose MTU write below IPv6's minimum waits for a held link keeps
// its MTU, and its IPv6 with it: the IPv6 address and route of ours that
// left the file are deleted, not left to a flush that does not come (they
// stayed, and the next pass planned nothing for them). Walk finding 209.
func TestWalkFinding209IPv6StaysWithALinkMTUThatWaits(t *testing.T) {
	k := newKernel().link(model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true, MTU: 1500}).
		link(model.Link{Name: "m0", Kind: model.KindMACVlan, Owned: true, Up: true, MTU: 1500, Lower: "br0", MACVlan: &model.MACVlan{Parent: "br0", Mode: model.MACVlanBridge}}).
		addr("br0", "fd00::1/64", 0).addr("br0", "10.0.0.1/24", 0).
		route(model.Route{Dst: pfx("2001:db8:1::/64"), Dev: "br0", Table: 254, Metric: 1024, Protocol: 245})
	file := "links:\n  br0: {kind: bridge, mtu: 1200, addresses: [10.0.0.1/24]}\n  m0: {kind: macvlan, macvlan: {parent: br0, mode: passthru}}\n"
	max := diff.InPlace
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.String(), "- route 2001:db8:1::/64 table main metric 1024 (dev br0)\n- address fd00::1/64 dev br0\n"; got != want {
		t.Errorf("in-place plans:\n%s\nwant:\n%s", got, want)
	}
	// With the MTU written, the kernel takes them with the link's IPv6.
	max = diff.LinkRecreated
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if s := plan.String(); strings.Contains(s, "- route") || strings.Contains(s, "- address") {
		t.Errorf("link-recreated plans:\n%s\nwant no delete: the MTU takes them", plan)
	}
}

// A link whose MTU write waits for a held link keeps its MTU: IPv6 turned
// back on sets its ipv6.mtu to that one, not the file's, so the key the
// file gives is written again after. Walk finding 210.
func TestWalkFinding210IPv6MTUKeyWithALinkMTUThatWaits(t *testing.T) {
	k := newKernel().link(model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true, MTU: 1500}).
		link(model.Link{Name: "m0", Kind: model.KindMACVlan, Owned: true, Up: true, MTU: 1500, Lower: "br0", MACVlan: &model.MACVlan{Parent: "br0", Mode: model.MACVlanBridge}})
	k.st.Sysctls = []model.Sysctl{
		{Key: "net.ipv6.conf.br0.disable_ipv6", Value: "1", Link: "br0"},
		{Key: "net.ipv6.conf.br0.mtu", Value: "1400", Link: "br0"},
	}
	file := "links:\n  br0: {kind: bridge, mtu: 1400, sysctls: {ipv6.disable_ipv6: 0, ipv6.mtu: 1400}}\n  m0: {kind: macvlan, macvlan: {parent: br0, mode: passthru}}\n"
	max := diff.InPlace
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "value: 1400 (set to 1500, br0's MTU) -> 1400") {
		t.Errorf("in-place plans:\n%s\nwant net.ipv6.conf.br0.mtu written again after disable_ipv6", plan)
	}
	// With the MTU written, the kernel sets the key to the file's value.
	max = diff.LinkRecreated
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.String(), "net.ipv6.conf.br0.mtu") {
		t.Errorf("link-recreated plans:\n%s\nwant no write of net.ipv6.conf.br0.mtu", plan)
	}
}

// The file gives an address noprefixroute and declares its prefix route
// itself (what validation suggests for a route with the prefix route's
// key). The kernel's prefix route goes with the address's change, which
// runs before the routes: the route is created, not a conflict with it.
// Held back by max-disruption, the change leaves the kernel's route as it
// is, and the route waits with it: a conflict, on every pass, before.
// Walk finding 211.
func TestWalkFinding211RouteInPlaceOfAPrefixRouteThatGoes(t *testing.T) {
	br := model.Link{Name: "br0", Kind: model.KindBridge, Owned: true, Up: true}
	k := newKernel().link(br).addr("br0", "10.5.0.1/24", 0).addr("br0", "fd00::1/64", 0).
		route(model.Route{Dst: pfx("10.5.0.0/24"), Dev: "br0", Table: 254, Protocol: 2, Scope: 253}).
		route(model.Route{Dst: pfx("fd00::/64"), Dev: "br0", Table: 254, Metric: 256, Protocol: 2})
	file := "links:\n  br0: {kind: bridge, addresses: [{address: 10.5.0.1/24, noprefixroute: true}, {address: 'fd00::1/64', noprefixroute: true}]}\n" +
		"routes:\n  - {to: 10.5.0.0/24, dev: br0}\n  - {to: 'fd00::/64', dev: br0, metric: 256}\n"
	plan, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if s := plan.String(); !strings.Contains(s, "+ route 10.5.0.0/24 table main") || !strings.Contains(s, "+ route fd00::/64 table main metric 256") {
		t.Errorf("plan:\n%s\nwant both routes created", plan)
	}
	// In place, the IPv6 address's change runs (NLM_F_REPLACE), and the
	// IPv4 one's is held, its route with it.
	max := diff.InPlace
	plan, err = diff.ComputeWith(parse(t, file), k.st, diff.Inputs{MaxDisruption: &max})
	if err != nil {
		t.Fatal(err)
	}
	if s := plan.String(); strings.Contains(s, "+ route 10.5.0.0/24") || !strings.Contains(s, "+ route fd00::/64 table main metric 256") {
		t.Errorf("in-place plans:\n%s\nwant the IPv6 route alone", plan)
	}
	if want := "route 10.5.0.0/24 table main is held: the kernel's prefix route of held address 10.5.0.1/24 dev br0 has its key"; !slices.Equal(plan.HeldDependents, []string{want}) {
		t.Errorf("held dependents %q, want %q", plan.HeldDependents, want)
	}
	// Another address making the same prefix route keeps it: a conflict;
	// so does a secondary of the IPv4 subnet, promoted, making it again.
	sec := newKernel().link(br).addr("br0", "10.5.0.1/24", 0).addr("br0", "10.5.0.9/24", 0).
		route(model.Route{Dst: pfx("10.5.0.0/24"), Dev: "br0", Table: 254, Protocol: 2, Scope: 253})
	sec.st.Addresses[1].Secondary = true
	if _, err := diff.ComputeWith(parse(t, file), sec.st, diff.Inputs{}); err == nil || !strings.Contains(err.Error(), "route 10.5.0.0/24 table main exists with protocol 2") {
		t.Errorf("with the secondary 10.5.0.9/24: err %v, want the conflict", err)
	}
	k.addr("br0", "fd00::2/64", 0)
	if _, err := diff.ComputeWith(parse(t, file), k.st, diff.Inputs{}); err == nil || !strings.Contains(err.Error(), "route fd00::/64 table main metric 256 exists with protocol 2") {
		t.Errorf("with fd00::2/64 too: err %v, want the conflict", err)
	}
}
