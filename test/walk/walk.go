package walk

import (
	"cmp"
	"github.com/netreconcile/netreconcile/test/nettest"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"go.yaml.in/yaml/v3"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Options configure one walk.
type Options struct {
	Seed    int64
	Steps   int
	Caps    Caps
	Defects Defects
	// Dir receives the step files, the key files and, on a failure, the
	// shrunk sequence. It is kept on a failure.
	Dir string
	// ShrinkTrials bounds the runs the shrinker makes (0: 150).
	ShrinkTrials int
	Logf         func(format string, args ...any)
	// Reach, when set, counts what the walk's files do to each schema key
	// and which keys show prints; Proven, when set, collects the keys
	// whose comparison the oracle was shown to make (proveOracle).
	Reach  Reach
	Proven map[string]bool
	// ShowAll adds show --all to the round trip of every step.
	ShowAll bool
}

// Report is what a walk did.
type Report struct {
	Seed   int64
	Steps  int
	Checks int
	// Failure is nil when every check passed.
	Failure *Failure
	// Repro is the directory of the shrunk sequence, on a failure.
	Repro string
}

// Failure is the first check that failed.
type Failure struct {
	Step  int    // index in the sequence
	Check string // which check: held, apply, oracle, foreign, inplace, disruption, converge
	Msg   string
}

func (f *Failure) Error() string { return fmt.Sprintf("step %d: %s: %s", f.Step+1, f.Check, f.Msg) }

var nsSeq atomic.Uint64

// Walk runs a seeded walk of opts.Steps configurations and, on a failure,
// shrinks it.
func Walk(opts Options) (*Report, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	r := rand.New(rand.NewSource(opts.Seed))
	g, err := NewGen(r, opts.Caps, opts.Defects, opts.Dir)
	if err != nil {
		return nil, err
	}
	g.W = rand.New(rand.NewSource(opts.Seed ^ WordsSeed))
	g.K = rand.New(rand.NewSource(opts.Seed ^ KeysSeed))
	g.P = rand.New(rand.NewSource(opts.Seed ^ PoolAddrsSeed))
	// The rules nft takes, judged once by nft itself in a namespace of
	// its own.
	nftPools := map[string]map[string][]string{}
	for _, t := range nftTables {
		if nftPools[t[0]], err = NftRulePool(t[0]); err != nil {
			return nil, fmt.Errorf("the walk's nftables rules: %w", err)
		}
	}
	g.NftRules = func(family string) map[string][]string { return nftPools[family] }
	foreign := append(ForeignPlan(r, opts.Defects), KindForeign(opts.Caps)...)
	g.ForeignLinks = []string{"fb0"}
	rep := &Report{Seed: opts.Seed}
	var seq []*Config
	c := g.Initial()
	run, err := newRunner(g, foreign, filepath.Join(opts.Dir, "walk"))
	if err != nil {
		return nil, err
	}
	run.reach, run.showAll = opts.Reach, opts.ShowAll
	if opts.Proven != nil {
		run.proven = opts.Proven
	}
	var prevDoc *yaml.Node
	var docs docCache
	for i := 0; i < opts.Steps; i++ {
		what := "initial configuration"
		if i > 0 {
			c, what = g.Next(c)
		}
		seq = append(seq, c)
		var stepReach Reach
		var doc *yaml.Node
		if opts.Reach != nil {
			if doc, err = docs.fileDoc(c); err != nil {
				return nil, err
			}
			stepReach = NewReach()
			stepReach.Diff(prevDoc, doc)
		}
		f := run.step(i, c)
		if run.refused && run.applied != nil {
			// The file was refused (a pool with no address left, or
			// redefined under a left-out link's block): the walk goes
			// on from the last one applied.
			c = run.applied
		} else if !run.refused {
			prevDoc = doc
		}
		if stepReach != nil && !run.conflicted && !run.refused {
			// A step whose plan met a conflict leaves what is in
			// conflict as it was: show cannot print what the file
			// asked there, so its events do not count as reached.
			opts.Reach.Add(stepReach)
		}
		rep.Steps = i + 1
		if f != nil {
			run.close()
			rep.Checks = run.checks
			rep.Failure = f
			opts.Logf("walk seed %d: step %d (%s) failed: %v", opts.Seed, i+1, what, f)
			rep.Repro, err = shrink(g, foreign, seq, f, opts)
			return rep, err
		}
	}
	run.close()
	rep.Checks = run.checks
	var phases []string
	for k, v := range run.spent {
		phases = append(phases, fmt.Sprintf("%s %s", k, v.Round(time.Millisecond)))
	}
	sort.Strings(phases)
	opts.Logf("walk seed %d: %d steps (%d refused by diff and apply alike; %d with links the kernel kept below 1280 from before, IPv6 declared on them in %d; %d with a link in conflict keeping its own address in a pool's subnets, %d one a pool handed out); time by phase: %s",
		opts.Seed, rep.Steps, run.refusals, run.keptLow, run.lowIPv6, run.keptOwn, run.keptPools, strings.Join(phases, ", "))
	return rep, nil
}

// NewGen makes a generator with key files in dir.
func NewGen(r *rand.Rand, caps Caps, defects Defects, dir string) (*Gen, error) {
	g := &Gen{R: r, Caps: caps, Defects: defects, KeyDir: filepath.Join(dir, "keys"), Keys: map[string][2]string{}, AltKeys: map[string][2]string{}}
	g.PoolBits, g.PoolTable = pickInt(g, []int{0, 2}), pickInt(g, []int{119, 120})
	g.Tag = fmt.Sprintf("%04x", (os.Getpid()*7+int(nsSeq.Add(1)))&0xffff)
	g.PeerNS, g.PeerNS2 = NSPrefix+"p-"+g.Tag, NSPrefix+"q-"+g.Tag
	if !caps.WireGuard {
		return g, nil
	}
	if err := os.MkdirAll(g.KeyDir, 0o700); err != nil {
		return nil, err
	}
	for _, n := range g.slots("wireguard") {
		for _, alt := range []bool{false, true} {
			k, err := wgtypes.GeneratePrivateKey()
			if err != nil {
				return nil, err
			}
			p := filepath.Join(g.KeyDir, n+map[bool]string{false: ".key", true: ".alt.key"}[alt])
			if err := os.WriteFile(p, []byte(k.String()+"\n"), 0o600); err != nil {
				return nil, err
			}
			if alt {
				g.AltKeys[n] = [2]string{p, k.PublicKey().String()}
			} else {
				g.Keys[n] = [2]string{p, k.PublicKey().String()}
			}
		}
	}
	// The devices' keys are also the walk's systemd credentials
	// (private-key-credential names a key file's base name).
	if err := os.Setenv(desired.CredentialsDirEnv, g.KeyDir); err != nil {
		return nil, err
	}
	for i := 0; i < 3; i++ {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			return nil, err
		}
		g.PeerKeys = append(g.PeerKeys, k.PublicKey().String())
	}
	for i := 0; i < 2; i++ {
		k, err := wgtypes.GenerateKey()
		if err != nil {
			return nil, err
		}
		p := filepath.Join(g.KeyDir, fmt.Sprintf("psk%d", i))
		if err := os.WriteFile(p, []byte(k.String()+"\n"), 0o600); err != nil {
			return nil, err
		}
		g.PSKs = append(g.PSKs, [2]string{p, k.String()})
	}
	return g, nil
}

// runner applies configurations to one fresh namespace.
type runner struct {
	// conflicted says the last step's plan met a conflict.
	conflicted bool
	// refused says the last step's file was refused by diff and apply
	// alike (a pool with no address left for a link, or redefined under
	// a left-out link's block): the kernel and the walk stay at the step
	// before.
	refused  bool
	refusals int
	// keptLow counts the steps that kept links below 1280 where the file
	// gives them no MTU (Config.KeptLow), lowIPv6 those of them that
	// declared IPv6 on such a link.
	keptLow, lowIPv6 int
	// keptOwn and keptPools count the steps in which a link in conflict
	// keeps an address of the subnets of the file's pools: the file's
	// own, and one a pool handed out (leftInPools).
	keptOwn, keptPools int
	// applied is the configuration the kernel matches: the last step's
	// that was not refused.
	applied  *Config
	g        *Gen
	ns       string
	dir      string
	state    string
	foreign0 string
	lo0      []string
	// auto0 is the kernel's IPv6 set-up of the foreign links
	// (dumpIPv6Auto) after the last step.
	auto0 []string
	// fou0 are the FoU ports someone else opened (FouPorts).
	fou0 []string
	// sysctl0 are the walk's global sysctls as the fresh namespace had
	// them (CompareSysctls).
	sysctl0 map[string]string
	// fsys0 are the keys of the links found in the namespace (someone
	// else's, and lo) that a write of a "default" key may move
	// (CompareForeignSysctls).
	fsys0  map[string]map[string]string
	checks int
	// foreignTables are nftables tables ("FAMILY NAME") someone else
	// recreated under one of the walk's names (NftTableHandle).
	foreignTables map[string]bool
	// meddled counts the foreign actor's changes.
	meddled int
	// adopted are the foreign links a step adopted: ours from then on,
	// out of the foreign objects' dump.
	adopted map[string]bool
	// pinned are the links that were in the kernel while the file, not
	// declaring them, wrote a "default" key (notePinned).
	pinned map[string]bool
	// prev is the reading of the last step's checks.
	prev *Kernel
	// spent is the time each phase took, for the report.
	spent map[string]time.Duration
	last  time.Time
	// others are the addresses other owners hold ("POOL OWNER"), and
	// prevFile and prevConfDir the last step's files.
	others                map[string][]netip.Addr
	prevFile, prevConfDir string
	// poolAddrs are the addresses of the pools' subnets the links held
	// after the last step, true for those from a pool (heldPoolAddrs).
	poolAddrs map[string]bool
	// showAll adds show --all to the round trip; reach, when set,
	// counts the keys show prints.
	showAll bool
	reach   Reach
	// proven are the keys whose comparison proveOracle has shown.
	proven map[string]bool
}

// lap charges the time since the last lap to phase.
func (r *runner) lap(phase string) {
	now := time.Now()
	if r.spent == nil {
		r.spent = map[string]time.Duration{}
	}
	if !r.last.IsZero() {
		r.spent[phase] += now.Sub(r.last)
	}
	r.last = now
}

func newRunner(g *Gen, foreign []string, dir string) (*runner, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ns := fmt.Sprintf("%s-%d-%d", NSPrefix, os.Getpid(), nsSeq.Add(1))
	if _, err := run("ip", "netns", "add", ns); err != nil {
		return nil, err
	}
	// The peer namespaces keep their names for the walk (the files name
	// them): a replay makes them afresh.
	for _, p := range []string{g.PeerNS, g.PeerNS2} {
		_, _ = run("ip", "netns", "del", p)
		if _, err := run("ip", "netns", "add", p); err != nil {
			_, _ = run("ip", "netns", "del", ns)
			_, _ = run("ip", "netns", "del", g.PeerNS)
			return nil, err
		}
	}
	state, err := os.MkdirTemp("", "nrwalk-state-")
	if err != nil {
		return nil, err
	}
	r := &runner{g: g, ns: ns, dir: dir, state: state, adopted: map[string]bool{}, pinned: map[string]bool{}, others: map[string][]netip.Addr{}, proven: map[string]bool{}}
	for _, cmd := range foreign {
		if err := shell(ns, cmd); err != nil {
			r.close()
			return nil, err
		}
	}
	k, err := ReadKernel(ns, true)
	if err != nil {
		r.close()
		return nil, err
	}
	r.foreignTables = map[string]bool{AdoptTable: true}
	if g.Defects.NftTableTakeover {
		// ForeignPlan made it: someone else's table under a walk name.
		r.foreignTables["ip nrw1"] = true
	}
	r.foreign0, r.lo0 = dumpForeign(k, 245, r.foreignTables, r.adopted)
	r.auto0 = dumpIPv6Auto(k, r.adopted)
	if g.Caps.Fou {
		if _, r.fou0, err = FouPorts(ns); err != nil {
			r.close()
			return nil, err
		}
	}
	if r.sysctl0, err = sysctlBaseline(ns); err != nil {
		r.close()
		return nil, err
	}
	if r.fsys0, err = foreignSysctls(ns, sortedKeys(k.Links)); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *runner) close() {
	stopProcesses(r.ns)
	_, _ = run("ip", "netns", "del", r.ns)
	_, _ = run("ip", "netns", "del", r.g.PeerNS)
	_, _ = run("ip", "netns", "del", r.g.PeerNS2)
	_ = os.RemoveAll(r.state)
}

func (r *runner) cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb, Getenv: walkEnv},
		append(args, "--netns", r.ns, "--state-dir", r.state))
	return code, out.String(), errb.String()
}

type planOp struct {
	Action     string `json:"action"`
	Kind       string `json:"kind"`
	ID         string `json:"id"`
	Disruption string `json:"disruption"`
	Reason     string `json:"reason"`
	Changes    []struct {
		Field string `json:"field"`
	} `json:"changes"`
}

// step applies c and runs every check; nil when all passed.
func (r *runner) step(i int, c *Config) *Failure {
	fail := func(check, f string, a ...any) *Failure {
		return &Failure{Step: i, Check: check, Msg: fmt.Sprintf(f, a...)}
	}
	fitKeptLowers(c, r.prev)
	file, confDir, err := writeFiles(r.dir, fmt.Sprintf("step-%04d", i+1), c)
	if err != nil {
		return fail("setup", "%v", err)
	}
	if err := r.meddle(i, c); err != nil {
		return fail("setup", "%v", err)
	}
	if err := r.syncOthers(c, file, confDir); err != nil {
		return fail("ipam", "%v", err)
	}
	r.lap("idle")
	// The plan, as diff shows it.
	code, out, errs := r.cli("diff", "-o", "json", "-c", file, "--conf-dir", confDir)
	r.lap("diff")
	conflicted := code == cli.ExitError && strings.Contains(errs, "conflict")
	r.conflicted, r.refused = conflicted, false
	if code == cli.ExitError && strings.Contains(errs, ipam.ErrPoolInUse.Error()) {
		// A pool's new definition with blocks held is refused (the
		// generator changes it only where the files give none of its
		// addresses): right only while a link left out for a conflict
		// in an earlier step holds one, which the file cannot show.
		if r.heldOutside(c, errs) == "" {
			return fail("diff", "exit %d: a pool's new definition refused, but no link left out before holds an address of it\n%s%s", code, out, errs)
		}
		if err := r.refusedStep(c, file, confDir, errs); err != nil {
			return fail("refused", "%v", err)
		}
		r.refused = true
		r.refusals++
		return nil
	}
	// The links the kernel holds below IPv6's minimum MTU and this file
	// keeps there, by the walk's own reading: IPv6 on one of them is
	// refused by diff and apply alike, unless the plan recreates the link
	// or leaves it out for a conflict.
	c.KeptLow = keptBelowIPv6(c, r.prev)
	low, lowFrom := lowByKernel(c)
	if len(c.KeptLow) > 0 {
		r.keptLow++
	}
	if len(low) > 0 {
		r.lowIPv6++
	}
	lowRefused := code == cli.ExitError && strings.Contains(errs, ipv6KeptRefusal)
	if code == cli.ExitError && strings.Contains(errs, ipam.ErrPoolExhausted.Error()) || lowRefused {
		if lowRefused {
			if err := agreeLowRefusal(errs, low); err != nil {
				return fail("refused", "%v", err)
			}
		}
		if err := r.refusedStep(c, file, confDir, errs); err != nil {
			return fail("refused", "%v", err)
		}
		r.refused = true
		r.refusals++
		return nil
	}
	if code != cli.ExitOK && code != cli.ExitChanges && !conflicted {
		return fail("diff", "exit %d\n%s%s", code, out, errs)
	}
	plan, err := parsePlan(out)
	if err != nil {
		return fail("diff", "exit %d, plan JSON: %v\n%s%s", code, err, out, errs)
	}
	for _, n := range sortedKeys(low) {
		// Not refused: the plan must recreate the kept link the MTU
		// comes from (for a change the walk does not judge), or leave
		// the link out for a conflict.
		remade := slices.ContainsFunc(plan.Ops, func(op planOp) bool {
			return op.Kind == "link" && op.Action == "replace" && slices.Contains(lowFrom[n], op.ID)
		})
		if !remade && !(conflicted && mentionsName(errs, n)) {
			return fail("diff", "the kernel holds link %s at MTU %d, below 1280 (kept from before the step: %v), and the file declares IPv6 on it: diff did not refuse it, recreate %v or leave it out for a conflict\n%s%s",
				n, low[n], lowFrom[n], lowFrom[n], out, errs)
		}
	}
	// The kernel as the previous step's checks left it (its second apply
	// wrote nothing), read once more only at the start.
	before := r.prev
	if before == nil {
		var err error
		if before, err = ReadKernel(r.ns, true); err != nil {
			return fail("oracle", "%v", err)
		}
	}
	r.lap("read")
	if c.MaxDisruption != "" && !conflicted {
		// The service's pass under the file's limit first (held.go);
		// the apply by hand then applies what it held.
		r.checks++
		if err := r.heldPass(c, file, confDir, before); err != nil {
			return fail("held", "%v\ndiff planned:\n%s", err, planText(plan.Ops))
		}
		r.lap("held pass")
	}
	code, out, aerrs := r.cli("apply", "-c", file, "--conf-dir", confDir)
	r.lap("apply")
	r.checks++
	skip := map[string]bool{}
	if code != cli.ExitOK {
		if !conflicted || conflictPart(aerrs) != conflictPart(errs) {
			return fail("apply", "exit %d (the plan predicted no such conflict)\n%s%s", code, out, aerrs)
		}
		// What the plan reported in conflict is left as it is: out of
		// the oracle's comparison (the foreign check still covers it).
		// Links the file names, foreign ones, and owned links the file
		// dropped but whose delete is in conflict (a foreign link on them).
		names := append(c.LinkNames(), r.g.ForeignLinks...)
		names = append(names, sortedKeys(before.Links)...)
		for _, n := range names {
			if mentionsName(errs, n) {
				skip[n] = true
			}
		}
		// A veth end left as it is keeps its peer: the kernel's peer
		// of a skipped end (a pair the file renames) is left out too.
		for n := range skip {
			for _, k := range []*Kernel{before} {
				if l := k.Links[n]; l != nil && l.kind() == "veth" && l.Link != "" {
					skip[l.Link] = true
				}
			}
		}
		for _, t := range c.Tables {
			if strings.Contains(errs, t.Family+" "+t.Name) {
				skip[t.Family+" "+t.Name] = true
			}
		}
		for _, rt := range c.Routes {
			if routeInConflict(errs, rt) {
				skip[routeSkipKey(rt.Table, rt.To)] = true
			}
		}
	}
	after, err := ReadKernel(r.ns, true)
	if err != nil {
		return fail("oracle", "%v", err)
	}
	r.prev = after
	r.lap("oracle: read")
	// The independent oracle.
	diffs := Compare(r.ns, c, after, skip)
	nd, err := CompareNft(c, after, skip, r.foreignTables)
	if err != nil {
		return fail("oracle", "%v", err)
	}
	diffs = append(diffs, nd...)
	r.lap("oracle: compare")
	if r.g.Caps.WireGuard {
		wd, err := CompareWG(r.ns, c)
		if err != nil {
			return fail("oracle", "%v", err)
		}
		diffs = append(diffs, wd...)
	}
	if r.g.Caps.Fou {
		fd, err := CompareFou(r.ns, c, r.fou0)
		if err != nil {
			return fail("oracle", "%v", err)
		}
		diffs = append(diffs, fd...)
	}
	diffs = append(diffs, comparePeerNS(r.g.PeerNS, c, skip)...)
	diffs = append(diffs, comparePeerNS(r.g.PeerNS2, c, skip)...)
	bad := func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) }
	compareExports(c, after, r.othersByPool(), skip, r.poolAddrs, bad)
	compareNewBlocks(c, after, skip, r.poolAddrs, bad)
	own, held := leftInPools(c, after, skip, r.poolAddrs)
	if own {
		r.keptOwn++
	}
	if held {
		r.keptPools++
	}
	sd, err := CompareSysctls(r.ns, c, r.sysctl0, skip, r.pinned)
	if err != nil {
		return fail("oracle", "%v", err)
	}
	diffs = append(diffs, sd...)
	r.notePinned(c, after)
	fd, err := CompareForeignSysctls(r.ns, c, r.fsys0, r.adopted)
	if err != nil {
		return fail("oracle", "%v", err)
	}
	diffs = append(diffs, fd...)
	r.lap("oracle")
	r.checks++
	if len(diffs) > 0 {
		return fail("oracle", "the kernel differs from the file:\n  %s\napply printed:\n%s%s\ndiff planned:\n%s", strings.Join(diffs, "\n  "), out, aerrs, planText(plan.Ops))
	}
	// The oracle's own check: a key changed in the file is a difference
	// it sees in this kernel.
	if err := r.proveOracle(c, after, skip); err != nil {
		return fail("oracle reach", "%v", err)
	}
	r.lap("oracle reach")
	// Adopted objects are ours from now on: out of the foreign dump.
	adopted := false
	for _, n := range c.LinkNames() {
		if l := c.Links[n]; l.Adopt && !skip[n] && !r.adopted[n] {
			r.adopted[n], adopted = true, true
		}
	}
	for _, t := range c.Tables {
		if id := t.Family + " " + t.Name; t.Adopt && !skip[id] && r.foreignTables[id] {
			delete(r.foreignTables, id)
			adopted = true
		}
	}
	if adopted {
		r.foreign0, _ = dumpForeign(before, c.Protocol, r.foreignTables, r.adopted)
		r.auto0 = dumpIPv6Auto(before, r.adopted)
	}
	// Foreign objects exactly as before.
	fdump, lo := dumpForeign(after, c.Protocol, r.foreignTables, r.adopted)
	r.lap("foreign")
	r.checks++
	if fdump != r.foreign0 {
		return fail("foreign", "foreign objects changed:\n%s", lineDiff(r.foreign0, fdump))
	}
	// The kernel's IPv6 set-up of the foreign links changes only when
	// the step writes a key that sets IPv6 up afresh on every link.
	auto := dumpIPv6Auto(after, r.adopted)
	if d := ipv6AutoChanged(r.auto0, auto); d != "" && !writesIPv6Reset(plan.Ops) {
		return fail("foreign", "the kernel's IPv6 set-up of foreign links changed, and the step wrote no key that sets IPv6 up afresh (%s):\n%s", strings.Join(sortedKeys(ipv6ResetKeys), ", "), d)
	}
	r.auto0 = auto
	for _, a := range r.lo0 {
		if !contains(lo, a) {
			return fail("foreign", "foreign address %s on lo is gone", a)
		}
	}
	// In place means the same ifindex.
	recreated := map[string]bool{}
	for _, op := range plan.Ops {
		if op.Kind == "link" && op.Action != "update" {
			recreated[op.ID] = true
		}
	}
	for _, l := range c.Links {
		if recreated[l.Name] && l.Kind == "veth" {
			recreated[l.Peer] = true
		}
	}
	r.checks++
	for n, b := range before.Links {
		a := after.Links[n]
		if a == nil || recreated[n] || c.Links[n] == nil {
			continue
		}
		if a.Index != b.Index {
			return fail("inplace", "link %s changed ifindex %d -> %d but the plan did not say it is recreated\nplan: %+v", n, b.Index, a.Index, plan.Ops)
		}
	}
	// What the plan says a link op disrupts: recreated is a new ifindex
	// (the converse is above), and only a replace (or the delete and
	// create of one) recreates.
	for _, op := range plan.Ops {
		if op.Kind != "link" {
			continue
		}
		b, a := before.Links[op.ID], after.Links[op.ID]
		switch rec := op.Disruption == "link_recreated"; {
		case rec && b != nil && a != nil && a.Index == b.Index && !skip[op.ID]:
			return fail("disruption", "link %s kept ifindex %d but the plan says it is recreated\nplan: %+v", op.ID, a.Index, plan.Ops)
		case op.Action == "replace" && !rec, op.Action == "update" && rec:
			return fail("disruption", "link %s: a %s labelled %s\nplan: %+v", op.ID, op.Action, op.Disruption, plan.Ops)
		case op.Action != "update" && r.applied != nil && vxlanInPlace(r.applied.Links[op.ID], c.Links[op.ID]) && vxlanInPlaceReason(op.Reason):
			return fail("inplace", "link %s: recreated for %q, which the kernel changes in place\nplan: %+v", op.ID, op.Reason, plan.Ops)
		}
	}
	// In place means the same handle, for the walk's own nftables objects
	// (the foreign check covers the others').
	if hd := CompareNftHandles(c, before, after, plan.Ops, skip, r.foreignTables); len(hd) > 0 {
		return fail("inplace", "%s\nplan: %+v", strings.Join(hd, "\n"), plan.Ops)
	}
	r.lap("read")
	// Convergence: a second diff is empty, a second apply writes nothing.
	code, out, errs = r.cli("diff", "-c", file, "--conf-dir", confDir)
	r.lap("diff")
	r.checks++
	if code != cli.ExitOK && !conflicted {
		return fail("converge", "second diff exit %d:\n%s%s", code, out, errs)
	}
	if w, err := r.secondApply(file, confDir); err != nil && !conflicted {
		return fail("converge", "second apply: %v", err)
	} else if w != 0 {
		return fail("converge", "second apply made %d kernel writes", w)
	}
	r.lap("second apply")
	r.checks++
	r.prevFile, r.prevConfDir, r.poolAddrs = file, confDir, heldPoolAddrs(c, after, skip, r.poolAddrs)
	r.applied = c
	// The round trip: what show prints, as a file, validates, plans
	// nothing against the kernel and applies with zero writes.
	for _, all := range []bool{false, r.showAll} {
		if all && !r.showAll {
			continue
		}
		if f := r.roundTrip(i, file, confDir, all); f != nil {
			return f
		}
	}
	r.lap("round trip")
	return nil
}

// roundTrip runs show (--all with all) in process, writes what it prints
// as a file of its own, and checks that the file loads, plans nothing and
// applies with zero writes.
func (r *runner) roundTrip(i int, file, confDir string, all bool) *Failure {
	check, args := "show", []string{"show", "-c", file, "--conf-dir", confDir}
	if all {
		check, args = "show --all", append(args, "--all")
	}
	fail := func(f string, a ...any) *Failure {
		return &Failure{Step: i, Check: check, Msg: fmt.Sprintf(f, a...)}
	}
	r.checks++
	code, out, errs := r.cli(args...)
	if code != cli.ExitOK {
		return fail("exit %d\n%s%s", code, out, errs)
	}
	if r.reach != nil {
		root, err := DocRoot(out)
		if err != nil {
			return fail("%v\n%s", err, out)
		}
		if unknown := r.reach.Shown(root); len(unknown) > 0 {
			return fail("keys the schema does not have: %v\n%s", unknown, out)
		}
	}
	dir := filepath.Join(r.dir, fmt.Sprintf("step-%04d", i+1), strings.ReplaceAll(check, " --", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	shown := filepath.Join(dir, "walk.yaml")
	if err := os.WriteFile(shown, []byte(out), 0o644); err != nil {
		return fail("%v", err)
	}
	if _, err := desired.Load(shown, ""); err != nil {
		return fail("its output does not load: %v\n%s", err, out)
	}
	reg0 := r.registries()
	if w, err := r.secondApply(shown, ""); err != nil {
		return fail("its output: %v\n%s", err, out)
	} else if w != 0 {
		return fail("its output made %d kernel writes\n%s", w, out)
	}
	if reg := r.registries(); reg != reg0 {
		return fail("its output changed the IPAM registry:\n%s\nshow printed:\n%s", lineDiff(reg0, reg), out)
	}
	if all {
		return r.foreignTablesShown(out, file, confDir, fail)
	}
	return nil
}

// foreignTablesShown checks that show --all names every nftables table of
// someone else's that nft lists (the step's reading, r.prev): as a comment
// under nftables in the text, and under foreign.nftables in the JSON. The
// walk's own tables are not among them: those are declarations. The JSON
// names someone else's links and FoU ports too.
func (r *runner) foreignTablesShown(text, file, confDir string, fail func(string, ...any) *Failure) *Failure {
	if r.prev == nil {
		return nil
	}
	want := map[string]bool{}
	for id := range parseNftTables(r.prev.NftText) {
		f := strings.Fields(id)
		if !strings.HasPrefix(f[1], "nrw") || id == "ip6 nrw0" || r.foreignTables[id] {
			want[id] = true
		}
	}
	r.checks++
	code, out, errs := r.cli("show", "--all", "-o", "json", "-c", file, "--conf-dir", confDir)
	if code != cli.ExitOK {
		return fail("-o json: exit %d\n%s%s", code, out, errs)
	}
	var doc struct {
		Foreign *struct {
			Links    map[string]any `json:"links"`
			Fou      []any          `json:"fou"`
			NFTables map[string]any `json:"nftables"`
		} `json:"foreign"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Foreign == nil {
		return fail("-o json: no foreign objects (%v)\n%s", err, out)
	}
	got := map[string]bool{}
	for id := range doc.Foreign.NFTables {
		got[id] = true
	}
	if !maps.Equal(got, want) {
		return fail("-o json: foreign.nftables holds %v, nft lists someone else's tables %v", sortedKeys(got), sortedKeys(want))
	}
	for _, id := range sortedKeys(want) {
		if !regexp.MustCompile(`(?m)^ *# ` + regexp.QuoteMeta(id) + `: `).MatchString(text) {
			return fail("someone else's nftables table %s is not shown as a comment\n%s", id, text)
		}
	}
	// Someone else's links (ForeignPlan's and KindForeign's, of every
	// kind the kernel has) and FoU ports are there too.
	for _, n := range sortedKeys(r.prev.Links) {
		if strings.HasPrefix(n, "f") && !r.adopted[n] && doc.Foreign.Links[n] == nil {
			return fail("-o json: someone else's link %s is not under foreign.links\n%s", n, out)
		}
	}
	if len(doc.Foreign.Fou) != len(r.fou0) {
		return fail("-o json: foreign.fou holds %d ports, ip fou lists someone else's %q", len(doc.Foreign.Fou), r.fou0)
	}
	return nil
}

// registries are the IPAM registry files of the namespace, one after the
// other, each line under its file's name.
func (r *runner) registries() string {
	files, _ := filepath.Glob(filepath.Join(r.state, "netns", r.ns, "ipam", "*.registry"))
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			fmt.Fprintf(&b, "%s: %s\n", filepath.Base(f), line)
		}
	}
	return b.String()
}

// plan is diff's plan, as the checks read it.
type plan struct {
	Ops []planOp `json:"ops"`
}

// parsePlan reads what `diff -o json` prints (kinds in snake_case,
// "nft_chain", as the checks take them).
func parsePlan(out string) (*plan, error) {
	var p plan
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n\n", 2)[0]), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// planText renders the ops of diff's plan one a line, for a failure: what
// the step was meant to do, beside what apply did.
func planText(ops []planOp) string {
	if len(ops) == 0 {
		return "  (nothing)\n"
	}
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "  %s %s %s\n", op.Action, op.Kind, op.ID)
	}
	return b.String()
}

// conflictPart is the conflict list of an error message.
func conflictPart(s string) string {
	if i := strings.Index(s, "conflict(s)"); i >= 0 {
		return s[i:]
	}
	return s
}

// secondApply runs one reconcile pass through the engine and returns the
// kernel writes it counted: the command line does not print them.
func (r *runner) secondApply(file, confDir string) (uint64, error) {
	cfg, err := desired.Load(file, confDir)
	if err != nil {
		return 0, err
	}
	k, err := kernel.Open("/run/netns/" + r.ns)
	if err != nil {
		return 0, err
	}
	defer k.Close()
	l, err := nettest.OpenLedger(filepath.Join(r.state, "netns", r.ns, "ledger.json"))
	if err != nil {
		return 0, err
	}
	eng := &engine.Engine{Kernel: k, Ledger: l, IPAMDir: filepath.Join(r.state, "netns", r.ns)}
	ctx := context.Background()
	plan, _, err := eng.PlanDesired(ctx, cfg.State, false)
	if plan == nil {
		return 0, err
	}
	if !plan.Empty() {
		var b bytes.Buffer
		plan.Write(&b)
		return 0, fmt.Errorf("the plan is not empty:\n%s", b.String())
	}
	res, aerr := eng.Apply(ctx, plan)
	return k.Writes(), errors.Join(err, aerr, res.Err())
}

// refusedStep checks a step whose file diff refuses because a pool has no
// address left for a link, or a new definition of a pool whose blocks a
// link left out before holds (heldOutside): apply must refuse it with the same error and
// leave the kernel as it was, so that what the oracle sees of it against
// the last file applied, and the foreign objects, are the same after the
// apply as before. The pool's registry is held to the same by the IPAM
// package's own differential (TestPredictIsWhatTheChangesDo).
func (r *runner) refusedStep(c *Config, file, confDir, diffErrs string) error {
	before, err := ReadKernel(r.ns, true)
	if err != nil {
		return err
	}
	code, out, errs := r.cli("apply", "-c", file, "--conf-dir", confDir)
	r.checks++
	if code != cli.ExitError || cliMessage(errs) != cliMessage(diffErrs) {
		return fmt.Errorf("diff refused the file:\n%s\nbut apply exited %d:\n%s%s", diffErrs, code, out, errs)
	}
	after, err := ReadKernel(r.ns, true)
	if err != nil {
		return err
	}
	r.prev = after
	if r.applied != nil {
		b, a := Compare(r.ns, r.applied, before, nil), Compare(r.ns, r.applied, after, nil)
		sort.Strings(b)
		sort.Strings(a)
		if strings.Join(b, "\n") != strings.Join(a, "\n") {
			return fmt.Errorf("the refused apply changed the kernel: against the last file applied, before:\n  %s\nafter:\n  %s",
				strings.Join(b, "\n  "), strings.Join(a, "\n  "))
		}
	}
	fb, _ := dumpForeign(before, c.Protocol, r.foreignTables, r.adopted)
	fa, _ := dumpForeign(after, c.Protocol, r.foreignTables, r.adopted)
	if fb != fa {
		return fmt.Errorf("the refused apply changed foreign objects:\n%s", lineDiff(fb, fa))
	}
	return nil
}

// refusedPool finds the pool named in a refusal of its new definition.
var refusedPool = regexp.MustCompile(`pool (\S+): ` + regexp.QuoteMeta(ipam.ErrPoolInUse.Error()))

// heldOutside says which link holds an address of the pool whose new
// definition errs refuses ("LINK ADDR"), of those that the last file
// applied and c no longer declare: a link left out for a conflict in an
// earlier step keeps what it took from a pool (docs/config.md, IPAM pools).
// A holder that leaves the file in this step gives its address back first,
// and is no reason (walk finding 77); nor is anything when no step was
// applied yet. "" when none.
func (r *runner) heldOutside(c *Config, errs string) string {
	m := refusedPool.FindStringSubmatch(errs)
	if m == nil || r.applied == nil {
		return ""
	}
	var pool *Pool
	for _, p := range r.applied.Pools {
		if p.Name == m[1] {
			pool = p
		}
	}
	if pool == nil {
		return ""
	}
	for _, key := range sortedKeys(r.poolAddrs) {
		link, addr, _ := strings.Cut(key, " ")
		if !r.poolAddrs[key] || r.applied.Links[link] != nil || c.Links[link] != nil {
			continue
		}
		if _, ok := pool.blockIndex(netip.MustParseAddr(addr)); ok {
			return key
		}
	}
	return ""
}

// ipv6KeptRefusal is how diff and apply begin to refuse IPv6 on links the
// plan keeps below IPv6's minimum MTU; each such link is named "link NAME
// has no IPv6".
const ipv6KeptRefusal = "below IPv6's minimum MTU with IPv6 declared on them, nothing was changed"

var lowLinkRe = regexp.MustCompile(`link (\S+) has no IPv6: the kernel (?:holds|makes) it at MTU (\d+),`)

// agreeLowRefusal checks a refusal of IPv6 on links kept below IPv6's
// minimum MTU against the walk's own judgement, low: each link named is
// one of them, at its MTU. A link of low that is not named is one the plan
// recreates for a change the walk does not judge (a vxlan's port), which
// only a plan would show.
func agreeLowRefusal(errs string, low map[string]int) error {
	named := map[string]int{}
	for _, m := range lowLinkRe.FindAllStringSubmatch(errs, -1) {
		named[m[1]], _ = strconv.Atoi(m[2])
	}
	agree := len(named) > 0
	for n, m := range named {
		agree = agree && low[n] == m
	}
	if !agree {
		return fmt.Errorf("diff refused IPv6 on links below IPv6's minimum MTU %v, where the walk, from its reading of the kernel, finds %v:\n%s", named, low, errs)
	}
	return nil
}

// cliMessage is what a command printed of its error, without the
// command's name.
func cliMessage(errs string) string {
	_, msg, _ := strings.Cut(strings.TrimSpace(errs), ": ")
	return msg
}

// writeFiles writes c as dir/NAME/walk.yaml, its fragments in
// dir/NAME/conf.d and its side files in dir/NAME/side, and returns the main
// file's path and the fragments' directory.
func writeFiles(dir, name string, c *Config) (string, string, error) {
	top := filepath.Join(dir, name)
	d := filepath.Join(top, "conf.d")
	side := filepath.Join(top, "side")
	for _, x := range []string{d, side} {
		if err := os.MkdirAll(x, 0o755); err != nil {
			return "", "", err
		}
	}
	file := filepath.Join(top, "walk.yaml")
	if err := os.WriteFile(file, []byte(c.File(0)), 0o644); err != nil {
		return "", "", err
	}
	for f := 1; f < Frags; f++ {
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%d.yaml", f)), []byte(c.File(f)), 0o644); err != nil {
			return "", "", err
		}
	}
	for n, data := range c.SideFiles() {
		if err := os.WriteFile(filepath.Join(side, n), []byte(data), 0o644); err != nil {
			return "", "", err
		}
	}
	return file, d, nil
}

func lineDiff(a, b string) string {
	// Counted, not as sets: the dumps are sorted lines, and a line that
	// is there twice instead of once is a change too.
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	ac, bc := count(a), count(b)
	var out []string
	for l, n := range ac {
		if m := bc[l]; m < n {
			out = append(out, fmt.Sprintf("- %s%s", l, times(n-m, n)))
		}
	}
	for l, n := range bc {
		if m := ac[l]; m < n {
			out = append(out, fmt.Sprintf("+ %s%s", l, times(n-m, n)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// times says how many of a line's n copies differ, when not all of one.
func times(d, n int) string {
	if d == 1 && n == 1 {
		return ""
	}
	return fmt.Sprintf(" (%d of %d copies)", d, n)
}

// stopProcesses ends the processes left in ns (wireguard-go daemons the
// walk's applies started) and waits until they are gone: their control
// sockets are host-wide, and the next run (a shrink trial) reuses the names.
func stopProcesses(ns string) {
	out, err := run("ip", "netns", "pids", ns)
	if err != nil {
		return
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	for _, pid := range pids {
		// Bounded: a process that ignores SIGTERM for 5 s is left alone.
		for i := 0; i < 500; i++ {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || strings.Contains(string(stat), ") Z ") {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// mentionsName reports whether text names the link name as a word of its
// own (not as part of a longer name: b0 is not in fb0).
func mentionsName(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !nameByte(text[j-1])) && (end == len(text) || !nameByte(text[end])) {
			return true
		}
		i = j + 1
	}
}

func nameByte(b byte) bool {
	return b == '_' || b == '-' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// meddle is the foreign actor between steps, for the known-defect switches
// that need one: it attaches foreign links to owned ones (ForeignChildren)
// and recreates an owned nftables table as someone else's (NftTableHandle).
// What it makes joins the foreign objects that must stay exactly as they are.
// The first run of a step draws what to do and records it in c; a replay
// does the same again.
func (r *runner) meddle(step int, c *Config) error {
	if !c.Meddled {
		c.Meddle, c.MeddleTables = r.drawMeddle(step)
		c.Meddled = true
	}
	if len(c.Meddle) == 0 {
		return nil
	}
	r.meddled++
	for _, id := range c.MeddleTables {
		r.foreignTables[id] = true
	}
	for _, cmd := range c.Meddle {
		if err := shell(r.ns, cmd); err != nil {
			return err
		}
	}
	k, err := ReadKernel(r.ns, true)
	if err != nil {
		return err
	}
	r.prev = k
	r.foreign0, _ = dumpForeign(k, c.Protocol, r.foreignTables, r.adopted)
	r.auto0 = dumpIPv6Auto(k, r.adopted)
	return nil
}

// drawMeddle picks the foreign actor's commands before a step, if any, and
// the nftables tables they make someone else's.
func (r *runner) drawMeddle(step int) (cmds, tables []string) {
	d := r.g.Defects
	if r.prev == nil || (!d.ForeignChildren && !d.NftTableHandle) || r.meddled >= 3 {
		return nil, nil
	}
	if d.ForeignChildren && r.g.R.Intn(5) == 0 {
		for _, n := range sortedKeys(r.prev.Links) {
			l := r.prev.Links[n]
			if !strings.HasPrefix(l.Alias, "netreconcile") {
				continue
			}
			if l.kind() == "veth" {
				cmds = append(cmds, fmt.Sprintf("ip link add fc%d type vxlan id %d dstport 4789 dev %s", step, 4000+step, n))
				break
			}
			if l.kind() == "bridge" {
				cmds = append(cmds, fmt.Sprintf("ip link add fcp%da type veth peer name fcp%db; ip link set fcp%da master %s", step, step, step, n))
				break
			}
		}
	}
	if d.NftTableHandle && r.g.R.Intn(10) == 0 {
		// In name order: a map's would make the seed draw another walk.
		for _, id := range sortedKeys(parseNftTables(r.prev.NftText)) {
			f := strings.Fields(id)
			if strings.HasPrefix(f[1], "nrw") && !r.foreignTables[id] && id != "ip6 nrw0" {
				cmds = append(cmds, fmt.Sprintf("nft delete table %s; nft add table %s; nft add chain %s theirs", id, id, id))
				tables = append(tables, id)
				break
			}
		}
	}
	return cmds, tables
}

// routeInConflict says whether the conflicts errs lists name rt: a line
// with its destination and its table. The table counts: a route of another
// table with the same destination is checked as usual (guest walk seed
// 124997191085436, step 112).
func routeInConflict(errs string, rt *Route) bool {
	for _, line := range strings.Split(errs, "\n") {
		if strings.Contains(line, "route "+rt.To+" ") && strings.Contains(line, " table "+tableName(rt.Table)+" ") {
			return true
		}
	}
	return false
}

// routeSkipKey is the oracle's skip entry for a route left out.
func routeSkipKey(table, to string) string {
	return "route " + tableName(table) + " " + to
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// walkEnv is the environment of the walk's commands: the process's, with
// the nftables element cache kept for sets of any size, so that every
// apply writes it and the next command may take it; the oracle then checks
// what the cache let the plan believe.
func walkEnv(key string) string {
	if key == "NETRECONCILE_NFT_CACHE_MIN" {
		return "0"
	}
	return os.Getenv(key)
}

// vxlanInPlace reports whether a vxlan declared as was, now as is, differs
// only in what the kernel changes in place (vxlan_changelink): its remote
// and local of one family, ttl and learning; not its id, port, dev or
// multicast group.
func vxlanInPlace(was, is *Link) bool {
	if was == nil || is == nil || was.VXLAN == nil || is.VXLAN == nil || was.Kind != is.Kind {
		return false
	}
	a, b := *was.VXLAN, *is.VXLAN
	six := func(v VXLAN) bool { return strings.Contains(v.Remote+v.Local+v.Group, ":") }
	port := func(v VXLAN) int { return cmp.Or(v.Port, 4789) }
	return a != b && a.ID == b.ID && port(a) == port(b) && a.Dev == b.Dev && a.Group == "" && b.Group == "" && six(a) == six(b)
}

// vxlanInPlaceReason reports whether a replace's reason is a change of a
// vxlan attribute the kernel changes in place.
func vxlanInPlaceReason(reason string) bool {
	for _, a := range []string{"remote", "local", "ttl", "learning"} {
		if strings.HasPrefix(reason, "vxlan "+a+" ") {
			return true
		}
	}
	return false
}

// notePinned records the links in the kernel (k) that the file c does not
// declare, when c writes a "default" key that spreads (spreadByDefault):
// netreconcile writes such a link's own value back after the write
// (docs/config.md), so from then on the key is the link's own, not
// default's, also once a later file declares the link again without it.
// A link gone from the kernel is forgotten: made again, it follows
// default's.
func (r *runner) notePinned(c *Config, k *Kernel) {
	for n := range r.pinned {
		if k.Links[n] == nil {
			delete(r.pinned, n)
		}
	}
	writesDefault := false
	for key := range DefaultSysctls {
		if _, ok := c.Sysctls[key]; ok {
			writesDefault = true
		}
	}
	if !writesDefault {
		return
	}
	for n := range k.Links {
		if c.Links[n] == nil {
			r.pinned[n] = true
		}
	}
}
