// Package actual reads the kernel into a model.State: the same model the
// desired stage produces, with ownership marked, so that the diff can
// compare the two directly.
//
// actual.go reads in order (links first: the others hang on them); each
// kind has its file: link.go, address.go, route.go, rule.go, fou.go, nft.go,
// wireguard.go and sysctl.go.
package actual

import (
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Options tune a read.
type Options struct {
	// Protocol is our route and rule protocol.
	Protocol int
	// AllRoutes also reads foreign routes (for show --all); a reconcile reads
	// only ours, which the kernel filters for us.
	AllRoutes bool
	// RouteTables are the tables a read of our routes walks; nil walks
	// every table (a sweep). The kernel filters a dump by protocol but
	// walks every route of a table to do it: beside a full Internet
	// table, reading the tables that hold ours (the ledger's record, and
	// the file's) costs what ours cost. AllRoutes reads every table.
	RouteTables []int
	// OwnedFou lists the FoU ports netreconcile opened (from its ledger).
	OwnedFou map[model.FouKey]bool
	// SkipFou leaves the FoU ports unread: a plan for a file that declares
	// none, with none owned, has nothing to do with them. Listing them
	// takes a generic netlink family lookup on a socket of its own, then
	// the dump: two sockets and four messages of every pass.
	SkipFou bool
	// Sysctls are the parameters to read (SysctlKeys), and OwnedSysctls
	// those the ledger owns, with the value each had before netreconcile
	// first wrote it.
	Sysctls      []string
	OwnedSysctls map[string]string
}

// Read lists the kernel's links, addresses, routes, rules, FoU ports and
// the sysctls of opt.Sysctls.
func Read(k kernel.Reader, opt Options) (*model.State, error) {
	st := model.NewState()
	st.Protocol = opt.Protocol
	if err := readLinks(k, st); err != nil {
		return nil, err
	}
	if err := readRemotePeers(k, st); err != nil {
		return nil, err
	}
	if err := readWireGuard(k, st); err != nil {
		return nil, err
	}
	if err := readAddresses(k, st); err != nil {
		return nil, err
	}
	if _, err := readRoutes(k, st, opt); err != nil {
		return nil, err
	}
	if err := readRules(k, st); err != nil {
		return nil, err
	}
	if err := readFou(k, st, opt); err != nil {
		return nil, err
	}
	if err := readSysctls(k, st, opt.Sysctls, opt.OwnedSysctls); err != nil {
		return nil, err
	}
	return st, nil
}
