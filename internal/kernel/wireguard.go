package kernel

import (
	"net/netip"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// WireGuard reads and configures WireGuard devices (kernel module or
// userspace wireguard-go, through wgctrl). A kernel that offers it
// implements this interface besides Interface; callers type-assert.
type WireGuard interface {
	// WireGuardDevice reads a device: keys (public ones only), port, mark,
	// and every peer with its endpoint, handshake time and counters. It
	// returns ErrNotFound (wrapped) when name is not a WireGuard device.
	WireGuardDevice(name string) (*model.WireGuard, error)
	// ConfigureWireGuard applies a patch in one call. Peers are changed
	// one by one (add, remove, update); it never replaces the peer list, so
	// untouched peers keep their sessions.
	ConfigureWireGuard(name string, cfg *WireGuardConfig) error
	// StartUserspaceWireGuard runs wireguard-go for name inside the kernel's
	// network namespace and returns once its device and control socket exist.
	StartUserspaceWireGuard(name string) error
}

// WireGuardConfig is a patch of a device; nil fields are left unchanged.
type WireGuardConfig struct {
	PrivateKey *model.Secret
	ListenPort *int
	FwMark     *uint32
	Peers      []PeerPatch
}

// PeerPatch changes one peer.
type PeerPatch struct {
	PublicKey model.Key
	// Remove deletes the peer; every other field is ignored.
	Remove bool
	// UpdateOnly changes an existing peer and never creates one.
	UpdateOnly   bool
	PresharedKey *model.Secret // a zero Secret removes the preshared key
	// Endpoint is written when valid.
	Endpoint  netip.AddrPort
	Keepalive *time.Duration
	// AllowedIPs replace the peer's list when ReplaceAllowedIPs is set.
	ReplaceAllowedIPs bool
	AllowedIPs        []netip.Prefix
}

// WireGuardImplementations name where a device runs.
const (
	WireGuardKernel    = "kernel"
	WireGuardUserspace = "userspace"
)

// UserspaceProgram is the userspace WireGuard implementation started where
// the kernel lacks the module, as wg-quick does.
var UserspaceProgram = "wireguard-go"

// userspaceStartTimeout bounds the wait for wireguard-go's device and
// control socket; it daemonizes once both exist, in well under a second.
const userspaceStartTimeout = 10 * time.Second
