package diff

import (
	"fmt"
	"net/netip"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Leaving out what depends on a conflict.
//
// A conflicting link is left as it is, so every object that needs it is left
// out with it: the links enslaved to it, parented on it or paired with it,
// the addresses on it (a foreign link's addresses are not ours to add or
// remove), the routes through it or from a source address on it, the
// WireGuard configuration of it. Objects that need those are left out in
// turn. This is one rule for every kind, applied to the finished plan, so a
// stage that adds a kind of op only has to say what the op needs (opNeeds).

// blockLink records that the declared link name is in conflict.
func (c *computer) blockLink(name string) {
	if c.blocked == nil {
		c.blocked = map[string]bool{}
	}
	c.blocked[name] = true
}

// holdLink records that the declared link name is held back
// (Inputs.MaxDisruption): left as it is, with what needs it, as for a
// conflict, and listed in Plan.Held instead of the conflicts.
func (c *computer) holdLink(name string) {
	c.blockLink(name)
	if c.heldLinks == nil {
		c.heldLinks = map[string]bool{}
	}
	c.heldLinks[name] = true
}

// leftOut records an op or a link left out because it needs link n: a
// conflict, or, when n is held, a held change.
func (c *computer) leftOut(n, format string, args ...any) {
	if c.heldLinks[n] {
		c.plan.HeldDependents = append(c.plan.HeldDependents, fmt.Sprintf(format, args...))
		return
	}
	c.conflict(format, args...)
}

// linkNeeds lists the links a declared link needs to exist or be configured.
func (c *computer) linkNeeds(l *model.Link) []string {
	needs := parents(l)
	if l.Veth != nil && l.Veth.PeerNetNS == "" && l.Veth.Peer != "" {
		if _, declared := c.d.Links[l.Veth.Peer]; declared {
			needs = append(needs, l.Veth.Peer)
		}
	}
	return needs
}

// opNeeds lists the links an operation needs: if one of them is in
// conflict, the operation is left out.
func (c *computer) opNeeds(op *Op) []string {
	switch {
	case op.Kind == KindLink && op.Action == Delete:
		// The kernel deletes a veth pair whole, and with a link the
		// links on it (a vxlan whose device it is, a macvlan, ipvlan or
		// vlan on it), and releases its ports: a link in conflict or
		// held that one of those is must keep it, so the delete waits.
		return c.takenWith(op.ID)
	case op.Link != nil:
		return append([]string{op.Link.Name}, c.linkNeeds(op.Link)...)
	case op.Address != nil:
		return []string{op.Address.Link}
	case op.Route != nil:
		if op.Action == Delete {
			// Ours, and no longer wanted: deleting it touches nothing
			// of the conflicting link's.
			return nil
		}
		r := op.Route
		needs := append([]string{r.Dev}, r.Devs()...)
		if l, ok := c.srcLink[r.Src]; ok && r.Src.IsValid() {
			needs = append(needs, l)
		}
		// Without a dev, the kernel reaches a gateway (the route's, or a
		// next hop's) through the link whose declared subnet holds it.
		gateways := []model.NextHop{{Gateway: r.Gateway, Dev: r.Dev}}
		if len(r.NextHops) > 0 {
			gateways = r.NextHops
		}
		for _, h := range gateways {
			if h.Dev != "" || !h.Gateway.IsValid() {
				continue
			}
			best, via := -1, ""
			for _, s := range c.subnets {
				if s.p.Bits() > best && s.p.Contains(h.Gateway) {
					best, via = s.p.Bits(), s.link
				}
			}
			needs = append(needs, via)
		}
		return needs
	case op.WireGuard != nil:
		return []string{op.WireGuard.Link}
	case op.Sysctl != nil && op.Action != Delete && op.Sysctl.Link != "":
		return []string{op.Sysctl.Link}
	}
	return nil
}

// spreadBlocked spreads the conflicts of links to the declared links that
// need them. It runs right after the link stage, where every conflict of a
// link is found, so that the later stages know which links stay as they
// are: a link left out is not recreated, set down or moved, and the kernel
// keeps its routes (devGone).
func (c *computer) spreadBlocked() {
	if len(c.blocked) == 0 {
		return
	}
	// Spread over the declared links until nothing changes: a chain of
	// masters and parents is short.
	for changed := true; changed; {
		changed = c.leftOutBeside()
		for _, name := range c.d.SortedLinkNames() {
			if c.blocked[name] {
				continue
			}
			for _, n := range c.linkNeeds(c.d.Links[name]) {
				if c.blocked[n] {
					c.blocked[name] = true
					if c.heldLinks[n] {
						c.heldLinks[name] = true
						c.leftOut(n, "link %s is held: it needs link %s, which is held", name, n)
					} else {
						c.conflict("link %s is left out: it needs link %s, which is in conflict", name, n)
					}
					changed = true
					break
				}
			}
		}
	}
}

// leaveOutDependents drops every op that needs a link in conflict (those
// spreadBlocked found after the link stage: no later stage blocks a link),
// with a conflict line saying why.
func (c *computer) leaveOutDependents() {
	if len(c.blocked) == 0 {
		return
	}
	// A stale veth end that was to go with its peer's recreate stays when
	// that recreate is left out: said, since no op of its own is dropped.
	for _, name := range c.a.SortedLinkNames() {
		if peer, ok := c.goesWithPeer[name]; ok && c.blocked[peer] {
			c.conflict("link %s is not deleted: it goes with its peer %s, which is left out", name, peer)
			c.deletes = append(c.deletes, c.withLink[name]...)
		}
	}
	c.srcLink = map[netip.Addr]string{}
	for i := range c.d.Addresses {
		a := &c.d.Addresses[i]
		c.srcLink[a.Prefix.Addr()] = a.Link
		c.subnets = append(c.subnets, subnet{a.Prefix.Masked(), a.Link})
	}
	c.plan.LeftOut = c.blocked
	c.plan.Ops = c.keepUnblocked(c.plan.Ops)
	c.deletes = c.keepUnblocked(c.deletes)
	c.linkDeletes = c.keepUnblocked(c.linkDeletes)
}

func (c *computer) keepUnblocked(ops []Op) []Op {
	out := ops[:0]
	for i := range ops {
		op := &ops[i]
		if op.Kind == KindLink && op.Action == Delete && c.blocked[op.ID] && c.d.Links[op.ID] != nil {
			// The first half of a recreate of a declared link left out:
			// the link stays as it is.
			continue
		}
		if n := c.blockedNeed(op); n != "" {
			switch {
			case op.Kind == KindLink && op.Action == Delete:
				why := "in conflict"
				if c.heldLinks[n] {
					why = "held"
				}
				c.leftOut(n, "link %s is not deleted: the kernel would %s with it, which is %s", op.ID, c.takenHow(op.ID, n), why)
			case op.Kind == KindLink:
			case c.heldLinks[n]:
				c.leftOut(n, "%s %s is held: it needs link %s, which is held", op.Kind, op.ID, n)
			default:
				c.conflict("%s %s is left out: link %s is in conflict", op.Kind, op.ID, n)
			}
			continue
		}
		out = append(out, *op)
	}
	return out
}

// takenHow says what deleting the link name does to the link n, one of
// takenWith's.
func (c *computer) takenHow(name, n string) string {
	if a := c.a.Links[name]; a != nil && a.Veth != nil && a.Veth.Peer == n {
		return "delete its peer " + n
	}
	if _, goes := c.goesWith(name); goes[n] {
		return "delete " + n
	}
	return "release " + n + " from its master"
}

func (c *computer) blockedNeed(op *Op) string {
	for _, n := range c.opNeeds(op) {
		if n != "" && c.blocked[n] {
			return n
		}
	}
	return ""
}

// subnet is a declared address's subnet and its link.
type subnet struct {
	p    netip.Prefix
	link string
}
