package engine

import (
	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// SetReread tells the next plan which kinds of kernel state, and which
// route tables, may have changed since the previous plan read them (the
// daemon tracks it from notifications): the next plan reads those
// again and takes the rest from the previous read. Without a call, or after one, a plan reads
// everything: only the daemon, which knows what changed, reuses anything.
//
// Whoever calls it vouches for the kinds it leaves out. The engine adds the
// kinds and tables its own Apply wrote since the last plan (Written): those
// are read again whatever the call says.
func (e *Engine) SetReread(f actual.Fresh) { e.reread, e.rereadSet = f, true }

// reuse returns what this plan may take from the previous read and what it
// reads again, and forgets the request: only one plan uses it. Everything is
// read again when there is no previous read, or when its records could
// have changed it (a table or port the ledger no longer lists, or one it
// lists now that it did not).
func (e *Engine) reuse(desired *model.State) (*model.State, actual.Fresh) {
	f, set := e.reread.Add(e.written), e.rereadSet
	e.reread, e.rereadSet, e.written = actual.Fresh{}, false, actual.Fresh{}
	if !set || e.prev == nil || e.prev.Protocol != desired.Protocol || f.Kinds&actual.AllKinds == actual.AllKinds && f.RouteTables == nil {
		return nil, actual.All
	}
	if f.Kinds&actual.NFT == 0 && !e.sameNftTables(desired) {
		f.Kinds |= actual.NFT
	}
	return e.prev, f
}

// sameNftTables reports whether the previous read covered exactly the
// tables this one would: the ledger's and desired's.
func (e *Engine) sameNftTables(desired *model.State) bool {
	return e.prevNft != nil && mapsEqual(nftTableSet(e.Ledger.NFTables, desired), e.prevNft)
}

// nftTableSet is the tables a read covers: those the ledger owns and those
// desired declares.
func nftTableSet(owned map[model.NftTableKey]bool, desired *model.State) map[model.NftTableKey]bool {
	out := map[model.NftTableKey]bool{}
	for k, ok := range owned {
		if ok {
			out[k] = true
		}
	}
	for _, t := range desired.NFTables {
		out[t.Key()] = true
	}
	return out
}

func mapsEqual(a, b map[model.NftTableKey]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// RoutesRead is what the last plan read of the routes: the tables it read,
// and those it patched from the notifications SetReread passed on.
func (e *Engine) RoutesRead() actual.RoutesRead { return e.routesRead }

// Written is what a plan's operations change in the kernel, the kernel's
// side effects included: kinds, and the tables of the routes it writes. A
// kind it does not know reads everything.
func Written(plan *diff.Plan) actual.Fresh { return written(plan, false) }

// WrittenBesidesRoutes is Written without the route writes: what the
// notifications of those writes do not tell (the side effects of the
// others).
func WrittenBesidesRoutes(plan *diff.Plan) actual.Fresh { return written(plan, true) }

// written is Written, without the route writes when echoed.
func written(plan *diff.Plan, echoed bool) actual.Fresh {
	var k actual.Kinds
	var tables map[int]bool
	everyTable := false
	for i := range plan.Ops {
		op := &plan.Ops[i]
		switch op.Kind {
		case diff.KindRoute:
			if echoed && op.Route != nil {
				continue
			}
			k |= actual.Routes
			if op.Route == nil {
				everyTable = true
				continue
			}
			if tables == nil {
				tables = map[int]bool{}
			}
			tables[int(op.Route.Table)] = true
		case diff.KindRule:
			k |= actual.Rules
		case diff.KindWGPeer:
			k |= actual.WireGuard
		case diff.KindLink, diff.KindAddress, diff.KindWireGuard:
			// A link down or an address gone takes IPv4 routes with
			// it, without a notification; a link, its netdev chains.
			k |= actual.AllKinds
			everyTable = true
		case diff.KindNftTable, diff.KindNftSet, diff.KindNftElem, diff.KindNftChain, diff.KindNftRule, diff.KindNftObj:
			k |= actual.NFT
		case diff.KindSysctl:
			// Sysctls are read on every plan, but a write may change
			// other kinds without a word: disable_ipv6 takes a link's
			// IPv6 addresses and their routes. Writes are rare (a
			// change of the file, drift): read everything after one.
			k |= actual.AllKinds
			everyTable = true
		case diff.KindFou:
			// FoU ports are read on every plan.
		default:
			k |= actual.AllKinds
			everyTable = true
		}
	}
	if everyTable || k&actual.Routes == 0 {
		tables = nil
	}
	return actual.Fresh{Kinds: k, RouteTables: tables}
}
