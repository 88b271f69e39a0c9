package wgpeer

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestClassify(t *testing.T) {
	r := model.DefaultRotation
	s := time.Second
	tests := []struct {
		name           string
		sinceHandshake time.Duration // -1: never
		sinceChange    time.Duration // -1: unknown (zero time)
		everSet        bool
		want           State
	}{
		{"long stable up", 60 * s, 10 * time.Minute, true, Up},
		{"long stable down", 6 * time.Minute, 10 * time.Minute, true, Down},
		{"just past down-after, handshake 274s ago", 274 * s, 276 * s, true, Up},
		{"just past down-after, handshake 275s ago", 275 * s, 276 * s, true, Down},
		{"just changed, waiting", 2 * r.DownAfter, r.ConnectTimeout / 2, true, Unknown},
		{"just changed, never any handshake", -1, 5 * s, true, Unknown},
		{"just changed, connected", 0, r.ConnectTimeout / 2, true, Up},
		{"mid range connected", 0, r.ConnectTimeout + s, true, Up},
		{"mid range, handshake after change long ago", 200 * s, 250 * s, true, Up},
		{"mid range failed", 2 * r.ConnectTimeout, r.ConnectTimeout + s, true, Down},
		{"exactly connect timeout, no handshake", -1, r.ConnectTimeout, true, Down},
		{"never set is unknown, not down", -1, -1, false, Unknown},
		{"adopted endpoint, fresh handshake", 30 * s, -1, true, Up},
		{"adopted endpoint, stale handshake", 300 * s, -1, true, Down},
		{"adopted endpoint, no handshake", -1, -1, true, Down},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hs, ch time.Time
			if tc.sinceHandshake >= 0 {
				hs = t0.Add(-tc.sinceHandshake)
			}
			if tc.sinceChange >= 0 {
				ch = t0.Add(-tc.sinceChange)
			}
			if got := Classify(r, t0, hs, ch, tc.everSet); got != tc.want {
				t.Errorf("Classify(handshake -%v, change -%v) = %s, want %s", tc.sinceHandshake, tc.sinceChange, got, tc.want)
			}
		})
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

var (
	pub  = model.Key{1}
	epA  = netip.MustParseAddrPort("192.0.2.1:51820")
	epB  = netip.MustParseAddrPort("[2001:db8::2]:51820")
	epC  = netip.MustParseAddrPort("198.51.100.3:51820")
	cand = []string{"192.0.2.1:51820", "[2001:db8::2]:51820", "peer-c.example:51820"}
)

func resolver(names map[string]netip.AddrPort, calls *int) Resolver {
	return func(hp string) (netip.AddrPort, error) {
		*calls++
		if ap, ok := names[hp]; ok {
			return ap, nil
		}
		return netip.AddrPort{}, errors.New("no such host")
	}
}

// step is one reconcile pass: the device's view, and what must be decided.
type step struct {
	advance       time.Duration
	current       netip.AddrPort
	handshakeAgo  time.Duration // -1: never
	wantState     State
	wantWrite     netip.AddrPort // invalid: no write
	wantRotate    bool
	wantCandidate int
	wantNext      string
}

func TestTrackerRotation(t *testing.T) {
	none := netip.AddrPort{}
	never := time.Duration(-1)
	names := map[string]netip.AddrPort{"peer-c.example:51820": epC}
	tests := []struct {
		name  string
		cands []string
		steps []step
	}{
		{"never set: first candidate", cand, []step{
			{0, none, never, Unknown, epA, true, 0, cand[1]},
		}},
		{"dead first candidate: Unknown for 15s, then rotates to the second, which comes up", cand, []step{
			{0, none, never, Unknown, epA, true, 0, cand[1]},
			{10 * time.Second, epA, never, Unknown, none, false, 0, cand[1]},
			{6 * time.Second, epA, never, Down, epB, true, 1, cand[2]},
			{5 * time.Second, epB, 2 * time.Second, Up, none, false, 1, cand[2]},
			{10 * time.Minute, epB, 100 * time.Second, Up, none, false, 1, cand[2]},
		}},
		{"round robin wraps to the first, through a host name", cand, []step{
			{0, none, never, Unknown, epA, true, 0, cand[1]},
			{16 * time.Second, epA, never, Down, epB, true, 1, cand[2]},
			{16 * time.Second, epB, never, Down, epC, true, 2, cand[0]},
			{16 * time.Second, epC, never, Down, epA, true, 0, cand[1]},
		}},
		{"up peer that dies is rotated after down-after", cand, []step{
			{0, none, never, Unknown, epA, true, 0, cand[1]},
			{5 * time.Second, epA, 0, Up, none, false, 0, cand[1]},
			{200 * time.Second, epA, 150 * time.Second, Up, none, false, 0, cand[1]},
			{100 * time.Second, epA, 250 * time.Second, Up, none, false, 0, cand[1]},
			{30 * time.Second, epA, 280 * time.Second, Down, epB, true, 1, cand[2]},
		}},
		{"device endpoint that is a candidate is kept (one-shot apply)", cand, []step{
			{0, epB, 20 * time.Second, Up, none, false, 1, cand[2]},
		}},
		{"adopted candidate without handshakes gets a connect timeout, then rotates", cand, []step{
			{0, epB, never, Unknown, none, false, 1, cand[2]},
			{10 * time.Second, epB, never, Unknown, none, false, 1, cand[2]},
			{6 * time.Second, epB, never, Down, epC, true, 2, cand[0]},
		}},
		{"adopted candidate with a stale handshake gets a connect timeout", cand, []step{
			{0, epB, 300 * time.Second, Unknown, none, false, 1, cand[2]},
			{16 * time.Second, epB, 316 * time.Second, Down, epC, true, 2, cand[0]},
		}},
		{"device endpoint that is not a candidate, without a recent handshake, is replaced by the first", cand, []step{
			{0, netip.MustParseAddrPort("203.0.113.9:1"), never, Unknown, epA, true, 0, cand[1]},
		}},
		{"device endpoint that is not a candidate, with a stale handshake, is replaced by the first", cand, []step{
			{0, netip.MustParseAddrPort("203.0.113.9:1"), 300 * time.Second, Unknown, epA, true, 0, cand[1]},
		}},
		{"roamed endpoint is kept while handshakes come", cand, []step{
			{0, none, never, Unknown, epA, true, 0, cand[1]},
			{5 * time.Second, netip.MustParseAddrPort("203.0.113.9:4444"), 0, Up, none, false, 0, cand[1]},
			{200 * time.Second, netip.MustParseAddrPort("203.0.113.9:4444"), 100 * time.Second, Up, none, false, 0, cand[1]},
		}},
		{"a single candidate in use is not re-set", cand[:1], []step{
			{0, none, never, Unknown, epA, true, 0, ""},
			{20 * time.Second, epA, never, Down, none, false, 0, ""},
			{10 * time.Minute, epA, never, Down, none, false, 0, ""},
		}},
		{"a candidate resolving to the device's endpoint restarts the timer, no write", []string{"192.0.2.1:51820", "alias-a.example:51820"}, []step{
			{0, none, never, Unknown, epA, true, 0, "alias-a.example:51820"},
			{16 * time.Second, epA, never, Down, none, true, 1, "192.0.2.1:51820"},
			{10 * time.Second, epA, never, Unknown, none, false, 1, "192.0.2.1:51820"},
		}},
		{"an unresolvable host name is skipped", []string{"gone.example:1", "192.0.2.1:51820"}, []step{
			{0, none, never, Unknown, epA, true, 1, "gone.example:1"},
		}},
		{"no candidates: nothing to set", nil, []step{
			{0, none, never, Unknown, none, false, -1, ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t0}
			calls := 0
			nm := map[string]netip.AddrPort{"alias-a.example:51820": epA}
			for k, v := range names {
				nm[k] = v
			}
			tr := New(clk.now, resolver(nm, &calls))
			for i, s := range tc.steps {
				clk.advance(s.advance)
				var hs time.Time
				if s.handshakeAgo >= 0 {
					hs = clk.t.Add(-s.handshakeAgo)
				}
				d := tr.Decide(Input{Device: "ks", PublicKey: pub, Candidates: tc.cands, Current: s.current, LastHandshake: hs, Rotation: model.DefaultRotation})
				var wrote netip.AddrPort
				if d.Write {
					wrote = d.Addr
				}
				if d.State != s.wantState || wrote != s.wantWrite || d.Rotate != s.wantRotate || d.Candidate != s.wantCandidate || d.Next != s.wantNext {
					t.Fatalf("step %d: got state %s write %v rotate %t candidate %d next %q; want %s %v %t %d %q",
						i, d.State, wrote, d.Rotate, d.Candidate, d.Next, s.wantState, s.wantWrite, s.wantRotate, s.wantCandidate, s.wantNext)
				}
				if d.Rotate {
					tr.Commit("ks", pub, d)
				} else {
					tr.Observe("ks", pub, d)
				}
			}
		})
	}
}

func TestDecideDoesNotChangeTracker(t *testing.T) {
	clk := &fakeClock{t0}
	tr := New(clk.now, nil)
	in := Input{Device: "ks", PublicKey: pub, Candidates: cand[:2], Rotation: model.DefaultRotation}
	a, b := tr.Decide(in), tr.Decide(in)
	if a != b || !a.Write || a.Addr != epA {
		t.Fatalf("two decisions without commit differ or do not write the first candidate: %+v %+v", a, b)
	}
}

func TestHostNameReResolvedOnEveryPick(t *testing.T) {
	clk := &fakeClock{t0}
	calls := 0
	addr := netip.MustParseAddrPort("198.51.100.3:51820")
	names := map[string]netip.AddrPort{"peer.example:51820": addr}
	tr := New(clk.now, resolver(names, &calls))
	in := Input{Device: "ks", PublicKey: pub, Candidates: []string{"peer.example:51820", "192.0.2.1:51820"}, Rotation: model.DefaultRotation}
	d := tr.Decide(in)
	tr.Commit("ks", pub, d)
	if d.Addr != addr {
		t.Fatalf("first pick %v, want %v", d.Addr, addr)
	}
	// The name moves; the first candidate fails, the second fails, and the
	// rotation comes back to the name, which must be looked up again.
	moved := netip.MustParseAddrPort("198.51.100.4:51820")
	names["peer.example:51820"] = moved
	in.Current = addr
	clk.advance(20 * time.Second)
	d = tr.Decide(in)
	tr.Commit("ks", pub, d)
	in.Current = d.Addr
	clk.advance(20 * time.Second)
	before := calls
	d = tr.Decide(in)
	if d.Addr != moved || calls == before {
		t.Fatalf("after rotation back to the name: %v (lookups %d -> %d), want %v from a fresh lookup", d.Addr, before, calls, moved)
	}
}

func TestForget(t *testing.T) {
	clk := &fakeClock{t0}
	tr := New(clk.now, nil)
	in := Input{Device: "ks", PublicKey: pub, Candidates: cand[:2], Rotation: model.DefaultRotation}
	tr.Commit("ks", pub, tr.Decide(in))
	tr.Forget("ks", func(model.Key) bool { return false })
	in.Current = epA
	clk.advance(time.Second)
	// Forgotten: the device's candidate endpoint is adopted as if just set.
	if d := tr.Decide(in); d.State != Unknown || d.Rotate || d.Candidate != 0 {
		t.Fatalf("after Forget: %+v, want Unknown, adopted as candidate 0", d)
	}
}

// A handshake that completes after the endpoint is written but before the
// pass commits the decision (the rest of the plan is still being applied)
// counts as after the change: the peer is Up, not Down at the connect
// timeout. Seen with a live peer in the VM test of S1.
func TestHandshakeBeforeCommitCountsAfterChange(t *testing.T) {
	c := &fakeClock{t: t0}
	tr := New(c.now, nil)
	r := model.Rotation{ConnectTimeout: 5 * time.Second, DownAfter: 275 * time.Second, Interval: time.Second}
	in := Input{Device: "wg0", PublicKey: pub, Candidates: []string{"192.0.2.1:51820"}, Rotation: r}
	d := tr.Decide(in)
	if !d.Rotate || !d.Write {
		t.Fatalf("first decision: %+v", d)
	}
	c.advance(100 * time.Millisecond)
	hs := c.t // the peer answered at once
	c.advance(400 * time.Millisecond)
	tr.Commit("wg0", pub, d)
	c.advance(10 * time.Second)
	in.Current, in.LastHandshake = epA, hs
	if d := tr.Decide(in); d.State != Up || d.Rotate {
		t.Errorf("after a handshake between write and commit: %s (rotate %v), want up", d.State, d.Rotate)
	}
}

// A one-shot apply (a tracker that has never seen the peer) keeps an
// endpoint the kernel learned by roaming, not one of the candidates, while
// the peer handshakes there, as the daemon keeps a roam it sees; once the
// handshakes stop for down-after, the peer is Down and gets the first
// candidate.
func TestRoamedEndpointKeptByOneShotApply(t *testing.T) {
	roamed := netip.MustParseAddrPort("203.0.113.9:4444")
	clk := &fakeClock{t0}
	calls := 0
	tr := New(clk.now, resolver(nil, &calls))
	in := Input{Device: "ks", PublicKey: pub, Candidates: cand, Current: roamed, LastHandshake: clk.t.Add(-time.Second), Rotation: model.DefaultRotation}
	d := tr.Decide(in)
	if d.Write || d.Rotate || d.State != Up {
		t.Fatalf("first sight of a roamed peer: write %t rotate %t state %s; want no write, Up", d.Write, d.Rotate, d.State)
	}
	tr.Observe("ks", pub, d)
	// Every one-shot apply is a first sight: a new tracker each time.
	for i := 0; i < 3; i++ {
		clk.advance(100 * time.Second)
		in.LastHandshake = clk.t.Add(-30 * time.Second)
		if d := New(clk.now, resolver(nil, &calls)).Decide(in); d.Write || d.State != Up {
			t.Fatalf("apply %d: write %t state %s; want no write, Up", i+2, d.Write, d.State)
		}
		if d := tr.Decide(in); d.Write || d.State != Up {
			t.Fatalf("daemon pass %d: write %t state %s; want no write, Up", i+2, d.Write, d.State)
		}
	}
	clk.advance(model.DefaultRotation.DownAfter)
	if d := New(clk.now, resolver(nil, &calls)).Decide(in); !d.Write || d.Addr != epA {
		t.Fatalf("after down-after without a handshake: write %t to %s; want %s", d.Write, d.Addr, epA)
	}
	if d := tr.Decide(in); !d.Write || d.Addr != epA || d.State != Down {
		t.Fatalf("daemon after down-after without a handshake: write %t to %s state %s; want %s, Down", d.Write, d.Addr, d.State, epA)
	}
}
