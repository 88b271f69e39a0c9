// Package wgpeer is the WireGuard endpoint rotation of KubeSpan as pure
// logic: from a peer's last handshake, its last endpoint change and its
// ordered candidate endpoints, decide whether the peer is Up, Unknown or
// Down and which endpoint, if any, to write to the device. The clock and the
// name resolver are injected, so every decision is testable without a kernel
// or a network. A Tracker remembers per peer which candidate it set and when,
// across reconcile passes of one process.
package wgpeer

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// State is a peer's connection state.
type State int

// States, as KubeSpan names them.
const (
	Unknown State = iota
	Up
	Down
)

func (s State) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	}
	return "unknown"
}

// Classify computes a peer's state, as Talos' KubeSpan does:
//   - more than DownAfter since the last endpoint change: Up when the last
//     handshake is younger than DownAfter, else Down;
//   - less than ConnectTimeout since the change: Up when a handshake happened
//     after the change, else Unknown (still waiting for the first one);
//   - in between: Up when a handshake happened after the change, else Down.
//
// A zero lastChange means "long ago" (an endpoint netreconcile adopted or the
// kernel learned by roaming), so only the handshake's age counts. A peer
// whose endpoint was never set is Unknown rather than Down.
func Classify(r model.Rotation, now, lastHandshake, lastChange time.Time, everSet bool) State {
	var st State
	sinceChange := now.Sub(lastChange)
	handshakeAfterChange := !lastHandshake.IsZero() && lastHandshake.After(lastChange)
	switch {
	case lastChange.IsZero() || sinceChange > r.DownAfter:
		if !lastHandshake.IsZero() && now.Sub(lastHandshake) < r.DownAfter {
			st = Up
		} else {
			st = Down
		}
	case sinceChange < r.ConnectTimeout:
		st = Unknown
		if handshakeAfterChange {
			st = Up
		}
	default:
		st = Down
		if handshakeAfterChange {
			st = Up
		}
	}
	if st == Down && !everSet {
		st = Unknown
	}
	return st
}

// Clock returns the current time.
type Clock func() time.Time

// Resolver resolves a "host:port" candidate to one address.
type Resolver func(hostport string) (netip.AddrPort, error)

// ParseLiteral parses an IP literal candidate ("192.0.2.1:51820",
// "[2001:db8::1]:51820"); ok is false for a host name.
func ParseLiteral(c string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(c)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// Input is one peer as the file and the device see it.
type Input struct {
	Device     string
	PublicKey  model.Key
	Candidates []string
	// Current is the device's endpoint (invalid: none).
	Current       netip.AddrPort
	LastHandshake time.Time
	Rotation      model.Rotation
}

// Decision is what to do with one peer's endpoint.
type Decision struct {
	State State
	// Rotate: a new candidate is chosen; the tracker must be told (Commit)
	// once it is on the device, which restarts the connect timer.
	Rotate bool
	// Write: Addr differs from the device's endpoint and must be written.
	// A chosen candidate equal to the device's endpoint is not re-set.
	Write     bool
	Candidate int // index of the chosen (or current) candidate; -1 none
	Addr      netip.AddrPort
	// Next is the candidate a rotation would choose next ("" if none).
	Next string
	// Err reports candidates that could not be resolved.
	Err error

	changed time.Time // the change time Observe records
	// at is when the decision was made: before the endpoint is written, so
	// a handshake that completes while the rest of the pass is applied
	// still counts as after the change.
	at time.Time
}

type peerKey struct {
	dev string
	pub model.Key
}

type memo struct {
	used    int            // candidate index last set; -1 none
	addr    netip.AddrPort // endpoint the device holds as far as we know
	changed time.Time      // when we set it; zero: unknown (adopted, roamed)
}

// Tracker remembers the rotation state of every peer. It is safe for
// concurrent use. The daemon keeps one for its lifetime; a one-shot apply
// starts from an empty one.
type Tracker struct {
	now     Clock
	resolve Resolver
	mu      sync.Mutex
	peers   map[peerKey]memo
}

// New returns an empty tracker.
func New(now Clock, resolve Resolver) *Tracker {
	return &Tracker{now: now, resolve: resolve, peers: map[peerKey]memo{}}
}

// Now is the tracker's clock.
func (t *Tracker) Now() time.Time { return t.now() }

func (t *Tracker) lookup(c string) (netip.AddrPort, error) {
	if ap, ok := ParseLiteral(c); ok {
		return ap, nil
	}
	if t.resolve == nil {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: no resolver", c)
	}
	ap, err := t.resolve(c)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: %w", c, err)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// indexOf finds the candidate the device's endpoint is. Host names are
// resolved only when no literal matches.
func (t *Tracker) indexOf(cands []string, ep netip.AddrPort) int {
	if !ep.IsValid() {
		return -1
	}
	for i, c := range cands {
		if ap, ok := ParseLiteral(c); ok && ap == ep {
			return i
		}
	}
	for i, c := range cands {
		if _, ok := ParseLiteral(c); ok {
			continue
		}
		if ap, err := t.lookup(c); err == nil && ap == ep {
			return i
		}
	}
	return -1
}

// Decide computes the decision for one peer. It does not change the
// tracker: Commit does, once the decision is carried out.
func (t *Tracker) Decide(in Input) Decision { return t.DecideAt(in, t.now()) }

// DecideAt is Decide at now, a time of the tracker's clock (Now): a pass
// that judges ten thousand peers reads the clock once, not once a peer
// (which is a system call on a host whose clock source has no vDSO).
func (t *Tracker) DecideAt(in Input, now time.Time) Decision {
	t.mu.Lock()
	m, known := t.peers[peerKey{in.Device, in.PublicKey}]
	t.mu.Unlock()
	switch {
	case !known:
		// First sight (a one-shot apply, a daemon start): keep the device's
		// endpoint if it is a candidate, else start from the first one.
		m = memo{used: t.indexOf(in.Candidates, in.Current)}
		recent := !in.LastHandshake.IsZero() && now.Sub(in.LastHandshake) < in.Rotation.DownAfter
		switch {
		case m.used >= 0:
			m.addr = in.Current
			// When it was set is unknown. With a recent handshake, judge the
			// peer by its handshakes alone; without, give the endpoint a
			// fresh connect timeout from now rather than condemn it at once.
			if !recent {
				m.changed = now
			}
		case in.Current.IsValid() && recent:
			// Not a candidate, but the peer handshakes there: the kernel
			// roamed to where the peer last spoke from. Kept and judged by
			// its handshakes alone, as a roam the daemon sees is: a
			// one-shot apply does not undo it.
			m.addr = in.Current
		}
	case !in.Current.IsValid():
		// The device lost its endpoint (recreated): start over.
		m = memo{used: -1}
	case in.Current != m.addr:
		// The kernel roamed to where the peer last spoke from: keep it, and
		// judge it by its handshakes alone.
		m.addr, m.changed = in.Current, time.Time{}
		if i := t.indexOf(in.Candidates, in.Current); i >= 0 {
			m.used = i
		}
	}
	everSet := m.addr.IsValid()
	d := Decision{State: Classify(in.Rotation, now, in.LastHandshake, m.changed, everSet), Candidate: m.used, Addr: in.Current, changed: m.changed, at: now}
	n := len(in.Candidates)
	if n == 0 {
		d.Candidate = -1
		return d
	}
	next := 0
	if m.used >= 0 {
		next = (m.used + 1) % n
	}
	// One candidate that is already in use is not re-set.
	single := n == 1 && m.used == 0 && in.Current.IsValid() && in.Current == m.addr
	if !single {
		d.Next = in.Candidates[next]
	}
	if single || (d.State != Down && everSet) {
		return d
	}
	var errs []error
	for i := 0; i < n; i++ {
		idx := (next + i) % n
		ap, err := t.lookup(in.Candidates[idx])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.Rotate, d.Candidate, d.Addr = true, idx, ap
		d.Write = ap != in.Current
		d.Next = in.Candidates[(idx+1)%n]
		if n == 1 {
			d.Next = ""
		}
		break
	}
	d.Err = errors.Join(errs...)
	return d
}

// Commit records that the decision's endpoint is now on the device. The
// change dates from the decision, which precedes the write.
func (t *Tracker) Commit(dev string, pub model.Key, d Decision) {
	if !d.Rotate {
		return
	}
	changed := d.at
	if changed.IsZero() {
		changed = t.now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers[peerKey{dev, pub}] = memo{used: d.Candidate, addr: d.Addr, changed: changed}
}

// Observe records what the device holds for a peer that was not rotated,
// so that a later pass recognises roaming and adoption.
func (t *Tracker) Observe(dev string, pub model.Key, d Decision) {
	if d.Rotate {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := peerKey{dev, pub}
	m, known := t.peers[k]
	if !known || m.addr != d.Addr {
		m = memo{used: d.Candidate, addr: d.Addr, changed: d.changed}
	}
	t.peers[k] = m
}

// Forget drops the memory of peers of dev that keep rejects.
func (t *Tracker) Forget(dev string, keep func(model.Key) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.peers {
		if k.dev == dev && !keep(k.pub) {
			delete(t.peers, k)
		}
	}
}
