package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

// The loop's unit tests: the real loop (handle, schedule, pass, backoff,
// loadConfig, notifications) over configuration files in a temporary
// directory, a fake engine whose kernel is a set of link names, and a fake
// clock. No root, no kernel, no sleep: time moves only when a test moves it,
// so a 30 s backoff costs nothing and every instant is exact.

// fakeEngine plans a create for every declared link its kernel lacks and a
// delete for every link it has that is not declared; apply changes the set.
// A link in fail fails every time it is tried.
type fakeEngine struct {
	clk *fakeClock
	// cost is how long a pass takes: the clock moves by it while planning.
	cost   time.Duration
	kernel map[string]bool
	fail   map[string]error
	// readErr makes the kernel read (the plan) fail.
	readErr error
	// starts holds when each pass started; tried, the links each pass
	// tried (none when it held everything back or could not read).
	starts []time.Time
	tried  [][]string
	nwrite uint64
	peers  []engine.PeerState
	// rereads holds what each pass asked to read again (setReread).
	rereads []actual.Fresh
	// forgot counts forgetRead calls.
	forgot int
	// silentDeletes is what silentRouteDeletes reports.
	silentDeletes bool
}

func newFakeEngine(clk *fakeClock) *fakeEngine {
	return &fakeEngine{clk: clk, kernel: map[string]bool{}, fail: map[string]error{}}
}

// linkOp is the one place the tests build a plan operation.
func linkOp(a diff.Action, name string) diff.Op {
	return diff.Op{Action: a, Kind: diff.KindLink, ID: name}
}

func (f *fakeEngine) lock(context.Context) (func(), error) { return func() {}, nil }

func (f *fakeEngine) plan(_ context.Context, desired *model.State, _ *diff.Disruption) (*diff.Plan, error) {
	f.starts = append(f.starts, f.clk.Now())
	f.tried = append(f.tried, nil)
	f.clk.advance(f.cost)
	if f.readErr != nil {
		return nil, f.readErr
	}
	plan := &diff.Plan{}
	for _, name := range desired.SortedLinkNames() {
		if !f.kernel[name] {
			plan.Ops = append(plan.Ops, linkOp(diff.Create, name))
		}
	}
	var gone []string
	for name := range f.kernel {
		if desired.Links[name] == nil {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	for _, name := range gone {
		plan.Ops = append(plan.Ops, linkOp(diff.Delete, name))
	}
	return plan, nil
}

func (f *fakeEngine) apply(_ context.Context, plan *diff.Plan) (*apply.Result, error) {
	res := &apply.Result{}
	var tried []string
	for _, op := range plan.Ops {
		tried = append(tried, op.ID)
		if err := f.fail[op.ID]; err != nil {
			res.Failed = append(res.Failed, apply.Failure{Op: op, Err: err})
			continue
		}
		f.nwrite++
		if op.Action == diff.Delete {
			delete(f.kernel, op.ID)
		} else {
			f.kernel[op.ID] = true
		}
		res.Done = append(res.Done, &op)
	}
	f.tried[len(f.tried)-1] = tried
	return res, nil
}

func (f *fakeEngine) saveLedger() error              { return nil }
func (f *fakeEngine) writes() uint64                 { return f.nwrite }
func (f *fakeEngine) peerStates() []engine.PeerState { return f.peers }
func (f *fakeEngine) poolUsage(context.Context, *model.State) ([]ipam.Usage, error) {
	return nil, nil
}

// note is one sd_notify message and the fake time it was sent at.
type note struct {
	at  time.Time
	msg string
}

// notes records the daemon's notifications.
type notes struct {
	clk *fakeClock
	mu  sync.Mutex
	all []note
	// ch receives every message too, for the tests that run Run itself.
	ch chan string
}

func (n *notes) Notify(msg string) {
	n.mu.Lock()
	n.all = append(n.all, note{n.clk.Now(), msg})
	n.mu.Unlock()
	select {
	case n.ch <- msg:
	default:
	}
}

// kinds returns the notifications from index from on, each cut to its
// first line's key ("READY", "STATUS", "RELOADING"), WATCHDOG left out.
func (n *notes) kinds(from int) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, x := range n.all[from:] {
		k, _, _ := strings.Cut(x.msg, "=")
		if k != "WATCHDOG" {
			out = append(out, k)
		}
	}
	return out
}

func (n *notes) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.all)
}

// lastStatus returns the last STATUS= text.
func (n *notes) lastStatus() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.all) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(n.all[i].msg, "STATUS="); ok {
			return s
		}
	}
	return ""
}

// syncBuffer is a log sink for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loopEnv is a daemon on a fake clock and a fake engine, its configuration
// in a temporary directory.
type loopEnv struct {
	t      *testing.T
	clk    *fakeClock
	eng    *fakeEngine
	notes  *notes
	log    *syncBuffer
	d      *Daemon
	dir    string
	config string
	reload chan struct{}
	ctx    context.Context
}

func newLoopEnv(t *testing.T, config string) *loopEnv {
	t.Helper()
	dir := t.TempDir()
	clk := newFakeClock()
	e := &loopEnv{
		t: t, clk: clk, eng: newFakeEngine(clk), notes: &notes{clk: clk, ch: make(chan string, 64)}, log: &syncBuffer{},
		dir: dir, config: filepath.Join(dir, "netreconcile.yaml"), reload: make(chan struct{}, 1), ctx: context.Background(),
	}
	e.write(config)
	e.d = newDaemon(Options{
		Config: e.config, Reload: e.reload, Notifier: e.notes,
		Log: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{ReplaceAttr: dropTime})),
	}, e.eng, clk)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", e.log.String())
		}
	})
	return e
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func (e *loopEnv) write(config string) {
	e.t.Helper()
	// Renamed into place, as an editor saves: never read half-written.
	tmp := e.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(config), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, e.config); err != nil {
		e.t.Fatal(err)
	}
}

// start arms the first pass, as Run does, and runs it.
func (e *loopEnv) start() {
	e.d.start()
	e.step()
}

// step handles the events pending now, as Run's select would, until none
// is left: wake-ups, then reloads, then the timer (one order Run may take).
func (e *loopEnv) step() {
	e.t.Helper()
	for {
		var ev event
		select {
		case <-e.d.wake:
			ev = evWake
		case <-e.d.repair:
			ev = evRepair
		default:
			select {
			case <-e.reload:
				ev = evReload
			default:
				select {
				case <-e.d.timer.C():
					ev = evTimer
				default:
					return
				}
			}
		}
		if err := e.d.handle(e.ctx, ev); err != nil {
			e.t.Fatalf("handle: %v", err)
		}
	}
}

// run moves the clock by d, stopping at every deadline on the way to handle
// what fires.
func (e *loopEnv) run(d time.Duration) {
	e.t.Helper()
	end := e.clk.Now().Add(d)
	e.step()
	for {
		at, ok := e.clk.next()
		if !ok || at.After(end) {
			break
		}
		e.clk.set(at)
		e.step()
	}
	e.clk.set(end)
	e.step()
}

// runToPass moves the clock deadline by deadline until more than before
// passes have run (within limit), and stops at the end of the last.
func (e *loopEnv) runToPass(before int, limit time.Duration) {
	e.t.Helper()
	end := e.clk.Now().Add(limit)
	e.step()
	for e.passes() == before {
		at, ok := e.clk.next()
		if !ok || at.After(end) {
			e.t.Fatalf("no pass within %v", limit)
		}
		e.clk.set(at)
		e.step()
	}
}

func (e *loopEnv) wake() {
	e.t.Helper()
	e.d.Wake()
	e.step()
}

func (e *loopEnv) sendReload() {
	e.t.Helper()
	e.reload <- struct{}{}
	e.step()
}

// passes returns how many passes have started.
func (e *loopEnv) passes() int { return len(e.eng.starts) }

// lastStart returns when the last pass started.
func (e *loopEnv) lastStart() time.Time { return e.eng.starts[len(e.eng.starts)-1] }

// gaps returns the time between the starts of the passes from index from.
func (e *loopEnv) gaps(from int) []time.Duration {
	var out []time.Duration
	for i := max(from, 1); i < len(e.eng.starts); i++ {
		out = append(out, e.eng.starts[i].Sub(e.eng.starts[i-1]))
	}
	return out
}

const twoBridges = "version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge}\n"

// A burst of wake-ups costs one pass, 50 ms after the first of them: later
// ones do not push it back, so a storm cannot postpone it forever.
func TestDebounceCountsFromFirstWake(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	e.run(time.Second)
	if e.passes() != 1 {
		t.Fatalf("%d passes at start, want 1", e.passes())
	}
	first := e.clk.Now()
	for range 4 {
		e.wake()
		e.run(15 * time.Millisecond) // wake-ups at 0, 15, 30, 45 ms
	}
	e.run(time.Second)
	if e.passes() != 2 || !e.lastStart().Equal(first.Add(DefaultDebounce)) {
		t.Fatalf("passes %d, the last at +%v; want 2, the last at +50ms after the first wake-up", e.passes(), e.lastStart().Sub(first))
	}
	// A storm, a wake-up every 10 ms: a pass every 50 ms (the debounce
	// from the first wake-up after a pass), never none. With passes of
	// 200 ms, once the burst of the budget is spent, passes start 400 ms
	// apart: the loop spends half its time in passes, no more.
	for _, cost := range []time.Duration{0, 200 * time.Millisecond} {
		e.eng.cost = cost
		e.run(time.Second)
		from := e.passes()
		stormStart := e.clk.Now()
		for range 300 {
			e.wake()
			e.run(10 * time.Millisecond)
		}
		storm := e.clk.Now().Sub(stormStart)
		want := max(DefaultDebounce, 2*cost)
		gaps := e.gaps(from + 1)
		if len(gaps) < 6 {
			t.Fatalf("passes of %v: %d passes during a 3 s storm", cost, len(gaps)+1)
		}
		for _, g := range gaps[len(gaps)/2:] {
			if g != want {
				t.Errorf("passes of %v under a storm start %v apart once the burst is spent, want %v: %v", cost, g, want, gaps)
				break
			}
		}
		if spent := time.Duration(e.passes()-from) * cost; spent > storm/2+DefaultBurst {
			t.Errorf("passes of %v: %v in passes during a storm of %v, want at most half of it plus the burst %v", cost, spent, storm, DefaultBurst)
		}
	}
}

// Passes back to back (reloads, which skip the debounce) spend the budget:
// the first run without a gap, then each waits max(50 ms, the last pass's
// duration) after the previous one ends, never longer.
func TestGapBetweenPasses(t *testing.T) {
	for _, cost := range []time.Duration{0, 20 * time.Millisecond, 200 * time.Millisecond, 3 * time.Second} {
		t.Run(cost.String(), func(t *testing.T) {
			e := newLoopEnv(t, twoBridges)
			e.eng.cost = cost
			e.start()
			spend := max(DefaultMinInterval, cost)
			var gaps []time.Duration
			for range 16 {
				end, before := e.clk.Now(), e.passes()
				e.sendReload()
				e.runToPass(before, 10*time.Second)
				gaps = append(gaps, e.lastStart().Sub(end))
			}
			free := 0
			for i, g := range gaps {
				switch {
				case g > spend:
					t.Fatalf("pass of %v: the next started %v after its end, more than %v: %v", cost, g, spend, gaps)
				case g < spend:
					free++
				case i < len(gaps)-1 && gaps[i+1] != spend:
					t.Fatalf("pass of %v: a gap of %v, then a shorter one: %v", cost, g, gaps)
				}
			}
			if maxFree := int(DefaultBurst/spend) + 1; free > maxFree {
				t.Errorf("pass of %v: %d passes before the gap, want at most %d (the burst): %v", cost, free, maxFree, gaps)
			}
			if gaps[len(gaps)-1] != spend {
				t.Errorf("pass of %v: passes back to back end %v apart, want %v: %v", cost, gaps[len(gaps)-1], spend, gaps)
			}
			// A wake-up right at the end of a pass, the budget spent:
			// the later of debounce and gap.
			end, before := e.clk.Now(), e.passes()
			e.wake()
			e.runToPass(before, 10*time.Second)
			if want := max(spend, DefaultDebounce); e.lastStart().Sub(end) != want {
				t.Errorf("pass of %v: a wake-up at its end ran the next %v later, want %v", cost, e.lastStart().Sub(end), want)
			}
		})
	}
}

// A kernel notification of drift runs its repair one repair debounce
// (5 ms) after it, not 50 ms; after a quiet spell it waits for no gap after
// the pass before it, though that pass was slow; and it does not bring a
// pass inside the debounce of a file's wake-up, so an editor's write and
// rename stay one pass.
func TestRepairDebounce(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	e.run(time.Second)
	e.eng.cost = 150 * time.Millisecond

	woke, before := e.clk.Now(), e.passes()
	e.d.wakeRepair()
	e.runToPass(before, time.Second)
	if got := e.lastStart().Sub(woke); got != DefaultRepairDebounce {
		t.Fatalf("a repair ran %v after its notification, want %v", got, DefaultRepairDebounce)
	}
	// Right at the end of that 150 ms pass: no gap.
	end, before := e.clk.Now(), e.passes()
	e.d.wakeRepair()
	e.runToPass(before, time.Second)
	if got := e.lastStart().Sub(end); got != DefaultRepairDebounce {
		t.Errorf("a repair at the end of a pass of 150 ms ran %v after it, want %v", got, DefaultRepairDebounce)
	}

	e.run(time.Second)
	before, woke = e.passes(), e.clk.Now()
	e.wake() // the editor's write
	e.run(time.Millisecond)
	e.d.wakeRepair()
	e.step()
	e.run(time.Second)
	if e.passes() != before+1 || e.lastStart().Sub(woke) != DefaultDebounce {
		t.Errorf("a file's wake-up, then a repair 1 ms later: %d passes, the first %v after the file's; want 1, at %v", e.passes()-before, e.eng.starts[before].Sub(woke), DefaultDebounce)
	}
}

// wgConfig declares a WireGuard link whose peer has an endpoint (a pass is
// scheduled every rotation interval, 30 s) and a bridge.
func wgConfig(t *testing.T, dir string) string {
	t.Helper()
	key := filepath.Join(dir, "wg.key")
	if err := os.WriteFile(key, []byte("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`version: 1
links:
  br0: {kind: bridge}
  wg0:
    kind: wireguard
    wireguard:
      private-key-file: %s
      peers:
        - public-key: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
          allowed-ips: [10.98.0.2/32]
          endpoints: ["192.0.2.1:51820"]
`, key)
}

// Finding 1 of issue 12 (TestWakeBringsScheduledPassForward proves it
// against the kernel): a pass scheduled later (the WireGuard rotation tick
// 30 s away, the backoff retry of an object that keeps failing, 6.4 s away)
// must not hold a wake-up back: the wake-up brings the pass forward to one
// debounce from now.
func TestWakeBringsScheduledPassForward(t *testing.T) {
	e := newLoopEnv(t, "version: 1\n")
	e.write(wgConfig(t, e.dir))
	// wg0 exists: the plan stays the same from the first pass, so the
	// backoff is not started again by a change of plan.
	e.eng.kernel["wg0"] = true
	e.eng.fail["br0"] = errors.New("operation not supported")
	e.start()
	// Let the failing object's backoff grow to 6.4 s: passes at +0.2,
	// +0.4, ... +3.2 s, then one 6.4 s later.
	e.run(12700 * time.Millisecond)
	if !strings.Contains(e.log.String(), "retry_in=6.4s") {
		t.Fatalf("backoff did not reach 6.4 s:\n%s", e.log.String())
	}
	before := e.passes()
	due := e.d.sched.due
	if left := due.Sub(e.clk.Now()); left < time.Second {
		t.Fatalf("next pass in %v; the test wants one scheduled seconds ahead", left)
	}

	// Drift, reported by a notification.
	delete(e.eng.kernel, "wg0")
	woke := e.clk.Now()
	e.wake()
	e.run(DefaultDebounce)
	if e.passes() != before+1 || !e.lastStart().Equal(woke.Add(DefaultDebounce)) {
		t.Fatalf("after a wake-up with a pass due in %v: %d passes, want one 50 ms after the wake-up", due.Sub(woke), e.passes()-before)
	}
	if !e.eng.kernel["wg0"] {
		t.Error("the drift was not repaired")
	}

	// With nothing failing the rotation tick is the only pass ahead: 30 s.
	delete(e.eng.fail, "br0")
	e.wake()
	e.run(time.Second)
	if left := e.d.sched.due.Sub(e.clk.Now()); left < 28*time.Second || left > 30*time.Second {
		t.Fatalf("next pass in %v, want the rotation tick within 30 s", left)
	}
	before, woke = e.passes(), e.clk.Now()
	e.wake()
	e.run(DefaultDebounce)
	if e.passes() != before+1 || !e.lastStart().Equal(woke.Add(DefaultDebounce)) {
		t.Fatalf("wake-up with the rotation tick ahead: %d passes, want one 50 ms after the wake-up", e.passes()-before)
	}
	// And the tick itself comes.
	before = e.passes()
	e.run(31 * time.Second)
	if e.passes() != before+1 {
		t.Errorf("%d passes in 31 s with a rotation interval of 30 s, want 1", e.passes()-before)
	}
}

// READY=1 comes once, after the first pass that converged; passes that fail
// before it say so in STATUS= only.
func TestReadyOnlyAfterFirstConvergedPass(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.eng.fail["br1"] = errors.New("file exists")
	e.start()
	e.run(5 * time.Second)
	if k := e.notes.kinds(0); slices.Contains(k, "READY") || !slices.Contains(k, "STATUS") {
		t.Fatalf("notifications before convergence: %v; want STATUS= and no READY=1", k)
	}
	if st := e.notes.lastStatus(); !strings.HasPrefix(st, "not converged: 2 objects") || !strings.Contains(st, "file exists") {
		t.Errorf("STATUS=%s", st)
	}
	n := e.notes.count()
	delete(e.eng.fail, "br1")
	e.run(10 * time.Second) // the next retry, at most 3.2 s away
	if got, want := e.notes.kinds(n), []string{"STATUS", "READY"}; !slices.Equal(got, want) {
		t.Fatalf("notifications when it converged: %v, want %v", got, want)
	}
	if st := e.notes.lastStatus(); !strings.HasPrefix(st, "converged: 2 objects, 0 drift repaired, 0 errors") {
		t.Errorf("STATUS=%s", st)
	}
	// Failures after that are no reason to say READY=1 again.
	n = e.notes.count()
	delete(e.eng.kernel, "br0")
	e.eng.fail["br0"] = errors.New("no buffer space")
	e.wake()
	e.run(time.Second)
	delete(e.eng.fail, "br0")
	e.run(10 * time.Second)
	if k := e.notes.kinds(n); slices.Contains(k, "READY") {
		t.Errorf("READY=1 again after a later failure: %v", k)
	}
	if st := e.notes.lastStatus(); !strings.HasPrefix(st, "converged: 2 objects, 1 drift repaired") {
		t.Errorf("STATUS=%s, want the repair counted as drift", st)
	}
}

// A reload once ready is RELOADING=1 with MONOTONIC_USEC=, then the pass,
// then READY=1 (Type=notify-reload). It skips the debounce, and parses the
// files even when they look unchanged. A reload before READY=1 says nothing.
func TestReloadBracketedByReloadingAndReady(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.eng.fail["br0"] = errors.New("file exists")
	e.start()
	n := e.notes.count()
	e.sendReload()
	e.run(time.Second)
	if k := e.notes.kinds(n); slices.Contains(k, "RELOADING") || slices.Contains(k, "READY") {
		t.Fatalf("reload before ready: %v; want neither RELOADING=1 nor READY=1", k)
	}
	delete(e.eng.fail, "br0")
	e.run(5 * time.Second)
	if !e.d.ready {
		t.Fatal("not ready")
	}

	n = e.notes.count()
	before := e.passes()
	at := e.clk.Now()
	e.sendReload()
	e.run(time.Second)
	if got, want := e.notes.kinds(n), []string{"RELOADING", "STATUS", "READY"}; !slices.Equal(got, want) {
		t.Fatalf("around the reload: %v, want %v", got, want)
	}
	msg := e.notes.all[n].msg
	if !hasLine(msg, "RELOADING=1") || !strings.Contains(msg, "\nMONOTONIC_USEC=") {
		t.Errorf("reload notification %q, want RELOADING=1 and MONOTONIC_USEC=", msg)
	}
	if e.passes() != before+1 || !e.lastStart().Equal(at) {
		t.Errorf("reload at %s: %d passes, the last at %s; want one at once", at.Format("15:04:05.000"), e.passes()-before, e.lastStart().Format("15:04:05.000"))
	}
	if !strings.Contains(e.log.String(), "configuration reloaded; unchanged") {
		t.Error("the unchanged files were not parsed again")
	}

	// A reload whose pass fails still ends with READY=1: the reload is
	// done, STATUS= tells how it went.
	n = e.notes.count()
	delete(e.eng.kernel, "br1")
	e.eng.fail["br1"] = errors.New("operation not permitted")
	e.sendReload()
	e.run(time.Second)
	if got, want := e.notes.kinds(n), []string{"RELOADING", "STATUS", "READY"}; len(got) < 3 || !slices.Equal(got[:3], want) {
		t.Fatalf("reload with a failure: %v, want %v first", got, want)
	}
	if st := e.notes.lastStatus(); !strings.Contains(st, "operation not permitted") {
		t.Errorf("STATUS=%s, want the failure", st)
	}
}

func hasLine(msg, want string) bool { return slices.Contains(strings.Split(msg, "\n"), want) }

// A failed object is retried 200 ms later, then twice as late each time up
// to 30 s, and held out of the passes in between; a success forgets it, so
// its next failure starts again at 200 ms.
func TestBackoffDoublesAndResetsOnSuccess(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.eng.kernel["br0"] = true // the same plan from the first pass on
	e.eng.fail["br1"] = errors.New("resource busy")
	e.start()
	e.run(2 * time.Minute)
	ms := time.Millisecond
	want := []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}
	if got := e.gaps(0); !slices.Equal(got[:min(len(got), len(want))], want) {
		t.Fatalf("retries after %v, want %v", got, want)
	}

	// A wake-up in between runs a pass that holds the object back.
	n := e.passes()
	e.wake()
	e.run(DefaultDebounce)
	if e.passes() != n+1 || len(e.eng.tried[n]) != 0 {
		t.Fatalf("pass between retries tried %v, want nothing", e.eng.tried[n:])
	}
	if st := e.notes.lastStatus(); !strings.Contains(st, "1 errors (1 objects waiting to be retried)") {
		t.Errorf("STATUS=%s", st)
	}

	// Success: forgotten.
	delete(e.eng.fail, "br1")
	e.run(31 * time.Second)
	if !e.eng.kernel["br1"] || len(e.d.bo.m) != 0 {
		t.Fatalf("after the object succeeded: in the kernel %v, backoff table %v", e.eng.kernel["br1"], e.d.bo.m)
	}
	// Its next failure starts again at 200 ms.
	delete(e.eng.kernel, "br1")
	e.eng.fail["br1"] = errors.New("resource busy")
	n = e.passes()
	e.wake()
	e.run(time.Second)
	if got := e.gaps(n); len(got) < 3 || got[1] != 200*ms || got[2] != 400*ms {
		t.Errorf("retries after a new failure %v, want 200ms, 400ms", got)
	}
}

// A changed configuration, or a plan that differs from the last one (the
// world moved), retries everything at once.
func TestBackoffResetByNewPlanOrConfig(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.eng.kernel["br0"] = true
	e.eng.fail["br1"] = errors.New("resource busy")
	e.start()
	e.run(20 * time.Second) // the retry is now 12.8 s away or more
	n := e.passes()
	delete(e.eng.kernel, "br0") // the plan changes
	e.wake()
	e.run(DefaultDebounce)
	if e.passes() != n+1 || !slices.Equal(e.eng.tried[n], []string{"br0", "br1"}) {
		t.Fatalf("pass after the plan changed tried %v, want br0 and the held br1", e.eng.tried[n:])
	}
	e.run(20 * time.Second)
	// A change the plan does not show (the fake plans by name only).
	n = e.passes()
	e.write("version: 1\nlinks:\n  br0: {kind: bridge, mtu: 1400}\n  br1: {kind: bridge}\n")
	e.wake()
	e.run(DefaultDebounce)
	if e.passes() != n+1 || !slices.Equal(e.eng.tried[n], []string{"br1"}) {
		t.Fatalf("pass after the file changed tried %v, want the held br1", e.eng.tried[n:])
	}
}

// A kernel read that fails is retried with the same backoff.
func TestFailedReadRetried(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.eng.readErr = errors.New("dump interrupted")
	e.start()
	e.run(time.Second)
	if got := e.gaps(0); !slices.Equal(got, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}) {
		t.Fatalf("reads retried after %v, want 200ms, 400ms", got)
	}
	if st := e.notes.lastStatus(); !strings.Contains(st, "dump interrupted") {
		t.Errorf("STATUS=%s", st)
	}
	e.eng.readErr = nil
	e.run(time.Second)
	if !e.d.ready {
		t.Error("not ready once the read works")
	}
}

// An invalid file on reload (or on a wake-up) leaves the last good
// configuration enforced: its objects stay, STATUS= names the error with
// its position, and the reload still ends with READY=1.
func TestBadConfigOnReloadKeepsLastGood(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	if !e.d.ready {
		t.Fatal("not ready")
	}
	forgot := e.eng.forgot
	e.write("version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: nope}\n")
	n := e.notes.count()
	e.sendReload()
	e.run(time.Second)
	if got, want := e.notes.kinds(n), []string{"RELOADING", "STATUS", "READY"}; !slices.Equal(got, want) {
		t.Fatalf("around the reload: %v, want %v", got, want)
	}
	// The parse of the new file let go of the last read first (memory,
	// issue 16): the next pass reads everything.
	if e.eng.forgot != forgot+1 {
		t.Errorf("forgetRead called %d times by the reload's parse, want 1", e.eng.forgot-forgot)
	}
	st := e.notes.lastStatus()
	if !strings.HasPrefix(st, "invalid configuration, enforcing the last good one: "+e.config+":4:") || !strings.Contains(st, "2 objects") {
		t.Errorf("STATUS=%s", st)
	}
	if !e.eng.kernel["br0"] || !e.eng.kernel["br1"] {
		t.Errorf("kernel %v, want both bridges of the last good file", e.eng.kernel)
	}
	if strings.Count(e.log.String(), "invalid configuration; enforcing the last good one") != 1 {
		t.Errorf("the invalid file is not logged once:\n%s", e.log.String())
	}
	// Drift is still repaired under the last good configuration.
	delete(e.eng.kernel, "br1")
	e.wake()
	e.run(time.Second)
	if !e.eng.kernel["br1"] {
		t.Error("drift not repaired while the file is invalid")
	}
	// Fixed: enforced.
	e.write("version: 1\nlinks:\n  br0: {kind: bridge}\n")
	e.wake()
	e.run(time.Second)
	if e.eng.kernel["br1"] || !strings.HasPrefix(e.notes.lastStatus(), "converged: 1 objects") {
		t.Errorf("after the fix: kernel %v, STATUS=%s", e.eng.kernel, e.notes.lastStatus())
	}
}

// A configuration valid again after an invalid one is logged, whether the
// fix changes it (a new file) or puts back the one enforced all along (an
// edit undone): the ERROR line is never the log's last word on it.
func TestValidAgainIsLogged(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	bad := "version: 1\nlinks:\n  br0: {kind: nope}\n"
	lastLine := func() string {
		lines := strings.Split(strings.TrimSpace(e.log.String()), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], "configuration") {
				return lines[i]
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name, fix, want string
	}{
		{"undone", twoBridges, `level=INFO msg="configuration valid again; the same as the one enforced" files=1 objects=2`},
		{"changed", "version: 1\nlinks:\n  br0: {kind: bridge}\n", `level=INFO msg="configuration valid again; changed" files=1 objects=1`},
		{"undone again", "version: 1\nlinks:\n  br0: {kind: bridge}\n", `level=INFO msg="configuration valid again; the same as the one enforced" files=1 objects=1`},
	} {
		e.write(bad)
		e.wake()
		e.run(time.Second)
		if got := lastLine(); !strings.Contains(got, "level=ERROR") {
			t.Fatalf("%s: after the bad edit, the last line on the configuration is %q", tc.name, got)
		}
		e.write(tc.fix)
		e.wake()
		e.run(time.Second)
		if got := lastLine(); got != tc.want {
			t.Errorf("%s: after the fix, the last line on the configuration is\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		// Said once: a pass that reads the same file again says nothing.
		n := strings.Count(e.log.String(), "valid again")
		e.wake()
		e.run(time.Second)
		if strings.Count(e.log.String(), "valid again") != n {
			t.Errorf("%s: valid again logged twice:\n%s", tc.name, e.log.String())
		}
	}
}

// A source that stops with an error (a netlink subscription closed by
// ENOBUFS after a storm: it lost events) wakes the loop for a full pass at
// once and subscribes again 100 ms later, then twice as late each time.
func TestClosedSubscriptionResubscribesAndRunsFullPass(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	// Drift that no notification reported: the lost events.
	delete(e.eng.kernel, "br1")

	runs := make(chan int, 8)
	var n int
	src := SourceFunc{"netlink routes", func(ctx context.Context, wake func()) error {
		n++
		runs <- n
		if n <= 2 {
			return fmt.Errorf("routes subscription overflowed: %w", unix.ENOBUFS)
		}
		<-ctx.Done()
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		// The wake a kernel source gets, which asks for no full read:
		// runSource does, when the source fails.
		e.d.runSource(ctx, src, e.d.wakeLoop)
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	recv := func(want int) {
		t.Helper()
		select {
		case got := <-runs:
			if got != want {
				t.Fatalf("subscription %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second): // a guard against a hang only
			t.Fatalf("no subscription %d", want)
		}
	}

	recv(1)
	t0 := e.clk.Now()
	e.clk.waitArmed(t, t0.Add(100*time.Millisecond)) // woken, waiting to subscribe again
	before := e.passes()
	e.step()
	e.run(DefaultDebounce)
	if e.passes() != before+1 || !e.eng.kernel["br1"] {
		t.Fatalf("after the subscription closed: %d passes, br1 repaired %v; want a full pass", e.passes()-before, e.eng.kernel["br1"])
	}
	if got := e.eng.rereads[len(e.eng.rereads)-1]; got.Kinds != actual.AllKinds || got.RouteTables != nil {
		t.Errorf("the pass after the subscription closed reads %+v, want everything", got)
	}
	e.run(50 * time.Millisecond)
	recv(2)
	e.clk.waitArmed(t, t0.Add(300*time.Millisecond)) // 200 ms after the second failure
	e.step()
	e.run(200 * time.Millisecond)
	recv(3)
	if got := strings.Count(e.log.String(), `msg="wake-up source stopped; restarting it" source="netlink routes"`); got != 2 {
		t.Errorf("%d restarts logged, want 2", got)
	}
	if !strings.Contains(e.log.String(), "retry_in=100ms") || !strings.Contains(e.log.String(), "retry_in=200ms") {
		t.Errorf("restart delays not 100 ms then 200 ms:\n%s", e.log.String())
	}
}

// Run itself, on the fake clock: the first pass at once and READY=1, a
// wake-up handled 50 ms later, STOPPING=1 when the context ends; an invalid
// file at start is an error.
func TestRunOnFakeClock(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.d.Run(ctx) }()
	expect := func(prefix string) {
		t.Helper()
		for {
			select {
			case msg := <-e.notes.ch:
				if strings.HasPrefix(msg, prefix) {
					return
				}
			case <-time.After(10 * time.Second): // a guard against a hang only
				t.Fatalf("no %s notification", prefix)
			}
		}
	}
	expect("READY=1")
	delete(e.eng.kernel, "br0")
	at := e.clk.Now()
	e.d.Wake()
	e.clk.waitArmed(t, at.Add(DefaultDebounce))
	e.clk.advance(DefaultDebounce)
	expect("STATUS=converged: 2 objects, 1 drift repaired")
	cancel()
	expect("STOPPING=1")
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}

	bad := newLoopEnv(t, "version: 1\nlinks: [\n")
	guard, stop := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer stop()
	if err := bad.d.Run(guard); !errors.Is(err, ErrNoConfig) {
		t.Errorf("Run with an invalid file at start: %v, want ErrNoConfig", err)
	}
}

// The peer gauge is the engine's judgment of the last pass, counted by link
// and state, with no read of its own.
func TestPeerMetricsFromLastPass(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.d.m.serving = true
	var k1, k2, k3 model.Key
	k1[0], k2[0], k3[0] = 1, 2, 3
	e.eng.peers = []engine.PeerState{{Link: "wg0", PublicKey: k1, State: wgpeer.Up}, {Link: "wg0", PublicKey: k2, State: wgpeer.Up}, {Link: "wg1", PublicKey: k3, State: wgpeer.Down}}
	e.start()
	e.d.m.parts.mu.Lock()
	got := e.d.m.parts.peers
	e.d.m.parts.mu.Unlock()
	want := map[[2]string]float64{{"wg0", "up"}: 2, {"wg1", "down"}: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("peer gauge %v, want %v", got, want)
	}
}

func (f *fakeEngine) lastRead() (*model.State, map[model.NftTableKey]bool) { return nil, nil }
func (f *fakeEngine) forgetRead()                                          { f.forgot++ }
func (f *fakeEngine) routesRead() actual.RoutesRead                        { return actual.RoutesRead{} }
func (f *fakeEngine) silentRouteDeletes() bool                             { return f.silentDeletes }

func (f *fakeEngine) setReread(k actual.Fresh) { f.rereads = append(f.rereads, k) }

// The periodic resync's pass, when nothing else asked for it, leaves the
// least gap after it, whatever it took: a repair that woke during its read
// of every table (beside a full Internet table, seconds) runs one debounce
// after the wake-up or at the resync's end, not as long again after it.
// A resync that notifications also asked for keeps the gap of its duration.
func TestRepairNotHeldBehindThePeriodicResync(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	e.run(time.Second)
	e.wake() // reads what the first pass wrote
	e.run(time.Second)
	e.eng.cost = 3 * time.Second
	for _, tc := range []struct {
		name    string
		marked  bool
		wantGap time.Duration
	}{
		{"the resync alone", false, DefaultDebounce},
		// The budget's burst earns back half a second of it.
		{"the resync and a route notification", true, 3*time.Second - DefaultBurst},
	} {
		before := e.passes()
		if tc.marked {
			e.d.f.judged(srcRoutes, true, 100)
		}
		e.d.resync()
		e.step()
		e.run(DefaultDebounce) // the resync's pass runs, and takes 3 s
		if e.passes() != before+1 {
			t.Fatalf("%s: %d passes, want 1", tc.name, e.passes()-before)
		}
		end := e.clk.Now()
		e.wake() // a route of ours deleted: woke at the resync's end
		e.run(10 * time.Second)
		if e.passes() != before+2 {
			t.Fatalf("%s: %d passes, want 2", tc.name, e.passes()-before)
		}
		if got := e.eng.starts[before+1].Sub(end); got != tc.wantGap {
			t.Errorf("%s: the repair's pass started %v after the resync's end, want %v", tc.name, got, tc.wantGap)
		}
	}
}

// A pass woken by a route notification reads the configuration files once,
// under the namespace's lock; one woken by their watch reads them before
// the lock too (a new file is parsed while other writers run) and again
// under it. A file changed without its watch telling is still found by
// the repair's read (issue 34: beside 10k routes of ours each read hashed
// half a megabyte, twice per repair).
func TestRepairReadsTheFilesOnce(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	e.run(time.Second)
	reads := 0
	e.d.opts.Pin = func(srcs []desired.Source) ([]desired.Source, string, error) {
		reads++
		return srcs, "", nil
	}
	repair := func() {
		t.Helper()
		before := e.passes()
		e.d.f.markSource(srcRoutes, 100)
		e.d.wakeRepair()
		e.runToPass(before, time.Second)
		e.run(time.Second)
	}
	repair() // reads what the first pass wrote: everything
	reads = 0
	repair()
	if reads != 1 {
		t.Errorf("a repair read the files %d times, want once", reads)
	}
	reads = 0
	before := e.passes()
	e.wake()
	e.runToPass(before, time.Second)
	e.run(time.Second)
	if reads != 2 {
		t.Errorf("a pass woken by the files read them %d times, want 2 (before the lock and under it)", reads)
	}
	e.write(twoBridges + "  br2: {kind: bridge}\n")
	repair()
	if !e.eng.kernel["br2"] {
		t.Errorf("a file changed before a repair, unannounced: br2 not made (kernel %v)", e.eng.kernel)
	}
}
