// Package kernel is netreconcile's narrow interface to the kernel's routing
// netlink: only the calls the reconciler makes, in model types, so that the
// diff and apply logic can run against the in-memory Fake in unit tests.
//
// The Fake is for logic tests only; every feature is proven against a real
// kernel (a network namespace here, a qemu guest for what this kernel lacks).
package kernel

import (
	"errors"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Reader lists kernel objects. Each list is consistent: an interrupted dump
// is retried, never returned.
type Reader interface {
	// Links lists every link; Owned is set for links carrying the marker.
	Links() ([]*model.Link, error)
	// Addresses lists every address except IPv6 link-local ones the kernel
	// generates itself.
	Addresses() ([]model.Address, error)
	// Routes lists routes of every table; protocol 0 means all protocols,
	// otherwise only routes of that protocol (filtered in the kernel where it can).
	Routes(protocol int) ([]model.Route, error)
	// TableRoutes lists the routes of one table, of every protocol: to
	// find the foreign routes in the way of the file's.
	TableRoutes(table int) ([]model.Route, error)
	// Rules lists the rules of both families.
	Rules() ([]model.Rule, error)
	// FouPorts lists the FoU receive ports of both families.
	FouPorts() ([]model.FouPort, error)
}

// PeerReader reads the peer of a veth end that is in another namespace.
type PeerReader interface {
	// VethPeer finds the namespace that this one knows as netnsid nsid
	// among the names under /run/netns and lists its links; the peer is
	// the one with ifindex index there. A namespace it cannot find or
	// enter gives a RemotePeer that says so in Unreadable, not an error.
	VethPeer(nsid, index int) (*model.RemotePeer, error)
}

// Writer changes kernel objects. Names are link names; implementations
// resolve them to indexes. Every call is one kernel write.
type Writer interface {
	// AddLink creates a link with the ownership marker in its alias, down;
	// SetLinkUp brings it up once addresses and master are in place.
	AddLink(l *model.Link) error
	DeleteLink(name string) error
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

	// ReplaceAddress adds an address or changes its attributes in place.
	ReplaceAddress(a *model.Address) error
	DeleteAddress(a *model.Address) error

	// AddRoute adds a route stamped with protocol; it fails (EEXIST) when a
	// route with the same key exists, ours or not.
	AddRoute(r *model.Route, protocol int) error
	// ReplaceRoute adds a route or changes it in place (NLM_F_REPLACE on its
	// key), stamped with protocol.
	ReplaceRoute(r *model.Route, protocol int) error
	DeleteRoute(r *model.Route) error
	// WriteRoutes makes the writes in order, as the three calls above would,
	// without waiting for each answer: one error per write (nil for
	// success), in the same order. Each route is one kernel write.
	WriteRoutes(ws []RouteWrite, protocol int) []error

	AddRule(r *model.Rule, protocol int) error
	DeleteRule(r *model.Rule) error

	AddFou(f *model.FouPort) error
	DeleteFou(f *model.FouPort) error
}

// Interface is a kernel the reconciler reads and writes.
type Interface interface {
	Reader
	Writer
	// Writes counts the writes made so far through this Interface.
	Writes() uint64
	Close() error
}

// ErrNotFound is returned (wrapped) when a named link does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnsupported is returned (wrapped) when the kernel lacks a feature
// (a link kind whose module is not available, FoU...).
var ErrUnsupported = errors.New("not supported by this kernel")
