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
		name:  "a forwarding master key written: the file's forwarding keys of the family again after it",
		links: []string{"br0"},
		want: []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "0", Link: "br0"}, {Key: "net.ipv4.conf.default.forwarding", Value: "0"},
			{Key: "net.ipv4.ip_forward", Value: "1"}, {Key: "net.ipv6.conf.br0.forwarding", Value: "0", Link: "br0"}},
		have: []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "0", Link: "br0"}, {Key: "net.ipv4.conf.default.forwarding", Value: "0"},
			{Key: "net.ipv4.ip_forward", Value: "0"}, {Key: "net.ipv6.conf.br0.forwarding", Value: "0", Link: "br0"}},
		plan: "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" +
			"~ sysctl net.ipv4.conf.default.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 0\n" +
			"~ sysctl net.ipv4.conf.br0.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 0\n",
		was: []string{"0", "0", "0"},
	}, {
		name:    "a forwarding master key written: a new link's forwarding again, its old value the link's first",
		newLink: "br1",
		want:    []model.Sysctl{{Key: "net.ipv4.conf.br1.forwarding", Value: "0", Link: "br1"}, {Key: "net.ipv4.ip_forward", Value: "1"}},
		have:    []model.Sysctl{{Key: "net.ipv4.conf.default.forwarding", Value: "0"}, {Key: "net.ipv4.ip_forward", Value: "0"}},
		plan: "+ link br1 (bridge mtu 1500)\n~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" +
			"~ sysctl net.ipv4.conf.br1.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 0\n",
		was: []string{"", "0", "0"},
	}, {
		// The kernel sets net.ipv4.conf.all.accept_redirects to the
		// opposite of forwarding when ip_forward changes (inet_forward_change).
		name: "ip_forward written: a declared all.accept_redirects again after it",
		want: []model.Sysctl{{Key: "net.ipv4.conf.all.accept_redirects", Value: "1"}, {Key: "net.ipv4.ip_forward", Value: "1"}},
		have: []model.Sysctl{{Key: "net.ipv4.conf.all.accept_redirects", Value: "1"}, {Key: "net.ipv4.ip_forward", Value: "0"}},
		plan: "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" +
			"~ sysctl net.ipv4.conf.all.accept_redirects: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 1\n",
		was: []string{"0", "1"},
	}, {
		name:  "a forwarding master key given back: the file's forwarding keys again after it",
		links: []string{"br0"},
		want:  []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "1", Link: "br0"}},
		have: []model.Sysctl{{Key: "net.ipv4.conf.br0.forwarding", Value: "1", Link: "br0"},
			{Key: "net.ipv4.ip_forward", Value: "1", Owned: true, Original: "0"}},
		plan: "- sysctl net.ipv4.ip_forward: back to the value found before netreconcile set it\n    value: 1 -> 0\n" +
			"~ sysctl net.ipv4.conf.br0.forwarding: written again: net.ipv4.ip_forward sets it\n    value: net.ipv4.ip_forward's -> 1\n",
		was: []string{"1", "1"},
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
