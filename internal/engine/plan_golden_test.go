package engine

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden plans in testdata/plans")

// newGoldenKernel is the in-memory kernel as a fresh namespace has it.
func newGoldenKernel() *kerneltest.Kernel {
	k := kerneltest.New()
	// A fresh namespace's lo is down.
	k.PutLink(&model.Link{Name: "lo", Kind: model.KindDevice, MTU: 65536})
	return k
}

// seed puts st into the kernel as a pass that applied it would leave it:
// every object ours, device links as foreign dummies.
func seed(k *kerneltest.Kernel, st *model.State, led *ledger.Ledger) {
	for _, name := range st.SortedLinkNames() {
		l := st.Links[name]
		if l.Kind == model.KindDevice {
			if name != "lo" {
				k.PutLink(&model.Link{Name: name, Kind: "dummy", MTU: 1500, Up: true})
			}
			continue
		}
		c := *l
		c.Owned, c.Adopt, c.WireGuard = true, false, nil
		if c.MTU == 0 {
			c.MTU = 1500
		}
		k.PutLink(&c)
		if w := l.WireGuard; w != nil {
			hw := &model.WireGuard{PublicKey: w.PublicKey, ListenPort: w.ListenPort, FwMark: w.FwMark, Implementation: kernel.WireGuardKernel}
			for _, p := range w.Peers {
				hp := p
				hp.Endpoints, hp.EndpointCandidate = nil, 0
				if len(p.Endpoints) > 0 {
					hp.Endpoint, _ = wgpeer.ParseLiteral(p.Endpoints[0])
				}
				hw.Peers = append(hw.Peers, hp)
			}
			k.PutWireGuard(name, hw)
		}
	}
	for _, a := range st.Addresses {
		k.PutAddress(a)
	}
	for _, r := range st.Routes {
		r.Protocol = uint8(st.Protocol)
		k.PutRoute(r)
	}
	for _, r := range st.Rules {
		r.Protocol = st.Protocol
		k.PutRule(r)
	}
	for _, f := range st.FouPorts {
		k.PutFou(f)
		led.SetFou(f.Key(), true)
	}
	handle := uint64(100)
	for i := range st.NFTables {
		t := st.NFTables[i]
		handle++
		t.Handle, t.Adopt, t.Origin = handle, false, ""
		t.Chains = append([]model.NftChain(nil), t.Chains...)
		for ci := range t.Chains {
			c := &t.Chains[ci]
			c.Rules = append([]model.NftRule(nil), c.Rules...)
			for ri := range c.Rules {
				handle++
				c.Rules[ri].Handle = handle
			}
		}
		kerneltest.AsWritten(&t)
		k.PutNftTable(t)
		led.SetNftTable(t.Key(), true)
		led.SetNftTableHandle(t.Key(), t.Handle)
	}
}

// goldenClock is the fixed time of the golden plans' rotation decisions.
var goldenClock = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// goldenEnv loads examples with their key files in a directory of its own.
type goldenEnv struct {
	t   *testing.T
	dir string
}

func newGoldenEnv(t *testing.T) *goldenEnv {
	dir := t.TempDir()
	var key, psk [32]byte
	for i := range key {
		key[i], psk[i] = byte(i*5+1), byte(i*7+3)
	}
	for name, k := range map[string][32]byte{"kubespan.key": key, "node2.psk": psk} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(base64.StdEncoding.EncodeToString(k[:])+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &goldenEnv{t, dir}
}

// load reads examples/name.yaml, with edits applied as old, new pairs.
func (g *goldenEnv) load(name string, edits ...string) *model.State {
	g.t.Helper()
	data, err := os.ReadFile(filepath.Join("../../examples", name+".yaml"))
	if err != nil {
		g.t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "/etc/netreconcile/", g.dir+"/")
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			g.t.Fatalf("%s: no %q to edit", name, edits[i])
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	cfg, err := desired.Parse([]desired.Source{{Name: "examples/" + name + ".yaml", Data: []byte(text)}})
	if err != nil {
		g.t.Fatalf("%s: %v", name, err)
	}
	return cfg.State
}

func (g *goldenEnv) engine(k *kerneltest.Kernel, led *ledger.Ledger) *Engine {
	e := &Engine{Kernel: k, Ledger: led, IPAMDir: filepath.Join(g.dir, "ipam")}
	e.SetTracker(wgpeer.New(func() time.Time { return goldenClock }, func(hp string) (netip.AddrPort, error) {
		if ap, ok := wgpeer.ParseLiteral(hp); ok {
			return ap, nil
		}
		return netip.AddrPort{}, fmt.Errorf("lookup %s: no such host (golden resolver)", hp)
	}))
	return e
}

// renderPlan is what the golden files hold: the plan as `netreconcile diff`
// prints it, with its conflicts, and as JSON.
func renderPlan(t *testing.T, g *goldenEnv, ctx context.Context, e *Engine, st *model.State, dryRun bool) (text, js string) {
	t.Helper()
	plan, _, err := e.PlanDesired(ctx, st, dryRun)
	var b strings.Builder
	if plan == nil {
		fmt.Fprintf(&b, "error: %v\n", err)
		return strings.ReplaceAll(b.String(), g.dir, "$DIR"), ""
	}
	if plan.Empty() {
		b.WriteString("No changes: the kernel matches the configuration.\n")
	} else {
		plan.Write(&b)
		fmt.Fprintf(&b, "\nPlan: %s.\n", plan.Summary())
		fmt.Fprintln(&b, plan.DisruptionSummary())
	}
	if err != nil {
		fmt.Fprintf(&b, "\n%v\n", err)
	}
	data, jerr := plan.JSON()
	if jerr != nil {
		t.Fatal(jerr)
	}
	return strings.ReplaceAll(b.String(), g.dir, "$DIR"), strings.ReplaceAll(string(data), g.dir, "$DIR") + "\n"
}

// goldenCase is one plan: a configuration against a kernel state.
type goldenCase struct {
	name string
	// setup prepares the kernel (and the ledger, and the registry) and
	// returns the configuration to plan.
	setup  func(g *goldenEnv, ctx context.Context, k *kerneltest.Kernel, e *Engine) *model.State
	dryRun bool
}

func fromEmpty(example string, edits ...string) func(*goldenEnv, context.Context, *kerneltest.Kernel, *Engine) *model.State {
	return func(g *goldenEnv, _ context.Context, _ *kerneltest.Kernel, _ *Engine) *model.State {
		return g.load(example, edits...)
	}
}

// withDevices: the example's device links exist (foreign dummies, up).
func withDevices(example string) func(*goldenEnv, context.Context, *kerneltest.Kernel, *Engine) *model.State {
	return func(g *goldenEnv, _ context.Context, k *kerneltest.Kernel, _ *Engine) *model.State {
		st := g.load(example)
		for _, name := range st.SortedLinkNames() {
			if st.Links[name].Kind == model.KindDevice && name != "lo" {
				k.PutLink(&model.Link{Name: name, Kind: "dummy", MTU: 1500, Up: true})
			}
		}
		return st
	}
}

// applied: the example is applied as it is (seeded), then the edited
// configuration is planned; tweak changes the kernel after the seed.
func applied(example string, tweak func(k *kerneltest.Kernel), edits ...string) func(*goldenEnv, context.Context, *kerneltest.Kernel, *Engine) *model.State {
	return func(g *goldenEnv, _ context.Context, k *kerneltest.Kernel, e *Engine) *model.State {
		seed(k, g.load(example), e.Ledger)
		if tweak != nil {
			tweak(k)
		}
		return g.load(example, edits...)
	}
}

var goldenCases = []goldenCase{
	// Every example (and the demo) from a fresh namespace, as `diff` shows it.
	{name: "coil-egress-client.empty", setup: fromEmpty("coil-egress-client"), dryRun: true},
	{name: "coil-egress-client.devices", setup: withDevices("coil-egress-client"), dryRun: true},
	{name: "coil-egress-gateway.empty", setup: fromEmpty("coil-egress-gateway"), dryRun: true},
	{name: "coil-egress-gateway.devices", setup: withDevices("coil-egress-gateway"), dryRun: true},
	{name: "demo.empty", setup: fromEmpty("demo"), dryRun: true},
	{name: "ipam.empty", setup: fromEmpty("ipam"), dryRun: true},
	{name: "ipam.empty-apply", setup: fromEmpty("ipam")},
	{name: "ipvlan-node.empty", setup: fromEmpty("ipvlan-node"), dryRun: true},
	{name: "ipvlan-node.devices", setup: withDevices("ipvlan-node"), dryRun: true},
	{name: "ipvlan-pod.empty", setup: fromEmpty("ipvlan-pod"), dryRun: true},
	{name: "ipvlan-pod.devices", setup: withDevices("ipvlan-pod"), dryRun: true},
	{name: "konnectivity-agent.empty", setup: fromEmpty("konnectivity-agent"), dryRun: true},
	{name: "kubespan.empty", setup: fromEmpty("kubespan"), dryRun: true},

	// Applied, then planned again: nothing to do.
	{name: "demo.applied", setup: applied("demo", nil), dryRun: true},
	{name: "kubespan.applied", setup: applied("kubespan", nil), dryRun: true},

	// A change of every kind the demo has.
	{name: "demo.change", dryRun: true, setup: applied("demo", nil,
		"    mtu: 1450\n    alias: lab bridge", "    mtu: 1500\n    alias: lab bridge two",
		"      - fd00:10::1/64", "      - {address: fd00:10::1/64, noprefixroute: true}",
		"via: 10.10.0.254", "via: 10.10.0.253",
		"{priority: 1000, from: 10.10.0.0/24, table: 100}", "{priority: 1001, from: 10.10.0.0/24, table: 100}",
		"elements: [198.51.100.0/24, 203.0.113.10]", "elements: [198.51.100.0/24, 203.0.113.11]",
		"meta mark & 0xffffffdf | 0x00000040 accept", "meta mark & 0xffffffdf | 0x00000040 counter accept",
	)},
	// Drift: the kernel moved away from the file.
	{name: "demo.drift", dryRun: true, setup: applied("demo", func(k *kerneltest.Kernel) {
		// Only the flag: the plan shows the state, not what the kernel
		// drops with it.
		ls, _ := k.Links()
		for _, l := range ls {
			if l.Name == "br0" {
				l.Up = false
				k.PutLink(l)
			}
		}
		_ = k.SetLinkMTU("vx0", 1400)
		_ = k.DeleteAddress(&model.Address{Link: "uplink", Prefix: netip.MustParsePrefix("192.0.2.1/24")})
		t, _ := k.NFTTable(model.NftTableKey{Family: "inet", Name: "demo_mark"})
		t.Dormant = true
		k.PutNftTable(*t)
	})},
	// A prune: objects leave the file.
	{name: "demo.prune", dryRun: true, setup: applied("demo", nil,
		"  vx0:\n    kind: vxlan\n    master: br0\n    mtu: 1450\n    vxlan: {id: 100, local: 192.0.2.1, remote: 192.0.2.2, port: 4789, dev: uplink}\n", "",
		"  - {to: 10.99.0.0/16, type: blackhole, table: 100}\n", "",
		"  - {priority: 1000, from: 10.10.0.0/24, table: 100}\n", "",
		"      - fd00:10::1/64\n", "",
		"        elements: [198.51.100.0/24, 203.0.113.10]\n", "",
	)},
	{name: "demo.prune-all", dryRun: true, setup: func(g *goldenEnv, ctx context.Context, k *kerneltest.Kernel, e *Engine) *model.State {
		seed(k, g.load("demo"), e.Ledger)
		st := model.NewState()
		st.Protocol = model.DefaultProtocol
		return st
	}},
	// Conflicts: foreign objects where the file declares its own.
	{name: "demo.conflict", dryRun: true, setup: func(g *goldenEnv, ctx context.Context, k *kerneltest.Kernel, e *Engine) *model.State {
		k.PutLink(&model.Link{Name: "br0", Kind: model.KindBridge, MTU: 1500, Up: true})
		k.PutLink(&model.Link{Name: "uplink", Kind: model.KindDummy, MTU: 1500, Up: true})
		st := g.load("demo")
		// A static route and a rule of another program with the keys of the file's.
		for _, r := range st.Routes {
			if r.Dst.String() == "203.0.113.0/24" {
				r.Protocol = 4
				k.PutRoute(r)
			}
		}
		for _, r := range st.Rules {
			if r.Priority == 32500 {
				r.Protocol = 4
				k.PutRule(r)
			}
		}
		key := model.NftTableKey{Family: "inet", Name: "demo_mark"}
		k.PutNftTable(model.NftTable{Family: key.Family, Name: key.Name, Handle: 7})
		return st
	}},
	// Adopting what conflicted.
	{name: "demo.adopt", dryRun: true, setup: func(g *goldenEnv, ctx context.Context, k *kerneltest.Kernel, e *Engine) *model.State {
		k.PutLink(&model.Link{Name: "br0", Kind: model.KindBridge, MTU: 1500, Up: true, Alias: "someone's"})
		key := model.NftTableKey{Family: "inet", Name: "demo_mark"}
		k.PutNftTable(model.NftTable{Family: key.Family, Name: key.Name, Handle: 7})
		return g.load("demo", "    kind: bridge\n", "    kind: bridge\n    adopt: true\n", "  inet demo_mark:\n", "  inet demo_mark:\n    adopt: true\n")
	}},
	// A kind change and a fixed attribute: links are recreated.
	{name: "coil-egress-client.encap-change", dryRun: true, setup: applied("coil-egress-client", func(k *kerneltest.Kernel) {
		ls, _ := k.Links()
		for _, l := range ls {
			if l.Name == "fou4_0a141e01" {
				l.Tunnel.Encap.Dport = 5556
				k.PutLink(l)
			}
			if l.Name == "fou4_0a141e02" {
				l.Tunnel.Encap = nil
				k.PutLink(l)
			}
		}
	})},
	{name: "demo.recreate", dryRun: true, setup: applied("demo", nil, "id: 100, local", "id: 101, local")},
	{name: "konnectivity-agent.kind-change", dryRun: true, setup: applied("konnectivity-agent", nil, "kind: dummy", "kind: bridge")},

	// Pools: a dry run shows the address an apply allocates; a link that
	// leaves the pool gives its address back.
	{name: "ipam.pool-giveback", dryRun: true, setup: poolGiveBack},
	{name: "ipam.pool-giveback-apply", setup: poolGiveBack},

	// WireGuard peers: one changed (and Up: its allowed IPs feed the sets),
	// one missing, one stale; the device's port and mark drifted.
	{name: "kubespan.peers", dryRun: true, setup: applied("kubespan", func(k *kerneltest.Kernel) {
		w, _ := k.WireGuardDevice("kubespan")
		w.ListenPort, w.FwMark = 51821, 0
		p := &w.Peers[1] // xTIBA… (peers are sorted by public key)
		p.Keepalive = 0
		p.AllowedIPs = p.AllowedIPs[:2]
		p.LastHandshake = goldenClock.Add(-10 * time.Second)
		p.Endpoint = netip.MustParseAddrPort("192.168.1.99:51820")
		w.Peers = w.Peers[1:]
		w.Peers = append(w.Peers, model.WireGuardPeer{PublicKey: model.Key{9}, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.100.0.9/32")}})
		k.PutWireGuard("kubespan", w)
	})},
}

// poolGiveBack applies ipam.yaml, then takes kube0 out of the pool.
func poolGiveBack(g *goldenEnv, ctx context.Context, k *kerneltest.Kernel, e *Engine) *model.State {
	st := g.load("ipam")
	p, pools, err := e.PlanDesired(ctx, st, false)
	if err != nil {
		g.t.Fatal(err)
	}
	seed(k, pools.Desired, e.Ledger)
	_ = p
	return g.load("ipam", "    addresses:\n      - pool: kubespan\n", "    addresses: [10.3.0.1/24]\n")
}

// TestGoldenPlans compares the plan of every example and of a few states
// with testdata/plans: the text `netreconcile diff` prints and the JSON.
// go test -run TestGoldenPlans -update rewrites them.
func TestGoldenPlans(t *testing.T) {
	ctx := context.Background()
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			g := newGoldenEnv(t)
			k := newGoldenKernel()
			led, _ := ledger.OpenIn(nil, 0)
			e := g.engine(k, led)
			st := c.setup(g, ctx, k, e)
			text, js := renderPlan(t, g, ctx, e, st, c.dryRun)
			for _, f := range []struct{ ext, got string }{{"txt", text}, {"json", js}} {
				path := filepath.Join("testdata", "plans", c.name+"."+f.ext)
				if *updateGolden {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(f.got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test -run TestGoldenPlans -update writes it)", err)
				}
				if string(want) != f.got {
					t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, f.got, want)
				}
			}
		})
	}
}
