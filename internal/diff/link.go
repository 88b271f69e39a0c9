package diff

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

func (c *computer) links() {
	var creates, updates []Op
	for _, name := range c.d.SortedLinkNames() {
		want := c.d.Links[name]
		have, exists := c.a.Links[name]
		if c.hold != nil && c.hold.links[name] != nil && exists {
			// Held back (Inputs.MaxDisruption): left as it is.
			c.holdLink(name)
			continue
		}
		switch {
		case want.Kind == model.KindDevice && !exists:
			c.blockLink(name)
			c.conflict("link %s (kind device) does not exist; a device link is never created", name)
		case want.Kind == model.KindDevice:
			if ch, f := linkChanges(want, have, false); len(ch) > 0 {
				updates = append(updates, Op{Action: Update, Kind: KindLink, ID: name, Changes: ch, Link: want, LinkFields: f})
			}
		case !exists:
			if c.foreignOnParent(want) {
				continue
			}
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
						c.blockLink(name)
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
			c.blockLink(name)
			c.conflict("link %s exists and netreconcile did not create it (its alias has no %q marker); add \"adopt: true\" to take it over, or choose another name", name, model.LinkMarker)
		case have.Kind != want.Kind && adopted(want, have):
			c.blockLink(name)
			c.conflict("link %s exists as kind %s, not %s; only a link of the same kind can be adopted (an adopted link is never recreated): %s", name, have.Kind, want.Kind, adoptedWayOut(have))
		case have.Kind != want.Kind:
			if c.foreignChildren(name) || c.foreignOnParent(want) {
				continue
			}
			c.recreated[name] = true
			creates = append(creates, Op{Action: Replace, Kind: KindLink, ID: name, Summary: linkSummary(want), Reason: fmt.Sprintf("kind %s -> %s", have.Kind, want.Kind), Link: want})
		default:
			if reason := c.fixedChange(want, have); reason != "" {
				if adopted(want, have) {
					// Recreating is deleting: never done to a link
					// netreconcile did not create (nor, for a veth, to its
					// foreign peer), nor to one the file adopts, which
					// carries the marker from its first apply on.
					c.blockLink(name)
					c.conflict("link %s is %s, and its %s cannot change in place; %s", name, adoptedWhat(have), reason, adoptedWayOut(have))
					continue
				}
				if c.foreignChildren(name) || c.foreignOnParent(want) {
					continue
				}
				c.recreated[name] = true
				creates = append(creates, Op{Action: Replace, Kind: KindLink, ID: name, Summary: linkSummary(want), Reason: reason, Link: want})
				continue
			}
			ch, f := linkChanges(want, have, true)
			if !have.Owned {
				// The marker is written with the alias, which
				// linkChanges always writes for a link being adopted.
				ch = append([]Change{{Field: "owner", From: "foreign", To: "netreconcile (adopted)"}}, ch...)
			}
			if len(ch) > 0 {
				updates = append(updates, Op{Action: Update, Kind: KindLink, ID: name, Changes: ch, Link: want, LinkFields: f})
			}
		}
	}
	creates = c.recreatesWait(creates)
	creates, updates = c.recreateChildren(creates, updates)
	updates = c.mtuWritesWait(updates)
	for i := range updates {
		c.releasedFromBond(&updates[i])
	}
	updates = c.vlansFollowParents(updates)
	c.staleLinks()
	c.remotePeerHeld(creates)
	var early []Op
	// The kernel lets one link per namespace hold a vxlan's VNI and port, a
	// tunnel's endpoints, a WireGuard device's listen port, and one vlan
	// per parent hold an id (EEXIST: a vlan renamed), a
	// passthru macvlan its parent (EBUSY). A stale link of
	// such a kind goes before the creates of its kind, so that the link
	// taking its place (a rename) can be made: created first, it would meet
	// EEXIST or EADDRINUSE.
	created := map[string]int{}
	// A veth whose peer is in another namespace holds the peer's name
	// there: a stale pair goes before the create of a pair with the same
	// peer (the local end renamed), which would meet EEXIST there.
	remotePeers := map[[2]string]bool{}
	for _, op := range creates {
		created[op.Link.Kind]++
		if v := op.Link.Veth; v != nil && v.PeerNetNS != "" {
			remotePeers[[2]string{v.PeerNetNS, v.Peer}] = true
		}
	}
	// Likewise a link of such a kind that this plan recreates, when another
	// link of its kind is created too: its old self goes first, and the op
	// that recreates it only creates.
	for i, op := range creates {
		switch op.Link.Kind {
		case model.KindVXLAN, model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard, model.KindVLAN, model.KindMACVlan:
			if op.Action == Replace && created[op.Link.Kind] > 1 {
				old := c.a.Links[op.ID]
				del := Op{Action: Delete, Kind: KindLink, ID: op.ID, Summary: old.Kind + ", recreated below", Link: old}
				early = append(early, del)
				c.add(del)
				creates[i].Action = Create
			}
		}
	}
	// The parents that get an ipvlan, or a macvlan, in this plan. A device
	// carries ipvlans or macvlans, not both, nor either with a bridge or
	// bond port (each holds the device's rx_handler: EBUSY, "Device is
	// already in use"): a stale one of the other kind on that parent goes
	// first (a macvlan the file drops, an ipvlan it adds on the same
	// parent).
	ipvlanParentsMade, macvlanParentsMade := map[string]bool{}, map[string]bool{}
	for _, op := range creates {
		if op.Link.IPVlan != nil {
			ipvlanParentsMade[op.Link.IPVlan.Parent] = true
		}
		if op.Link.MACVlan != nil {
			macvlanParentsMade[op.Link.MACVlan.Parent] = true
		}
	}
	// Links that join a master in this plan. A device carries a bridge
	// (or bond) port or ipvlans, not both: an ipvlan the file drops from
	// one of them goes before the join, which would meet EBUSY.
	joining := map[string]bool{}
	for _, op := range updates {
		if op.LinkFields.Master && op.Link.Master != "" {
			joining[op.ID] = true
		}
	}
	var late []Op
	for _, op := range c.linkDeletes {
		if v := op.Link.Veth; v != nil && v.Remote != nil && remotePeers[[2]string{v.Remote.NetNS, v.Remote.Name}] {
			early = append(early, op)
			c.add(op)
			continue
		}
		switch op.Link.Kind {
		case model.KindVXLAN, model.KindIPIP, model.KindIP6Tnl, model.KindWireGuard, model.KindVLAN:
			if created[op.Link.Kind] > 0 {
				early = append(early, op)
				c.add(op)
				continue
			}
		case model.KindMACVlan:
			if created[op.Link.Kind] > 0 || op.Link.MACVlan != nil && (ipvlanParentsMade[op.Link.MACVlan.Parent] || joining[op.Link.MACVlan.Parent]) {
				early = append(early, op)
				c.add(op)
				continue
			}
		case model.KindIPVlan:
			// The ipvlans of one parent share its addresses: one the
			// file renames keeps its address on the stale one until that
			// goes (EADDRINUSE).
			if op.Link.IPVlan != nil && (ipvlanParentsMade[op.Link.IPVlan.Parent] || macvlanParentsMade[op.Link.IPVlan.Parent] || joining[op.Link.IPVlan.Parent]) {
				early = append(early, op)
				c.add(op)
				continue
			}
		}
		late = append(late, op)
	}
	c.linkDeletes = late
	// A link released from its master is released before the creates: a
	// departure needs nothing made first, and what is made may need it
	// gone. The kernel lets a device carry a bridge port or ipvlans, not
	// both (EBUSY, "Device is already in use"), and refuses a master that
	// would close a loop of upper and lower devices: a vxlan on bridge A
	// joining bridge B while a vxlan on B is still A's port (EBUSY).
	var kept, released []Op
	for _, op := range updates {
		// A vlan that follows its parent stays after it (ENETDOWN before).
		if op.LinkFields.Master && op.Link.Master == "" && !c.vlanFollows[op.ID] {
			c.noteCycle(op)
			c.add(op)
			released = append(released, op)
			continue
		}
		kept = append(kept, op)
	}
	updates = kept
	// A bond's mode changes only while it has no members: its change
	// goes before the updates that enslave links (name order would put
	// a member a0 before bond0).
	sort.SliceStable(updates, func(i, j int) bool { return updates[i].LinkFields.Kind && !updates[j].LinkFields.Kind })
	// A child made with an MTU its lower device takes only once this
	// plan raises it gets that MTU after the raise.
	var vxlanMTU []Op
	creates, updates, vxlanMTU = c.deferCreatedMTU(creates, updates)
	// Last of the reorderings: a child's MTU write goes after its parent's.
	updates = c.mtuFollowsParent(updates)
	updates = c.afterLowerUpdate(updates, vxlanMTU)
	for _, op := range orderByDependency(creates, c.d.Links) {
		c.add(op)
	}
	for _, op := range updates {
		c.noteCycle(op)
		c.add(op)
	}
	// The releases too: a master they leave may have moved (a port that
	// leaves its bridge with a new MTU leaves the bridge at that MTU, not
	// the file's).
	touched := c.pinMasterMTUs(creates, append(released, updates...), early)
	for _, op := range c.mtuWritesWait(c.uppersFollow(updates, touched)) {
		c.add(op)
	}
	c.plan.PinMTU = slices.DeleteFunc(c.plan.PinMTU, func(l *model.Link) bool { return c.mtuWaited[l.Name] })
	c.plan.FollowMTU = slices.DeleteFunc(c.plan.FollowMTU, func(f MTUFollow) bool { return c.mtuWaited[f.Link] })
}

// mtuWritesWait takes the MTU write out of each update of updates whose
// MTU the kernel would pass on to a link the plan leaves as it is: held
// (Inputs.MaxDisruption), in conflict, or neither declared nor made by
// netreconcile (mtuMoves). Such a write changes a link the plan may not
// change, so it waits as a delete that would take one does: the rest of
// the update goes ahead, and a held change, or a conflict, says why. An
// update left with no change is dropped; a link the write would raise to
// IPv6's minimum or above is left out whole. The link goes to mtuWaited: the
// MTU apply sets again where the kernel moved it on the way (a master's
// declared MTU, an upper's to follow its lower device) is the same write,
// and moves the same links.
func (c *computer) mtuWritesWait(updates []Op) []Op {
	out := updates[:0]
	for _, op := range updates {
		h := c.a.Links[op.ID]
		if !op.LinkFields.MTU || op.Link.MTU == 0 || h == nil {
			out = append(out, op)
			continue
		}
		n := ""
		for _, m := range c.mtuMoves(op.ID, op.Link.MTU, nil) {
			if l := c.a.Links[m]; c.blocked[m] || !l.Owned && c.d.Links[m] == nil {
				n = m
				break
			}
		}
		if n == "" {
			out = append(out, op)
			continue
		}
		switch {
		case c.heldLinks[n]:
			c.leftOut(n, "link %s keeps its mtu %d, not %d: the kernel would change the mtu of %s with it, which is held", op.ID, h.MTU, op.Link.MTU, n)
		case c.blocked[n]:
			c.conflict("link %s keeps its mtu %d, not %d: the kernel would change the mtu of %s with it, which is in conflict", op.ID, h.MTU, op.Link.MTU, n)
		default:
			c.conflict("link %s keeps its mtu %d, not %d: the kernel would change the mtu of %s with it, which netreconcile did not create; give %s an mtu the kernel leaves it at, or delete %s", op.ID, h.MTU, op.Link.MTU, n, op.ID, n)
		}
		if c.mtuWaited == nil {
			c.mtuWaited = map[string]bool{}
		}
		c.mtuWaited[op.ID] = true
		if h.MTU < ipv6MinMTU && op.Link.MTU >= ipv6MinMTU {
			// Kept below IPv6's minimum, the link has no IPv6 for the
			// file's addresses, routes and keys to go on (the kernel
			// refuses them): it waits whole, with what needs it.
			c.blockLink(op.ID)
			if c.heldLinks[n] {
				c.heldLinks[op.ID] = true
			}
			continue
		}
		op.LinkFields.MTU, op.LinkFields.MTUAfterMaster = false, false
		op.Changes = slices.DeleteFunc(slices.Clone(op.Changes), func(ch Change) bool { return ch.Field == "mtu" })
		if len(op.Changes) > 0 {
			out = append(out, op)
		}
	}
	return out
}

// mtuMoves lists the links whose MTU the kernel changes when the link name
// takes the MTU mtu, and those theirs changes in turn: a macvlan or vlan
// on it is lowered to it when above it (macvlan_device_event,
// vlan_device_event), an ipvlan on it takes it either way
// (ipvlan_adjust_mtu), and a bond gives it to each of its ports
// (bond_change_mtu). A bridge's MTU is its own (its ports keep theirs), and
// a vxlan keeps its MTU when its device's changes. seen guards against a
// loop of lower links the kernel would not have made.
func (c *computer) mtuMoves(name string, mtu int, seen map[string]bool) []string {
	if seen == nil {
		seen = map[string]bool{name: true}
	}
	bond := c.a.Links[name] != nil && c.a.Links[name].Kind == model.KindBond
	var out []string
	for _, n := range c.a.SortedLinkNames() {
		l := c.a.Links[n]
		if seen[n] {
			continue
		}
		lower := l.Parent()
		if lower == "" && (l.Kind == model.KindMACVlan || l.Kind == model.KindVLAN || l.Kind == model.KindIPVlan) {
			lower = l.Lower
		}
		moves := false
		switch {
		case lower == name && l.Kind == model.KindIPVlan:
			moves = l.MTU != mtu
		case lower == name && (l.Kind == model.KindMACVlan || l.Kind == model.KindVLAN):
			moves = l.MTU > mtu
		case bond && l.Master == name:
			moves = l.MTU != mtu
		}
		if !moves {
			continue
		}
		seen[n] = true
		out = append(out, n)
		out = append(out, c.mtuMoves(n, mtu, seen)...)
	}
	return out
}

// uppersFollow keeps each macvlan, vlan, ipvlan and vxlan (on a device)
// that the file gives no mtu at its lower device's MTU, less a vxlan's
// encapsulation: the MTU such a link is made at (mtuHeld), so that the
// link's MTU does not tell what its lower device had before. The kernel
// lowers a macvlan or vlan with its parent and never raises it, and moves
// a vxlan with its device neither way: a port that pulls its bridge down
// until apply sets the bridge back left a macvlan on the bridge below it,
// and a parent raised left its children where they were. A link the
// kernel holds at another MTU than that is written, after every other
// link op (its lower device has its new MTU then); and each such link,
// made or kept, on a lower device whose MTU or ports the plan changes
// (touched) goes to Plan.FollowMTU, for apply to set again where the
// kernel moved it on the way. An adopted link keeps the MTU it has (it
// was someone else's choice). updates are the plan's link updates.
func (c *computer) uppersFollow(updates []Op, touched map[string]bool) []Op {
	for _, op := range updates {
		if op.LinkFields.MTU {
			touched[op.ID] = true
		}
	}
	var ops []Op
	uppers := map[string]MTUFollow{}
	for _, name := range c.d.SortedLinkNames() {
		w, h := c.d.Links[name], c.a.Links[name]
		if w.MTU != 0 || w.Adopt || c.blocked[name] || (w.Parent() == "" && (w.VXLAN == nil || w.VXLAN.Dev == "")) {
			continue
		}
		if m := c.d.Links[w.Master]; m != nil && m.Kind == model.KindBond {
			continue // the bond's MTU
		}
		lower, headroom := w.Parent(), 0
		if v := w.VXLAN; v != nil {
			lower, headroom = v.Dev, vxlanHeadroom4
			if v.Remote.Is6() || v.Local.Is6() {
				headroom = vxlanHeadroom6
			}
		}
		uppers[name] = MTUFollow{Link: name, Lower: lower, Headroom: headroom}
		mtu, _, _ := c.mtuHeld(name, nil)
		if h == nil || c.recreated[name] || mtu == 0 || h.MTU == mtu || w.IPVlan != nil && touched[lower] {
			// An ipvlan takes its parent's new MTU by itself.
			continue
		}
		at := *w
		at.MTU = mtu
		ops = append(ops, Op{Action: Update, Kind: KindLink, ID: name, Link: &at, LinkFields: LinkFields{MTU: true},
			Changes: []Change{{"mtu", strconv.Itoa(h.MTU), fmt.Sprintf("%d (%s's, the file gives %s none)", mtu, lower, name)}}})
	}
	// Those on a lower device touched, or on one that follows in turn.
	follow := map[string]MTUFollow{}
	for grew := true; grew; {
		grew = false
		for n, f := range uppers {
			if _, ok := follow[n]; !ok && (touched[f.Lower] || follow[f.Lower].Link != "") {
				follow[n], grew = f, true
			}
		}
	}
	// Lower devices first: a vlan on a macvlan follows the macvlan.
	var order func(n string, seen map[string]bool)
	order = func(n string, seen map[string]bool) {
		f, ok := follow[n]
		if !ok || seen[n] {
			return
		}
		seen[n] = true
		order(f.Lower, seen)
		c.plan.FollowMTU = append(c.plan.FollowMTU, f)
	}
	seen := map[string]bool{}
	for _, n := range slices.Sorted(maps.Keys(follow)) {
		order(n, seen)
	}
	return ops
}

// noteCycle records what an update takes from the link in the kernel. A
// link that is up and goes down, or is cycled (cycledByMaster,
// bondBounced), loses its IPv6 addresses and its routes (downed); one that
// is down already loses nothing that way (an address the file dropped
// must not be taken for deleted by a bond's join). A link that joins or leaves a vrf loses
// every IPv4 route through it, local ones included, whatever its state
// (fib_netdev_event, NETDEV_CHANGEUPPER: fib_disable_ip with force), and its IPv6 addresses and
// routes (addrconf_notify, the same event).
func (c *computer) noteCycle(op Op) {
	if h := c.a.Links[op.ID]; h != nil && h.Up && (op.LinkFields.State && !op.Link.Up || c.cycledByMaster(op) || c.bondBounced(op)) {
		c.downed[op.ID] = true
	}
	if op.LinkFields.Master {
		old := ""
		if h := c.a.Links[op.ID]; h != nil {
			old = h.Master
		}
		if c.kernelKind(old) == model.KindVRF || c.masterKind(op.Link.Master) == model.KindVRF {
			// IPv6 too, up or down (addrconf_notify: addrconf_ifdown).
			c.l3Moved[op.ID] = true
			c.downed[op.ID] = true
		}
	}
}

// cycledByMaster reports whether an update's change of master takes the
// link down on the way: the vrf driver closes and opens a port that joins
// or leaves it (cycle_netdev), a link joins a bond only down, and a
// passthru macvlan changes master down (see kernel.SetLinkMaster). Either
// way the kernel deletes its IPv6 addresses and its routes, which the plan
// then adds again (downed).
func (c *computer) cycledByMaster(op Op) bool {
	if !op.LinkFields.Master {
		return false
	}
	old := ""
	h := c.a.Links[op.ID]
	if h != nil {
		old = h.Master
		if h.MACVlan != nil && h.MACVlan.Mode == model.MACVlanPassthru {
			return true
		}
	}
	cycles := func(k string) bool { return k == model.KindVRF || k == model.KindBond }
	return cycles(c.kernelKind(old)) || cycles(c.masterKind(op.Link.Master))
}

// kernelKind is the kind the kernel has for a link, or "".
func (c *computer) kernelKind(name string) string {
	if l := c.a.Links[name]; l != nil {
		return l.Kind
	}
	return ""
}

// masterKind is the kind a link the file names will have after the
// apply: the file's, or the kernel's for a device the file declares with
// kind device (the host's own bond or vrf is a master like one the file
// makes).
func (c *computer) masterKind(name string) string {
	l := c.d.Links[name]
	if l == nil {
		return ""
	}
	if l.Kind == model.KindDevice {
		return c.kernelKind(name)
	}
	return l.Kind
}

// vlansFollowParents orders and completes the updates of vlans whose
// parent this plan brings up or cycles. The kernel gives a vlan its
// parent's admin state (vlan_device_event, without loose_binding): a parent
// that goes down takes its vlans down, one that comes up brings every vlan
// on it up, those the file wants down included, and a vlan comes up only
// on a parent that is up (ENETDOWN). So such a vlan's update goes after
// its parent's: a vlan set up first would meet ENETDOWN, and one the file
// wants down is set down again, by an update of its own if it had none. A vlan on a parent that
// is cycled while up (it joins or leaves a vrf or a bond, or is a bond
// whose mode changes) goes down and up with it, and loses its IPv6
// addresses and routes, which the plan adds again. A vlan on such a vlan
// follows in turn (802.1ad under 802.1Q).
func (c *computer) vlansFollowParents(updates []Op) []Op {
	comesUp := map[string]bool{} // brought up, or cycled
	cycled := map[string]bool{}  // cycled while up
	for _, op := range updates {
		if op.LinkFields.State && op.Link.Up {
			comesUp[op.ID] = true
		}
		if c.cycledByMaster(op) || c.bondBounced(op) {
			comesUp[op.ID] = true
			h := c.a.Links[op.ID]
			cycled[op.ID] = h != nil && h.Up && (!op.LinkFields.State || op.Link.Up)
		}
	}
	if len(comesUp) == 0 {
		return updates
	}
	// Follow the vlans down the stack; a vlan goes after the vlan it is on
	// (depth), else in name order.
	var follow []string
	seen := map[string]bool{}
	for level := comesUp; len(level) > 0; {
		next := map[string]bool{}
		for _, name := range slices.Sorted(maps.Keys(c.d.Links)) {
			w := c.d.Links[name]
			if w.Kind != model.KindVLAN || w.VLAN == nil || !level[w.VLAN.Parent] || seen[name] || c.blocked[name] {
				continue
			}
			seen[name] = true
			if cycled[w.VLAN.Parent] {
				cycled[name] = true
				if h := c.a.Links[name]; h != nil && h.Up && !c.recreated[name] {
					c.downed[name] = true
				}
			}
			follow = append(follow, name)
			next[name] = true
		}
		level = next
	}
	c.cycledUp = cycled
	if len(follow) == 0 {
		return updates
	}
	depth := func(name string) int {
		n := 0
		for w := c.d.Links[name]; w != nil && w.Kind == model.KindVLAN && w.VLAN != nil && n <= len(c.d.Links); w = c.d.Links[w.VLAN.Parent] {
			n++
		}
		return n
	}
	sort.SliceStable(follow, func(i, j int) bool { return depth(follow[i]) < depth(follow[j]) })
	c.vlanFollows = map[string]bool{}
	for _, n := range follow {
		c.vlanFollows[n] = true
	}
	own := map[string]Op{}
	kept := updates[:0]
	for _, op := range updates {
		if c.vlanFollows[op.ID] {
			own[op.ID] = op
			continue
		}
		kept = append(kept, op)
	}
	for _, name := range follow {
		w := c.d.Links[name]
		op, had := own[name]
		if !w.Up && !op.LinkFields.State {
			if !had {
				op = Op{Action: Update, Kind: KindLink, ID: name, Link: w}
			}
			op.LinkFields.State = true
			op.Changes = append(op.Changes, Change{"state", "up (with its parent " + w.VLAN.Parent + ")", "down"})
			// Up with its parent, then down again: the kernel drops its
			// IPv6 addresses and routes on the way down.
			c.downed[name] = true
			had = true
		}
		if had {
			kept = append(kept, op)
		}
	}
	return kept
}

// mtuFollowsParent writes again, after its parent's update, the declared
// MTU of a child that the kernel resizes when its parent's MTU changes: an
// ipvlan takes its parent's MTU whatever it had (ipvlan_device_event,
// NETDEV_CHANGEMTU), a macvlan or a vlan is lowered to it when above it
// (macvlan_device_event, vlan_device_event): an ipvlan declared with MTU
// 1280 on a dummy whose MTU goes from 9000 to 1500 is left at 1500. A child's own
// MTU write goes after its parent's in any case: it cannot exceed the
// parent's MTU, which may be the one going up.
func (c *computer) mtuFollowsParent(updates []Op) []Op {
	// One move or one added write per round; a round starts again from the
	// new order. A child is moved only after its parent, so the rounds end.
	for range 2*len(c.d.Links) + 2 {
		idx := map[string]int{}
		for i, op := range updates {
			idx[op.ID] = i
		}
		changed := false
		for _, name := range slices.Sorted(maps.Keys(c.d.Links)) {
			w := c.d.Links[name]
			pi, ok := idx[w.Parent()]
			if !ok || w.MTU == 0 || c.blocked[name] {
				continue
			}
			parent := updates[pi]
			if !parent.LinkFields.MTU || parent.Link.MTU == 0 {
				continue
			}
			// The child's MTU when the parent's changes: its own, or, made
			// by this plan (the creates go before the updates), the
			// declared one.
			before := w.MTU
			if h := c.a.Links[name]; h != nil && !c.recreated[name] {
				before = h.MTU
			}
			after := parent.Link.MTU // what the kernel leaves the child with
			if w.Kind != model.KindIPVlan {
				after = min(before, parent.Link.MTU)
			}
			ci, has := idx[name]
			if has && updates[ci].LinkFields.MTU {
				if ci > pi {
					continue
				}
			} else if after == w.MTU {
				continue
			}
			op := Op{Action: Update, Kind: KindLink, ID: name, Link: w}
			if has {
				op = updates[ci]
				updates = slices.Delete(updates, ci, ci+1)
				if ci < pi {
					pi--
				}
			}
			if !op.LinkFields.MTU {
				op.LinkFields.MTU = true
				op.Changes = append(op.Changes, Change{"mtu", fmt.Sprintf("%d (with its parent %s)", after, w.Parent()), strconv.Itoa(w.MTU)})
			}
			updates = slices.Insert(updates, pi+1, op)
			changed = true
			break
		}
		if !changed {
			break
		}
	}
	return updates
}

// deferCreatedMTU makes the links this plan creates on a lower device
// whose MTU it raises (a vlan, macvlan or ipvlan on its parent, a vxlan on
// its device) without their MTU, and writes it in an update after the
// lower device's: the kernel refuses a child above its parent's MTU at
// creation (macvlan_common_newlink, EINVAL) and lowers a vxlan to its
// device's less the encapsulation (vxlan_config_apply), and creates run
// before updates. The MTU updates of vxlans are returned apart: they go
// after their device's update (afterLowerUpdate), the others follow their
// parent by mtuFollowsParent. One the file gives no MTU is made at its
// lower device's MTU from before the raise and given, in the same update,
// the one it would have been made at after it.
func (c *computer) deferCreatedMTU(creates, updates []Op) ([]Op, []Op, []Op) {
	raised := map[string]int{}
	for _, op := range updates {
		if op.LinkFields.MTU && op.Link.MTU != 0 {
			if h := c.a.Links[op.ID]; h != nil && op.Link.MTU > h.MTU {
				raised[op.ID] = h.MTU
			}
		}
	}
	if len(raised) == 0 {
		return creates, updates, nil
	}
	var vx []Op
	for i := range creates {
		w := creates[i].Link
		lower, headroom := w.Parent(), 0
		if w.VXLAN != nil {
			lower, headroom = w.VXLAN.Dev, vxlanHeadroom4
			if w.VXLAN.Remote.Is6() || w.VXLAN.Local.Is6() {
				headroom = vxlanHeadroom6
			}
		}
		was, ok := raised[lower]
		if ok && w.MTU == 0 && w.IPVlan == nil {
			// Made without an MTU, it takes its lower device's from
			// before the raise (less the encapsulation), and the kernel
			// does not raise it with the device: it is given the MTU it
			// would have been made at after the raise, the kernel's
			// choice the file asks for (an ipvlan follows its parent
			// both ways by itself).
			to := max(c.d.Links[lower].MTU-headroom, 68)
			if to <= was-headroom {
				continue
			}
			at := *w
			at.MTU = to
			op := Op{Action: Update, Kind: KindLink, ID: w.Name, Link: &at, LinkFields: LinkFields{MTU: true},
				Changes: []Change{{"mtu", lower + "'s, when made", strconv.Itoa(to) + " (" + lower + "'s, once raised)"}}}
			if w.VXLAN != nil {
				vx = append(vx, op)
			} else {
				updates = append(updates, op)
			}
			continue
		}
		if !ok || w.MTU == 0 || w.MTU <= was-headroom {
			continue
		}
		made := *w
		made.MTU = 0
		creates[i].Link = &made
		creates[i].Summary = linkSummary(&made)
		op := Op{Action: Update, Kind: KindLink, ID: w.Name, Link: w, LinkFields: LinkFields{MTU: true},
			Changes: []Change{{"mtu", lower + "'s, when made", strconv.Itoa(w.MTU)}}}
		if w.VXLAN != nil {
			vx = append(vx, op)
		} else {
			updates = append(updates, op)
		}
	}
	creates, updates, vx = c.deferGroupJoin(raised, creates, updates, vx)
	return creates, updates, vx
}

// deferGroupJoin sets up after its device's MTU update a vxlan that joins
// an IPv6 multicast group on a device this plan raises from below IPv6's
// minimum MTU: the kernel has no IPv6 on the device until the raise
// (addrconf_notify), and a vxlan set up joins its group on the device
// (vxlan_open), which fails there with EINVAL. A vxlan this plan makes is
// made down and set up in an update after its device's; one it sets up
// has that update moved there. raised are the devices' MTUs before the
// plan; vx the vxlans' updates that go after their device's
// (afterLowerUpdate).
func (c *computer) deferGroupJoin(raised map[string]int, creates, updates, vx []Op) ([]Op, []Op, []Op) {
	joins := func(l *model.Link) bool {
		v := l.VXLAN
		if v == nil || v.Dev == "" || !v.Remote.Is6() || !v.Remote.IsMulticast() || !l.Up {
			return false
		}
		was, ok := raised[v.Dev]
		return ok && was < ipv6MinMTU && c.d.Links[v.Dev].MTU >= ipv6MinMTU
	}
	up := Change{"state", "down (until its device has IPv6)", "up"}
	for i := range creates {
		w := creates[i].Link
		if !joins(w) {
			continue
		}
		made := *w
		made.Up = false
		creates[i].Link = &made
		j := slices.IndexFunc(vx, func(op Op) bool { return op.ID == w.Name })
		if j < 0 {
			vx = append(vx, Op{Action: Update, Kind: KindLink, ID: w.Name, Link: c.d.Links[w.Name]})
			j = len(vx) - 1
		}
		vx[j].LinkFields.State = true
		vx[j].Changes = append(vx[j].Changes, up)
	}
	for i := 0; i < len(updates); i++ {
		if op := updates[i]; op.LinkFields.State && joins(op.Link) {
			vx = append(vx, op)
			updates = slices.Delete(updates, i, i+1)
			i--
		}
	}
	return creates, updates, vx
}

// afterLowerUpdate puts each op of ops (a vxlan's MTU update) right after
// the update of its vxlan's device.
func (c *computer) afterLowerUpdate(updates, ops []Op) []Op {
	for _, op := range ops {
		at := len(updates)
		for i := range updates {
			if updates[i].ID == op.Link.VXLAN.Dev {
				at = i + 1
			}
		}
		updates = slices.Insert(updates, at, op)
	}
	return updates
}

// bondBounced reports whether an update changes the mode of a bond that is
// up: the kernel takes the change only while the bond is down, so the bond
// goes down for it (kernel.ChangeLink), and loses its IPv6 addresses and
// routes on the way.
func (c *computer) bondBounced(op Op) bool {
	h := c.a.Links[op.ID]
	return op.LinkFields.Kind && op.Link.Bond != nil && h != nil && h.Bond != nil && h.Up && h.Bond.Mode != op.Link.Bond.Mode
}

// releasedFromBond completes an update that takes a link out of a bond
// with what the bonding driver undoes when it releases a member
// (__bond_release_one):
//   - it closes the member, so a link the file wants up is set up again;
//   - it gives the member back the MTU it had when it joined (the bond
//     had set its own), so a declared MTU is written again, after the
//     release (a port of a 9000-byte bond, declared with MTU 9000 once
//     out of it, would be left at 1500, its MTU before it joined).
func (c *computer) releasedFromBond(op *Op) {
	h := c.a.Links[op.ID]
	if !op.LinkFields.Master || h == nil || h.Master == "" || h.Master == op.Link.Master {
		return
	}
	if m := c.a.Links[h.Master]; m == nil || m.Kind != model.KindBond {
		return
	}
	if !op.LinkFields.State && op.Link.Up {
		op.LinkFields.State = true
		op.Changes = append(op.Changes, Change{"state", "down (released from bond " + h.Master + ")", "up"})
	}
	if op.Link.MTU != 0 {
		if !op.LinkFields.MTU {
			op.LinkFields.MTU = true
			op.Changes = append(op.Changes, Change{"mtu", strconv.Itoa(h.MTU) + " (bond " + h.Master + "'s, until released)", strconv.Itoa(op.Link.MTU)})
		}
		op.LinkFields.MTUAfterMaster = true
	}
}

// pinMasterMTUs lists the declared masters with an MTU whose ports this plan adds,
// removes or changes (see Plan.PinMTU), and returns the masters of those
// ports, declared MTU or not.
func (c *computer) pinMasterMTUs(creates, updates, early []Op) map[string]bool {
	touched := map[string]bool{}
	for _, op := range creates {
		touched[op.Link.Master] = true
	}
	for _, op := range updates {
		if op.LinkFields.Master || op.LinkFields.MTU {
			touched[op.Link.Master] = true
			if l := c.a.Links[op.ID]; l != nil {
				touched[l.Master] = true
			}
		}
	}
	for _, op := range append(early, c.linkDeletes...) {
		touched[op.Link.Master] = true
	}
	for _, name := range c.d.SortedLinkNames() {
		if l := c.d.Links[name]; touched[name] && l.MTU != 0 && !c.blocked[name] {
			c.plan.PinMTU = append(c.plan.PinMTU, l)
		}
	}
	return touched
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
	// A child (a slave, an ipvlan, a vxlan on a device) goes before its
	// parent, and a child of either end of a veth pair before the pair:
	// deleting a veth takes its peer, so the peer gets no op of its own.
	dl := deleteLevels(c.a.Links)
	sort.SliceStable(stale, func(i, j int) bool { return dl[stale[i].Name] > dl[stale[j].Name] })
	deleted := map[string]bool{}
	for _, l := range stale {
		if deleted[l.Name] {
			continue
		}
		// A veth whose peer this plan recreates goes with the old pair
		// (unless the recreate is left out: see leaveOutDependents).
		if l.Veth != nil && l.Veth.Peer != "" && c.recreated[l.Veth.Peer] {
			if c.goesWithPeer == nil {
				c.goesWithPeer = map[string]string{}
			}
			c.goesWithPeer[l.Name] = l.Veth.Peer
			c.linkGoes[l.Name] = true
			continue
		}
		// A veth whose peer stays declared as a veth paired with it lives
		// on as that end's undeclared peer: deleting it would delete the
		// declared end too, and the next pass would create it again.
		if l.Veth != nil && l.Veth.Peer != "" {
			if p := c.d.Links[l.Veth.Peer]; p != nil && p.Veth != nil && p.Veth.PeerNetNS == "" && p.Veth.Peer == l.Name && !c.recreated[p.Name] {
				continue
			}
		}
		if c.foreignChildren(l.Name) {
			continue
		}
		deleted[l.Name] = true
		c.linkGoes[l.Name] = true
		op := Op{Action: Delete, Kind: KindLink, ID: l.Name, Summary: l.Kind, Link: l}
		if l.Veth != nil && l.Veth.Peer != "" && gone[l.Veth.Peer] {
			deleted[l.Veth.Peer] = true
			c.linkGoes[l.Veth.Peer] = true
			op.Summary = "veth, with its peer " + l.Veth.Peer
		}
		c.linkDeletes = append(c.linkDeletes, op)
	}
}

// recreateChildren follows the recreation of links to what the kernel does
// with it: a link on a recreated link (a vxlan on it, an ipvlan or macvlan
// above it, on either end of a recreated veth pair) is deleted with it, so
// it is recreated too, in the same plan; a port of a recreated bridge is
// released, so it is enslaved again. Without this the plan would converge
// only on the next pass.
func (c *computer) recreateChildren(creates, updates []Op) ([]Op, []Op) {
	gone := func(n string) bool {
		if n == "" {
			return false
		}
		if c.recreated[n] {
			return true
		}
		l := c.a.Links[n]
		return l != nil && l.Veth != nil && l.Veth.Peer != "" && c.recreated[l.Veth.Peer]
	}
	dropUpdate := func(name string) {
		for i := range updates {
			if updates[i].ID == name {
				updates = append(updates[:i], updates[i+1:]...)
				return
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, name := range c.d.SortedLinkNames() {
			want, have := c.d.Links[name], c.a.Links[name]
			if have == nil || c.recreated[name] || c.blocked[name] || want.Kind == model.KindDevice || !have.Owned && !want.Adopt {
				continue
			}
			var lower string
			switch {
			case have.Lower != "":
				lower = have.Lower
			case have.VXLAN != nil:
				lower = have.VXLAN.Dev
			case have.Parent() != "":
				lower = have.Parent()
			}
			if !gone(lower) {
				continue
			}
			dropUpdate(name)
			c.recreated[name] = true
			creates = append(creates, Op{Action: Replace, Kind: KindLink, ID: name, Summary: linkSummary(want), Reason: "the kernel deletes it with " + lower + ", which is recreated", Link: want})
			changed = true
		}
	}
	for _, name := range c.d.SortedLinkNames() {
		want := c.d.Links[name]
		if want.Master == "" || !c.recreated[want.Master] || c.recreated[name] || c.blocked[name] || c.a.Links[name] == nil {
			continue
		}
		ch := Change{Field: "master", From: "none (" + want.Master + " is recreated)", To: want.Master}
		found := false
		for i := range updates {
			if updates[i].ID == name {
				found = true
				if !updates[i].LinkFields.Master {
					updates[i].Changes = append(updates[i].Changes, ch)
					updates[i].LinkFields.Master = true
				}
			}
		}
		if !found {
			updates = append(updates, Op{Action: Update, Kind: KindLink, ID: name, Changes: []Change{ch}, Link: want, LinkFields: LinkFields{Master: true}})
		}
	}
	return creates, updates
}

// recreatesWait withdraws each recreate of creates (a change of kind, or
// of an attribute fixed at creation) that would take with it a link in
// conflict or held: deleting the old link, the kernel deletes the links on
// it and the other end of its veth pair, and releases its ports
// (takenWith), and recreateChildren makes again only those not left as
// they are. The recreate waits, as a delete does (opNeeds), and the link is
// left as it is, with what needs it. A link is in conflict for the links
// it needs too, so what is blocked is spread first, and again after each
// withdrawal (a link on one withdrawn is left out with it).
func (c *computer) recreatesWait(creates []Op) []Op {
	for changed := true; changed; {
		changed = false
		c.spreadBlocked()
		for i := 0; i < len(creates); i++ {
			op := creates[i]
			if op.Action != Replace {
				continue
			}
			n := c.takesBlocked(op.ID)
			if n == "" {
				continue
			}
			creates = slices.Delete(creates, i, i+1)
			delete(c.recreated, op.ID)
			i--
			c.blockLink(op.ID)
			why := "in conflict"
			if c.heldLinks[n] {
				why = "held"
				c.heldLinks[op.ID] = true
			}
			c.leftOut(n, "link %s is not recreated (%s): the kernel would %s with it, which is %s", op.ID, op.Reason, c.takenHow(op.ID, n), why)
			changed = true
		}
	}
	return creates
}

// takesBlocked returns a link in conflict or held that deleting the link
// name would take with it (takenWith), "" when there is none.
func (c *computer) takesBlocked(name string) string {
	for _, n := range c.takenWith(name) {
		if c.blocked[n] {
			return n
		}
	}
	return ""
}

// adopted reports whether a declared link is one netreconcile never
// recreates: a link it did not make (no marker), or one the file declares
// with adopt: true. An adopted link takes the marker in its first apply, so
// from then on the file's adopt is what tells it from a link netreconcile
// made.
func adopted(want, have *model.Link) bool { return !have.Owned || want.Adopt }

// adoptedWhat says why a link is adopted, for a conflict.
func adoptedWhat(have *model.Link) string {
	if !have.Owned {
		return "adopted, not created by netreconcile"
	}
	return "adopted (the file says adopt: true)"
}

// adoptedWayOut is what a conflict over an adopted link offers: a link
// that carries the marker is recreated by netreconcile once the file no
// longer adopts it.
func adoptedWayOut(have *model.Link) string {
	if !have.Owned {
		return "recreate it yourself or keep its settings"
	}
	return "recreate it yourself, keep its settings, or drop its adopt: true to let netreconcile recreate it (it carries the marker)"
}

// willReplace reports whether the plan recreates an existing link of ours
// (a change of kind, or of an attribute fixed at creation).
func (c *computer) willReplace(name string) bool {
	want, have := c.d.Links[name], c.a.Links[name]
	if want == nil || have == nil || adopted(want, have) || want.Kind == model.KindDevice {
		return false
	}
	return have.Kind != want.Kind || c.fixedChange(want, have) != ""
}

// foreignChildren reports (as a conflict) the links netreconcile does not
// own that deleting or recreating the link name would delete or change: a
// vxlan on it, an ipvlan, macvlan or vlan whose lower link it is (on either
// end of a veth pair, since the pair goes whole), and a port enslaved to it
// (released from its master). What goes with the link goes with its own
// children too (recreateChildren makes those of ours again), so the links on
// them count as well. The links the file adopts count among them for what
// the kernel would delete, the other end of a veth pair included: an
// adopted link is never recreated.
func (c *computer) foreignChildren(name string) bool {
	ends, goes := c.goesWith(name)
	var kids, ports, adoptedKids []string
	for _, n := range c.a.SortedLinkNames() {
		l := c.a.Links[n]
		switch {
		case n == name:
		case goes[n] && c.adoptedByFile(n):
			adoptedKids = append(adoptedKids, n)
		case l.Owned || ends[n]:
		case goes[n]:
			kids = append(kids, n)
		case ends[l.Master]:
			// A port the file declares on this master (a device link,
			// which is never owned) is enslaved again by this plan
			// (recreateChildren): not foreign to it.
			if d := c.d.Links[n]; d != nil && d.Master == l.Master {
				continue
			}
			ports = append(ports, n)
		}
	}
	remote := c.remoteChildren(name)
	if len(kids) == 0 && len(ports) == 0 && len(adoptedKids) == 0 {
		return remote
	}
	c.blockLink(name)
	if len(adoptedKids) > 0 {
		c.conflict("link %s cannot be deleted or recreated: the kernel would delete %v with it, which the file adopts, and an adopted link is never recreated; keep %s as it is, or drop their adopt: true", name, adoptedKids, name)
	}
	if len(kids) > 0 {
		c.conflict("link %s cannot be deleted or recreated: the kernel would delete %v with it, which netreconcile did not create; delete them first or keep %s as it is", name, kids, name)
	}
	if len(ports) > 0 {
		c.conflict("link %s cannot be deleted or recreated: the kernel would release %v from it, which netreconcile did not enslave; release them first or keep %s as it is", name, ports, name)
	}
	return true
}

// goesWith returns what the kernel deletes when it deletes the link name:
// ends is the link and the other end of its veth pair, goes those and the
// links on them (a vxlan whose device one is, an ipvlan, macvlan or vlan
// whose lower link one is), and the links on those in turn, with their
// veth peers.
func (c *computer) goesWith(name string) (ends, goes map[string]bool) {
	ends = map[string]bool{name: true}
	if l := c.a.Links[name]; l != nil && l.Veth != nil && l.Veth.Peer != "" {
		ends[l.Veth.Peer] = true
	}
	goes = maps.Clone(ends)
	for grew := true; grew; {
		grew = false
		for n, l := range c.a.Links {
			if goes[n] || !(goes[l.Lower] || l.VXLAN != nil && goes[l.VXLAN.Dev] || goes[l.Parent()]) {
				continue
			}
			goes[n], grew = true, true
			if l.Veth != nil && l.Veth.Peer != "" {
				goes[l.Veth.Peer] = true
			}
		}
	}
	return ends, goes
}

// takenWith lists the other links a delete of the link name changes in
// the kernel: the links it deletes with it (goesWith), and the ports it
// and they release from their masters, in name order.
func (c *computer) takenWith(name string) []string {
	_, goes := c.goesWith(name)
	var out []string
	for _, n := range c.a.SortedLinkNames() {
		if n != name && (goes[n] || goes[c.a.Links[n].Master]) {
			out = append(out, n)
		}
	}
	return out
}

// foreignOnParent reports (as a conflict) the links netreconcile neither
// made nor declares on the parent of the ipvlan or macvlan want that make
// the kernel refuse want, or that want would change.
func (c *computer) foreignOnParent(want *model.Link) bool {
	return c.foreignIPVlanMode(want) || c.foreignParentClaim(want)
}

// foreignParentClaim reports (as a conflict) the foreign links on the
// parent of the ipvlan or macvlan want that the kernel will not share it
// with. A parent has one receive handler, which the ipvlans or the
// macvlans on it share (EBUSY for the other kind), and a passthru macvlan
// takes it alone: none is made beside another macvlan, nor another beside
// it (macvlan_common_newlink, EINVAL).
func (c *computer) foreignParentClaim(want *model.Link) bool {
	var parent string
	switch {
	case want.IPVlan != nil:
		parent = want.IPVlan.Parent
	case want.MACVlan != nil:
		parent = want.MACVlan.Parent
	default:
		return false
	}
	var others []string
	why := ""
	for _, n := range c.a.SortedLinkNames() {
		l := c.a.Links[n]
		if l.Owned || c.d.Links[n] != nil {
			continue
		}
		if r, other := parentRefuses(want, parent, l); r != "" {
			others, why = append(others, n+" ("+other+")"), r
		}
	}
	if len(others) == 0 {
		return false
	}
	c.blockLink(want.Name)
	c.conflict("link %s cannot be made on %s: the kernel refuses it beside %v, which netreconcile did not create (%s); delete them, or give %s another parent", want.Name, parent, others, why, want.Name)
	return true
}

// parentRefuses says why the kernel refuses to make the ipvlan or macvlan
// want on parent beside the link l there ("" if it does not), with how l
// is named in the reason.
func parentRefuses(want *model.Link, parent string, l *model.Link) (why, other string) {
	switch {
	case l.MACVlan != nil && l.MACVlan.Parent == parent && want.IPVlan != nil,
		l.IPVlan != nil && l.IPVlan.Parent == parent && want.MACVlan != nil:
		return "a parent takes ipvlans or macvlans, not both", string(l.Kind)
	case l.MACVlan != nil && l.MACVlan.Parent == parent && want.MACVlan != nil &&
		(want.MACVlan.Mode == model.MACVlanPassthru || l.MACVlan.Mode == model.MACVlanPassthru):
		return "a passthru macvlan is the only macvlan on its parent", "macvlan mode " + l.MACVlan.Mode
	}
	return "", ""
}

// claimRefuses says why the kernel refuses to make the link want beside
// the link l, which it keeps ("" if it does not), with how l is named in
// the reason: what a parent gives one ipvlan or macvlan claim
// (parentRefuses), one vlan per id and protocol on a parent
// (vlan_check_real_dev: EEXIST), one vxlan per id, port and family in a
// namespace (vxlan_config_validate: EEXIST).
func claimRefuses(want, l *model.Link) (why, other string) {
	switch {
	case want.IPVlan != nil:
		return parentRefuses(want, want.IPVlan.Parent, l)
	case want.MACVlan != nil:
		return parentRefuses(want, want.MACVlan.Parent, l)
	case want.VLAN != nil && l.VLAN != nil:
		if w, h := want.VLAN, l.VLAN; w.Parent == h.Parent && w.ID == h.ID && w.Protocol == h.Protocol {
			return "a parent takes one vlan of an id", fmt.Sprintf("vlan id %d", h.ID)
		}
	case want.VXLAN != nil && l.VXLAN != nil:
		if w, h := want.VXLAN, l.VXLAN; w.ID == h.ID && vxlanPort(w) == vxlanPort(h) && vxlanIs6(w) == vxlanIs6(h) {
			return "a namespace takes one vxlan of an id and port", fmt.Sprintf("vxlan id %d dstport %d", h.ID, vxlanPort(h))
		}
	}
	return "", ""
}

// vxlanPort is the UDP port of v, the kernel's default when it has none.
func vxlanPort(v *model.VXLAN) uint16 {
	if v.Port == 0 {
		return 8472
	}
	return v.Port
}

// keptFor returns the link left out (in conflict or held) that keeps the
// kernel's link n where it is: n itself, or, for a stale link of ours, a
// link left out that deleting n would take with it (its delete waits:
// keepUnblocked). "" when n goes or changes as the plan says.
func (c *computer) keptFor(n string) string {
	if c.blocked[n] {
		return n
	}
	if l := c.a.Links[n]; l != nil && l.Owned && c.d.Links[n] == nil {
		return c.takesBlocked(n)
	}
	return ""
}

// leftOutBeside leaves out, with what needs it, each link the plan makes
// (or recreates) that the kernel refuses beside a link a left-out link
// keeps where it is (claimRefuses): the delete that made room for it
// waits with that link. It reports whether it left any out.
func (c *computer) leftOutBeside() bool {
	grew := false
	for _, name := range c.d.SortedLinkNames() {
		w := c.d.Links[name]
		if c.blocked[name] || (c.a.Links[name] != nil && !c.recreated[name]) {
			continue
		}
		for _, n := range c.a.SortedLinkNames() {
			if n == name {
				continue
			}
			why, _ := claimRefuses(w, c.a.Links[n])
			if why == "" {
				continue
			}
			by := c.keptFor(n)
			if by == "" {
				continue
			}
			c.blockLink(name)
			delete(c.recreated, name)
			if c.heldLinks[by] {
				c.heldLinks[name] = true
			}
			stays := "which stays as it is"
			if by != n {
				stays = "which stays with " + by
			}
			c.leftOut(by, "link %s is left out: the kernel refuses it beside %s, %s (%s)", name, n, stays, why)
			grew = true
			break
		}
	}
	return grew
}

// adoptedByFile reports whether the link name exists with the marker and
// the file declares it with adopt: true.
func (c *computer) adoptedByFile(name string) bool {
	w, h := c.d.Links[name], c.a.Links[name]
	return w != nil && h != nil && h.Owned && w.Adopt
}

// foreignIPVlanMode reports (as a conflict) the ipvlans netreconcile
// neither made nor declares on the parent of the ipvlan want, in another
// mode. The kernel keeps one mode per parent and sets it from every ipvlan
// it makes there (ipvlan_link_new): making want would change theirs.
func (c *computer) foreignIPVlanMode(want *model.Link) bool {
	if want.IPVlan == nil {
		return false
	}
	var others []string
	for _, n := range c.a.SortedLinkNames() {
		l := c.a.Links[n]
		if l.Owned || c.d.Links[n] != nil || l.IPVlan == nil || l.IPVlan.Parent != want.IPVlan.Parent || l.IPVlan.Mode == want.IPVlan.Mode {
			continue
		}
		others = append(others, n+" ("+l.IPVlan.Mode+")")
	}
	if len(others) == 0 {
		return false
	}
	c.blockLink(want.Name)
	c.conflict("link %s cannot be made in mode %s on %s: the kernel keeps one ipvlan mode per parent and would set it on %v too, which netreconcile did not create; give %s their mode, or another parent", want.Name, want.IPVlan.Mode, want.IPVlan.Parent, others, want.Name)
	return true
}

// remoteChildren is foreignChildren for the peer of a veth end in another
// namespace, which goes with the pair: every link there on the peer (a
// macvlan on it, a port of it, a vxlan on it) is deleted or released by the
// kernel, and none of them is this namespace's to change. A peer side that
// could not be read is a conflict too: nobody can tell what would go.
func (c *computer) remoteChildren(name string) bool {
	l := c.a.Links[name]
	if l == nil || l.Veth == nil || l.Veth.Remote == nil {
		return false
	}
	rp := l.Veth.Remote
	if rp.Unreadable != "" {
		c.blockLink(name)
		c.conflict("link %s cannot be deleted or recreated: its peer is in another namespace, whose links cannot be read (%s), so what the kernel would delete with it is unknown; delete it yourself", name, rp.Unreadable)
		return true
	}
	var kids, ports []string
	for _, o := range rp.Links {
		switch {
		case o.Name == rp.Name:
		case o.Lower == rp.Name || o.VXLAN != nil && o.VXLAN.Dev == rp.Name || o.Parent() == rp.Name:
			kids = append(kids, o.Name)
		case o.Master == rp.Name:
			ports = append(ports, o.Name)
		}
	}
	if len(kids) == 0 && len(ports) == 0 {
		return false
	}
	sort.Strings(kids)
	sort.Strings(ports)
	c.blockLink(name)
	if len(kids) > 0 {
		c.conflict("link %s cannot be deleted or recreated: the kernel would delete %v in namespace %s with its peer %s, which this namespace's file does not manage; delete them first or keep %s as it is", name, kids, rp.NetNS, rp.Name, name)
	}
	if len(ports) > 0 {
		c.conflict("link %s cannot be deleted or recreated: the kernel would release %v in namespace %s from its peer %s, which this namespace's file does not manage; release them first or keep %s as it is", name, ports, rp.NetNS, rp.Name, name)
	}
	return true
}

// deleteLevels ranks the kernel's links for deletion: a link ranks above
// every link it needs (its master, lower link, vxlan device), and the two
// ends of a veth pair count as one, since the kernel deletes them together.
// Deleting in decreasing rank deletes children first.
func deleteLevels(all map[string]*model.Link) map[string]int {
	needs := func(l *model.Link) []string {
		ps := parents(l)
		if l.Lower != "" {
			ps = append(ps, l.Lower)
		}
		if l.Veth != nil && l.Veth.Peer != "" {
			if p := all[l.Veth.Peer]; p != nil {
				ps = append(ps, parents(p)...)
				if p.Lower != "" {
					ps = append(ps, p.Lower)
				}
			}
		}
		return ps
	}
	level := map[string]int{}
	var lv func(name string, seen map[string]bool) int
	lv = func(name string, seen map[string]bool) int {
		if d, ok := level[name]; ok {
			return d
		}
		l := all[name]
		if l == nil || seen[name] {
			return -1
		}
		seen[name] = true
		d := 0
		for _, n := range needs(l) {
			if n == name || l.Veth != nil && n == l.Veth.Peer {
				continue
			}
			if x := lv(n, seen) + 1; x > d {
				d = x
			}
		}
		level[name] = d
		return d
	}
	for name := range all {
		lv(name, map[string]bool{})
	}
	return level
}

// parents lists the links l needs before it can exist or be configured.
func parents(l *model.Link) []string {
	var ps []string
	if l.Master != "" {
		ps = append(ps, l.Master)
	}
	if p := l.Parent(); p != "" {
		ps = append(ps, p)
	}
	if l.VXLAN != nil && l.VXLAN.Dev != "" {
		ps = append(ps, l.VXLAN.Dev)
	}
	return ps
}

// orderByDependency sorts creates so that every link comes after the links
// it needs (its master, its parent, and for the end of a veth pair that is
// only configured, the end whose op creates the pair); ties keep name order.
// A level is computed over these edges, not a depth in one tree: the
// configured end of a pair whose creating end is enslaved ranks after that
// end, whatever its own depth.
func orderByDependency(ops []Op, all map[string]*model.Link) []Op {
	byName := make(map[string]*Op, len(ops))
	for i := range ops {
		byName[ops[i].ID] = &ops[i]
	}
	level := map[string]int{}
	var lv func(name string, seen map[string]bool) int
	lv = func(name string, seen map[string]bool) int {
		if l, ok := level[name]; ok {
			return l
		}
		op := byName[name]
		if op == nil || seen[name] {
			return -2 // exists already, or a cycle the validator reports
		}
		seen[name] = true
		// A link ranks two after what it needs; the configured end of a
		// pair one after the creating end, so it is marked and configured
		// right after the pair exists, before the links on the pair.
		l := 0
		for _, n := range parents(op.Link) {
			if d := lv(n, seen) + 2; d > l {
				l = d
			}
		}
		if op.PeerOfPair {
			if d := lv(op.Link.Veth.Peer, seen) + 1; d > l {
				l = d
			}
		}
		level[name] = l
		return l
	}
	for i := range ops {
		lv(ops[i].ID, map[string]bool{})
	}
	sort.SliceStable(ops, func(i, j int) bool { return level[ops[i].ID] < level[ops[j].ID] })
	return ops
}

// fixedChange names the first attribute that differs and that the kernel
// fixes at creation ("" if none).
func (c *computer) fixedChange(want, have *model.Link) string {
	switch want.Kind {
	case model.KindVXLAN:
		w, h := want.VXLAN, have.VXLAN
		if h == nil {
			return "vxlan attributes unreadable"
		}
		// The kernel changes a vxlan's local, remote, ttl and learning in
		// place (vxlan_changelink, 6.1 as 6.18: kindChanges), but refuses
		// a new id ("Cannot change VNI") or port ("Cannot change port"),
		// and an address of the other family (EOPNOTSUPP: a vxlan without
		// addresses is IPv4). Changed in place, a multicast group is left
		// and joined on the device only by newer kernels (6.1 keeps the
		// old membership while the link is up), and a dev is taken away
		// only in part (the kernel keeps the old one as its lower device)
		// and a new one lowers the MTU to fit without a word: those are
		// made again. TestVXLANInPlace (guest) holds each.
		switch {
		case w.ID != h.ID:
			return fmt.Sprintf("vxlan id %d -> %d", h.ID, w.ID)
		case w.Port != h.Port:
			return fmt.Sprintf("vxlan port %d -> %d", h.Port, w.Port)
		case vxlanIs6(w) != vxlanIs6(h):
			return fmt.Sprintf("vxlan family %s -> %s", vxlanFamily(h), vxlanFamily(w))
		case w.Remote != h.Remote && (w.Remote.IsMulticast() || h.Remote.IsMulticast()):
			return fmt.Sprintf("vxlan group %s -> %s", addrStr(h.Remote), addrStr(w.Remote))
		case w.Dev != h.Dev:
			return fmt.Sprintf("vxlan dev %s -> %s", orNone(h.Dev), orNone(w.Dev))
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
		// The kernel changes a tunnel's endpoints, ttl, mode and
		// encapsulation in place (ip_tunnel_changelink,
		// ip6_tnl_changelink: kindChanges), but not: a flow-based
		// (collect_md) device, which refuses every change; an ipip whose
		// remote comes or goes, which would turn it from point-to-point
		// to not or back (EINVAL). TestTunnelInPlace (guest) holds each.
		switch {
		case w.External != h.External:
			return fmt.Sprintf("external %t -> %t", h.External, w.External)
		case w.External && w.Mode != h.Mode:
			return fmt.Sprintf("mode %s -> %s of a flow-based tunnel", h.Mode, w.Mode)
		case want.Kind == model.KindIPIP && w.Remote.IsValid() != h.Remote.IsValid():
			return fmt.Sprintf("remote %s -> %s", addrStr(h.Remote), addrStr(w.Remote))
		}
	case model.KindVLAN:
		w, h := want.VLAN, have.VLAN
		if h == nil {
			return "vlan attributes unreadable"
		}
		switch {
		case w.Parent != h.Parent:
			return fmt.Sprintf("vlan parent %s -> %s", orNone(h.Parent), w.Parent)
		case w.ID != h.ID:
			return fmt.Sprintf("vlan id %d -> %d", h.ID, w.ID)
		case w.Protocol != h.Protocol:
			return fmt.Sprintf("vlan protocol %s -> %s", h.Protocol, w.Protocol)
		}
	case model.KindMACVlan:
		w, h := want.MACVlan, have.MACVlan
		if h == nil {
			return "macvlan attributes unreadable"
		}
		switch {
		case w.Parent != h.Parent:
			return fmt.Sprintf("macvlan parent %s -> %s", orNone(h.Parent), w.Parent)
		case w.Mode != h.Mode && (w.Mode == model.MACVlanPassthru || h.Mode == model.MACVlanPassthru):
			// Other modes change in place; the kernel refuses a change
			// into or out of passthru (EINVAL).
			return fmt.Sprintf("macvlan mode %s -> %s (into or out of passthru)", h.Mode, w.Mode)
		}
	case model.KindVRF:
		if h := have.VRF; h == nil {
			return "vrf attributes unreadable"
		} else if h.Table != want.VRF.Table {
			return fmt.Sprintf("vrf table %d -> %d", h.Table, want.VRF.Table)
		}
	case model.KindBond:
		h := have.Bond
		if h == nil {
			return "bond attributes unreadable"
		}
		// The bonding driver changes a bond's mode only while it has no
		// members (BOND_OPTFLAG_NOSLAVES): releasing them would be a
		// replace in all but the ifindex, so a bond with members is
		// recreated, and its members enslaved again.
		if h.Mode != want.Bond.Mode && c.hasPorts(want.Name) {
			return fmt.Sprintf("bond mode %s -> %s (the kernel changes it only on a bond without members)", h.Mode, want.Bond.Mode)
		}
	case model.KindVeth:
		if want.Veth.PeerNetNS == "" && have.Veth != nil && have.Veth.Peer != "" && have.Veth.Peer != want.Veth.Peer {
			return fmt.Sprintf("veth peer %s -> %s", have.Veth.Peer, want.Veth.Peer)
		}
		// A peer in another namespace brought here, whatever its name: a
		// new pair (the kernel names no peer for an end whose peer is
		// elsewhere, so the name alone says nothing).
		if h := have.Veth; want.Veth.PeerNetNS == "" && h != nil && (h.Remote != nil || h.PeerNetNS != "" || h.Peer == "" && h.PeerNSID >= 0) {
			from := "another namespace"
			if r := have.Veth.Remote; r != nil && r.Name != "" {
				from = r.Name + " in " + r.NetNS
			}
			return fmt.Sprintf("veth peer %s -> %s here", from, want.Veth.Peer)
		}
		// A peer in another namespace is named there: a new name (or
		// namespace) is a new pair, as for a peer here.
		if want.Veth.PeerNetNS != "" && have.Veth != nil && have.Veth.Remote != nil && have.Veth.Remote.Unreadable == "" && have.Veth.Remote.Name != "" &&
			(have.Veth.Remote.Name != want.Veth.Peer || have.Veth.Remote.NetNS != want.Veth.PeerNetNS) {
			return fmt.Sprintf("veth peer %s in %s -> %s in %s", have.Veth.Remote.Name, have.Veth.Remote.NetNS, want.Veth.Peer, want.Veth.PeerNetNS)
		}
	}
	return ""
}

// vxlanIs6 reports whether a vxlan is of IPv6: the kernel takes the family
// from its remote or local address, IPv4 without either.
func vxlanIs6(v *model.VXLAN) bool { return v.Remote.Is6() || v.Local.Is6() }

func vxlanFamily(v *model.VXLAN) string {
	if vxlanIs6(v) {
		return "IPv6"
	}
	return "IPv4"
}

// hasPorts reports whether some link is enslaved to name now.
func (c *computer) hasPorts(name string) bool {
	for _, l := range c.a.Links {
		if l.Master == name {
			return true
		}
	}
	return false
}

// kindChanges lists the attributes of the link's kind that change in place
// (fixedChange has ruled out the others).
func kindChanges(want, have *model.Link) []Change {
	var ch []Change
	switch {
	case want.MACVlan != nil && have.MACVlan != nil:
		if want.MACVlan.Mode != have.MACVlan.Mode {
			ch = append(ch, Change{"macvlan mode", have.MACVlan.Mode, want.MACVlan.Mode})
		}
	case want.Tunnel != nil && have.Tunnel != nil && !want.Tunnel.External:
		w, h := want.Tunnel, have.Tunnel
		if w.Local != h.Local {
			ch = append(ch, Change{"local", addrStr(h.Local), addrStr(w.Local)})
		}
		if w.Remote != h.Remote {
			ch = append(ch, Change{"remote", addrStr(h.Remote), addrStr(w.Remote)})
		}
		if w.TTL != h.TTL {
			ch = append(ch, Change{"ttl", strconv.Itoa(int(h.TTL)), strconv.Itoa(int(w.TTL))})
		}
		if w.Mode != h.Mode {
			ch = append(ch, Change{"mode", h.Mode, w.Mode})
		}
		if encapStr(w.Encap) != encapStr(h.Encap) {
			ch = append(ch, Change{"encap", strings.TrimPrefix(encapStr(h.Encap), "encap "), strings.TrimPrefix(encapStr(w.Encap), "encap ")})
		}
	case want.VXLAN != nil && have.VXLAN != nil:
		w, h := want.VXLAN, have.VXLAN
		if w.Local != h.Local {
			ch = append(ch, Change{"vxlan local", addrStr(h.Local), addrStr(w.Local)})
		}
		if w.Remote != h.Remote {
			ch = append(ch, Change{"vxlan remote", addrStr(h.Remote), addrStr(w.Remote)})
		}
		if w.TTL != h.TTL {
			ch = append(ch, Change{"vxlan ttl", strconv.Itoa(int(h.TTL)), strconv.Itoa(int(w.TTL))})
		}
		if w.Learning != h.Learning {
			ch = append(ch, Change{"vxlan learning", strconv.FormatBool(h.Learning), strconv.FormatBool(w.Learning)})
		}
	case want.Bond != nil && have.Bond != nil:
		if want.Bond.Mode != have.Bond.Mode {
			ch = append(ch, Change{"bond mode", have.Bond.Mode, want.Bond.Mode})
		}
		if want.Bond.Miimon != have.Bond.Miimon {
			ch = append(ch, Change{"bond miimon", strconv.Itoa(int(have.Bond.Miimon)), strconv.Itoa(int(want.Bond.Miimon))})
		}
	}
	return ch
}

// linkChanges lists the attributes that change in place, as shown and as
// written. For links netreconcile owns every attribute is enforced; for
// device links only those the file sets.
func linkChanges(want, have *model.Link, owned bool) ([]Change, LinkFields) {
	var ch []Change
	var f LinkFields
	if owned && want.Kind == have.Kind {
		if kc := kindChanges(want, have); len(kc) > 0 {
			f.Kind = true
			ch = append(ch, kc...)
		}
	}
	if want.MTU != 0 && want.MTU != have.MTU {
		f.MTU = true
		ch = append(ch, Change{"mtu", strconv.Itoa(have.MTU), strconv.Itoa(want.MTU)})
	}
	if (owned || want.Master != "") && want.Master != have.Master {
		f.Master = true
		ch = append(ch, Change{"master", have.Master, want.Master})
	}
	if (owned || want.Alias != "") && (want.Alias != have.Alias || owned && !have.Owned) {
		f.Alias = true
		ch = append(ch, Change{"alias", have.Alias, want.Alias})
	}
	if (owned || want.StateSet) && want.Up != have.Up {
		f.State = true
		ch = append(ch, Change{"state", upWord(have.Up), upWord(want.Up)})
	}
	return ch, f
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
	case l.VLAN != nil:
		s += fmt.Sprintf(" parent %s id %d protocol %s", l.VLAN.Parent, l.VLAN.ID, l.VLAN.Protocol)
	case l.MACVlan != nil:
		s += " parent " + l.MACVlan.Parent + " mode " + l.MACVlan.Mode
	case l.VRF != nil:
		s += fmt.Sprintf(" table %d", l.VRF.Table)
	case l.Bond != nil:
		s += fmt.Sprintf(" mode %s miimon %d", l.Bond.Mode, l.Bond.Miimon)
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

// encapStr names a tunnel's encapsulation as ip link does, with the word
// encap: "encap fou encap-sport auto encap-dport 5555", or "encap none".
func encapStr(e *model.Encap) string {
	if e == nil {
		return "encap none"
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

// remotePeerHeld blocks the creates of veths whose peer, in another
// namespace, would take a name that a pair this plan keeps holds there: a
// stale end that cannot be deleted (a foreign link on it) keeps its peer,
// and the create would meet EEXIST in the peer's namespace.
func (c *computer) remotePeerHeld(creates []Op) {
	deleting := map[string]bool{}
	for _, op := range c.linkDeletes {
		deleting[op.ID] = true
	}
	for _, op := range creates {
		v := op.Link.Veth
		if v == nil || v.PeerNetNS == "" {
			continue
		}
		for _, n := range c.a.SortedLinkNames() {
			h := c.a.Links[n]
			if n == op.ID || deleting[n] || h.Veth == nil || h.Veth.Remote == nil {
				continue
			}
			if h.Veth.Remote.NetNS == v.PeerNetNS && h.Veth.Remote.Name == v.Peer {
				c.blockLink(op.ID)
				c.conflict("link %s: its peer's name %s in namespace %s is held by the peer of link %s, which stays; delete %s first or choose another peer name", op.ID, v.Peer, v.PeerNetNS, n, n)
				break
			}
		}
	}
}
