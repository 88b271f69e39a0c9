// The failure-injection walk: the convergence walk's generator of
// configurations run against the in-memory kernel of kernel/kerneltest, a
// pass with failures injected at random, then a pass without: the second
// must converge from wherever the first stopped, and nothing foreign may
// change. It needs no privileges and runs in go test ./... in seconds.
//
//	go test ./test/walk -run TestFaultWalk -faultwalk.seed=0 -faultwalk.steps=2000
//
// walks a random seed (printed) for longer; FAULTWALK_SEED and
// FAULTWALK_STEPS do the same from the environment.
package walk_test

import (
	"github.com/netreconcile/netreconcile/test/nettest"

	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
	"github.com/netreconcile/netreconcile/test/walk"
)

// defaultSeed is walked by go test ./... (and make test): the same path on
// every machine, so a change that breaks it fails every run.
const defaultSeed = 1313

var (
	flagSeed  = flag.Int64("faultwalk.seed", envInt("FAULTWALK_SEED", defaultSeed), "seed of the failure walk (0: random, printed)")
	flagSteps = flag.Int("faultwalk.steps", int(envInt("FAULTWALK_STEPS", 300)), "configurations in all")
	flagLen   = flag.Int("faultwalk.length", int(envInt("FAULTWALK_LENGTH", 50)), "configurations of one walk (a fresh kernel each)")
)

func envInt(k string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(k), 10, 64); err == nil {
		return v
	}
	return def
}

// A fault is a failure the walk injects: a call, the error the kernel
// gives, and how it fires.
type fault struct {
	kind   string // for the report
	call   kerneltest.Call
	err    error
	always bool // every call of the pass, not only the next
}

// errInterrupted is what a dump gives when the kernel marked it interrupted
// (NLM_F_DUMP_INTR) on every retry.
var errInterrupted = fmt.Errorf("interrupted %d times in a row: %w", 10, syscall.EINTR)

// faults are the failures the walk draws from.
var faults = makeFaults()

func makeFaults() []fault {
	var faults []fault
	for _, m := range []kerneltest.Call{kerneltest.CallLinks, kerneltest.CallAddresses, kerneltest.CallRoutes, kerneltest.CallTableRoutes, kerneltest.CallRoutesWithKeys, kerneltest.CallRules, kerneltest.CallFouPorts, kerneltest.CallNFTTable, kerneltest.CallWireGuardDevice} {
		faults = append(faults, fault{kind: "interrupted dump", call: m, err: errInterrupted})
	}
	for _, m := range []kerneltest.Call{kerneltest.CallLinks, kerneltest.CallRoutes, kerneltest.CallNFTTable, kerneltest.CallNFTApply, kerneltest.CallAddRoute, kerneltest.CallReplaceAddress} {
		faults = append(faults, fault{kind: "ENOBUFS", call: m, err: syscall.ENOBUFS})
	}
	for _, m := range []kerneltest.Call{kerneltest.CallAddLink, kerneltest.CallAddRoute, kerneltest.CallAddRule, kerneltest.CallAddFou} {
		faults = append(faults, fault{kind: "EEXIST", call: m, err: syscall.EEXIST})
	}
	for _, m := range []kerneltest.Call{kerneltest.CallSetLinkUp, kerneltest.CallSetLinkMTU, kerneltest.CallSetLinkMaster, kerneltest.CallSetLinkAlias, kerneltest.CallReplaceAddress, kerneltest.CallDeleteAddress, kerneltest.CallAddRoute, kerneltest.CallDeleteLink, kerneltest.CallPromoteSecondaries, kerneltest.CallConfigureWireGuard} {
		faults = append(faults, fault{kind: "ENODEV", call: m, err: syscall.ENODEV})
	}
	faults = append(faults,
		fault{kind: "sysctl unreadable", call: kerneltest.CallSysctls, err: syscall.EIO},
		fault{kind: "sysctl refused", call: kerneltest.CallSetSysctl, err: syscall.EINVAL},
		fault{kind: "sysctl refused", call: kerneltest.CallSetSysctl, err: syscall.EPERM, always: true},
		fault{kind: "nftables batch refused", call: kerneltest.CallNFTApply, err: syscall.EINVAL},
		fault{kind: "nftables batch refused", call: kerneltest.CallNFTApply, err: syscall.EINVAL, always: true},
		fault{kind: "WireGuard peer refused", call: kerneltest.CallConfigureWireGuardPeer, err: syscall.EINVAL},
		fault{kind: "WireGuard peer refused", call: kerneltest.CallConfigureWireGuardPeer, err: syscall.ENOMEM, always: true},
		fault{kind: "ENODEV", call: kerneltest.CallSetLinkUp, err: syscall.ENODEV, always: true},
		fault{kind: "EEXIST", call: kerneltest.CallAddRule, err: syscall.EEXIST, always: true},
	)
	return faults
}

// foreignKey is the destination of a foreign route in main whose key the
// generator also declares.
const foreignKey = "172.16.1.0/24"

// foreignRule is a foreign rule at a priority the generator also uses
// (1000): a declared rule of that priority without a from is a conflict.
const foreignRule = "1000: from 192.168.9.0/24 lookup 200"

// foreign puts what someone else made into k: names start with f, routes
// and rules have protocols of other programs, tables other names (and one
// a walk name in another family), a WireGuard device with a peer.
func foreign(k *kerneltest.Kernel) {
	k.PutLink(&model.Link{Name: "fb0", Kind: model.KindBridge, MTU: 1500, Up: true})
	k.PutLink(&model.Link{Name: "fv0a", Kind: model.KindVeth, MTU: 1500, Up: true, Master: "fb0", Veth: &model.Veth{Peer: "fv0b"}})
	k.PutLink(&model.Link{Name: "fv0b", Kind: model.KindVeth, MTU: 1500, Up: true, Veth: &model.Veth{Peer: "fv0a"}})
	k.PutLink(&model.Link{Name: "fx0", Kind: model.KindVXLAN, MTU: 1450, VXLAN: &model.VXLAN{ID: 999, Remote: netip.MustParseAddr("192.0.2.99"), Port: 4789, Dev: "fv0b"}})
	k.PutLink(&model.Link{Name: "fwg0", Kind: model.KindWireGuard, MTU: 1420, Up: true})
	k.PutWireGuard("fwg0", &model.WireGuard{ListenPort: 51999, Peers: []model.WireGuardPeer{{PublicKey: model.Key{0xf}, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.240.0.0/24")}}}})
	for _, a := range []model.Address{
		{Link: "fb0", Prefix: netip.MustParsePrefix("10.250.1.1/24")},
		{Link: "fb0", Prefix: netip.MustParsePrefix("fd25::1/64")},
		{Link: "lo", Prefix: netip.MustParsePrefix("10.251.0.1/32"), Scope: model.ScopeHost},
	} {
		k.PutAddress(a)
	}
	for _, r := range []model.Route{
		{Table: model.TableMain, Dst: netip.MustParsePrefix("192.168.7.0/24"), Type: model.RouteBlackhole, Protocol: 4},
		{Table: 100, Dst: netip.MustParsePrefix("192.168.8.0/24"), Metric: 10, Type: model.RouteBlackhole, Protocol: 11},
		{Table: 200, Dst: netip.MustParsePrefix("10.250.2.0/24"), Type: model.RouteUnicast, Gateway: netip.MustParseAddr("10.250.1.254"), Dev: "fb0", Protocol: 4},
		{Table: 100, Dst: netip.MustParsePrefix("2001:db8:f::/64"), Metric: 1024, Type: model.RouteBlackhole, Protocol: 4},
		// The key of a route the generator declares: a conflict, never
		// replaced.
		{Table: model.TableMain, Dst: netip.MustParsePrefix(foreignKey), Type: model.RouteBlackhole, Protocol: 4},
	} {
		k.PutRoute(r)
	}
	for _, r := range []model.Rule{
		{Priority: 150, From: netip.MustParsePrefix("192.168.0.0/16"), Action: model.RuleLookup, Table: 100, SuppressPrefixLen: -1, Protocol: 4},
		{Priority: 1000, From: netip.MustParsePrefix("192.168.9.0/24"), Action: model.RuleLookup, Table: 200, SuppressPrefixLen: -1, Protocol: 4},
		{Priority: 2500, IPv6: true, FwMark: 0x99, Action: model.RuleLookup, Table: 200, SuppressPrefixLen: -1, Protocol: 3},
	} {
		k.PutRule(r)
	}
	k.PutFou(model.FouPort{Port: 7777, IPProto: 4})
	// Someone else's sysctls: a key of a foreign link, and a global key
	// the walk never declares.
	k.PutSysctl("net.ipv4.conf.fb0.rp_filter", "1")
	k.PutSysctl("net.ipv4.tcp_syncookies", "2")
	k.PutNftTable(model.NftTable{Family: "inet", Name: "fw", Chains: []model.NftChain{{Name: "c", Type: "filter", Hook: "input", Policy: "accept", Rules: []model.NftRule{{Text: "counter accept", Handle: 2}}}}})
	k.PutNftTable(model.NftTable{Family: "ip6", Name: "nrw0", Sets: []model.NftSet{{Name: "fs", Type: model.NftIPv6}}})
	// What the generator may declare with adopt: true (walk.AdoptLink,
	// walk.AdoptTable): foreign until a configuration adopts it.
	k.PutLink(&model.Link{Name: walk.AdoptLink, Kind: model.KindBridge, MTU: 1500, Up: true})
	k.PutNftTable(model.NftTable{Family: "ip", Name: strings.Fields(walk.AdoptTable)[1], Sets: []model.NftSet{{Name: "fs", Type: model.NftIPv4}}})
}

// adoption records whether the walk adopted walk.AdoptLink and
// walk.AdoptTable: from then on they are the walk's own, and left out of
// the foreign objects compared (before and after alike).
type adoption struct{ link, table bool }

func (a *adoption) see(c *walk.Config) {
	if l := c.Links[walk.AdoptLink]; l != nil && l.Adopt {
		a.link = true
	}
	for _, t := range c.Tables {
		if t.Adopt && t.Family+" "+t.Name == walk.AdoptTable {
			a.table = true
		}
	}
}

// foreignLines are the lines of Dump that render foreign objects: those
// naming f* links, routes and rules of other protocols, tables and ports
// the walk never declares.
func foreignLines(dump string, proto int, adopted adoption) string {
	var out []string
	own := fmt.Sprintf(" proto %d", proto)
	adoptTable := strings.Fields(walk.AdoptTable)
	for _, l := range strings.Split(dump, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if adopted.link && (f[0] == "link" && f[1] == walk.AdoptLink || f[0] == "address" && slices.Contains(f, walk.AdoptLink)) {
			continue
		}
		isAdoptTable := f[0] == "nft" && len(f) > 3 && f[2] == adoptTable[0] && f[3] == adoptTable[1]
		if adopted.table && isAdoptTable {
			continue
		}
		switch f[0] {
		case "link", "wireguard", "peer":
			if strings.HasPrefix(f[1], "f") {
				out = append(out, l)
			}
		case "address":
			if strings.Contains(l, " dev f") || strings.HasPrefix(l, "address 10.251.0.1/32") {
				out = append(out, l)
			}
		case "route", "rule":
			if !strings.HasSuffix(l, own) {
				out = append(out, l)
			}
		case "fou":
			if strings.Contains(l, "7777") {
				out = append(out, l)
			}
		case "sysctl":
			if strings.Contains(l, ".fb0.") || strings.Contains(l, "tcp_syncookies") {
				out = append(out, l)
			}
		case "nft":
			if len(f) > 3 && (f[3] == "fw" || f[2] == "ip6" && f[3] == "nrw0") || isAdoptTable {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// stats counts what a walk did.
type stats struct {
	steps, skipped, passes int
	fired                  map[string]int
	// refused is the first refusal by validation, for the report.
	refused string
}

func TestFaultWalk(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano() & 0x7fffffffffff
	}
	start := time.Now()
	st := &stats{fired: map[string]int{}}
	seeds := rand.New(rand.NewSource(seed))
	for s, done := seed, 0; done < *flagSteps; s = seeds.Int63() & 0x7fffffffffff {
		n := min(*flagLen, *flagSteps-done)
		if msg := walkOnce(t, s, n, st); msg != "" {
			t.Fatalf("failure walk seed %d (reproduce with -faultwalk.seed=%d -faultwalk.length=%d, or FAULTWALK_SEED): %s", s, s, *flagLen, msg)
		}
		done += n
	}
	var kinds []string
	for k, v := range st.fired {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(kinds)
	t.Logf("failure walk: seed %d, %d configurations (%d refused by validation), %d passes, failures fired: %s; %s",
		seed, st.steps, st.skipped, st.passes, strings.Join(kinds, ", "), time.Since(start).Round(time.Millisecond))
	if st.refused != "" {
		t.Logf("first configuration refused: %s", st.refused)
	}
}

// walkOnce walks n configurations from a fresh kernel; "" when every check
// passed.
func walkOnce(t *testing.T, seed int64, n int, st *stats) string {
	ctx := context.Background()
	r := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	defects, err := walk.ParseDefects("")
	if err != nil {
		t.Fatal(err)
	}
	// The fake holds every kind, with the side effects the contract suite
	// (test/contract) holds to the kernel; the defects still open stay off.
	caps := walk.Caps{Dummy: true, IPVlan: true, IPIP: true, IP6Tnl: true, Fou: true, WireGuard: true, VLAN: true, MACVlan: true, VRF: true, Bond: true}
	g, err := walk.NewGen(r, caps, defects, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The fake does not take IPv6 off a link (disable_ipv6, an MTU below
	// 1280): the real kernel's walk draws those keys.
	g.NoIPv6Keys = true
	k := kerneltest.New()
	// Half the walks have no WireGuard module: wireguard-go serves.
	k.NoWireGuardModule = r.Intn(2) == 0
	foreign(k)
	led, err := nettest.OpenLedger(filepath.Join(dir, "state", "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Kernel: k, Ledger: led, IPAMDir: filepath.Join(dir, "state", "ipam")}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e.SetTracker(wgpeer.New(func() time.Time { return clock }, func(hp string) (netip.AddrPort, error) {
		if ap, ok := wgpeer.ParseLiteral(hp); ok {
			return ap, nil
		}
		return netip.AddrPort{}, fmt.Errorf("lookup %s: no resolver in the failure walk", hp)
	}))
	var c *walk.Config
	var dump0 string
	var adopted adoption
	var log []string
	for i := 0; i < n; i++ {
		what := "initial configuration"
		if c == nil {
			c = g.Initial()
		} else {
			c, what = g.Next(c)
		}
		if dump0 == "" {
			dump0 = k.Dump()
		}
		adopted.see(c)
		cfg, err := desired.Parse(c.Sources())
		if err != nil {
			// The generator makes files for a real kernel; validation
			// refusing one is the convergence walk's business.
			st.skipped++
			if st.refused == "" {
				st.refused = fmt.Sprintf("seed %d step %d: %v", seed, i+1, err)
			}
			continue
		}
		st.steps++
		// Pass 1, with failures.
		var armed []string
		for j := 1 + r.Intn(3); j > 0; j-- {
			f := faults[r.Intn(len(faults))]
			if f.always {
				k.FailAlways(f.call, f.err)
			} else {
				k.FailNext(f.call, f.err)
			}
			armed = append(armed, fmt.Sprintf("%s (%s %v)", f.kind, f.call, f.err))
		}
		res1 := pass(ctx, e, cfg.State)
		st.passes++
		for _, fired := range k.Fired() {
			st.fired[kindOf(fired)]++
		}
		k.ClearFailures()
		log = append(log, fmt.Sprintf("step %d: %s; failures armed: %s; pass: %s", i+1, what, strings.Join(armed, ", "), res1))
		// Pass 2, without: it converges, and the plan after it is empty.
		res2 := pass(ctx, e, cfg.State)
		st.passes++
		plan, _, err := e.PlanDesired(ctx, cfg.State, false)
		report := func(check, msg string) string {
			return fmt.Sprintf("step %d: %s: %s\nsteps:\n  %s\nconfiguration:\n%s\nkernel:\n%s", i+1, check, msg, strings.Join(log, "\n  "), c.YAML(), k.Dump())
		}
		if res2 != "converged" && !strings.HasPrefix(res2, "conflicts") {
			return report("converge", "the pass after the failures did not converge: "+res2)
		}
		// The conflicts the walk makes are the foreign route with the key
		// of a declared one, and a declared rule the kernel would take for
		// the foreign rule of its priority (it leaves unset the from that
		// the foreign one sets); any other is something of ours a failure
		// left looking foreign.
		for _, l := range strings.Split(res2, "\n")[1:] {
			if !strings.Contains(l, foreignKey) && !strings.Contains(l, "the kernel takes it for the rule "+foreignRule) {
				return report("converge", "the pass after the failures meets a conflict of its own making: "+l)
			}
		}
		if plan == nil {
			return report("converge", fmt.Sprintf("no plan after the pass: %v", err))
		}
		if !plan.Empty() {
			var b strings.Builder
			plan.Write(&b)
			return report("converge", "the plan after a clean pass is not empty:\n"+b.String())
		}
		if got, foreign0 := foreignLines(k.Dump(), c.Protocol, adopted), foreignLines(dump0, c.Protocol, adopted); got != foreign0 {
			return report("foreign", fmt.Sprintf("foreign objects changed:\n--- before\n%s\n--- after\n%s", foreign0, got))
		}
	}
	return ""
}

// pass plans and applies once, as netreconcile apply does, and says how it
// went: converged, conflicts (the rest applied), or the error.
func pass(ctx context.Context, e *engine.Engine, st *model.State) string {
	plan, _, err := e.PlanDesired(ctx, st, false)
	if plan == nil {
		return fmt.Sprintf("plan: %v", err)
	}
	var conflicts diff.Conflicts
	if err != nil && !errors.As(err, &conflicts) {
		return fmt.Sprintf("plan: %v", err)
	}
	res, aerr := e.Apply(ctx, plan)
	if err := errors.Join(res.Err(), aerr); err != nil {
		return fmt.Sprintf("apply: %v", err)
	}
	if conflicts != nil {
		return "conflicts: " + conflicts.Error()
	}
	return "converged"
}

// kindOf names the kind of a fired failure "Method id: error".
func kindOf(fired string) string {
	method, _, _ := strings.Cut(fired, " ")
	switch {
	case strings.HasSuffix(fired, syscall.EINTR.Error()):
		return "interrupted dump"
	case method == kerneltest.CallNFTApply.String() && strings.HasSuffix(fired, syscall.EINVAL.Error()):
		return "nftables batch refused"
	case method == kerneltest.CallConfigureWireGuardPeer.String():
		return "WireGuard peer refused"
	case method == kerneltest.CallSetSysctl.String():
		return "sysctl refused"
	case method == kerneltest.CallSysctls.String():
		return "sysctl unreadable"
	case strings.HasSuffix(fired, syscall.ENOBUFS.Error()):
		return "ENOBUFS"
	case strings.HasSuffix(fired, syscall.EEXIST.Error()):
		return "EEXIST"
	case strings.HasSuffix(fired, syscall.ENODEV.Error()):
		return "ENODEV"
	}
	return "other"
}
