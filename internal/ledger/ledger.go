// Package ledger records ownership of kernel objects that cannot carry an
// owner mark themselves, so that a restarted netreconcile prunes what it
// made and nothing else: FoU ports, nftables tables (with the kernel's handle
// of each, which tells a table remade by someone else under the same name),
// the links a pass was creating (the kernel takes no owner marker in a
// create request), and the sysctls netreconcile set, with the value each had
// before (restored when the key leaves the file). Routes, rules and links carry their mark in the kernel;
// the ledger records which routing tables hold routes of ours, so that a
// read walks those tables only (RouteTables), and which addresses a pass
// added as static ones (StaticAddrs), which the kernel does not tell from
// those a pool handed out.
//
// The ledger is small and rewritten whole: temporary file, fsync, rename,
// fsync of the directory, so a crash leaves either the old or the new file.
// Every file is opened relative to the state directory's descriptor and never
// through a symlink (package statedir).
package ledger

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

const formatVersion = 1

// FileName is the ledger's file in a namespace's state directory.
const FileName = "ledger.json"

// maxSize bounds what Open reads: a ledger lists a few tables and ports; a
// file larger than this is not one.
const maxSize = 16 << 20

// Ledger is the ownership record of one network namespace.
type Ledger struct {
	dir *statedir.Dir
	// cookie is the namespace's netns cookie (see statedir.Netns): the
	// records belong to that namespace and no other.
	cookie uint64
	// ReadOnly ledgers are never written: diff, show and validate write
	// nothing, even when they notice that a recorded object vanished.
	ReadOnly bool
	// Discarded says Open dropped the records of a namespace that no longer
	// exists (same name, another cookie): the caller logs it.
	Discarded bool
	Fou       map[model.FouKey]bool
	// NFTables lists the nftables tables netreconcile created or adopted.
	// Tables cannot carry an owner mark (google/nftables v0.3.0 has no
	// table user data, and NFTA_TABLE_USERDATA needs kernel 5.13), and a
	// name prefix would constrain users' names, so ownership is recorded
	// here: a table that leaves the file is deleted only if listed.
	NFTables map[model.NftTableKey]bool
	// NFTHandles holds the kernel's handle of each table in NFTables (0 or
	// missing: not yet known, as in a ledger written before handles were
	// recorded). The handle is a per-namespace counter: a table deleted
	// and made again by someone else under the same name has another one,
	// and is not ours.
	NFTHandles map[model.NftTableKey]uint64
	// PendingLinks are links a pass was creating: the kernel ignores the
	// owner marker (IFLA_IFALIAS) in a create request, so a link exists
	// unmarked between its creation and the next write. A crash in between
	// would leave a link that looks foreign forever; recorded here first,
	// the next pass marks it (it is ours: a create is planned only for a
	// name the kernel does not hold).
	PendingLinks map[string]bool
	// Sysctls are the kernel parameters netreconcile wrote, each with the
	// value it found before its first write: a parameter always has a
	// value, so owning one means owing the old one back. When the key
	// leaves the file, that value is written again and the record
	// dropped; a key never written is never recorded, nor touched.
	Sysctls map[string]string
	// RouteTables are the routing tables that hold routes of ours, by
	// route protocol. The routes carry their owner mark (the protocol),
	// but the kernel has no index by protocol: a dump of every table
	// walks every route of every table, a full Internet table's million
	// included, to send ours. With the tables of ours known, a read
	// dumps those and the file's only. A table is recorded before the
	// first write of a route of ours into it (Engine.Apply), and dropped
	// when a read of it finds none. The entry {protocol, 0} says that the
	// record is complete for that protocol: a read of every table (a
	// sweep) set it; without it, the next read sweeps.
	RouteTables map[RouteTable]bool
	// StaticAddrs are addresses a pass added as static addresses of the
	// file (not from a pool), and that no pass has since deleted or made
	// a candidate for a pool's allocation (a pass in which their link
	// takes from a pool without declaring them is one: it drops them
	// before it allocates, Engine.PlanDesired). The addresses carry no
	// mark of their own that tells a static address from one a pool
	// handed out under the same key: a pool's registry missing while the
	// kernel shows such an address on a link that now takes from it is
	// no trace of a lost registry (engine.lostRegistries).
	StaticAddrs map[model.AddressKey]bool

	// synced is the records as the file held them at the last load or
	// successful save: what Reload tells this process's unsaved changes
	// from another writer's by.
	synced records
	// touched are the records (recKey) this process set, dropped or
	// relied on since then: Save gives them the file's next sequence
	// number, so that another writer's Reload sees them changed even when
	// they hold what they held before (dropped and recorded again in one
	// pass, or a sysctl's record that a write relied on).
	touched map[string]bool
	// discardedCookie is the cookie of the records Open discarded.
	discardedCookie uint64
}

// RouteTable is a routing table holding routes of protocol Protocol; table
// 0 (RT_TABLE_UNSPEC, no table) marks the record complete.
type RouteTable struct{ Protocol, Table int }

// ErrNamespaceReused: the state directory's ledger belongs to another
// namespace of the same name than the one this process writes.
var ErrNamespaceReused = errors.New("namespace name reused")

// records is a copy of a ledger's records. A table and its handle are one
// record (nft: the tables listed, each with its handle, 0 when not known):
// merged apart, a table one writer dropped and the other made again could
// end up unlisted with a handle.
type records struct {
	fou     map[model.FouKey]bool
	nft     map[model.NftTableKey]uint64
	pending map[string]bool
	sysctls map[string]string
	routes  map[RouteTable]bool
	static  map[model.AddressKey]bool
	// seqs is each record's sequence number in the file (recKey): the
	// file's counter when a writer last saved it touched. seq is the
	// counter.
	seqs map[string]uint64
	seq  uint64
}

func (l *Ledger) records() records {
	nft := make(map[model.NftTableKey]uint64, len(l.NFTables))
	for k := range l.NFTables {
		nft[k] = l.NFTHandles[k]
	}
	return records{maps.Clone(l.Fou), nft, maps.Clone(l.PendingLinks), maps.Clone(l.Sysctls), maps.Clone(l.RouteTables), maps.Clone(l.StaticAddrs), maps.Clone(l.synced.seqs), l.synced.seq}
}

// recKey names a record across kinds, for sequence numbers and touches.
func fouKey(k model.FouKey) string        { return fmt.Sprintf("fou %d %v", k.Port, k.IPv6) }
func nftKey(k model.NftTableKey) string   { return "nft " + k.Family + " " + k.Name }
func pendingKey(name string) string       { return "link " + name }
func sysctlKey(key string) string         { return "sysctl " + key }
func routesKey(t RouteTable) string       { return fmt.Sprintf("routes %d %d", t.Protocol, t.Table) }
func staticKey(k model.AddressKey) string { return "addr " + k.Link + " " + k.Prefix.String() }
func (l *Ledger) touch(recKey string)     { l.touched[recKey] = true }

// fileFormat is the ledger on disk. New fields are added with omitempty, so
// older records read unchanged; the version changes only when a reader that
// ignores a new field would get ownership wrong.
type fileFormat struct {
	Version     int       `json:"version"`
	NetnsCookie uint64    `json:"netns_cookie,omitempty"`
	FouPorts    []fouJSON `json:"fou_ports"`
	NFTables    []nftJSON `json:"nftables,omitempty"`
	// PendingLinks: see Ledger.PendingLinks.
	PendingLinks []string `json:"links_pending,omitempty"`
	// Sysctls: see Ledger.Sysctls.
	Sysctls []sysctlJSON `json:"sysctls,omitempty"`
	// RouteTables: see Ledger.RouteTables; an entry per protocol. A reader that ignores it (an older
	// netreconcile) reads every table, and its save leaves it out: the
	// next read sweeps.
	RouteTables []routeTablesJSON `json:"route_tables,omitempty"`
	// StaticAddrs: see Ledger.StaticAddrs. A reader that ignores it (an
	// older netreconcile) leaves it out of its save: a missing registry
	// is then judged by the kernel alone, as before.
	StaticAddrs []staticAddrJSON `json:"static_addresses,omitempty"`
	// Seq counts the saves that touched a record; Seqs holds each
	// record's last (Ledger.touched). Older readers ignore both.
	Seq  uint64            `json:"seq,omitempty"`
	Seqs map[string]uint64 `json:"seqs,omitempty"`
}

type sysctlJSON struct {
	Key      string `json:"key"`
	Original string `json:"original"`
}

type staticAddrJSON struct {
	Link   string `json:"link"`
	Prefix string `json:"prefix"`
}

type routeTablesJSON struct {
	Protocol int `json:"protocol"`
	// Complete: a sweep found these tables, and every write since
	// recorded its own (Ledger.RouteTablesKnown).
	Complete bool  `json:"complete,omitempty"`
	Tables   []int `json:"tables"`
}

type nftJSON struct {
	Family string `json:"family"`
	Name   string `json:"name"`
	Handle uint64 `json:"handle,omitempty"`
}

type fouJSON struct {
	Port uint16 `json:"port"`
	IPv6 bool   `json:"ipv6"`
}

func newLedger(dir *statedir.Dir, cookie uint64) *Ledger {
	return &Ledger{dir: dir, cookie: cookie, Fou: map[model.FouKey]bool{}, NFTables: map[model.NftTableKey]bool{}, PendingLinks: map[string]bool{}, NFTHandles: map[model.NftTableKey]uint64{}, Sysctls: map[string]string{}, RouteTables: map[RouteTable]bool{}, StaticAddrs: map[model.AddressKey]bool{}, touched: map[string]bool{}}
}

// OpenIn loads the ledger of the namespace whose state directory is dir (nil:
// in memory only) and whose netns cookie is cookie (0: not checked). A
// missing file is an empty ledger. An unreadable or corrupt one is an error
// naming the file and quoting none of its content (it may be a symlink's
// target or any file put there): pruning with a lost ledger would leave
// objects behind, so nothing is guessed.
//
// A ledger recorded for another cookie belongs to a namespace that is gone
// (deleted and made again under the same name): its objects died with it,
// so the records are dropped (Discarded) rather than taken for this
// namespace's objects of the same names.
func OpenIn(dir *statedir.Dir, cookie uint64) (*Ledger, error) {
	l := newLedger(dir, cookie)
	if dir == nil {
		return l, nil
	}
	path := filepath.Join(dir.Path(), FileName)
	data, err := dir.ReadFile(FileName, maxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ownership ledger: %w", err)
	}
	f, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("ownership ledger %s %w; nothing of it is used: move it away after checking that no object it lists is left in the kernel", path, err)
	}
	if cookie != 0 && f.NetnsCookie != 0 && f.NetnsCookie != cookie {
		l.Discarded, l.discardedCookie = true, f.NetnsCookie
		return l, nil
	}
	l.load(f)
	return l, nil
}

// decode reads the file's content and checks every record (check.go):
// an error for anything else, never a ledger used in part. The error
// quotes nothing of the content.
func decode(data []byte) (*fileFormat, error) {
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		// Never %w the JSON error: it quotes the offending byte.
		return nil, errors.New("is corrupt (not the JSON this netreconcile writes)")
	}
	if f.Version != formatVersion {
		return nil, fmt.Errorf("has version %d; this netreconcile reads %d", f.Version, formatVersion)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("holds what netreconcile does not write: %w", err)
	}
	return &f, nil
}

// load takes the records of a decoded file.
func (l *Ledger) load(f *fileFormat) {
	for _, p := range f.FouPorts {
		l.Fou[model.FouKey{Port: p.Port, IPv6: p.IPv6}] = true
	}
	for _, t := range f.NFTables {
		k := model.NftTableKey{Family: t.Family, Name: t.Name}
		l.NFTables[k] = true
		if t.Handle != 0 {
			l.NFTHandles[k] = t.Handle
		}
	}
	for _, n := range f.PendingLinks {
		l.PendingLinks[n] = true
	}
	for _, s := range f.Sysctls {
		l.Sysctls[s.Key] = s.Original
	}
	for _, r := range f.RouteTables {
		if r.Complete {
			l.RouteTables[RouteTable{r.Protocol, 0}] = true
		}
		for _, t := range r.Tables {
			l.RouteTables[RouteTable{r.Protocol, t}] = true
		}
	}
	for _, a := range f.StaticAddrs {
		// check proved it parses.
		l.StaticAddrs[model.AddressKey{Link: a.Link, Prefix: netip.MustParsePrefix(a.Prefix)}] = true
	}
	l.synced = l.records()
	l.synced.seqs, l.synced.seq = f.Seqs, f.Seq
}

// Reload reads the file again: another writer may have changed it since
// Open. The caller holds the namespace's lock.
//
// Every record of the file is taken: one left behind (the handles were) is
// the other writer's change undone, or taken for what it replaced (a table
// another apply made again has a new handle, which a stale one here would
// take for someone else's, and disown). Changes this process made that a
// failed save did not write are kept on top, record by record: dropped,
// they would leave what it created unowned for ever; written back whole,
// the stale records would undo the other writer's. Where both changed a
// record, the file's change wins: the writers take turns under the lock,
// so it is the later one (the other writer pruned a table whose record
// this process could not save, and made it again).
func (l *Ledger) Reload() error {
	if l.dir == nil {
		return nil
	}
	n, err := OpenIn(l.dir, l.cookie)
	if err != nil {
		return err
	}
	// The file belongs to another namespace than this process's, and not
	// to the gone one Open discarded: the namespace's name was given to a
	// new one (ip netns del, add) while this process holds the old. Merged
	// and saved, each would wipe the other's records.
	if n.Discarded && n.discardedCookie != l.discardedCookie {
		return fmt.Errorf("%w: the ledger in %s now records namespace %d, this process's is %d; restart it for the new namespace", ErrNamespaceReused, l.dir.Path(), n.discardedCookie, l.cookie)
	}
	ours, base, theirs := l.records(), l.synced, n.records()
	theirs.seqs, theirs.seq = n.synced.seqs, n.synced.seq
	m := merger{base: base.seqs, theirs: theirs.seqs, touched: l.touched}
	l.Fou = merge(&m, ours.fou, base.fou, theirs.fou, fouKey)
	nft := merge(&m, ours.nft, base.nft, theirs.nft, nftKey)
	l.NFTables, l.NFTHandles = make(map[model.NftTableKey]bool, len(nft)), map[model.NftTableKey]uint64{}
	for k, h := range nft {
		l.NFTables[k] = true
		if h != 0 {
			l.NFTHandles[k] = h
		}
	}
	l.PendingLinks = merge(&m, ours.pending, base.pending, theirs.pending, pendingKey)
	l.Sysctls = merge(&m, ours.sysctls, base.sysctls, theirs.sysctls, sysctlKey)
	l.RouteTables = merge(&m, ours.routes, base.routes, theirs.routes, routesKey)
	l.StaticAddrs = merge(&m, ours.static, base.static, theirs.static, staticKey)
	// A protocol's tables without its completeness mark (another writer
	// dropped the mark while this process added a table) are no complete
	// record: they stay as hints, and the next read sweeps.
	l.Discarded = l.Discarded || n.Discarded
	l.synced = theirs
	return nil
}

// merger holds what merge compares besides the records' values: their
// sequence numbers in the file as last synced (base) and now (theirs),
// and the records this process touched since.
type merger struct {
	base, theirs map[string]uint64
	touched      map[string]bool
}

// merge is theirs (the file) with the records ours changed since base
// (the file when ours last matched it), except where theirs changed too:
// the file's change is the later one. A record changed when it was added,
// removed or given another value, or, in the file, saved touched by a
// writer (its sequence number moved: dropped and recorded again, or
// relied on); in ours, when touched. A touched record whose file change
// wins is no longer touched.
func merge[K comparable, V comparable](m *merger, ours, base, theirs map[K]V, rk func(K) string) map[K]V {
	theirsChanged := func(k K) bool {
		v, in := theirs[k]
		bv, inBase := base[k]
		return in != inBase || v != bv || m.theirs[rk(k)] != m.base[rk(k)]
	}
	oursChanged := func(k K) bool {
		v, in := ours[k]
		bv, inBase := base[k]
		return in != inBase || v != bv || m.touched[rk(k)]
	}
	out := maps.Clone(theirs)
	if out == nil {
		out = map[K]V{}
	}
	apply := func(k K) {
		switch {
		case theirsChanged(k):
			delete(m.touched, rk(k))
		case oursChanged(k):
			if v, in := ours[k]; in {
				out[k] = v
			} else {
				delete(out, k)
			}
		}
	}
	for k := range ours {
		apply(k)
	}
	for k := range base {
		if _, in := ours[k]; !in {
			apply(k)
		}
	}
	return out
}

// SetFou records a FoU port as ours or not.
func (l *Ledger) SetFou(k model.FouKey, owned bool) {
	l.touch(fouKey(k))
	if owned {
		l.Fou[k] = true
	} else {
		delete(l.Fou, k)
	}
}

// SetNftTable records an nftables table as ours or not.
func (l *Ledger) SetNftTable(k model.NftTableKey, owned bool) {
	l.touch(nftKey(k))
	if owned {
		l.NFTables[k] = true
	} else {
		delete(l.NFTables, k)
		delete(l.NFTHandles, k)
	}
}

// SetNftTableHandle records the kernel's handle of a table the ledger lists.
func (l *Ledger) SetNftTableHandle(k model.NftTableKey, handle uint64) {
	if l.NFTables[k] && l.NFTHandles[k] != handle {
		l.touch(nftKey(k))
		l.NFTHandles[k] = handle
	}
}

// NftTableIsOurs reports whether the kernel's table k with handle is the
// one the ledger lists. A table listed without a handle is taken as ours
// (its handle is recorded on first sight); one with another handle was
// deleted and made again by someone else.
func (l *Ledger) NftTableIsOurs(k model.NftTableKey, handle uint64) bool {
	if !l.NFTables[k] {
		return false
	}
	h, ok := l.NFTHandles[k]
	return !ok || h == 0 || h == handle
}

// SetSysctl records the value key had before netreconcile first wrote it;
// a key already recorded keeps its first value.
func (l *Ledger) SetSysctl(key, original string) {
	if _, ok := l.Sysctls[key]; !ok {
		l.RecordSysctl(key, original)
	}
}

// RecordSysctl records original as the value key had before netreconcile
// wrote it, over any record.
func (l *Ledger) RecordSysctl(key, original string) {
	l.touch(sysctlKey(key))
	l.Sysctls[key] = original
}

// TouchSysctl says a write of key relies on its record (the value owed
// back): another writer that dropped the record meanwhile, with a save
// that failed, does not drop it on Reload.
func (l *Ledger) TouchSysctl(key string) {
	if _, ok := l.Sysctls[key]; ok {
		l.touch(sysctlKey(key))
	}
}

// ForgetSysctl drops the record of key (its old value was written back,
// or the key is gone with its link).
func (l *Ledger) ForgetSysctl(key string) {
	l.touch(sysctlKey(key))
	delete(l.Sysctls, key)
}

// SetPendingLink records a link a pass is creating, or drops the record.
func (l *Ledger) SetPendingLink(name string, pending bool) {
	l.touch(pendingKey(name))
	if pending {
		l.PendingLinks[name] = true
	} else {
		delete(l.PendingLinks, name)
	}
}

// RouteTablesKnown reports whether the record of the tables holding routes
// of protocol is complete: a read may then walk only those tables (and the
// file's).
func (l *Ledger) RouteTablesKnown(protocol int) bool {
	return l.RouteTables[RouteTable{protocol, 0}]
}

// RouteTablesOf lists the tables recorded as holding routes of protocol, in
// order.
func (l *Ledger) RouteTablesOf(protocol int) []int {
	var out []int
	for t := range l.RouteTables {
		if t.Protocol == protocol && t.Table != 0 {
			out = append(out, t.Table)
		}
	}
	sort.Ints(out)
	return out
}

// SetRouteTable records whether table holds routes of protocol, and
// reports whether that changed the record.
func (l *Ledger) SetRouteTable(protocol, table int, holds bool) bool {
	k := RouteTable{protocol, table}
	if l.RouteTables[k] == holds {
		return false
	}
	l.touch(routesKey(k))
	if holds {
		l.RouteTables[k] = true
	} else {
		delete(l.RouteTables, k)
	}
	return true
}

// SetRouteTablesSwept records what a read of every table found: the tables
// holding routes of protocol, and that the record is now complete. It
// reports whether that changed the record.
func (l *Ledger) SetRouteTablesSwept(protocol int, tables map[int]bool) bool {
	changed := false
	for k := range l.RouteTables {
		if k.Protocol == protocol && k.Table != 0 && !tables[k.Table] {
			changed = l.SetRouteTable(protocol, k.Table, false) || changed
		}
	}
	for t := range tables {
		if t != 0 {
			changed = l.SetRouteTable(protocol, t, true) || changed
		}
	}
	return l.SetRouteTable(protocol, 0, true) || changed
}

// SetStaticAddr records an address a pass added as the file's static
// address (Ledger.StaticAddrs), or drops the record; it reports whether
// that changed the record. Past maxRecords, an address is not recorded: the
// file would be refused on load, and an address not recorded costs no more
// than a lost registry's refusal that need not be.
func (l *Ledger) SetStaticAddr(k model.AddressKey, static bool) bool {
	if l.StaticAddrs[k] == static || static && len(l.StaticAddrs) >= maxRecords {
		return false
	}
	l.touch(staticKey(k))
	if static {
		l.StaticAddrs[k] = true
	} else {
		delete(l.StaticAddrs, k)
	}
	return true
}

// Touched reports whether records were touched since the last save.
func (l *Ledger) Touched() bool { return len(l.touched) > 0 }

// Save writes the ledger durably (mode 0600: what a host's network holds is
// no other user's business). A ledger kept in memory or opened ReadOnly is
// not written.
func (l *Ledger) Save() error {
	if l.dir == nil || l.ReadOnly {
		return nil
	}
	f, data, err := l.encode()
	if err != nil {
		return err
	}
	if err := l.dir.WriteFile(FileName, data, 0o600); err != nil {
		return err
	}
	l.synced = l.records()
	l.synced.seqs, l.synced.seq = f.Seqs, f.Seq
	clear(l.touched)
	return nil
}

// encode renders the records as Save writes them.
func (l *Ledger) encode() (*fileFormat, []byte, error) {
	f := fileFormat{Version: formatVersion, NetnsCookie: l.cookie, FouPorts: []fouJSON{}}
	for k := range l.Fou {
		f.FouPorts = append(f.FouPorts, fouJSON{k.Port, k.IPv6})
	}
	sort.Slice(f.FouPorts, func(i, j int) bool {
		a, b := f.FouPorts[i], f.FouPorts[j]
		if a.IPv6 != b.IPv6 {
			return !a.IPv6
		}
		return a.Port < b.Port
	})
	for k := range l.NFTables {
		f.NFTables = append(f.NFTables, nftJSON{k.Family, k.Name, l.NFTHandles[k]})
	}
	sort.Slice(f.NFTables, func(i, j int) bool {
		a, b := f.NFTables[i], f.NFTables[j]
		return model.NftTableKey{Family: a.Family, Name: a.Name}.Less(model.NftTableKey{Family: b.Family, Name: b.Name})
	})
	for n := range l.PendingLinks {
		f.PendingLinks = append(f.PendingLinks, n)
	}
	sort.Strings(f.PendingLinks)
	for k, v := range l.Sysctls {
		f.Sysctls = append(f.Sysctls, sysctlJSON{k, v})
	}
	sort.Slice(f.Sysctls, func(i, j int) bool { return f.Sysctls[i].Key < f.Sysctls[j].Key })
	byProto := map[int]*routeTablesJSON{}
	for k := range l.RouteTables {
		r := byProto[k.Protocol]
		if r == nil {
			r = &routeTablesJSON{Protocol: k.Protocol, Tables: []int{}}
			byProto[k.Protocol] = r
		}
		if k.Table == 0 {
			r.Complete = true
		} else {
			r.Tables = append(r.Tables, k.Table)
		}
	}
	for _, r := range byProto {
		sort.Ints(r.Tables)
		f.RouteTables = append(f.RouteTables, *r)
	}
	sort.Slice(f.RouteTables, func(i, j int) bool { return f.RouteTables[i].Protocol < f.RouteTables[j].Protocol })
	statics := slices.SortedFunc(maps.Keys(l.StaticAddrs), func(a, b model.AddressKey) int {
		return cmp.Or(cmp.Compare(a.Link, b.Link), a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	for _, k := range statics {
		f.StaticAddrs = append(f.StaticAddrs, staticAddrJSON{k.Link, k.Prefix.String()})
	}
	// A record touched, or changed by a direct write of the maps, gets the
	// next sequence number; the others keep theirs.
	now, synced := l.records(), l.synced
	f.Seq = synced.seq
	if len(l.touched) > 0 || !recordsEqual(now, synced) {
		f.Seq++
	}
	f.Seqs = map[string]uint64{}
	keep := func(rk string, differs bool) {
		if differs || l.touched[rk] {
			f.Seqs[rk] = f.Seq
		} else if v := synced.seqs[rk]; v != 0 {
			f.Seqs[rk] = v
		}
	}
	for k := range now.fou {
		keep(fouKey(k), !synced.fou[k])
	}
	for k, h := range now.nft {
		sh, ok := synced.nft[k]
		keep(nftKey(k), !ok || sh != h)
	}
	for k := range now.pending {
		keep(pendingKey(k), !synced.pending[k])
	}
	for k, v := range now.sysctls {
		sv, ok := synced.sysctls[k]
		keep(sysctlKey(k), !ok || sv != v)
	}
	for k := range now.routes {
		keep(routesKey(k), !synced.routes[k])
	}
	for k := range now.static {
		keep(staticKey(k), !synced.static[k])
	}
	// A record dropped leaves its number behind (a tombstone): without it,
	// a record one writer added and another dropped since would look
	// unchanged to a third, which would bring its own stale copy back.
	// Tombstones older than tombstoneSaves saves are let go.
	for rk := range l.touched {
		if _, ok := f.Seqs[rk]; !ok {
			f.Seqs[rk] = f.Seq
		}
	}
	for rk, v := range synced.seqs {
		if _, ok := f.Seqs[rk]; !ok && v+tombstoneSaves > f.Seq {
			f.Seqs[rk] = v
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return &f, append(data, '\n'), nil
}

// tombstoneSaves is how many saves a dropped record's number is kept for:
// a writer whose save failed that many times in a row while others saved
// is past caring.
const tombstoneSaves = 10000

// recordsEqual compares the records' values (not their sequence numbers).
func recordsEqual(a, b records) bool {
	return maps.Equal(a.fou, b.fou) && maps.Equal(a.nft, b.nft) && maps.Equal(a.pending, b.pending) && maps.Equal(a.sysctls, b.sysctls) && maps.Equal(a.routes, b.routes) && maps.Equal(a.static, b.static)
}
