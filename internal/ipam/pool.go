package ipam

import (
	"github.com/netreconcile/netreconcile/internal/model"

	"errors"
	"fmt"
	"slices"
)

// The pool definition lives in package model, which the desired stage builds without the allocator;
// these names are the same types, so that the registry's API reads in its own words.
type (
	// Pool is a pool definition with every default filled in: see model.PoolSpec.
	Pool = model.PoolSpec
	// Subnet is one entry of a pool: see model.PoolSubnet.
	Subnet = model.PoolSubnet
	// IndexRange is an inclusive range of block indexes: see model.PoolRange.
	IndexRange = model.PoolRange
)

// poolDef is a validated pool with what the operations derive from it.
type poolDef struct {
	Pool
	layout  *layout
	allowed []IndexRange // sorted, disjoint, within the layout; the whole layout when unset
}

func compile(p Pool) (*poolDef, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	l, err := newLayout(p.BlockSizeBits, p.Subnets)
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	allowed, err := model.NormalizePoolRanges(p.AllowedBlocks, l.total)
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	p.Subnets = slices.Clone(p.Subnets)
	p.AllowedBlocks = slices.Clone(p.AllowedBlocks)
	return &poolDef{Pool: p, layout: l, allowed: allowed}, nil
}

func (p *poolDef) allows(index uint64) bool {
	for _, r := range p.allowed {
		if index >= r.First && index <= r.Last {
			return true
		}
	}
	return false
}

func (p *poolDef) allowedCount() uint64 {
	var n uint64
	for _, r := range p.allowed {
		n += r.Last - r.First + 1
	}
	return n
}

// checkPools validates each pool and what pools must not share: names and addresses.
func checkPools(pools []Pool) ([]*poolDef, error) {
	defs := make([]*poolDef, 0, len(pools))
	var errs []error
	for _, p := range pools {
		d, err := compile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range defs {
			if o.Name == d.Name {
				errs = append(errs, fmt.Errorf("pool %s is defined twice", d.Name))
			}
		}
		if err := checkOverlap(d, defs); err != nil {
			errs = append(errs, err)
		}
		defs = append(defs, d)
	}
	return defs, errors.Join(errs...)
}

func checkOverlap(d *poolDef, others []*poolDef) error {
	for _, o := range others {
		for _, s := range d.Subnets {
			for _, t := range o.Subnets {
				if s.IPv4.Overlaps(t.IPv4) || s.IPv6.Overlaps(t.IPv6) {
					return fmt.Errorf("pool %s: subnet %s overlaps %s of pool %s", d.Name, s, t, o.Name)
				}
			}
		}
	}
	return nil
}
