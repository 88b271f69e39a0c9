package ipam

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

var (
	// ErrUnknownPool: the pool is not in the configuration.
	ErrUnknownPool = errors.New("unknown pool")
	// ErrCorrupt: a registry file cannot be read as one; it is left as it is.
	ErrCorrupt = errors.New("corrupt ipam registry")
)

// Registry keeps the allocations of a set of pools in <stateDir>/ipam, one file per pool:
// <pool>.registry, with <pool>.lock beside it. A file per pool rather than one for all: processes
// working on different pools do not wait for each other, each write rewrites only its pool, and
// a damaged file stops only its pool.
//
// A change takes the pool's lock, reads the file, changes it in memory and writes it back
// durably (statedir's WriteFile: temporary file, fsync, rename, fsync of the directory) before
// it returns, so any number of Registries in any number of processes may work on the same
// directory at once, and what a call reports is never lost.
// Reads (List, HeldBlocks, Usage) take no lock: the file is only ever replaced by a rename, so
// a read sees one complete version.
type Registry struct {
	base  *statedir.Dir
	dir   string // base/ipam, for messages
	clock Clock
	pools []*poolDef

	mu    sync.Mutex
	cache map[string]cached // by pool
}

// Open validates the pools and prepares <stateDir>/ipam. It reads no registry file: Check
// does, and every operation does for its pool. A nil clock is the SystemClock.
func Open(stateDir string, pools []Pool, clock Clock) (*Registry, error) {
	base, err := statedir.Open(stateDir, true)
	if err != nil {
		return nil, err
	}
	r, err := OpenIn(base, pools, clock)
	if err != nil {
		base.Close()
		return nil, err
	}
	d, err := r.open(true)
	if err != nil {
		return nil, fmt.Errorf("create ipam state directory: %w", err)
	}
	d.Close()
	// The new directory entry must be durable too, or a power cut loses every registry.
	if err := base.Sync(); err != nil {
		return nil, fmt.Errorf("create ipam state directory: %w", err)
	}
	return r, nil
}

// OpenIn is Open on the opened, checked state directory base (nil: none, read only), which the caller keeps open
// while it uses the registry. It creates nothing: the first change makes ipam/, so that a
// read-only command (diff, show, list) writes nothing. Every registry and lock file is opened
// relative to ipam/'s descriptor and never through a symlink (package statedir): the state
// directory may belong to the service's user while root runs apply or a CNI plugin.
func OpenIn(base *statedir.Dir, pools []Pool, clock Clock) (*Registry, error) {
	defs, err := checkPools(pools)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = SystemClock{}
	}
	r := &Registry{base: base, clock: clock, pools: defs}
	if base != nil {
		r.dir = filepath.Join(base.Path(), "ipam")
	}
	return r, nil
}

// open opens ipam/, made first if create; without create a missing one is nil.
func (r *Registry) open(create bool) (*statedir.Dir, error) {
	if r.base == nil {
		// A read-only run on a host without a state directory: no registry yet.
		if create {
			return nil, errors.New("ipam: no state directory is open for writing")
		}
		return nil, nil
	}
	d, err := r.base.Sub("ipam", create)
	if !create && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return d, err
}

// Exists reports whether pool has a registry file; a pool never used has none.
func (r *Registry) Exists(pool string) (bool, error) {
	d, err := r.open(false)
	if d == nil || err != nil {
		return false, err
	}
	defer d.Close()
	return d.Exists(pool + ".registry")
}

// Pools returns the pool definitions the registry was opened with.
func (r *Registry) Pools() []Pool {
	out := make([]Pool, len(r.pools))
	for i, p := range r.pools {
		out[i] = p.Pool
	}
	return out
}

// Path returns the registry file of a pool.
func (r *Registry) Path(pool string) string { return filepath.Join(r.dir, pool+".registry") }

// Allocate returns the address held by owner on iface (iface may be empty) in pool, handing out
// a new one if it holds none. Asking again gives the same address.
func (r *Registry) Allocate(ctx context.Context, pool, owner, iface string) (Allocation, error) {
	var out Allocation
	err := r.change(ctx, "allocate", pool, owner, iface, func(p *poolDef, s *state, now time.Time) (bool, error) {
		if i := s.find(owner, iface); i >= 0 {
			out = s.allocs[i].Allocation
			return false, nil
		}
		var err error
		out, err = s.allocate(p, owner, iface, now)
		return err == nil, err
	})
	return out, err
}

// Release frees the address held by owner on iface in pool. It reports false, and no error, if
// there is none: releasing twice is fine. The address is handed out again only after the pool's
// reuse delay; a block left empty is given back at once.
func (r *Registry) Release(ctx context.Context, pool, owner, iface string) (Allocation, bool, error) {
	var out Allocation
	var ok bool
	err := r.change(ctx, "release", pool, owner, iface, func(p *poolDef, s *state, now time.Time) (bool, error) {
		i := s.find(owner, iface)
		if i < 0 {
			return false, nil
		}
		out, ok = s.release(i, now, p.ReuseDelay), true
		return true, nil
	})
	return out, ok, err
}

func (r *Registry) change(ctx context.Context, op, pool, owner, iface string, fn func(*poolDef, *state, time.Time) (bool, error)) error {
	err := checkOwner(owner, iface)
	var p *poolDef
	if err == nil {
		p, err = r.pool(pool)
	}
	if err == nil {
		err = r.update(ctx, p, func(s *state, now time.Time) (bool, error) { return fn(p, s, now) })
	}
	if err != nil {
		return fmt.Errorf("%s in pool %s for %s: %w", op, pool, Allocation{Owner: owner, Iface: iface}.describe(), err)
	}
	return nil
}

// List returns the allocations of pool, or of every pool if pool is empty, oldest first.
func (r *Registry) List(ctx context.Context, pool string) ([]Allocation, error) {
	var out []Allocation
	err := r.read(ctx, pool, func(_ *poolDef, s *state) {
		for _, a := range s.allocs {
			out = append(out, a.Allocation)
		}
	})
	return out, err
}

// HeldBlocks returns the blocks held in pool, or in every pool if pool is empty, by index: the
// routes to export. They are computed from the subnets the blocks were carved from, so they stay
// right while a conflicting definition is refused.
func (r *Registry) HeldBlocks(ctx context.Context, pool string) ([]Block, error) {
	var out []Block
	err := r.read(ctx, pool, func(_ *poolDef, s *state) { out = append(out, s.heldBlocks()...) })
	return out, err
}

// Usage counts what pool uses.
func (r *Registry) Usage(ctx context.Context, pool string) (Usage, error) {
	if pool == "" {
		return Usage{}, fmt.Errorf("usage: %w: empty name", ErrUnknownPool)
	}
	var out Usage
	err := r.read(ctx, pool, func(p *poolDef, s *state) { out = s.usage(p) })
	return out, err
}

// GC frees the allocations older than freeAfter whose owner isAlive reports gone, in every pool,
// and returns them. isAlive is called without any lock held, at most once per owner and pool; an
// allocation that changed meanwhile is left alone. freeAfter protects owners that exist but are
// not yet visible to isAlive, such as a container whose setup is still running.
func (r *Registry) GC(ctx context.Context, freeAfter time.Duration, isAlive func(owner string) bool) ([]Allocation, error) {
	var freed []Allocation
	var errs []error
	for _, p := range r.pools {
		f, err := r.gcPool(ctx, p, freeAfter, isAlive)
		freed = append(freed, f...)
		if err != nil {
			errs = append(errs, fmt.Errorf("gc in pool %s: %w", p.Name, err))
		}
	}
	return freed, errors.Join(errs...)
}

func (r *Registry) gcPool(ctx context.Context, p *poolDef, freeAfter time.Duration, isAlive func(string) bool) ([]Allocation, error) {
	s, err := r.load(p)
	if err != nil {
		return nil, err
	}
	now := r.clock.Now()
	alive := map[string]bool{}
	var dead []Allocation
	for _, a := range s.allocs {
		if now.Sub(a.AllocatedAt) < freeAfter {
			continue
		}
		ok, seen := alive[a.Owner]
		if !seen {
			ok = isAlive(a.Owner)
			alive[a.Owner] = ok
		}
		if !ok {
			dead = append(dead, a.Allocation)
		}
	}
	if len(dead) == 0 {
		return nil, nil
	}
	var freed []Allocation
	err = r.update(ctx, p, func(s *state, now time.Time) (bool, error) {
		for _, d := range dead {
			i := s.find(d.Owner, d.Iface)
			if i < 0 || !s.allocs[i].Allocation.same(d) {
				continue
			}
			freed = append(freed, s.release(i, now, p.ReuseDelay))
		}
		return len(freed) > 0, nil
	})
	return freed, err
}

func (a Allocation) same(b Allocation) bool {
	return a.IPv4 == b.IPv4 && a.IPv6 == b.IPv6 && a.AllocatedAt.Equal(b.AllocatedAt)
}

// Check reads the registry of every pool and reports damaged files and pool definitions that
// conflict with held blocks: what apply should refuse before it changes anything.
//
// leaving are allocations the caller gives back in the same pass (their holders left the
// file). A conflict they alone make is no conflict: once they are released the pool holds no
// block and takes the new definition. Those pools are returned in ending, and the caller must
// release the leaving allocations of each before it allocates in it.
func (r *Registry) Check(ctx context.Context, leaving []Allocation) (ending map[string]bool, err error) {
	type key struct{ pool, owner, iface string }
	goes := make(map[key]bool, len(leaving))
	for _, a := range leaving {
		goes[key{a.Pool, a.Owner, a.Iface}] = true
	}
	var errs []error
	for _, p := range r.pools {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := r.load(p)
		if err == nil && s.conflict != nil {
			err = s.conflict
			if len(s.allocs) > 0 && !slices.ContainsFunc(s.allocs, func(a record) bool { return !goes[key{p.Name, a.Owner, a.Iface}] }) {
				if ending == nil {
					ending = map[string]bool{}
				}
				ending[p.Name], err = true, nil
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pool %s: %w", p.Name, err))
		}
	}
	return ending, errors.Join(errs...)
}

// Need is an address a pass takes: owner's on iface (iface may be empty) in Pool.
type Need struct{ Pool, Owner, Iface string }

// Predict tells, without writing anything, whether a pass that first gives back giveBack and
// then allocates needs, in that order, would succeed: what a dry run (diff) must report where
// the apply would fail, a pool exhausted above all. It runs the same steps as Release and
// Allocate on the states read from the files, kept in memory; an owner that already holds an
// address keeps it. The error is Allocate's for the first need that would fail.
//
// Another process may change the registry between a prediction and the apply, so this is a
// forecast, not a reservation: the apply allocates under the pool's lock as before.
func (r *Registry) Predict(ctx context.Context, giveBack []Allocation, needs []Need) (failed int, err error) {
	now := r.clock.Now()
	type loaded struct {
		p *poolDef
		s *state
	}
	states := map[string]loaded{}
	get := func(name string) (loaded, error) {
		if l, ok := states[name]; ok {
			return l, nil
		}
		p, err := r.pool(name)
		if err != nil {
			return loaded{}, err
		}
		s, err := r.load(p)
		if err != nil {
			return loaded{}, fmt.Errorf("pool %s: %w", name, err)
		}
		s.expire(now, p.ReuseDelay)
		states[name] = loaded{p, s}
		return states[name], nil
	}
	for _, a := range giveBack {
		if err := ctx.Err(); err != nil {
			return -1, err
		}
		l, err := get(a.Pool)
		if err != nil {
			return -1, fmt.Errorf("release in pool %s for %s: %w", a.Pool, a.describe(), err)
		}
		if i := l.s.find(a.Owner, a.Iface); i >= 0 {
			l.s.release(i, now, l.p.ReuseDelay)
			// As update does after a change: a release may end a conflict.
			l.s.adopt(l.p)
		}
	}
	for i, n := range needs {
		if err := ctx.Err(); err != nil {
			return -1, err
		}
		err := checkOwner(n.Owner, n.Iface)
		var l loaded
		if err == nil {
			l, err = get(n.Pool)
		}
		if err == nil && l.s.find(n.Owner, n.Iface) < 0 {
			_, err = l.s.allocate(l.p, n.Owner, n.Iface, now)
		}
		if err != nil {
			return i, fmt.Errorf("allocate in pool %s for %s: %w", n.Pool, Allocation{Owner: n.Owner, Iface: n.Iface}.describe(), err)
		}
	}
	return -1, nil
}

func (r *Registry) pool(name string) (*poolDef, error) {
	for _, p := range r.pools {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownPool, name)
}

// read calls fn with the state of pool, or of every pool if pool is empty.
func (r *Registry) read(ctx context.Context, pool string, fn func(*poolDef, *state)) error {
	pools := r.pools
	if pool != "" {
		p, err := r.pool(pool)
		if err != nil {
			return err
		}
		pools = []*poolDef{p}
	}
	now := r.clock.Now()
	for _, p := range pools {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, err := r.load(p)
		if err != nil {
			return fmt.Errorf("pool %s: %w", p.Name, err)
		}
		s.expire(now, p.ReuseDelay)
		fn(p, s)
	}
	return nil
}

// update runs fn on the state of pool under its lock, and writes the state back if fn changed it.
func (r *Registry) update(ctx context.Context, p *poolDef, fn func(*state, time.Time) (bool, error)) error {
	d, err := r.open(true)
	if err != nil {
		return err
	}
	defer d.Close()
	unlock, err := d.Lock(ctx, p.Name+".lock", statedir.LockOptions{})
	if err != nil {
		return err
	}
	defer unlock()
	path := r.Path(p.Name)
	data, err := readRegistry(d, p.Name)
	if err != nil {
		return err
	}
	s := r.takeCached(p.Name, data)
	if s != nil {
		s.adopt(p) // as decode does: releases may have ended a conflict
	} else if s, err = r.decode(p, path, data); err != nil {
		return err
	}
	now := r.clock.Now()
	s.expire(now, p.ReuseDelay)
	changed, err := fn(s, now)
	if err != nil || !changed {
		return err
	}
	// A release may have ended a conflict: the file then records the
	// configured definition, as the next read would take it.
	s.adopt(p)
	data = s.encode()
	// Durable, on the directory's descriptor: a temporary file with an unpredictable name
	// made with O_EXCL, fsync, rename, fsync of the directory.
	if err := d.WriteFile(p.Name+".registry", data, 0o644); err != nil {
		return err
	}
	r.keepCached(p.Name, data, s)
	return nil
}

// cached is the state last written by this Registry, with the bytes it wrote. If the file
// still holds exactly these bytes, the next change starts from the state instead of decoding
// the file again: decoding is most of the work of a change (3.5 ms of a 6.5 ms allocation in a
// registry of 4000), and a process making changes in a row finds its own bytes.
type cached struct {
	data []byte
	s    *state
}

// takeCached returns the cached state of pool if data is what it was written as, and forgets
// it either way: the caller changes the state.
func (r *Registry) takeCached(pool string, data []byte) *state {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[pool]
	delete(r.cache, pool)
	if ok && data != nil && bytes.Equal(c.data, data) {
		return c.s
	}
	return nil
}

func (r *Registry) keepCached(pool string, data []byte, s *state) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		r.cache = map[string]cached{}
	}
	r.cache[pool] = cached{data, s}
}

// load reads the registry of pool; a missing file is an empty registry.
func (r *Registry) load(p *poolDef) (*state, error) {
	d, err := r.open(false)
	if err != nil {
		return nil, err
	}
	var data []byte
	if d != nil {
		data, err = readRegistry(d, p.Name)
		d.Close()
		if err != nil {
			return nil, err
		}
	}
	return r.decode(p, r.Path(p.Name), data)
}

// maxRegistry bounds what is read of a registry file: a pool of 2^20 allocations takes about
// 100 MB, far beyond any real host.
const maxRegistry = 256 << 20

// readRegistry returns the content of pool's registry file, nil if there is none.
func readRegistry(d *statedir.Dir, pool string) ([]byte, error) {
	data, err := d.ReadFile(pool+".registry", maxRegistry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ipam registry: %w", err)
	}
	return data, nil
}

func (r *Registry) decode(p *poolDef, path string, data []byte) (*state, error) {
	if data == nil {
		return newState(p), nil
	}
	s, err := decode(p.Name, data)
	if errors.Is(err, errNewerFormat) {
		return nil, fmt.Errorf("ipam registry %s: %w; nothing was changed", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w; nothing was changed: restore the file, or move it away to start the pool empty (which forgets its allocations)",
			ErrCorrupt, path, err)
	}
	s.adopt(p)
	return s, nil
}
