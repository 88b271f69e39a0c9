package diff

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// WireGuard object kinds: the device's own settings, and each peer.
const (
	KindWireGuard Kind = "wireguard"
	KindWGPeer    Kind = "wireguard peer"
)

// Markers that stand for secrets in a plan: never a key, never a fingerprint.
const (
	secretSet     = "(set)"
	secretChanged = "(changed)"
)

// WireGuardOp is the object of a wireguard or wireguard peer operation.
type WireGuardOp struct {
	Link string
	// Device is the desired device (for the device op, and for context).
	Device *model.WireGuard
	// Peer is the desired peer, or the actual one for a delete.
	Peer *model.WireGuardPeer
	// DeviceFields (a device op) and PeerFields (a peer create or update)
	// are what the op writes, each from Device or Peer.
	DeviceFields WireGuardFields
	PeerFields   PeerFields
}

// WireGuardFields are the device attributes an op writes.
type WireGuardFields struct {
	PrivateKey, ListenPort, FwMark bool
}

// WireGuardWriter takes one device attribute per method: apply implements
// it. Adding a field to WireGuardFields adds its method here.
type WireGuardWriter interface {
	PrivateKey()
	ListenPort()
	FwMark()
}

// Write calls w's method for every attribute in f.
func (f WireGuardFields) Write(w WireGuardWriter) {
	if f.PrivateKey {
		w.PrivateKey()
	}
	if f.ListenPort {
		w.ListenPort()
	}
	if f.FwMark {
		w.FwMark()
	}
}

// PeerFields are the peer attributes an op writes.
type PeerFields struct {
	AllowedIPs, Keepalive, PresharedKey, Endpoint bool
}

// PeerWriter takes one peer attribute per method: apply implements it.
// Adding a field to PeerFields adds its method here.
type PeerWriter interface {
	AllowedIPs()
	Keepalive()
	PresharedKey()
	Endpoint()
}

// Write calls w's method for every attribute in f.
func (f PeerFields) Write(w PeerWriter) {
	if f.AllowedIPs {
		w.AllowedIPs()
	}
	if f.Keepalive {
		w.Keepalive()
	}
	if f.PresharedKey {
		w.PresharedKey()
	}
	if f.Endpoint {
		w.Endpoint()
	}
}

// peerOpID is the ID of a peer operation: "<public key> on <link>", made
// in one allocation (a pass that configures ten thousand peers makes ten
// thousand).
func peerOpID(pub model.Key, link string) string {
	b := make([]byte, 0, base64.StdEncoding.EncodedLen(model.KeyLen)+len(" on ")+len(link))
	b = base64.StdEncoding.AppendEncode(b, pub[:])
	b = append(b, " on "...)
	b = append(b, link...)
	return string(b)
}

// peerOpName is a peer operation's object in a message: "<prefix…> on <link>".
func peerOpName(pub model.Key, link string) string { return pub.Short() + " on " + link }

// wireguard plans each WireGuard device's settings and peers, after the
// links exist. Peers are planned one by one: deletes first (freeing allowed
// IPs another peer may take), then updates, then creates. A peer is never
// deleted and added again, and the peer list is never replaced, so the
// sessions of untouched peers survive.
func (c *computer) wireguard() {
	for _, name := range c.d.SortedLinkNames() {
		want := c.d.Links[name]
		if want.Kind != model.KindWireGuard || want.WireGuard == nil {
			continue
		}
		have := c.a.Links[name]
		var hw *model.WireGuard
		if have != nil && !c.recreated[name] && have.Kind == model.KindWireGuard {
			hw = have.WireGuard
		}
		if have != nil && !c.recreated[name] && !have.Owned && !want.Adopt {
			continue // a conflict, reported by the link stage
		}
		owned := have == nil || have.Owned || want.Adopt || c.recreated[name]
		c.wgDevice(name, want.WireGuard, hw)
		c.wgPeers(name, want.WireGuard, hw, owned)
	}
}

func (c *computer) wgDevice(name string, w, h *model.WireGuard) {
	op := Op{Kind: KindWireGuard, ID: name, WireGuard: &WireGuardOp{Link: name, Device: w}}
	f := &op.WireGuard.DeviceFields
	if w.KeepPrivateKey && (h == nil || h.PublicKey != w.PublicKey) {
		// The file keeps the key the device holds: a device made now
		// would hold none, and one that holds another is not the one
		// the file names.
		if h == nil {
			c.conflict("link %s keeps the private key it holds (public-key without private-key-file), but the device is new: give private-key-file or private-key-credential to make it", name)
		} else {
			c.conflict("link %s holds the private key of public key %s, not public-key %s: give private-key-file or private-key-credential to set it", name, keyOrNone(h.PublicKey), w.PublicKey)
		}
		c.blockLink(name)
		return
	}
	if h == nil {
		// A new device gets its key and mark, and its port unless the
		// kernel is to pick one.
		op.Action, op.Summary = Create, wgDeviceSummary(w)
		*f = WireGuardFields{PrivateKey: !w.KeepPrivateKey, ListenPort: w.ListenPort != 0, FwMark: true}
		c.add(op)
		return
	}
	if w.PublicKey != h.PublicKey {
		f.PrivateKey = true
		op.Changes = append(op.Changes, Change{"public-key", keyOrNone(h.PublicKey), keyOrNone(w.PublicKey)})
	}
	if w.ListenPort != 0 && w.ListenPort != h.ListenPort {
		f.ListenPort = true
		op.Changes = append(op.Changes, Change{"listen-port", strconv.Itoa(h.ListenPort), strconv.Itoa(w.ListenPort)})
	}
	if w.FwMark != h.FwMark {
		f.FwMark = true
		op.Changes = append(op.Changes, Change{"fwmark", markStr(h.FwMark), markStr(w.FwMark)})
	}
	if len(op.Changes) > 0 {
		op.Action = Update
		c.add(op)
	}
}

func (c *computer) wgPeers(name string, w, h *model.WireGuard, owned bool) {
	var hp []model.WireGuardPeer
	if h != nil {
		hp = h.Peers
	}
	// The ops' objects in chunks: one allocation for many, where a device
	// configured from empty makes ten thousand.
	var chunk []WireGuardOp
	peerOp := func(p *model.WireGuardPeer) Op {
		if len(chunk) == 0 {
			chunk = make([]WireGuardOp, min(max(len(w.Peers)-len(hp), 8), 256))
		}
		wo := &chunk[0]
		chunk = chunk[1:]
		*wo = WireGuardOp{Link: name, Device: w, Peer: p}
		return Op{Kind: KindWGPeer, ID: peerOpID(p.PublicKey, name), WireGuard: wo}
	}
	var deletes, updates, creates []Op
	if n := len(w.Peers) - len(hp); n > 0 {
		// At least this many creates: a device configured from empty
		// gets its ten thousand ops without growing the list.
		creates = make([]Op, 0, n)
	}
	matchPeers(w.Peers, hp, func(p, q *model.WireGuardPeer) {
		switch {
		case q == nil:
			op := peerOp(p)
			op.Action, op.Summary = Create, peerSummary(p)
			op.WireGuard.PeerFields = PeerFields{AllowedIPs: true, Keepalive: true, Endpoint: true, PresharedKey: p.PresharedKey.IsSet() && !p.KeepPresharedKey}
			creates = append(creates, op)
		case p == nil:
			if h != nil && owned {
				op := peerOp(q)
				op.Action, op.Summary = Delete, "not in the configuration"
				deletes = append(deletes, op)
			}
		default:
			// Most passes change no peer: the op is made only for one
			// that differs.
			if ch, f := peerChanges(p, q); len(ch) > 0 {
				op := peerOp(p)
				op.Action, op.Changes, op.WireGuard.PeerFields = Update, ch, f
				updates = append(updates, op)
			}
		}
	})
	for _, ops := range [][]Op{deletes, updates, creates} {
		for _, op := range ops {
			c.add(op)
		}
	}
}

// coldPeers is how many more WireGuard peers d declares than a's devices
// hold: at least that many peer creates (a plan's sizeHint).
func coldPeers(d, a *model.State) int {
	n := 0
	for name, l := range d.Links {
		if l.WireGuard == nil {
			continue
		}
		have := 0
		if al := a.Links[name]; al != nil && al.WireGuard != nil {
			have = len(al.WireGuard.Peers)
		}
		n += max(0, len(l.WireGuard.Peers)-have)
	}
	return n
}

// matchPeers calls f with every desired peer and the actual one of the
// same public key (nil when there is none), then with every actual peer
// no desired one has (nil, q). Both lists are in the model's order (by
// public key) and are walked together; lists out of that order are matched
// through maps.
func matchPeers(want, have []model.WireGuardPeer, f func(p, q *model.WireGuardPeer)) {
	// By pointer: a comparison of two peers by value copies both, a few
	// hundred bytes each, for each of ten thousand peers.
	cmp := func(a, b *model.WireGuardPeer) int { return bytes.Compare(a.PublicKey[:], b.PublicKey[:]) }
	if !peersSorted(want) || !peersSorted(have) {
		byKey := make(map[model.Key]*model.WireGuardPeer, len(have))
		for i := range have {
			byKey[have[i].PublicKey] = &have[i]
		}
		wanted := make(map[model.Key]bool, len(want))
		for i := range want {
			wanted[want[i].PublicKey] = true
			f(&want[i], byKey[want[i].PublicKey])
		}
		for i := range have {
			if !wanted[have[i].PublicKey] {
				f(nil, &have[i])
			}
		}
		return
	}
	var gone []*model.WireGuardPeer
	j := 0
	for i := range want {
		for j < len(have) && cmp(&have[j], &want[i]) < 0 {
			gone = append(gone, &have[j])
			j++
		}
		if j < len(have) && have[j].PublicKey == want[i].PublicKey {
			f(&want[i], &have[j])
			j++
			continue
		}
		f(&want[i], nil)
	}
	for ; j < len(have); j++ {
		gone = append(gone, &have[j])
	}
	for _, q := range gone {
		f(nil, q)
	}
}

// peersSorted reports whether ps is in the model's order, by public key.
func peersSorted(ps []model.WireGuardPeer) bool {
	for i := 1; i < len(ps); i++ {
		if bytes.Compare(ps[i-1].PublicKey[:], ps[i].PublicKey[:]) > 0 {
			return false
		}
	}
	return true
}

// peerChanges lists what differs, as shown and as written.
func peerChanges(w, h *model.WireGuardPeer) ([]Change, PeerFields) {
	var ch []Change
	var f PeerFields
	// Both sides are sorted and masked: compared as values, and printed
	// only when they differ (every pass compares every peer's).
	if !slices.Equal(h.AllowedIPs, w.AllowedIPs) {
		f.AllowedIPs = true
		ch = append(ch, Change{"allowed-ips", prefixesStr(h.AllowedIPs), prefixesStr(w.AllowedIPs)})
	}
	if w.Keepalive != h.Keepalive {
		f.Keepalive = true
		ch = append(ch, Change{"persistent-keepalive", durStr(h.Keepalive), durStr(w.Keepalive)})
	}
	if !w.KeepPresharedKey && !w.PresharedKey.Equal(h.PresharedKey) {
		f.PresharedKey = true // a zero Secret clears it
		switch {
		case !w.PresharedKey.IsSet():
			ch = append(ch, Change{"preshared-key", secretSet, ""})
		case !h.PresharedKey.IsSet():
			ch = append(ch, Change{"preshared-key", "", secretSet})
		default:
			ch = append(ch, Change{"preshared-key", secretSet, secretChanged})
		}
	}
	if w.Endpoint.IsValid() && w.Endpoint != h.Endpoint {
		from := "none"
		if h.Endpoint.IsValid() {
			from = h.Endpoint.String()
		}
		f.Endpoint = true
		ch = append(ch, Change{"endpoint", from, w.Endpoint.String()})
	}
	return ch, f
}

func peerSummary(p *model.WireGuardPeer) string {
	b := make([]byte, 0, 96)
	b = append(b, "allowed-ips "...)
	b = appendPrefixes(b, p.AllowedIPs)
	if p.Keepalive != 0 {
		b = append(b, ", persistent-keepalive "...)
		b = appendDur(b, p.Keepalive)
	}
	if p.Endpoint.IsValid() {
		b = append(b, ", endpoint "...)
		b = p.Endpoint.AppendTo(b)
	}
	if p.PresharedKey.IsSet() {
		b = append(b, ", preshared-key "+secretSet...)
	}
	return string(b)
}

func wgDeviceSummary(w *model.WireGuard) string {
	s := "public-key " + keyOrNone(w.PublicKey)
	if w.ListenPort != 0 {
		s += fmt.Sprintf(" listen-port %d", w.ListenPort)
	}
	if w.FwMark != 0 {
		s += " fwmark " + markStr(w.FwMark)
	}
	return s
}

func keyOrNone(k model.Key) string {
	if k.IsZero() {
		return "none"
	}
	return k.String()
}

func markStr(m uint32) string {
	if m == 0 {
		return "none"
	}
	return fmt.Sprintf("%#x", m)
}

// appendDur appends durStr(d), without a string of its own for whole
// seconds under a minute (a keepalive's usual value).
func appendDur(b []byte, d time.Duration) []byte {
	if d > 0 && d < time.Minute && d%time.Second == 0 {
		return append(strconv.AppendInt(b, int64(d/time.Second), 10), 's')
	}
	return append(b, durStr(d)...)
}

func durStr(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

func prefixesStr(ps []netip.Prefix) string { return string(appendPrefixes(nil, ps)) }

// appendPrefixes appends "a, b, c", or "none".
func appendPrefixes(b []byte, ps []netip.Prefix) []byte {
	if len(ps) == 0 {
		return append(b, "none"...)
	}
	for i, p := range ps {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = p.AppendTo(b)
	}
	return b
}
