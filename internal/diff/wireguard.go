package diff

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
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

// peerOpID is the ID of a peer operation: "<public key> on <link>".
func peerOpID(pub model.Key, link string) string { return pub.String() + " on " + link }

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
	have := map[model.Key]*model.WireGuardPeer{}
	if h != nil {
		for i := range h.Peers {
			have[h.Peers[i].PublicKey] = &h.Peers[i]
		}
	}
	want := map[model.Key]bool{}
	var deletes, updates, creates []Op
	for i := range w.Peers {
		p := &w.Peers[i]
		want[p.PublicKey] = true
		op := Op{Kind: KindWGPeer, ID: peerOpID(p.PublicKey, name), WireGuard: &WireGuardOp{Link: name, Device: w, Peer: p}}
		hp, ok := have[p.PublicKey]
		if !ok {
			op.Action, op.Summary = Create, peerSummary(p)
			op.WireGuard.PeerFields = PeerFields{AllowedIPs: true, Keepalive: true, Endpoint: true, PresharedKey: p.PresharedKey.IsSet() && !p.KeepPresharedKey}
			creates = append(creates, op)
			continue
		}
		if op.Changes, op.WireGuard.PeerFields = peerChanges(p, hp); len(op.Changes) > 0 {
			op.Action = Update
			updates = append(updates, op)
		}
	}
	if h != nil && owned {
		for i := range h.Peers {
			p := &h.Peers[i]
			if !want[p.PublicKey] {
				deletes = append(deletes, Op{Action: Delete, Kind: KindWGPeer, ID: peerOpID(p.PublicKey, name), Summary: "not in the configuration", WireGuard: &WireGuardOp{Link: name, Device: w, Peer: p}})
			}
		}
	}
	for _, ops := range [][]Op{deletes, updates, creates} {
		for _, op := range ops {
			c.add(op)
		}
	}
}

// peerChanges lists what differs, as shown and as written.
func peerChanges(w, h *model.WireGuardPeer) ([]Change, PeerFields) {
	var ch []Change
	var f PeerFields
	if a, b := prefixesStr(h.AllowedIPs), prefixesStr(w.AllowedIPs); a != b {
		f.AllowedIPs = true
		ch = append(ch, Change{"allowed-ips", a, b})
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
	parts := []string{"allowed-ips " + prefixesStr(p.AllowedIPs)}
	if p.Keepalive != 0 {
		parts = append(parts, "persistent-keepalive "+durStr(p.Keepalive))
	}
	if p.Endpoint.IsValid() {
		parts = append(parts, "endpoint "+p.Endpoint.String())
	}
	if p.PresharedKey.IsSet() {
		parts = append(parts, "preshared-key "+secretSet)
	}
	return strings.Join(parts, ", ")
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

func durStr(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

func prefixesStr(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
