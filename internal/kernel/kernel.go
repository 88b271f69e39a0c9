// Package kernel is netreconcile's narrow interface to the kernel (routing
// netlink, nftables, WireGuard): only the calls the reconciler makes, in
// model types, so that the diff and apply logic can run against the
// in-memory kernel of package kerneltest in unit tests.
//
// That fake is for logic tests only; every feature is proven against a real
// kernel (a network namespace here, a qemu guest for what this kernel lacks).
package kernel

import (
	"errors"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Interface is the kernel as the reconciler sees it: every call the
// product makes, and no other. Netlink is the real one; kerneltest.Kernel
// is an in-memory one for logic tests. A kernel that lacks a feature
// (nftables, WireGuard, FoU, a link kind) still has the calls: they return
// an error wrapping ErrUnsupported.
type Interface interface {
	Reader
	Writer
	// Writes counts the writes made so far through this Interface.
	Writes() uint64
	Close() error
}

// Reader lists kernel objects. Each list is consistent: an interrupted dump
// is retried, never returned.
type Reader interface {
	// Links lists every link; Owned is set for links carrying the marker.
	Links() ([]*model.Link, error)
	// VethPeer finds the namespace that this one knows as netnsid nsid
	// among the names under /run/netns and lists its links; the peer is
	// the one with ifindex index there. A namespace it cannot find or
	// enter gives a RemotePeer that says so in Unreadable, not an error.
	VethPeer(nsid, index int) (*model.RemotePeer, error)
	// Addresses lists every address except the IPv6 ones the kernel or
	// SLAAC made without IFA_F_PERMANENT. The kernel's own IPv6 link-local
	// address of a link is listed where it is permanent (6.18 makes it so);
	// model.State.Owned never counts one as ours.
	Addresses() ([]model.Address, error)
	// AddressProtocols reports whether the kernel records the protocol of
	// an address (IFA_PROTO, Linux 6.3).
	AddressProtocols() bool
	// Routes lists routes of every table; protocol 0 means all protocols,
	// otherwise only routes of that protocol (filtered in the kernel where it can).
	Routes(protocol int) ([]model.Route, error)
	// TableRoutes lists the routes of one table, of one protocol (0:
	// every protocol): to read only the tables that hold ours, and again
	// only those a notification named.
	TableRoutes(table, protocol int) ([]model.Route, error)
	// RoutesWithKeys lists the routes of one table, of every protocol,
	// whose keys are in keys: the routes in the way of those a plan
	// creates, found without holding the rest of the table.
	RoutesWithKeys(table int, keys map[model.RouteKey]bool) ([]model.Route, error)
	// Rules lists the rules of both families.
	Rules() ([]model.Rule, error)
	// FouPorts lists the FoU receive ports of both families.
	FouPorts() ([]model.FouPort, error)
	// Sysctls reads the given keys (dotted, as sysctl(8) prints them, see
	// model.Sysctl) in the kernel's network namespace: /proc/sys/net is
	// per namespace. A key the kernel does not have is left out of the
	// map; only a key it has and cannot read is an error. Values are as the
	// kernel prints them, without the final newline.
	Sysctls(keys []string) (map[string]string, error)

	// NFTTable reads an nftables table with its sets, elements, chains and
	// rules; nil when it does not exist.
	NFTTable(k model.NftTableKey) (*model.NftTable, error)
	// NFTTables lists the namespace's tables of every family, whoever
	// made them (show --all prints the others' as comments).
	NFTTables() ([]model.NftTableKey, error)
	// NFTTableHandle returns the kernel's handle of a table (0 when it
	// does not exist): a per-namespace counter, new for every table
	// created, so it tells a table from one deleted and made again.
	NFTTableHandle(k model.NftTableKey) (uint64, error)

	// WireGuardDevice reads a device (kernel module or userspace
	// wireguard-go, through wgctrl): keys (public ones only), port, mark,
	// and every peer with its endpoint, handshake time and counters. It
	// returns ErrNotFound (wrapped) when name is not a WireGuard device.
	WireGuardDevice(name string) (*model.WireGuard, error)
}

// Writer changes kernel objects. Names are link names; implementations
// resolve them to indexes.
type Writer interface {
	// AddLink creates a link with the ownership marker in its alias, down;
	// SetLinkUp brings it up once addresses and master are in place.
	AddLink(l *model.Link) error
	DeleteLink(name string) error
	// ChangeLink writes the attributes of l's kind that the kernel changes
	// in place: a macvlan's mode, a bond's mode and miimon. A bond's mode
	// changes only while it is down: a bond that is up is set down for the
	// write and up again. Other kinds have none (an error).
	ChangeLink(l *model.Link) error
	SetLinkMTU(name string, mtu int) error
	SetLinkUp(name string, up bool) error
	// SetLinkMaster enslaves name to master; "" releases it.
	SetLinkMaster(name, master string) error
	// SetLinkAlias writes alias, prefixed with the marker when owned.
	SetLinkAlias(name, alias string, owned bool) error

	// PromoteSecondaries sets net.ipv4.conf.NAME.promote_secondaries to 1,
	// so that deleting a primary IPv4 address promotes a secondary of the
	// same subnet instead of deleting them all with it.
	PromoteSecondaries(name string) error

	// ReplaceAddress adds an address stamped with protocol (IFA_PROTO,
	// ignored by kernels before 6.3), or refreshes one that exists
	// (NLM_F_REPLACE: the kernel keeps its scope and peer, and sets its
	// protocol to the request's, 0 when it carries none: measured on 6.18).
	ReplaceAddress(a *model.Address, protocol int) error
	DeleteAddress(a *model.Address) error

	// WriteRoutes makes the writes in order without waiting for each
	// answer: one error per write (nil for success), in the same order.
	// Each route is one kernel write: an add (NLM_F_EXCL: EEXIST when a
	// route with the same key exists, ours or not), a replace
	// (NLM_F_REPLACE on its key), both stamped with protocol, or a delete
	// of the route with that key.
	WriteRoutes(ws []RouteWrite, protocol int) []error

	AddRule(r *model.Rule, protocol int) error
	DeleteRule(r *model.Rule) error

	AddFou(f *model.FouPort) error
	DeleteFou(f *model.FouPort) error

	// SetSysctl writes value to key in the kernel's network namespace;
	// ErrNotFound (wrapped) when the kernel has no such key.
	SetSysctl(key, value string) error

	// NFTApply sends every op in one netlink batch (one nftables
	// transaction); the kernel commits all of them or none, so a failure
	// leaves the previous ruleset whole. Ops run in the order given. apply
	// calls it once per table, so one refused table does not hold back the
	// others.
	NFTApply(ops []model.NftOp) error

	// ConfigureWireGuard applies a patch in one call. Peers are changed
	// one by one (add, remove, update); it never replaces the peer list, so
	// untouched peers keep their sessions.
	ConfigureWireGuard(name string, cfg *WireGuardConfig) error
	// StartUserspaceWireGuard runs wireguard-go for name inside the kernel's
	// network namespace and returns once its device and control socket
	// exist; ErrUnsupported when no wireguard-go may run.
	StartUserspaceWireGuard(name string) error
}

// ErrNotFound is returned (wrapped) when a named link does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnsupported is returned (wrapped) when the kernel lacks a feature
// (a link kind whose module is not available, FoU, WireGuard where neither
// the module nor wireguard-go is available...).
var ErrUnsupported = errors.New("not supported by this kernel")

// ErrUnmarked is returned (wrapped) when a link was created but its
// ownership marker could not be written: the kernel ignores the alias in a
// create request, so the marker takes a second write. The link is ours;
// the next pass writes the marker (engine: Ledger.PendingLinks).
var ErrUnmarked = errors.New("created, but its ownership marker was not written")

// NFTElemSnapshot is the element cache at one ruleset generation: the
// elements of the sets read or written at Gen, sorted by key. A one-shot
// command keeps it in the state directory (package nftcache), so that the
// next run, if nothing committed since, does not dump 100k elements again.
type NFTElemSnapshot struct {
	Gen  uint32
	Sets []NFTCachedSet
}

// NFTCachedSet is one set's elements in an NFTElemSnapshot.
type NFTCachedSet struct {
	Table model.NftTableKey
	Set   string
	Elems []model.NftElem
}
