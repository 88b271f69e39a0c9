package model

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/crypto/curve25519"
)

// KeyLen is the length of a WireGuard key (Curve25519).
const KeyLen = 32

// Key is a WireGuard public key. It prints as base64, like wg(8).
type Key [KeyLen]byte

func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// Short is a prefix of the key, for messages: its first 8 characters of
// base64 and an ellipsis, as people tell peers apart in wg(8)'s output. A
// public key is no secret, but a whole one looks like a private key to
// package redact, which hides it, and every peer would read the same.
func (k Key) Short() string { return k.String()[:8] + "…" }

// IsZero reports whether the key is unset.
func (k Key) IsZero() bool { return k == Key{} }

// ParseKey decodes a base64 key as wg(8) prints it.
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != KeyLen {
		return k, fmt.Errorf("expected a WireGuard key: 44 characters of base64 (wg genkey, wg pubkey)")
	}
	copy(k[:], b)
	return k, nil
}

// Secret is a private or preshared key. Its bytes are unexported and every
// way of printing it (fmt verbs, JSON, YAML) prints SecretMarker, so a secret
// cannot leak into a plan, a log line or an error by accident.
type Secret struct {
	b   [KeyLen]byte
	set bool
}

// SecretMarker stands for a secret wherever one would be printed.
const SecretMarker = "(secret)"

// NewSecret wraps key bytes.
func NewSecret(b [KeyLen]byte) Secret { return Secret{b: b, set: true} }

// IsSet reports whether the secret holds a key.
func (s Secret) IsSet() bool { return s.set }

// Bytes returns the key: only the kernel writer may call it.
func (s Secret) Bytes() [KeyLen]byte { return s.b }

// Equal compares two secrets in constant time.
func (s Secret) Equal(o Secret) bool {
	return s.set == o.set && subtle.ConstantTimeCompare(s.b[:], o.b[:]) == 1
}

func (s Secret) String() string   { return SecretMarker }
func (s Secret) GoString() string { return SecretMarker }

// Format prints the marker for every verb, %x and %#v included.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(SecretMarker)) }

// MarshalJSON never emits the key.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + SecretMarker + `"`), nil }

// MarshalText never emits the key.
func (s Secret) MarshalText() ([]byte, error) { return []byte(SecretMarker), nil }

// WireGuard holds a wireguard link's device and peers. The link stage
// creates the device; the wireguard stage configures it through wgctrl.
type WireGuard struct {
	// PrivateKeyFile or PrivateKeyCredential names where the key came from (desired only).
	PrivateKeyFile       string
	PrivateKeyCredential string
	// PrivateKey is desired only: the actual side never holds a private key.
	PrivateKey Secret
	// PublicKey is derived from the private key (desired) or read from the device.
	PublicKey Key
	// KeepPrivateKey (desired): the file gives the device's public key
	// without a private key, so the device keeps the private key it holds,
	// which must be PublicKey's; netreconcile sets none.
	KeepPrivateKey bool
	// ListenPort 0 means "any": the file does not enforce one.
	ListenPort int
	FwMark     uint32
	// Userspace allows falling back to wireguard-go where the kernel lacks the module.
	Userspace bool
	// Peers are sorted by public key.
	Peers    []WireGuardPeer
	Rotation Rotation

	// Implementation is "kernel" or "userspace" (actual only).
	Implementation string
}

// WireGuardPeer is one peer of a device.
type WireGuardPeer struct {
	PublicKey        Key
	PresharedKeyFile string // desired only
	PresharedKey     Secret
	// KeepPresharedKey (desired): the peer keeps the preshared key the
	// device holds for it, whatever it is; netreconcile sets none.
	KeepPresharedKey bool
	// AllowedIPs are sorted and masked.
	AllowedIPs []netip.Prefix
	// Keepalive is the persistent keepalive interval; 0 is off.
	Keepalive time.Duration
	// Endpoints are the candidates, in order: "addr:port", "[v6]:port" or
	// "host:port" (desired only).
	Endpoints []string
	// Endpoint is the device's endpoint (actual), or the one the rotation
	// decided to write (desired; invalid = leave the device's as it is).
	Endpoint netip.AddrPort

	// Actual only.
	LastHandshake     time.Time
	RxBytes, TxBytes  int64
	Origin            string // where the peer was declared (desired only)
	EndpointCandidate int    // index in Endpoints of Endpoint (desired), -1 if none
}

// Rotation holds the endpoint rotation timings (KubeSpan's).
type Rotation struct {
	// ConnectTimeout: after an endpoint change with no handshake yet the
	// peer is Unknown for this long, then Down.
	ConnectTimeout time.Duration
	// DownAfter: past this long after a change, a peer is Up only with a
	// handshake younger than this.
	DownAfter time.Duration
	// Interval between checks.
	Interval time.Duration
}

// KubeSpan's timings. DownAfter is the WireGuard whitepaper's downed peer:
// Reject-After-Time 180 s + Rekey-Timeout 5 s + Rekey-Attempt-Time 90 s.
var DefaultRotation = Rotation{
	ConnectTimeout: 15 * time.Second,
	DownAfter:      (180 + 5 + 90) * time.Second,
	Interval:       30 * time.Second,
}

// SortPeers orders peers by public key (its bytes: cheaper than base64).
// A peer is a large struct, and a file may list ten thousand in any order:
// an order of indices is sorted (comparing keys in place, never copying a
// peer to compare it), then every peer is moved once to its place. A list
// in order already (a device's dump of peers added in order) is left as
// it is. No allocation but the indices.
func SortPeers(ps []WireGuardPeer) {
	less := func(i, j int) int { return bytes.Compare(ps[i].PublicKey[:], ps[j].PublicKey[:]) }
	sorted := true
	for i := 1; i < len(ps) && sorted; i++ {
		sorted = less(i-1, i) <= 0
	}
	if sorted {
		return
	}
	order := make([]int32, len(ps))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return less(int(a), int(b)) })
	// Position j takes the peer at order[j]: follow each cycle, moving
	// every peer once; a placed position is marked -1.
	for i := range order {
		if order[i] < 0 || int(order[i]) == i {
			order[i] = -1
			continue
		}
		tmp := ps[i]
		j := i
		for {
			k := int(order[j])
			order[j] = -1
			if k == i {
				ps[j] = tmp
				break
			}
			ps[j] = ps[k]
			j = k
		}
	}
}

// PublicKey derives the public key of a private key.
func (s Secret) PublicKey() Key {
	pub, err := curve25519.X25519(s.b[:], curve25519.Basepoint)
	if err != nil {
		// Only a low-order point fails, and the base point is not one.
		return Key{}
	}
	return Key(pub)
}

// SortPrefixes orders prefixes by address, then length.
func SortPrefixes(ps []netip.Prefix) {
	if len(ps) < 2 {
		return
	}
	slices.SortFunc(ps, ComparePrefixes)
}

// ComparePrefixes orders prefixes as SortPrefixes does.
func ComparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
