package diff

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Disruption is what an operation does to traffic and state beyond the
// change it names: whether the object keeps its identity and its traffic
// while the kernel takes the change. The levels are ordered, least first:
// apply --max-disruption and the daemon's max-disruption refuse or hold an
// op above theirs.
//
// The zero value is InPlace, so every op is in place unless the diff finds
// otherwise (disruptions): a create or a delete is the change itself, and
// takes nothing from an object that stays.
type Disruption uint8

const (
	// InPlace: the kernel changes the object where it is; nothing else
	// is disturbed.
	InPlace Disruption = iota
	// TableReplaced: an nftables table is deleted and made again in one
	// atomic batch (a set's type or a base chain's hook changes). No
	// packet meets a half table, but what the table held at run time
	// goes: counters, quotas, limits and the elements rules added to
	// sets.
	TableReplaced
	// Readded: an address or a FoU port is deleted and added again (a
	// change the kernel takes only at creation: an address's scope or
	// peer, an IPv6 prefix length, any IPv4 change but the protocol; a
	// port's protocol). For a moment it is not there: packets to the
	// address are dropped, the kernel deletes the routes that take it as
	// source (the plan adds them again), an IPv6 address goes through
	// duplicate address detection, tentative and unusable as a source,
	// and tunnels fed by the port drop what arrives meanwhile. It ranks
	// above TableReplaced, whose batch is atomic and stops no packet.
	Readded
	// LinkFlapped: the link goes down and up (a passthru macvlan's
	// change of master, a link joining or leaving a bond or a vrf, a
	// bond's mode): its carrier drops, the kernel deletes its routes and
	// IPv6 addresses (the plan adds them again) and a bond renegotiates.
	LinkFlapped
	// LinkRecreated: the link is deleted and made again (an attribute
	// the kernel fixes at creation): a new ifindex, and the sockets
	// bound to it, its WireGuard sessions, neighbours and the routes
	// through it are lost.
	LinkRecreated
)

// disruptionNames are the levels' names, in the order of the constants.
var disruptionNames = model.DisruptionNames

// Disruptions lists the levels, least first.
func Disruptions() []Disruption {
	return []Disruption{InPlace, TableReplaced, Readded, LinkFlapped, LinkRecreated}
}

// String is the level as the command line, the configuration and the JSON
// name it: in-place, table-replaced, link-flapped, link-recreated.
func (d Disruption) String() string {
	if int(d) < len(disruptionNames) {
		return disruptionNames[d]
	}
	return fmt.Sprintf("disruption(%d)", d)
}

// Words is the level as a plan's text shows it: "link flapped".
func (d Disruption) Words() string { return strings.ReplaceAll(d.String(), "-", " ") }

// Lost says, in a few words, what the level costs.
func (d Disruption) Lost() string {
	switch d {
	case TableReplaced:
		return "counters, quotas, limits and elements added by rules are reset"
	case Readded:
		return "gone for a moment: routes from the address added again, IPv6 duplicate address detection again"
	case LinkFlapped:
		return "down and up: carrier lost, routes and IPv6 addresses added again"
	case LinkRecreated:
		return "new ifindex: sockets, WireGuard sessions, neighbours and routes through it lost"
	}
	return "nothing disturbed"
}

// ParseDisruption reads a level as String writes it (the command line's
// and the configuration's words), or as MarshalText does (the JSON's).
func ParseDisruption(s string) (Disruption, error) {
	for i, n := range disruptionNames {
		if s == n || s == strings.ReplaceAll(n, "-", "_") {
			return Disruption(i), nil
		}
	}
	return 0, fmt.Errorf("unknown disruption level %q: expected one of %s", s, strings.Join(disruptionNames, ", "))
}

// MarshalText writes the level as the JSON output, the metrics and the
// structured logs name it, snake_case as every enumerated value there is:
// in_place, table_replaced, readded, link_flapped, link_recreated.
func (d Disruption) MarshalText() ([]byte, error) {
	if int(d) >= len(disruptionNames) {
		return nil, fmt.Errorf("marshal %s", d)
	}
	return []byte(d.Snake()), nil
}

// Snake is the level's snake_case name (MarshalText).
func (d Disruption) Snake() string { return strings.ReplaceAll(d.String(), "-", "_") }

// UnmarshalText reads a level in either form (MarshalText's or String's);
// anything else is an error.
func (d *Disruption) UnmarshalText(b []byte) error {
	v, err := ParseDisruption(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Most returns the most disruptive level of the plan's ops (InPlace for an
// empty plan).
func (p *Plan) Most() Disruption {
	m := InPlace
	for i := range p.Ops {
		m = max(m, p.Ops[i].Disruption)
	}
	return m
}

// Above returns the ops whose disruption is above max, in plan order.
func (p *Plan) Above(max Disruption) []*Op {
	var out []*Op
	for i := range p.Ops {
		if p.Ops[i].Disruption > max {
			out = append(out, &p.Ops[i])
		}
	}
	return out
}

// DisruptionCounts counts the plan's ops per level.
func (p *Plan) DisruptionCounts() map[Disruption]int {
	c := map[Disruption]int{}
	for i := range p.Ops {
		c[p.Ops[i].Disruption]++
	}
	return c
}

// DisruptionSummary is one line: "Disruption: 5 in place, 1 link flapped."
func (p *Plan) DisruptionSummary() string {
	c := p.DisruptionCounts()
	var parts []string
	for _, d := range Disruptions() {
		if c[d] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[d], d.Words()))
		}
	}
	if len(parts) == 0 {
		return "Disruption: none."
	}
	return "Disruption: " + strings.Join(parts, ", ") + "."
}

// disruptions labels the ops of the finished plan. It is derived from what
// the link stage found the kernel will do (cycledByMaster, bondBounced,
// releasedFromBond, the vlans that follow a cycled parent), from the
// nftables stage's replaces, and from the addresses and FoU ports the plan
// deletes and adds again (a replace, or a delete and a create of the same
// key); the other kinds change in place.
//
// A link op's flap is noted in its Reason: what takes it down. A link that
// is down before, or that the file sets down, does not flap: the kernel's
// down-and-up of a change of master or a bond's mode runs only on a link
// that is up (kernel.SetLinkMaster, ChangeLink; the vrf driver's
// cycle_netdev), and a link set down is the change the file asks for.
func (c *computer) disruptions() {
	readded := c.readdedOps()
	for i := range c.plan.Ops {
		op := &c.plan.Ops[i]
		switch {
		case op.Kind == KindLink && op.Action == Replace:
			op.Disruption = LinkRecreated
		case op.Kind == KindLink && op.Action == Delete && c.recreatedBelow(op):
			op.Disruption = LinkRecreated
		case op.Kind == KindLink && op.Action == Create && c.a.Links[op.ID] != nil && !op.PeerOfPair:
			// The create that follows an early delete of the same link.
			op.Disruption = LinkRecreated
		case op.Kind == KindLink && op.Action == Update:
			if why := c.flapCause(op); why != "" {
				op.Disruption = LinkFlapped
				op.Reason = why
			}
		case op.Kind == KindNftTable && op.Action == Replace:
			op.Disruption = TableReplaced
		case readdable[op.Kind] && (op.Action == Replace || readded[readdKey{op.Kind, op.ID}] == 3):
			op.Disruption = Readded
		}
	}
}

// readdable are the kinds whose delete and create of one key in one plan
// is the object deleted and added again (Readded); a link's is a recreate,
// a table's a replace.
var readdable = map[Kind]bool{KindAddress: true, KindFou: true}

type readdKey struct {
	kind Kind
	id   string
}

// readdedOps marks, per readdable kind and key, whether the plan deletes
// it (1) and creates it (2).
func (c *computer) readdedOps() map[readdKey]int {
	m := map[readdKey]int{}
	for i := range c.plan.Ops {
		op := &c.plan.Ops[i]
		if !readdable[op.Kind] {
			continue
		}
		switch op.Action {
		case Delete:
			m[readdKey{op.Kind, op.ID}] |= 1
		case Create:
			m[readdKey{op.Kind, op.ID}] |= 2
		}
	}
	return m
}

// recreatedBelow reports whether a link delete is the first half of a
// recreate (the early delete of a link whose create follows).
func (c *computer) recreatedBelow(op *Op) bool {
	w := c.d.Links[op.ID]
	return w != nil && c.recreated[op.ID]
}

// flapCause says why a link update takes the link down and up, "" when it
// does not.
func (c *computer) flapCause(op *Op) string {
	h := c.a.Links[op.ID]
	if h == nil || !h.Up {
		return ""
	}
	if op.LinkFields.State && !op.Link.Up {
		return ""
	}
	var why string
	old := h.Master
	switch {
	case c.bondBounced(*op):
		why = "down and up: the kernel changes a bond's mode only while it is down"
	case op.LinkFields.Master && h.MACVlan != nil && h.MACVlan.Mode == model.MACVlanPassthru:
		why = "down and up: a passthru macvlan changes its master only while it is down"
	case op.LinkFields.Master && (c.kernelKind(old) == model.KindVRF || c.masterKind(op.Link.Master) == model.KindVRF):
		why = "down and up: the vrf driver cycles a port that joins or leaves it"
	case op.LinkFields.Master && old == op.Link.Master && c.recreated[old] && c.masterKind(old) == model.KindBond:
		why = "down and up: released with bond " + old + ", which is recreated, and enslaved again"
	case op.LinkFields.Master && c.masterKind(op.Link.Master) == model.KindBond:
		why = "down and up: a link joins a bond only while it is down"
	case op.LinkFields.Master && c.kernelKind(old) == model.KindBond:
		why = "down and up: the bonding driver closes a member it releases"
	case c.vlanFollows[op.ID] && c.flappedParent(op.ID) != "":
		why = "down and up with its parent " + c.flappedParent(op.ID)
	}
	if why == "" {
		return ""
	}
	if vs := c.followers(op.ID); len(vs) > 0 {
		why += "; with the vlans on it: " + strings.Join(vs, ", ")
	}
	return why
}

// flappedParent returns the parent of the vlan name when that parent is
// cycled while up by this plan (vlansFollowParents), else "".
func (c *computer) flappedParent(name string) string {
	w := c.d.Links[name]
	if w == nil || w.VLAN == nil {
		return ""
	}
	if c.cycledUp[w.VLAN.Parent] {
		return w.VLAN.Parent
	}
	return ""
}

// followers lists the vlans the kernel takes down and up with the link
// name (directly on it), in name order.
func (c *computer) followers(name string) []string {
	if !c.cycledUp[name] {
		return nil
	}
	var out []string
	for n, w := range c.d.Links {
		if w.VLAN != nil && w.VLAN.Parent == name && c.vlanFollows[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// listHeld puts what is held into the plan (Plan.Held), links in name
// order, then tables in key order.
func (c *computer) listHeld() {
	if c.hold == nil {
		return
	}
	for _, n := range slices.Sorted(maps.Keys(c.hold.links)) {
		c.plan.Held = append(c.plan.Held, *c.hold.links[n])
	}
	keys := slices.SortedFunc(maps.Keys(c.hold.tables), func(a, b model.NftTableKey) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		c.plan.Held = append(c.plan.Held, *c.hold.tables[k])
	}
	for _, k := range slices.SortedFunc(maps.Keys(c.hold.objects), func(a, b readdKey) int {
		return cmp.Or(strings.Compare(string(a.kind), string(b.kind)), strings.Compare(a.id, b.id))
	}) {
		c.plan.Held = append(c.plan.Held, *c.hold.objects[k])
	}
}

// holds reports whether the address or FoU port id of kind is held back
// (Inputs.MaxDisruption): the stage leaves it as the kernel has it.
func (c *computer) holds(kind Kind, id string) bool {
	return c.hold != nil && c.hold.objects[readdKey{kind, id}] != nil
}
