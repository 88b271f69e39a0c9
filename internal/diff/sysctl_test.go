package diff

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// TestSysctlPlan checks the pure diff of sysctls: which keys are written,
// given back or left alone, and the ops apply and the ledger need.
func TestSysctlPlan(t *testing.T) {
	link := func(name string) *model.Link {
		return &model.Link{Name: name, Kind: model.KindBridge, MTU: 1500, Up: true, Owned: true}
	}
	for _, tc := range []struct {
		name    string
		want    []model.Sysctl
		have    []model.Sysctl
		links   []string // in both states
		newLink string   // declared only
		plan    string
		was     []string // SysctlWas of each op
	}{{
		name: "equal: nothing, whoever set it",
		want: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1"}},
		have: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1"}},
	}, {
		name: "differs: update, from the kernel's value",
		want: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1"}},
		have: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "0"}},
		plan: "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n",
		was:  []string{"0"},
	}, {
		name: "owned and gone from the file: the old value back",
		have: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1", Owned: true, Original: "0"}},
		plan: "- sysctl net.ipv4.ip_forward: back to the value found before netreconcile set it\n    value: 1 -> 0\n",
		was:  []string{"1"},
	}, {
		name: "an owned secret given back: the values are not shown",
		have: []model.Sysctl{{Key: "net.ipv6.conf.default.stable_secret", Value: "2001:0db8:0000:0000:0000:0000:0000:1234", Owned: true, Original: "2001:0db8:0000:0000:0000:0000:0000:0005"}},
		plan: "- sysctl net.ipv6.conf.default.stable_secret: back to the value found before netreconcile set it\n    value: (a secret, not shown) -> the one found before, not shown\n",
		was:  []string{"2001:0db8:0000:0000:0000:0000:0000:1234"},
	}, {
		name: "owned, gone from the file, already back: the record goes, nothing is written",
		have: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "0", Owned: true, Original: "0"}},
		plan: "- sysctl net.ipv4.ip_forward: already at the value found before netreconcile set it\n",
		was:  []string{"0"},
	}, {
		name: "not owned and not declared: untouched",
		have: []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1"}},
	}, {
		name:    "new link: written after it, from the default",
		newLink: "br0",
		want:    []model.Sysctl{{Key: "net.ipv4.conf.br0.rp_filter", Value: "2", Link: "br0"}},
		have:    []model.Sysctl{{Key: "net.ipv4.conf.default.rp_filter", Value: "0"}},
		plan:    "+ link br0 (bridge mtu 1500)\n+ sysctl net.ipv4.conf.br0.rp_filter: link br0 is new: it starts with net.ipv4.conf.default.rp_filter\n    value: 0 -> 2\n",
		was:     []string{"", "0"},
	}, {
		name:    "new link whose default is the file's value: nothing",
		newLink: "br0",
		want:    []model.Sysctl{{Key: "net.ipv4.conf.br0.rp_filter", Value: "2", Link: "br0"}},
		have:    []model.Sysctl{{Key: "net.ipv4.conf.default.rp_filter", Value: "2"}},
		plan:    "+ link br0 (bridge mtu 1500)\n",
		was:     []string{""},
	}, {
		name:  "key of a link the plan deletes: goes with it",
		links: []string{"br9"},
		have:  []model.Sysctl{{Key: "net.ipv4.conf.br9.rp_filter", Value: "2", Link: "br9", Owned: true, Original: "0"}},
		plan:  "- link br9 (bridge)\n",
		was:   []string{""},
	}, {
		name:  "a forwarding master key written: the file's forwarding keys of the family again after it, owed the master's value",
		links: []string{"br0"},
		want: []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "0", Link: "br0"}, {Key: "net.ipv4.conf.default.forwarding", Value: "0"},
			{Key: "net.ipv4.ip_forward", Value: "1"}, {Key: "net.ipv6.conf.br0.forwarding", Value: "0", Link: "br0"}},
		have: []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "0", Link: "br0"}, {Key: "net.ipv4.conf.default.forwarding", Value: "0"},
			{Key: "net.ipv4.ip_forward", Value: "0"}, {Key: "net.ipv6.conf.br0.forwarding", Value: "0", Link: "br0"}},
		plan: "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" +
			"~ sysctl net.ipv4.conf.default.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 0\n" +
			"~ sysctl net.ipv4.conf.br0.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 0\n",
		was: []string{"0", "1", "1"},
	}, {
		name:    "a forwarding master key written: a new link's forwarding again, owed the master's value",
		newLink: "br1",
		want:    []model.Sysctl{{Key: "net.ipv4.conf.br1.forwarding", Value: "0", Link: "br1"}, {Key: "net.ipv4.ip_forward", Value: "1"}},
		have:    []model.Sysctl{{Key: "net.ipv4.conf.default.forwarding", Value: "0"}, {Key: "net.ipv4.ip_forward", Value: "0"}},
		plan: "+ link br1 (bridge mtu 1500)\n~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" +
			"~ sysctl net.ipv4.conf.br1.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 0\n",
		was: []string{"", "0", "1"},
	}, {
		// The kernel sets net.ipv4.conf.all.accept_redirects to the
		// opposite of forwarding when ip_forward changes (inet_forward_change).
		name: "ip_forward written: a declared all.accept_redirects again after it",
		want: []model.Sysctl{{Key: "net.ipv4.conf.all.accept_redirects", Value: "1"}, {Key: "net.ipv4.ip_forward", Value: "1"}},
		have: []model.Sysctl{{Key: "net.ipv4.conf.all.accept_redirects", Value: "1"}, {Key: "net.ipv4.ip_forward", Value: "0"}},
		plan: "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" +
			"~ sysctl net.ipv4.conf.all.accept_redirects: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 1\n",
		was: []string{"0", "0"},
	}, {
		name:  "a forwarding master key given back: the file's forwarding keys again after it, owed the value given back",
		links: []string{"br0"},
		want:  []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "1", Link: "br0"}},
		have: []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "1", Link: "br0"},
			{Key: "net.ipv4.ip_forward", Value: "1", Owned: true, Original: "0"}},
		plan: "- sysctl net.ipv4.ip_forward: back to the value found before netreconcile set it\n    value: 1 -> 0\n" +
			"~ sysctl net.ipv4.conf.br0.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 1\n",
		was: []string{"1", "0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d, a := model.NewState(), model.NewState()
			d.Sysctls, a.Sysctls = tc.want, tc.have
			for _, n := range tc.links {
				a.Links[n] = link(n)
				if strings.Contains(tc.name, "forwarding") {
					d.Links[n] = link(n)
				}
			}
			if tc.newLink != "" {
				d.Links[tc.newLink] = link(tc.newLink)
				d.Links[tc.newLink].Owned = false
			}
			p, err := Compute(d, a)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tc.plan {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.plan)
			}
			for i, op := range p.Ops {
				if i < len(tc.was) && op.SysctlWas != tc.was[i] {
					t.Errorf("op %d SysctlWas %q, want %q", i, op.SysctlWas, tc.was[i])
				}
			}
		})
	}
}

// TestCheckSysctls: no plan when a key is unknown to the kernel.
func TestCheckSysctls(t *testing.T) {
	d, a := model.NewState(), model.NewState()
	d.Sysctls = []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "1"}, {Key: "net.ipv4.nope", Value: "1", Origin: "f:2:3"}}
	a.Sysctls = []model.Sysctl{{Key: "net.ipv4.ip_forward", Value: "0"}}
	p, err := Compute(d, a)
	if p != nil || err == nil || !strings.Contains(err.Error(), "sysctl net.ipv4.nope (declared at f:2:3): the kernel in this namespace has no such key (/proc/sys/net/ipv4/nope does not exist)") {
		t.Fatalf("plan %v, err %v", p, err)
	}
}

// TestWalkFinding109LinkKeyLeftToTheFilesMasterKey: a link's key that the
// file no longer declares, in a plan that writes the family-wide key
// setting it on every link, is not written back after that write (which
// would undo on the link what the file asks of all): the record goes and
// the key keeps the master's value. Host walk seed 18563171195186: p0b's
// ignore_routes_with_linkdown went back to 0 after all's 1.
func TestWalkFinding109LinkKeyLeftToTheFilesMasterKey(t *testing.T) {
	const all, key = "net.ipv6.conf.all.ignore_routes_with_linkdown", "net.ipv6.conf.p0b.ignore_routes_with_linkdown"
	for _, kernelHas := range []string{"1", "0"} {
		d, a := model.NewState(), model.NewState()
		l := &model.Link{Name: "p0b", Kind: model.KindBridge, MTU: 1500, Up: true, Owned: true}
		d.Links["p0b"], a.Links["p0b"] = l, l
		d.Sysctls = []model.Sysctl{{Key: all, Value: "1"}}
		a.Sysctls = []model.Sysctl{{Key: all, Value: "0"}, {Key: key, Value: kernelHas, Link: "p0b", Owned: true, Original: "0"}}
		p, err := Compute(d, a)
		if err != nil {
			t.Fatal(err)
		}
		want := "~ sysctl " + all + "\n    value: 0 -> 1\n- sysctl " + key + ": left to " + all + ", which this plan writes and which sets it\n"
		if kernelHas == "0" {
			want = strings.Replace(want, "left to "+all+", which this plan writes and which sets it", "already at the value found before netreconcile set it", 1)
		}
		if got := p.String(); got != want {
			t.Errorf("kernel holds %s: plan:\n%s\nwant:\n%s", kernelHas, got, want)
		}
		for _, op := range p.Ops {
			if op.ID == key && op.Sysctl.Value != op.SysctlWas {
				t.Errorf("kernel holds %s: the key is written back (%q over %q), after %s set it", kernelHas, op.Sysctl.Value, op.SysctlWas, all)
			}
		}
	}
}

// TestWalkFinding168KeyOwedTheMastersValue: the value a key is owed back
// is the one it would have had had netreconcile never written it, and a
// master key netreconcile writes (the file's value, or its own given back)
// sets the keys of its family: those the plan writes after it are recorded
// again with the master's value, and those that leave the file in the
// same plan are left at it. Host walk seed 128820325505437, step 79:
// p0c's ignore_routes_with_linkdown, recorded at 1 (all's), went back to
// 1 after all's was given back to 0.
func TestWalkFinding168KeyOwedTheMastersValue(t *testing.T) {
	const (
		all     = "net.ipv6.conf.all.ignore_routes_with_linkdown"
		key     = "net.ipv6.conf.p0c.ignore_routes_with_linkdown"
		allFF   = "net.ipv6.conf.all.force_forwarding"
		dfltFF  = "net.ipv6.conf.default.force_forwarding"
		ipFwd   = "net.ipv4.ip_forward"
		allFwd4 = "net.ipv4.conf.all.forwarding"
	)
	for _, tc := range []struct {
		name       string
		want, have []model.Sysctl
		plan       string
		was        map[string]string // SysctlWas by key, of the ops that take a key over
		rebase     map[string]bool
	}{{
		name: "a link's key written in the plan that writes its master: owed the master's value",
		want: []model.Sysctl{{Key: all, Value: "1"}, {Key: key, Value: "0", Link: "p0c"}},
		have: []model.Sysctl{{Key: all, Value: "0"}, {Key: key, Value: "2", Link: "p0c", Owned: true, Original: "0"}},
		plan: "~ sysctl " + all + "\n    value: 0 -> 1\n~ sysctl " + key + "\n    value: 2 -> 0\n",
		was:  map[string]string{all: "0", key: "1"}, rebase: map[string]bool{key: true},
	}, {
		name: "the master given back: the file's key again, owed the value given back",
		want: []model.Sysctl{{Key: key, Value: "0", Link: "p0c"}},
		have: []model.Sysctl{{Key: all, Value: "1", Owned: true, Original: "0"}, {Key: key, Value: "0", Link: "p0c", Owned: true, Original: "1"}},
		plan: "- sysctl " + all + ": back to the value found before netreconcile set it\n    value: 1 -> 0\n" +
			"~ sysctl " + key + ": written again: " + all + " sets it\n    value: " + all + "'s -> 0\n",
		was: map[string]string{key: "0"}, rebase: map[string]bool{key: true},
	}, {
		name: "the master given back with the link's key: the key left at the value given back",
		have: []model.Sysctl{{Key: all, Value: "1", Owned: true, Original: "0"}, {Key: key, Value: "0", Link: "p0c", Owned: true, Original: "1"}},
		plan: "- sysctl " + all + ": back to the value found before netreconcile set it\n    value: 1 -> 0\n" +
			"- sysctl " + key + ": left to " + all + ", which this plan gives back and which sets it\n",
	}, {
		name: "all.force_forwarding leaves default's: default's given back after it, and not written again",
		want: []model.Sysctl{{Key: allFF, Value: "1"}},
		have: []model.Sysctl{{Key: allFF, Value: "0"}, {Key: dfltFF, Value: "1", Owned: true, Original: "0"}},
		plan: "~ sysctl " + allFF + "\n    value: 0 -> 1\n- sysctl " + dfltFF + ": back to the value found before netreconcile set it\n    value: 1 -> 0\n",
	}, {
		name: "all.force_forwarding written: a declared default's is not written again",
		want: []model.Sysctl{{Key: allFF, Value: "1"}, {Key: dfltFF, Value: "0"}},
		have: []model.Sysctl{{Key: allFF, Value: "0"}, {Key: dfltFF, Value: "0"}},
		plan: "~ sysctl " + allFF + "\n    value: 0 -> 1\n",
	}, {
		name: "one forwarding parameter, two names: the one the file drops is left to the one it writes",
		want: []model.Sysctl{{Key: ipFwd, Value: "1"}},
		have: []model.Sysctl{{Key: allFwd4, Value: "0", Owned: true, Original: "1"}, {Key: ipFwd, Value: "0"}},
		plan: "~ sysctl " + ipFwd + "\n    value: 0 -> 1\n- sysctl " + allFwd4 + ": left to " + ipFwd + ", which this plan writes and which sets it\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d, a := model.NewState(), model.NewState()
			l := &model.Link{Name: "p0c", Kind: model.KindVeth, MTU: 1500, Up: true, Owned: true, Veth: &model.Veth{Peer: "p0b"}}
			p := &model.Link{Name: "p0b", Kind: model.KindVeth, MTU: 1500, Up: true, Owned: true, Veth: &model.Veth{Peer: "p0c"}}
			d.Links["p0c"], a.Links["p0c"], d.Links["p0b"], a.Links["p0b"] = l, l, p, p
			d.Sysctls, a.Sysctls = tc.want, tc.have
			model.SortSysctls(d.Sysctls)
			model.SortSysctls(a.Sysctls)
			plan, err := Compute(d, a)
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.String(); got != tc.plan {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.plan)
			}
			for _, op := range plan.Ops {
				if op.Kind != KindSysctl || op.Action == Delete {
					continue
				}
				if w, ok := tc.was[op.ID]; ok && op.SysctlWas != w {
					t.Errorf("%s: SysctlWas %q, want %q", op.ID, op.SysctlWas, w)
				}
				if op.SysctlRebase != tc.rebase[op.ID] {
					t.Errorf("%s: SysctlRebase %v, want %v", op.ID, op.SysctlRebase, tc.rebase[op.ID])
				}
			}
		})
	}
}

// TestWalkFinding169IPv6MTUOwedTheLinksMTU: a link's IPv6 MTU that leaves
// the file goes back to the link's MTU on a link netreconcile made (the
// kernel starts it there, not at default's) and where the plan changes the
// MTU (the kernel sets it then); on another link to the recorded value, at
// most the MTU, above which the kernel refuses it. A write after an MTU
// change that set the key records the MTU. Host soak seed 108882589530111,
// step 23: x0's 1380 written back at MTU 1350 (invalid argument).
func TestWalkFinding169IPv6MTUOwedTheLinksMTU(t *testing.T) {
	const key = "net.ipv6.conf.x0.mtu"
	for _, tc := range []struct {
		name            string
		owned           bool
		mtu, declMTU    int
		original, value string
		declared        bool
		plan            string
		was             string
	}{
		{name: "made", owned: true, mtu: 1500, original: "1280", value: "1400",
			plan: "- sysctl " + key + ": back to the value found before netreconcile set it\n    value: 1400 -> 1500\n"},
		{name: "found, recorded above the MTU", mtu: 1350, original: "1380", value: "1280",
			plan: "- sysctl " + key + ": back to the value found before netreconcile set it\n    value: 1280 -> 1350\n"},
		{name: "found, recorded below the MTU", mtu: 1500, original: "1400", value: "1280",
			plan: "- sysctl " + key + ": back to the value found before netreconcile set it\n    value: 1280 -> 1400\n"},
		{name: "found, its MTU changed by the plan", mtu: 1500, declMTU: 1450, original: "1400", value: "1280",
			plan: "~ link x0\n    mtu: 1500 -> 1450\n- sysctl " + key + ": back to the value found before netreconcile set it\n    value: 1280 -> 1450\n"},
		{name: "declared, written again after the MTU change: owed the MTU", mtu: 1500, declMTU: 1450, original: "1500", value: "1280", declared: true,
			plan: "~ link x0\n    mtu: 1500 -> 1450\n~ sysctl " + key + ": written again: the MTU change of x0 sets it\n    value: 1280 (set to 1450, x0's MTU) -> 1280\n", was: "1450"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, a := model.NewState(), model.NewState()
			kind := model.KindDevice
			if tc.owned {
				kind = model.KindBridge
			}
			a.Links["x0"] = &model.Link{Name: "x0", Kind: kind, MTU: tc.mtu, Owned: tc.owned}
			d.Links["x0"] = &model.Link{Name: "x0", Kind: kind, MTU: tc.declMTU, Owned: tc.owned}
			a.Sysctls = []model.Sysctl{{Key: key, Value: tc.value, Link: "x0", Owned: true, Original: tc.original}}
			if tc.declared {
				d.Sysctls = []model.Sysctl{{Key: key, Value: tc.value, Link: "x0"}}
			}
			p, err := Compute(d, a)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tc.plan {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.plan)
			}
			for _, op := range p.Ops {
				if op.ID == key && tc.was != "" && (op.SysctlWas != tc.was || !op.SysctlRebase) {
					t.Errorf("SysctlWas %q rebase %v, want %q and a rebase", op.SysctlWas, op.SysctlRebase, tc.was)
				}
			}
		})
	}
	// A link raised to IPv6's minimum gets its IPv6 keys afresh, its
	// IPv6 MTU at its MTU, not at default's: the value owed back (host
	// soak seed 76397317913050, step 6: adopted fa0 from 1000 to 1500
	// with ipv6.mtu 1400, given back 1280 when the key left the file).
	d, a := model.NewState(), model.NewState()
	a.Links["fa0"] = &model.Link{Name: "fa0", Kind: model.KindBridge, MTU: 1000}
	d.Links["fa0"] = &model.Link{Name: "fa0", Kind: model.KindBridge, MTU: 1500, Adopt: true}
	a.Sysctls = []model.Sysctl{{Key: "net.ipv6.conf.default.mtu", Value: "1280"}}
	d.Sysctls = []model.Sysctl{{Key: "net.ipv6.conf.fa0.mtu", Value: "1400", Link: "fa0"}}
	p, err := Compute(d, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range p.Ops {
		if op.ID == "net.ipv6.conf.fa0.mtu" && op.SysctlWas != "1500" {
			t.Errorf("fa0 raised to 1500: the key's SysctlWas is %q, want 1500 (its MTU)\n%s", op.SysctlWas, p)
		}
	}
}
