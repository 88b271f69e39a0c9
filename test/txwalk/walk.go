// Package txwalk is the transaction walk: seeded
// sequences of safe-apply steps (apply --confirm-within with and without
// --candidate, extensions, confirm in time and late, rollback, the deadline
// passing, commands SIGKILLed at random points, the daemon stopped and
// started or paused between two passes, the kernel edited by hand in the
// window, the namespace's holder
// exiting, a reboot) run with the built command on a fresh namespace, over a
// file layout drawn from the seed (drop-ins, a symlinked main file,
// symlinked fragments and side files, group-readable modes), as root with
// each --netns form or as root on the packaged service user's state
// directory.
//
// The oracle, after every step: after a rollback, the kernel and every
// configuration file (content, mode, owner, where a link points and what
// it points at) equal the restore point; after a confirm, the candidate;
// no transaction stays pending past its deadline plus DeadlineBound; no
// timer (process, or the daemon's) outlives its transaction; foreign
// objects are never touched. The kernel is checked with test/walk's oracle
// (ip, nft, sysctl; independent of the product's reader) against the
// version test/walk's generator made, and the walk's own side-file objects
// with ip and nft. A failure prints the seed and a shrunk sequence.
package txwalk

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/test/nettest"
	"github.com/netreconcile/netreconcile/test/walk"
)

// DeadlineBound is how long after its deadline a transaction may still be
// pending while something holds it (docs/safe-apply.md states it): the
// holder wakes at the deadline and the rollback takes what a plan to the
// restore point takes, which on a loaded two-core machine is seconds for
// the walk's files.
const DeadlineBound = 10 * time.Second

// timerBound is how long a timer process may outlive its transaction: it
// is signalled when the transaction ends (and exits at once; the bound is
// for a loaded machine's scheduling).
const timerBound = 10 * time.Second

// convergeBound is how long the daemon may take to make the kernel match
// the files after a change. Generous: on this shared 2-core machine under
// a load of 50, a daemon's first converge took 24 s and its repair of a
// hand edit came later than 20 s.
const convergeBound = time.Minute

// Options configure one walk.
type Options struct {
	Seed  int64
	Steps int
	// Bin is the netreconcile binary, built with the service user's name
	// (User) as the packaged service's.
	Bin  string
	User *nettest.ServiceUser
	Caps walk.Caps
	// Adopt lets versions adopt foreign objects (a known defect when
	// off: docs/walk-findings.md).
	Adopt bool
	// Mode, when set, is used instead of one drawn from the seed.
	Mode *Mode
	// Dir holds the walk's files; kept on a failure.
	Dir          string
	ShrinkTrials int
	Logf         func(format string, args ...any)
}

// Report is what a walk did.
type Report struct {
	Seed   int64
	Mode   Mode
	Steps  int
	Checks int
	Kills  int
	// InForce counts the confirms that recorded files edited in the
	// window which the daemon applied; Held the transactions begun while
	// the daemon, paused, had not passed since a confirm.
	InForce, Held int
	// Latencies are how long after their deadlines the timers rolled
	// transactions back.
	Latencies []time.Duration
	Failure   *Failure
	// Shrunk is the shrunk sequence of a failure, as text.
	Shrunk string
}

// Failure is the first check that failed.
type Failure struct {
	Step  int
	Check string
	Msg   string
}

func (f *Failure) Error() string { return fmt.Sprintf("step %d: %s: %s", f.Step+1, f.Check, f.Msg) }

// Draw makes the sequence of a seed: its mode, layout, foreign objects,
// versions and steps.
func Draw(opts *Options) (*Sequence, error) {
	r := rand.New(rand.NewSource(opts.Seed))
	caps := opts.Caps
	// WireGuard devices are links like the others to a transaction; the
	// userspace implementation's processes would only slow the walk.
	caps.WireGuard = false
	g, err := walk.NewGen(r, caps, walk.Defects{}, opts.Dir)
	if err != nil {
		return nil, err
	}
	g.ForeignLinks = []string{"fb0"}
	// The rig makes one namespace for veth peers (PeerNS): the walk's
	// second one is the host walk's.
	g.PeerNS2 = ""
	mode := Mode{Service: r.Intn(3) == 0}
	if mode.Service {
		mode.Form = formExec
	} else {
		mode.Form = []string{formName, formRunPath, formProc, formProcAno, formExec}[r.Intn(5)]
	}
	if opts.Mode != nil {
		mode = *opts.Mode
	}
	seq := &Sequence{Mode: mode, Layout: drawLayout(r, mode), PeerNS: g.PeerNS, Foreign: walk.ForeignPlan(r, walk.Defects{})}
	d := &drawer{r: r, g: g, seq: seq, mode: mode, adopt: opts.Adopt, bad: rand.New(rand.NewSource(opts.Seed ^ 0x5eed)),
		hold: rand.New(rand.NewSource(opts.Seed ^ 0x401d)), lastBegin: -1}
	c := g.Initial()
	for i := 0; i < 3; i++ {
		c, _ = g.Next(c)
	}
	scrub(g, c, opts.Adopt, mode)
	d.add(newVersion(0, c, r))
	seq.Steps = append(seq.Steps, Step{Op: opEdit, V: 0}, Step{Op: opApply})
	if r.Intn(3) == 0 {
		seq.Steps = append(seq.Steps, Step{Op: opDaemonStart})
		d.daemon = true
	}
	for len(seq.Steps) < opts.Steps {
		s := d.step()
		if s.Op == opBegin && s.Cand && d.bad.Intn(4) == 0 {
			// The same change with a mistake first.
			seq.Steps = append(seq.Steps, Step{Op: opBadCand})
		}
		if s.Op == opEdit && d.pending && d.daemon && d.lastBegin >= 0 && d.hold.Intn(2) == 0 {
			// Files edited in the window for the daemon to apply: a
			// window of a second or two mostly passes before the
			// confirm comes, so the begin gets a longer one.
			seq.Steps[d.lastBegin].Window = longWindow
		}
		if s.Op == opConfirm && d.daemon && !d.paused && d.hold.Intn(2) == 0 {
			// The confirm, and what follows until the daemon goes
			// on, before the daemon's next pass.
			seq.Steps = append(seq.Steps, Step{Op: opDaemonPause})
			d.paused = true
		}
		seq.Steps = append(seq.Steps, s)
		if s.Op == opBegin {
			d.lastBegin = len(seq.Steps) - 1
		}
	}
	seq.Steps = seq.Steps[:opts.Steps]
	return seq, nil
}

// Walk runs the seed's sequence and, on a failure, shrinks it.
func Walk(opts Options) (*Report, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	seq, err := Draw(&opts)
	if err != nil {
		return nil, err
	}
	rep := &Report{Seed: opts.Seed, Mode: seq.Mode}
	f, st, err := run(&opts, seq, seq.Steps, "walk")
	if err != nil {
		return nil, err
	}
	rep.Steps, rep.Checks, rep.Kills, rep.Latencies = st.steps, st.checks, st.kills, st.latencies
	rep.InForce, rep.Held = st.inForce, st.held
	if f == nil {
		return rep, nil
	}
	rep.Failure = f
	opts.Logf("txwalk seed %d (%s): step %d (%s) failed: %v", opts.Seed, seq.Mode, f.Step+1, seq.Steps[f.Step], f)
	rep.Shrunk = shrink(&opts, seq, f)
	return rep, nil
}

// stats count what a run did.
type stats struct {
	steps, checks, kills int
	inForce, held        int
	latencies            []time.Duration
}

// run runs steps of seq on a fresh host in opts.Dir/sub.
func run(opts *Options, seq *Sequence, steps []Step, sub string) (*Failure, stats, error) {
	o := *opts
	o.Dir = filepath.Join(opts.Dir, sub)
	_ = os.RemoveAll(o.Dir)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, stats{}, err
	}
	rg, err := newRig(&o, seq.Mode, seq.PeerNS, seq.Layout)
	if err != nil {
		return nil, stats{}, err
	}
	defer rg.close()
	w := &runner{opts: &o, rig: rg, seq: seq}
	if err := w.setup(); err != nil {
		return &Failure{Check: "setup", Msg: err.Error()}, stats{}, nil
	}
	for i, s := range steps {
		w.i = i
		f := w.step(s)
		w.st.steps = i + 1
		if f != nil {
			f.Step = i
			return f, w.st, nil
		}
	}
	return nil, w.st, nil
}

// shrink cuts the failing sequence down while it still fails the same
// check at its last step, and returns it as text.
func shrink(opts *Options, seq *Sequence, f0 *Failure) string {
	budget := opts.ShrinkTrials
	if budget == 0 {
		budget = 60
	}
	steps := append([]Step(nil), seq.Steps[:f0.Step+1]...)
	last := f0
	fails := func(s []Step) bool {
		if budget <= 0 {
			return false
		}
		budget--
		f, _, err := run(opts, seq, s, "trial")
		if err != nil || f == nil || f.Check != f0.Check || f.Step != len(s)-1 {
			return false
		}
		last = f
		return true
	}
	// ddmin over the steps before the last, which stays; the first two
	// (the initial files and their apply) stay too.
	keep := 2
	if len(steps) < keep+1 {
		keep = len(steps) - 1
	}
	for n := 2; len(steps) > keep+1; {
		mid := steps[keep : len(steps)-1]
		chunk := (len(mid) + n - 1) / n
		if chunk == 0 {
			break
		}
		reduced := false
		for start := 0; start < len(mid); start += chunk {
			end := min(start+chunk, len(mid))
			cand := append(append(append([]Step(nil), steps[:keep]...), mid[:start]...), mid[end:]...)
			cand = append(cand, steps[len(steps)-1])
			if fails(cand) {
				steps, reduced = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(n*2, len(mid))
		}
	}
	// Kills made shorter or dropped.
	for i := range steps {
		if steps[i].Kill > 0 {
			s := append([]Step(nil), steps...)
			s[i].Kill = 0
			if fails(s) {
				steps = s
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mode %s, %d steps (of %d)\n  layout: %s\n", seq.Mode, len(steps), f0.Step+1, seq.Layout)
	used := map[int]bool{}
	for i, s := range steps {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, s)
		if s.Op == opEdit || s.Op == opBegin && s.Cand {
			used[s.V] = true
		}
	}
	fmt.Fprintf(&b, "  fails: %v\n", last)
	var vs []int
	for v := range used {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	for _, n := range vs {
		v := seq.Versions[n]
		fmt.Fprintf(&b, "  ==> v%d main <==\n%s", n, indent(v.Main()))
		for _, f := range sortedKeys(v.Frags) {
			fmt.Fprintf(&b, "  ==> v%d conf.d/%s <==\n%s", n, f, indent(v.Frags[f]))
		}
		for _, f := range sortedKeys(v.Sides) {
			fmt.Fprintf(&b, "  ==> v%d side %s <==\n%s", n, f, indent(v.Sides[f]))
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readTxn reads the namespace's transaction.json as the product wrote it
// (nil when there is none), through the product's own checks: a file it
// would refuse is a failure too.
func (w *runner) readTxn() (*safeapply.File, error) {
	dir, err := w.rig.stateDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, safeapply.FileName))
	if os.IsNotExist(err) {
		return &safeapply.File{}, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := safeapply.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("transaction.json: %w", err)
	}
	return f, nil
}

// applyOut is the part of apply -o json the walk reads.
type applyOut struct {
	Transaction *struct {
		ID    string `json:"id"`
		Timer string `json:"timer"`
	} `json:"transaction"`
}

func parseApply(s string) *applyOut {
	var out applyOut
	if json.Unmarshal([]byte(s), &out) != nil {
		return nil
	}
	return &out
}

// procAlive reports whether pid runs (and is no zombie).
func procAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}
