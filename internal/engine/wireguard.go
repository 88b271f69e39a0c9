package engine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
)

// resolveTimeout bounds one endpoint host name lookup, so that a dead DNS
// server delays a pass by seconds, not minutes.
const resolveTimeout = 5 * time.Second

// rotation is the WireGuard endpoint rotation state of an Engine. It lives
// as long as the Engine: the daemon keeps one Engine, so which candidate a
// peer uses and when it was set survive between its passes.
type rotation struct {
	once    sync.Once
	tracker *wgpeer.Tracker
	mu      sync.Mutex
	// pending holds the decisions of the last Plan, committed by Apply.
	pending []pendingDecision
	// judged is every declared peer as the last Plan judged it, those whose
	// rotation Apply wrote judged again (PeerStates).
	judged []judgedPeer
}

// judgedPeer is one peer's state in a pass, with what judging it again
// after its endpoint is written takes.
type judgedPeer struct {
	PeerState
	handshake time.Time
	rotation  model.Rotation
}

// PeerState is a declared WireGuard peer's state as the endpoint rotation
// judged it.
type PeerState struct {
	Link      string
	PublicKey model.Key
	State     wgpeer.State
}

// PeerStates returns every declared WireGuard peer's state as the last
// Plan judged it, from the kernel state that Plan read: no read of its own,
// so the daemon's metrics cost nothing per pass. A peer whose new endpoint
// the following Apply wrote is judged again with it, as a read after the
// Apply would (usually Unknown: waiting for the first handshake with the
// new endpoint). The states are as fresh as the last pass; peers the file
// does not declare (deleted by that pass) are not listed.
func (e *Engine) PeerStates() []PeerState {
	e.rot.mu.Lock()
	defer e.rot.mu.Unlock()
	out := make([]PeerState, len(e.rot.judged))
	for i, j := range e.rot.judged {
		out[i] = j.PeerState
	}
	return out
}

type pendingDecision struct {
	link string
	pub  model.Key
	d    wgpeer.Decision
}

// ResolveEndpoint looks a "host:port" candidate up, preferring the first
// address the resolver returns.
func ResolveEndpoint(hostport string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("no address for %s", host)
	}
	p, err := net.LookupPort("udp", port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(p)), nil
}

// Tracker returns the engine's rotation tracker, made on first use with the
// wall clock and the system resolver unless SetTracker gave one.
func (e *Engine) Tracker() *wgpeer.Tracker {
	e.rot.once.Do(func() {
		if e.rot.tracker == nil {
			e.rot.tracker = wgpeer.New(time.Now, ResolveEndpoint)
		}
	})
	return e.rot.tracker
}

// SetTracker replaces the rotation tracker (tests: a fake clock).
func (e *Engine) SetTracker(t *wgpeer.Tracker) { e.rot.tracker = t }

// RecheckInterval is how often the daemon must run a pass for the endpoint
// rotation of desired's WireGuard peers (0: no peer has candidates).
func RecheckInterval(desired *model.State) time.Duration {
	var every time.Duration
	for _, l := range desired.Links {
		if l.WireGuard == nil {
			continue
		}
		for _, p := range l.WireGuard.Peers {
			if len(p.Endpoints) > 0 && (every == 0 || l.WireGuard.Rotation.Interval < every) {
				every = l.WireGuard.Rotation.Interval
			}
		}
	}
	return every
}

// decide runs the rotation for every peer of desired's WireGuard links
// against the devices in act. It returns a copy of desired whose peers
// carry the endpoint to write (desired itself is not changed), the
// decisions that wait for their write, and the peers that are Up. Its
// allocations are per device, not per peer: it runs on every pass that
// reads the devices, over every declared peer.
func (e *Engine) decide(desired, act *model.State) (*model.State, []pendingDecision, peersUp) {
	t := e.Tracker()
	var out *model.State
	var decisions []pendingDecision
	var judged []judgedPeer
	var up peersUp
	defer func() {
		e.rot.mu.Lock()
		e.rot.judged = judged
		e.rot.mu.Unlock()
	}()
	for _, name := range desired.SortedLinkNames() {
		l := desired.Links[name]
		if l.WireGuard == nil || len(l.WireGuard.Peers) == 0 {
			continue
		}
		var hw []model.WireGuardPeer
		if al := act.Links[name]; al != nil && al.Kind == model.KindWireGuard && al.WireGuard != nil {
			hw = al.WireGuard.Peers
		}
		if out == nil {
			out = shallowCopy(desired)
		}
		nl, nw := *l, *l.WireGuard
		nw.Peers = append([]model.WireGuardPeer(nil), l.WireGuard.Peers...)
		nl.WireGuard = &nw
		out.Links[name] = &nl
		if judged == nil {
			judged = make([]judgedPeer, 0, len(nw.Peers))
		}
		if n := len(nw.Peers) - len(hw); n > 0 {
			// A peer the device lacks gets its endpoint written: at
			// least this many decisions (ten thousand on a new device).
			decisions = slices.Grow(decisions, n)
		}
		// Both lists are in the model's order, by public key: the device's
		// peer of each declared one is found by walking them together,
		// with no map of ten thousand entries.
		find := peerFinder(hw)
		// Every peer of the device judged at one time: before any
		// endpoint is written, as each decision must be.
		now := t.Now()
		for i := range nw.Peers {
			p := &nw.Peers[i]
			in := wgpeer.Input{Device: name, PublicKey: p.PublicKey, Candidates: p.Endpoints, Rotation: nw.Rotation}
			if hp := find(p.PublicKey); hp != nil {
				in.Current, in.LastHandshake = hp.Endpoint, hp.LastHandshake
			}
			d := t.DecideAt(in, now)
			up.set(name, p.PublicKey, d.State)
			judged = append(judged, judgedPeer{PeerState{name, p.PublicKey, d.State}, in.LastHandshake, nw.Rotation})
			p.EndpointCandidate = d.Candidate
			switch {
			case d.Write:
				// Committed by Apply once the peer operation succeeded.
				p.Endpoint = d.Addr
				decisions = append(decisions, pendingDecision{name, p.PublicKey, d})
			case d.Rotate:
				// Nothing to write (the candidate is the device's endpoint):
				// the connect timer restarts now, even if no Apply follows.
				t.Commit(name, p.PublicKey, d)
			default:
				t.Observe(name, p.PublicKey, d)
			}
		}
		// Forget asks in the tracker's order: a binary search of the
		// sorted peers (a map if they are not), by index, so that no
		// comparison copies a peer.
		sorted := sortedPeers(nw.Peers)
		var declared func(model.Key) *model.WireGuardPeer
		if !sorted {
			declared = peerMap(nw.Peers)
		}
		ps := nw.Peers
		t.Forget(name, func(k model.Key) bool {
			if sorted {
				i := sort.Search(len(ps), func(i int) bool { return bytes.Compare(ps[i].PublicKey[:], k[:]) >= 0 })
				return i < len(ps) && ps[i].PublicKey == k
			}
			return declared(k) != nil
		})
	}
	if out == nil {
		return desired, nil, up
	}
	return out, decisions, up
}

// peerFinder returns a function that finds peers of ps by public key.
// Asked for keys in increasing order (the model's order of peers) it walks
// ps once, if ps is in that order too; otherwise it looks them up in a map.
func peerFinder(ps []model.WireGuardPeer) func(model.Key) *model.WireGuardPeer {
	if !sortedPeers(ps) {
		return peerMap(ps)
	}
	j := 0
	var last model.Key
	return func(k model.Key) *model.WireGuardPeer {
		if bytes.Compare(k[:], last[:]) < 0 {
			j = 0 // asked out of order: start again
		}
		last = k
		for j < len(ps) && bytes.Compare(ps[j].PublicKey[:], k[:]) < 0 {
			j++
		}
		if j < len(ps) && ps[j].PublicKey == k {
			return &ps[j]
		}
		return nil
	}
}

func peerMap(ps []model.WireGuardPeer) func(model.Key) *model.WireGuardPeer {
	m := make(map[model.Key]*model.WireGuardPeer, len(ps))
	for i := range ps {
		m[ps[i].PublicKey] = &ps[i]
	}
	return func(k model.Key) *model.WireGuardPeer { return m[k] }
}

// sortedPeers walks ps by index: a comparison function of two peers would
// copy both, a few hundred bytes each, ten thousand times a pass.
func sortedPeers(ps []model.WireGuardPeer) bool {
	for i := 1; i < len(ps); i++ {
		if bytes.Compare(ps[i-1].PublicKey[:], ps[i].PublicKey[:]) > 0 {
			return false
		}
	}
	return true
}

func shallowCopy(st *model.State) *model.State {
	c := *st
	c.Links = make(map[string]*model.Link, len(st.Links))
	for n, l := range st.Links {
		c.Links[n] = l
	}
	return &c
}

// commitRotation tells the tracker which decisions reached the device: a
// rotation that needed a write counts once its peer operation succeeded.
func (e *Engine) commitRotation(res *apply.Result) {
	e.rot.mu.Lock()
	pending := e.rot.pending
	e.rot.pending = nil
	e.rot.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	type peerKey struct {
		link string
		pub  model.Key
	}
	// Sized once: a new device commits ten thousand decisions.
	done := make(map[peerKey]bool, len(pending))
	for _, op := range res.Done {
		if op.Kind == diff.KindWGPeer {
			done[peerKey{op.WireGuard.Link, op.WireGuard.Peer.PublicKey}] = true
		}
	}
	t := e.Tracker()
	written := make([]pendingDecision, 0, len(pending))
	for _, p := range pending {
		if done[peerKey{p.link, p.pub}] {
			t.Commit(p.link, p.pub, p.d)
			written = append(written, p)
		}
	}
	e.judgeAgain(t, written)
}

// judgeAgain updates the state PeerStates gives for the peers whose
// rotation was just written, as a read of the device would judge them now:
// the new endpoint, the handshake the pass read. No candidates are given,
// so no name is resolved: they choose the next endpoint, not the state.
func (e *Engine) judgeAgain(t *wgpeer.Tracker, written []pendingDecision) {
	if len(written) == 0 {
		return
	}
	e.rot.mu.Lock()
	defer e.rot.mu.Unlock()
	type peer struct {
		link string
		pub  model.Key
	}
	at := make(map[peer]int, len(e.rot.judged))
	for i, j := range e.rot.judged {
		at[peer{j.Link, j.PublicKey}] = i
	}
	now := t.Now()
	for _, p := range written {
		i, ok := at[peer{p.link, p.pub}]
		if !ok {
			continue
		}
		j := &e.rot.judged[i]
		j.State = t.DecideAt(wgpeer.Input{Device: p.link, PublicKey: p.pub, Current: p.d.Addr, LastHandshake: j.handshake, Rotation: j.rotation}, now).State
	}
}

// PeerStatus is one peer as `netreconcile status` shows it. It holds no
// key but the peer's public one. Its JSON form is the command line's
// (internal/cli, docs/json.md).
type PeerStatus struct {
	Link      string
	PublicKey string
	// Endpoint is "none" when the peer has none.
	Endpoint      string
	State         string
	LastHandshake time.Time
	RxBytes       int64
	TxBytes       int64
	// Next is the candidate endpoint a rotation would try next ("": none).
	Next     string
	Declared bool
}

// PeerStatuses reads every WireGuard device the file names (or, with a nil
// desired, every owned one) and judges its peers with the engine's tracker,
// without changing anything.
func (e *Engine) PeerStatuses(desired *model.State) ([]PeerStatus, error) {
	proto := model.DefaultProtocol
	if desired != nil {
		proto = desired.Protocol
	}
	act, err := e.Actual(proto, false)
	if err != nil {
		return nil, err
	}
	t := e.Tracker()
	var out []PeerStatus
	for _, name := range act.SortedLinkNames() {
		al := act.Links[name]
		if al.Kind != model.KindWireGuard || al.WireGuard == nil {
			continue
		}
		var dw *model.WireGuard
		if desired != nil {
			if dl := desired.Links[name]; dl != nil {
				dw = dl.WireGuard
			}
		}
		if dw == nil && !al.Owned {
			continue
		}
		rot := model.DefaultRotation
		want := map[model.Key]*model.WireGuardPeer{}
		if dw != nil {
			rot = dw.Rotation
			for i := range dw.Peers {
				want[dw.Peers[i].PublicKey] = &dw.Peers[i]
			}
		}
		for _, p := range al.WireGuard.Peers {
			in := wgpeer.Input{Device: name, PublicKey: p.PublicKey, Current: p.Endpoint, LastHandshake: p.LastHandshake, Rotation: rot}
			wp := want[p.PublicKey]
			if wp != nil {
				in.Candidates = wp.Endpoints
			}
			d := t.Decide(in)
			ps := PeerStatus{Link: name, PublicKey: p.PublicKey.String(), Endpoint: "none", State: d.State.String(), LastHandshake: p.LastHandshake, RxBytes: p.RxBytes, TxBytes: p.TxBytes, Next: d.Next, Declared: wp != nil}
			if p.Endpoint.IsValid() {
				ps.Endpoint = p.Endpoint.String()
			}
			out = append(out, ps)
		}
	}
	return out, nil
}
