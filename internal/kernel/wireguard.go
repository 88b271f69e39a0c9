package kernel

import (
	"net/netip"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

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

// Where a WireGuard device runs: the kernel module or a userspace program.
const (
	WireGuardKernel    = "kernel"
	WireGuardUserspace = "userspace"
)

// UserspaceProgram is the userspace WireGuard implementation started where
// the kernel lacks the module, as wg-quick does: an absolute path, never
// looked up in $PATH, since it runs with the daemon's privileges. The command line's --wireguard-go sets it; it is no key of
// the configuration file on purpose: whoever writes the file may change the
// network, not run a program of their choice as root.
var UserspaceProgram = DefaultUserspaceProgram

// DefaultUserspaceProgram is where Debian's wireguard-go package puts it.
const DefaultUserspaceProgram = "/usr/bin/wireguard-go"

// userspaceEnv is wireguard-go's whole environment. It inherits nothing
// from the daemon: not $CREDENTIALS_DIRECTORY (the private key's
// directory), not $NOTIFY_SOCKET (it could report the service ready or
// stopping), not $PATH. Nor LOG_LEVEL: with it set, the daemonized copy
// keeps our stdout and stderr, and the start would wait for it to exit.
var userspaceEnv = []string{}

// userspaceStartTimeout bounds the wait for wireguard-go's device and
// control socket; it daemonizes once both exist, in well under a second.
const userspaceStartTimeout = 10 * time.Second
