package diff

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/netreconcile/netreconcile/internal/model"
)

func (c *computer) links() {
	var creates, updates []Op
	for _, name := range c.d.SortedLinkNames() {
		want := c.d.Links[name]
		have, exists := c.a.Links[name]
		switch {
		case want.Kind == model.KindDevice && !exists:
			c.conflict("link %s (kind device) does not exist; a device link is never created", name)
		case want.Kind == model.KindDevice:
			if ch := linkChanges(want, have, false); len(ch) > 0 {
				updates = append(updates, Op{Action: Update, Kind: KindLink, ID: name, Changes: ch, Link: want})
			}
		case !exists:
			op := Op{Action: Create, Kind: KindLink, ID: name, Summary: linkSummary(want), Link: want}
			if want.Veth != nil && want.Veth.PeerNetNS == "" {
				if peer, ok := c.d.Links[want.Veth.Peer]; ok && peer.Kind == model.KindVeth {
					_, peerExists := c.a.Links[want.Veth.Peer]
					switch {
					case peerExists && c.willReplace(want.Veth.Peer):
						// The peer is recreated by this plan, and makes the
						// pair with this end: this op marks and configures it.
						op.PeerOfPair = true
						op.Summary = "the peer end of " + want.Veth.Peer
					case peerExists:
						c.conflict("link %s: its declared peer %s exists already; delete it or declare the pair again under new names", name, want.Veth.Peer)
						continue
					case want.Veth.Peer < name:
						// The pair is created once, from its first name; the
						// other end's op then only marks and configures it.
						op.PeerOfPair = true
						op.Summary = "the peer end of " + want.Veth.Peer
					}
				}
			}
			c.recreated[name] = true
			creates = append(creates, op)
		case !have.Owned && !want.Adopt:
			c.conflict("link %s exists and netreconcile did not create it (its alias has no %q marker); add \"adopt: true\" to take it over, or choose another name", name, model.LinkMarker)
		case have.Kind != want.Kind && !have.Owned:
			c.conflict("link %s exists as kind %s, not %s; only a link of the same kind can be adopted", name, have.Kind, want.Kind)
		case have.Kind != want.Kind:
			if c.foreignChildren(name) {
				continue
			}
			c.recreated[name] = true
			creates = append(creates, Op{Action: Replace, Kind: KindLink, ID: name, Summary: linkSummary(want), Reason: fmt.Sprintf("kind %s -> %s", have.Kind, want.Kind), Link: want})
		default:
			if reason := fixedChange(want, have); reason != "" {
				if !have.Owned {
					// Recreating is deleting: never done to a link
					// netreconcile did not create (nor, for a veth, to its
					// foreign peer).
					c.conflict("link %s is adopted, not created by netreconcile, and its %s cannot change in place; recreate it yourself or keep its settings", name, reason)
					continue
				}
				if c.foreignChildren(name) {
					continue
				}
				c.recreated[name] = true
				creates = append(creates, Op{Action: Replace, Kind: KindLink, ID: name, Summary: linkSummary(want), Reason: reason, Link: want})
				continue
			}
			ch := linkChanges(want, have, true)
			if !have.Owned {
				ch = append([]Change{{Field: "owner", From: "foreign", To: "netreconcile (adopted)"}}, ch...)
			}
			if len(ch) > 0 {
				updates = append(updates, Op{Action: Update, Kind: KindLink, ID: name, Changes: ch, Link: want})
			}
		}
	}
	c.staleLinks()
	// The kernel lets one link per namespace hold a vxlan's VNI and port, a
	// tunnel's endpoints, a WireGuard device's listen port. A stale link of
	// such a kind goes before the creates of its kind, so that the link
	// taking its place (a rename) can be made: created first, it would meet
	// EEXIST or EADDRINUSE.
	created := map[string]int{}
	for _, op := range creates {
		created[op.Link.Kind]++
	}
	// Likewise a link of such a kind that this plan recreates, when another
	// link of its kind is created too: its old self goes first, and the op
	// that recreates it only creates.
	for i, op := range creates {
		switch op.Link.Kind {
		case model.KindVXLAN, model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard:
			if op.Action == Replace && created[op.Link.Kind] > 1 {
				old := c.a.Links[op.ID]
				c.add(Op{Action: Delete, Kind: KindLink, ID: op.ID, Summary: old.Kind + ", recreated below", Link: old})
				creates[i].Action = Create
			}
		}
	}
	var late []Op
	for _, op := range c.linkDeletes {
		switch op.Link.Kind {
		case model.KindVXLAN, model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard:
			if created[op.Link.Kind] > 0 {
				c.add(op)
				continue
			}
		}
		late = append(late, op)
	}
	c.linkDeletes = late
	for _, op := range orderByDependency(creates, c.d.Links) {
		c.add(op)
	}
	for _, op := range updates {
		for _, ch := range op.Changes {
			if ch.Field == "state" && !op.Link.Up {
				c.downed[op.ID] = true
			}
		}
		c.add(op)
	}
}

// staleLinks deletes owned links the file no longer names, children first.
func (c *computer) staleLinks() {
	var stale []*model.Link
	for _, name := range c.a.SortedLinkNames() {
		l := c.a.Links[name]
		if _, want := c.d.Links[name]; !want && l.Owned {
			stale = append(stale, l)
		}
	}
	gone := map[string]bool{}
	for _, l := range stale {
		gone[l.Name] = true
	}
	// A child (a slave, an ipvlan, a vxlan on a device) goes before its parent;
	// deleting a veth takes its peer, so the peer gets no op of its own.
	sort.SliceStable(stale, func(i, j int) bool { return depth(stale[i], c.a.Links) > depth(stale[j], c.a.Links) })
	deleted := map[string]bool{}
	for _, l := range stale {
		if deleted[l.Name] {
			continue
		}
		// A veth whose peer this plan recreates goes with the old pair.
		if l.Veth != nil && l.Veth.Peer != "" && c.recreated[l.Veth.Peer] {
			continue
		}
		if c.foreignChildren(l.Name) {
			continue
		}
		deleted[l.Name] = true
		op := Op{Action: Delete, Kind: KindLink, ID: l.Name, Summary: l.Kind, Link: l}
		if l.Veth != nil && l.Veth.Peer != "" && gone[l.Veth.Peer] {
			deleted[l.Veth.Peer] = true
			op.Summary = "veth, with its peer " + l.Veth.Peer
		}
		c.linkDeletes = append(c.linkDeletes, op)
	}
}

// willReplace reports whether the plan recreates an existing link of ours
// (a change of kind, or of an attribute fixed at creation).
func (c *computer) willReplace(name string) bool {
	want, have := c.d.Links[name], c.a.Links[name]
	if want == nil || have == nil || !have.Owned || want.Kind == model.KindDevice {
		return false
	}
	return have.Kind != want.Kind || fixedChange(want, have) != ""
}

// foreignChildren reports (as a conflict) the links netreconcile does not
// own that the kernel would delete together with the link name: a vxlan on
// it, an ipvlan, macvlan or vlan whose lower link it is.
func (c *computer) foreignChildren(name string) bool {
	var kids []string
	for _, n := range c.a.SortedLinkNames() {
		l := c.a.Links[n]
		if l.Owned || n == name {
			continue
		}
		if l.Lower == name || l.VXLAN != nil && l.VXLAN.Dev == name || l.IPVlan != nil && l.IPVlan.Parent == name {
			kids = append(kids, n)
		}
	}
	if len(kids) == 0 {
		return false
	}
	c.conflict("link %s cannot be deleted or recreated: the kernel would delete %v with it, which netreconcile did not create; delete them first or keep %s as it is", name, kids, name)
	return true
}

// parents lists the links l needs before it can exist or be configured.
func parents(l *model.Link) []string {
	var ps []string
	if l.Master != "" {
		ps = append(ps, l.Master)
	}
	if l.IPVlan != nil {
		ps = append(ps, l.IPVlan.Parent)
	}
	if l.VXLAN != nil && l.VXLAN.Dev != "" {
		ps = append(ps, l.VXLAN.Dev)
	}
	return ps
}

func depth(l *model.Link, all map[string]*model.Link) int {
	d := 0
	seen := map[string]bool{l.Name: true}
	for cur := l; cur != nil; {
		ps := parents(cur)
		if len(ps) == 0 || seen[ps[0]] {
			break
		}
		seen[ps[0]] = true
		d++
		cur = all[ps[0]]
	}
	return d
}

// orderByDependency sorts creates so that parents come first; ties keep name order.
func orderByDependency(ops []Op, all map[string]*model.Link) []Op {
	// The end of a veth pair that is configured after the pair exists ranks
	// after every link of the same depth.
	rank := func(op Op) int {
		d := depth(op.Link, all)
		if op.PeerOfPair {
			// After the op that creates the pair, whose end may sit
			// deeper (enslaved to a bridge) than this one.
			if p := all[op.Link.Veth.Peer]; p != nil {
				d = max(d, depth(p, all))
			}
			return 2*d + 1
		}
		return 2 * d
	}
	sort.SliceStable(ops, func(i, j int) bool { return rank(ops[i]) < rank(ops[j]) })
	return ops
}

// fixedChange names the first attribute that differs and that the kernel
// fixes at creation ("" if none).
func fixedChange(want, have *model.Link) string {
	switch want.Kind {
	case model.KindVXLAN:
		w, h := want.VXLAN, have.VXLAN
		if h == nil {
			return "vxlan attributes unreadable"
		}
		switch {
		case w.ID != h.ID:
			return fmt.Sprintf("vxlan id %d -> %d", h.ID, w.ID)
		case w.Local != h.Local:
			return fmt.Sprintf("vxlan local %s -> %s", addrStr(h.Local), addrStr(w.Local))
		case w.Remote != h.Remote:
			return fmt.Sprintf("vxlan remote %s -> %s", addrStr(h.Remote), addrStr(w.Remote))
		case w.Port != h.Port:
			return fmt.Sprintf("vxlan port %d -> %d", h.Port, w.Port)
		case w.Dev != h.Dev:
			return fmt.Sprintf("vxlan dev %s -> %s", orNone(h.Dev), orNone(w.Dev))
		case w.TTL != h.TTL:
			return fmt.Sprintf("vxlan ttl %d -> %d", h.TTL, w.TTL)
		case w.Learning != h.Learning:
			return fmt.Sprintf("vxlan learning %t -> %t", h.Learning, w.Learning)
		}
	case model.KindIPVlan:
		w, h := want.IPVlan, have.IPVlan
		if h == nil {
			return "ipvlan attributes unreadable"
		}
		if w.Parent != h.Parent {
			return fmt.Sprintf("ipvlan parent %s -> %s", orNone(h.Parent), w.Parent)
		}
		if w.Mode != h.Mode {
			return fmt.Sprintf("ipvlan mode %s -> %s", h.Mode, w.Mode)
		}
	case model.KindIPIP, model.KindIP6Tnl:
		w, h := want.Tunnel, have.Tunnel
		if h == nil {
			return "tunnel attributes unreadable"
		}
		// Coil recreates its FoU tunnels on any change, and the kernel
		// cannot change an encapsulation's source port in place.
		switch {
		case w.External != h.External:
			return fmt.Sprintf("external %t -> %t", h.External, w.External)
		case w.Local != h.Local:
			return fmt.Sprintf("local %s -> %s", addrStr(h.Local), addrStr(w.Local))
		case w.Remote != h.Remote:
			return fmt.Sprintf("remote %s -> %s", addrStr(h.Remote), addrStr(w.Remote))
		case w.TTL != h.TTL:
			return fmt.Sprintf("ttl %d -> %d", h.TTL, w.TTL)
		case w.Mode != h.Mode:
			return fmt.Sprintf("mode %s -> %s", h.Mode, w.Mode)
		case encapStr(w.Encap) != encapStr(h.Encap):
			return fmt.Sprintf("encap %s -> %s", encapStr(h.Encap), encapStr(w.Encap))
		}
	case model.KindVeth:
		if want.Veth.PeerNetNS == "" && have.Veth != nil && have.Veth.Peer != "" && have.Veth.Peer != want.Veth.Peer {
			return fmt.Sprintf("veth peer %s -> %s", have.Veth.Peer, want.Veth.Peer)
		}
	}
	return ""
}

// linkChanges lists the attributes that change in place. For links netreconcile
// owns every attribute is enforced; for device links only those the file sets.
func linkChanges(want, have *model.Link, owned bool) []Change {
	var ch []Change
	if want.MTU != 0 && want.MTU != have.MTU {
		ch = append(ch, Change{"mtu", strconv.Itoa(have.MTU), strconv.Itoa(want.MTU)})
	}
	if (owned || want.Master != "") && want.Master != have.Master {
		ch = append(ch, Change{"master", have.Master, want.Master})
	}
	if (owned || want.Alias != "") && (want.Alias != have.Alias || owned && !have.Owned) {
		ch = append(ch, Change{"alias", have.Alias, want.Alias})
	}
	if (owned || want.StateSet) && want.Up != have.Up {
		ch = append(ch, Change{"state", upWord(have.Up), upWord(want.Up)})
	}
	return ch
}

func linkSummary(l *model.Link) string {
	s := l.Kind
	switch {
	case l.Veth != nil:
		s += " peer " + l.Veth.Peer
		if l.Veth.PeerNetNS != "" {
			s += " netns " + l.Veth.PeerNetNS
		}
	case l.VXLAN != nil:
		s += fmt.Sprintf(" id %d", l.VXLAN.ID)
		if l.VXLAN.Remote.IsValid() {
			s += " remote " + l.VXLAN.Remote.String()
		}
		if l.VXLAN.Local.IsValid() {
			s += " local " + l.VXLAN.Local.String()
		}
		if l.VXLAN.Dev != "" {
			s += " dev " + l.VXLAN.Dev
		}
		s += fmt.Sprintf(" dstport %d", l.VXLAN.Port)
	case l.IPVlan != nil:
		s += " parent " + l.IPVlan.Parent + " mode " + l.IPVlan.Mode
	case l.Tunnel != nil:
		t := l.Tunnel
		if l.Kind == model.KindIP6Tnl {
			s += " mode " + t.Mode
		}
		if t.External {
			s += " external"
		}
		if t.Remote.IsValid() {
			s += " remote " + t.Remote.String()
		}
		if t.Local.IsValid() {
			s += " local " + t.Local.String()
		}
		if t.TTL != 0 {
			s += fmt.Sprintf(" ttl %d", t.TTL)
		}
		if t.Encap != nil {
			s += " " + encapStr(t.Encap)
		}
	}
	if l.MTU != 0 {
		s += fmt.Sprintf(" mtu %d", l.MTU)
	}
	if l.Master != "" {
		s += " master " + l.Master
	}
	if l.Alias != "" {
		s += fmt.Sprintf(" alias %q", l.Alias)
	}
	if !l.Up {
		s += " down"
	}
	return s
}

func encapStr(e *model.Encap) string {
	if e == nil {
		return "none"
	}
	sport := "auto"
	if e.Sport != 0 {
		sport = strconv.Itoa(int(e.Sport))
	}
	return fmt.Sprintf("encap %s encap-sport %s encap-dport %d", e.Type, sport, e.Dport)
}

func upWord(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
