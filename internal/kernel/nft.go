package kernel

import "github.com/netreconcile/netreconcile/internal/model"

// NFTables is the narrow interface to nftables: list tables, read one table
// whole, and apply a list of changes as one atomic batch.
//
// Contract: NFTApply sends every op in one netlink batch (one nftables
// transaction); the kernel commits all of them or none, so a failure leaves
// the previous ruleset whole. Ops run in the order given. apply calls it
// once per table, so one refused table does not hold back the others.
type NFTables interface {
	// NFTTables lists the tables of every family.
	NFTTables() ([]model.NftTableKey, error)
	// NFTTable reads a table with its sets, elements, chains and rules;
	// nil when it does not exist.
	NFTTable(k model.NftTableKey) (*model.NftTable, error)
	// NFTTableHandle returns the kernel's handle of a table (0 when it
	// does not exist): a per-namespace counter, new for every table
	// created, so it tells a table from one deleted and made again.
	NFTTableHandle(k model.NftTableKey) (uint64, error)
	NFTApply(ops []model.NftOp) error
}
