// Package diff compares a desired and an actual model.State and produces a
// Plan: the ordered, smallest list of kernel operations that makes the actual
// state equal to the desired one. It is pure: no I/O, same input, same plan.
//
// The plan is built in one place. ComputeWith makes every operation, in the
// order its doc states, from the two states and from the Inputs the engine
// prepares (the addresses the pools handed out, the WireGuard peers that are
// Up, the pool addresses a dry run cannot allocate yet); nothing else adds
// to Plan.Ops. What is only shown, never applied, is kept in Plan.Pending.
//
// Operations are typed. Kind is a type of its own; an nftables op names its
// table (Op.Table), never to be cut out of its ID; and an op that changes
// attributes in place carries the set it writes as a struct of flags of its
// kind (LinkFields, WireGuardFields, PeerFields), beside Changes, which only
// shows them. Apply never reads the flags one by one: it passes a writer to
// the set's Write method, which calls one writer method per flag set. A new
// attribute is a new flag and a new method of the writer interface, so apply
// does not compile until it writes it. Field names with an exhaustive switch
// would need a linter or a test to say the same, and the strings that
// Changes hold said nothing: a name apply did not know was skipped silently.
package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Action is what an operation does to one object.
type Action string

// Actions.
const (
	Create  Action = "create"
	Update  Action = "update"  // in place: the object keeps its identity (ifindex...)
	Replace Action = "replace" // delete and create: the kernel cannot change it in place
	Delete  Action = "delete"
)

// Kind is the kind of object an operation changes.
type Kind string

// Object kinds, in the order creates happen.
const (
	KindLink    Kind = "link"
	KindFou     Kind = "fou"
	KindAddress Kind = "address"
	KindRoute   Kind = "route"
	KindRule    Kind = "rule"
)

// MarshalText writes a kind as the JSON output and the structured logs name
// it: its words joined by "_" ("nft_table", "wireguard_peer"), as every
// identifier of the JSON output is written.
func (k Kind) MarshalText() ([]byte, error) {
	return []byte(strings.ReplaceAll(string(k), " ", "_")), nil
}

// UnmarshalText reads a kind as MarshalText writes it.
func (k *Kind) UnmarshalText(b []byte) error {
	*k = Kind(strings.ReplaceAll(string(b), "_", " "))
	return nil
}

// Change is one attribute that differs, as a plan shows it. What apply
// writes is the op's typed field set, never these names. From and To are
// empty for no value.
type Change struct {
	Field string
	From  string
	To    string
}

// MarshalJSON writes a change as the JSON output shows it: "from" and "to"
// are null for no value.
func (c Change) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Field string  `json:"field"`
		From  *string `json:"from"`
		To    *string `json:"to"`
	}{c.Field, orNull(c.From), orNull(c.To)})
}

// UnmarshalJSON reads a change as MarshalJSON writes it.
func (c *Change) UnmarshalJSON(b []byte) error {
	var v struct {
		Field    string
		From, To *string
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Change{Field: v.Field, From: deref(v.From), To: deref(v.To)}
	return nil
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Op is one operation. Exactly one of the object fields is set, by Kind.
// Its JSON is OpJSON.
type Op struct {
	Action  Action   `json:"action"`
	Kind    Kind     `json:"kind"`
	ID      string   `json:"id"`
	Summary string   `json:"summary,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	// Disruption is what the op does to traffic and state beyond its
	// change (disruption.go); a flap's cause is in Reason.
	Disruption Disruption

	// Link is the desired link (the actual one for a delete). For an update,
	// only the attributes in LinkFields are written.
	Link       *model.Link `json:"-"`
	LinkFields LinkFields  `json:"-"`
	// Pair is set on a veth create when the peer end is declared too: the
	// apply stage marks and configures that end after creating the pair.
	PeerOfPair bool `json:"-"`
	// Promote is set on a delete or replace of an IPv4 address on a link
	// netreconcile owns: apply turns the link's promote_secondaries on
	// first, so that the kernel keeps the other addresses of the subnet
	// (and the routes through the link) when the primary goes. (Next to
	// LinkFields and PeerOfPair: the three share one word, and a plan of a
	// big host holds 100k ops.)
	Promote bool `json:"-"`
	// Carrier is set on the write of a link's net.ipv6.conf.LINK.mtu that
	// follows the link's getting carrier from this plan: apply waits for
	// the carrier, which makes the kernel set the key to the link's MTU.
	Carrier bool           `json:"-"`
	Address *model.Address `json:"-"`
	Route   *model.Route   `json:"-"`
	Rule    *model.Rule    `json:"-"`
	Fou     *model.FouPort `json:"-"`
	Old     *model.Address `json:"-"` // the address an address replace removes
	// NFT holds the nftables messages of an nft op; apply sends the nft
	// ops of a plan in one batch per table.
	NFT []model.NftOp `json:"-"`
	// Table is the table an nft op changes (set on every nft op, also on
	// those without messages, such as a table's change of owner).
	Table     model.NftTableKey `json:"-"`
	WireGuard *WireGuardOp      `json:"-"`
	// Sysctl is the key and the value a sysctl op writes (for a delete:
	// the value recorded before netreconcile first set it), and SysctlWas
	// the value the kernel had when planned: what the ledger records as
	// the key's old value when the op takes it over.
	Sysctl    *model.Sysctl `json:"-"`
	SysctlWas string        `json:"-"`
	// SysctlRebase: the write follows a master key's (net.ipv4.ip_forward,
	// net.ipv6.conf.all.ignore_routes_with_linkdown…), which set the key
	// first; SysctlWas is the master's value, which the ledger records
	// over the key's old record: the key would have had it, had
	// netreconcile never written the key itself.
	SysctlRebase bool `json:"-"`
	// SysctlUnowned: the write sets a key the file does not declare, back
	// to the value it had or to the one a link made under the file starts
	// with, after a "default" key's write that may have moved it
	// (computer.defaultSpreads); the key is not taken over, and the
	// ledger neither records nor forgets it.
	SysctlUnowned bool `json:"-"`
}

// OpJSON is an operation as the JSON output shows it (diff, apply, a
// rollback's operations): every field present, null for none.
type OpJSON struct {
	Action Action `json:"action"`
	Kind   Kind   `json:"kind"`
	// ID is the object's identity, as the kernel knows it (a WireGuard
	// peer's whole public key).
	ID      string   `json:"id"`
	Summary *string  `json:"summary"`
	Changes []Change `json:"changes"`
	Reason  *string  `json:"reason"`
	// Disruption is what the op does to traffic and state (in_place,
	// table_replaced, readded, link_flapped, link_recreated).
	Disruption Disruption `json:"disruption"`
}

// JSON returns the operation's output form.
func (op *Op) JSON() OpJSON {
	changes := op.Changes
	if changes == nil {
		changes = []Change{}
	}
	return OpJSON{Action: op.Action, Kind: op.Kind, ID: op.ID, Summary: orNull(op.Summary), Changes: changes, Reason: orNull(op.Reason), Disruption: op.Disruption}
}

// MarshalJSON writes the operation as OpJSON.
func (op Op) MarshalJSON() ([]byte, error) { return json.Marshal(op.JSON()) }

// Name is the operation's object in a message (an error, a log line): its
// ID, but for a WireGuard peer, whose public key is cut to a prefix
// (model.Key.Short).
func (op *Op) Name() string {
	if op.Kind == KindWGPeer && op.WireGuard != nil && op.WireGuard.Peer != nil {
		return peerOpName(op.WireGuard.Peer.PublicKey, op.WireGuard.Link)
	}
	return op.ID
}

// Plan is the ordered list of operations.
type Plan struct {
	// Ops are the operations apply runs, in order; only Compute adds to them.
	Ops []Op `json:"ops"`
	// Pending are shown with the plan and never applied: the pool
	// addresses a dry run cannot name because apply allocates them, and
	// the nftables tables that wait for a link (Waiting). They
	// count in Summary (an apply will create them) and in Empty.
	Pending []Op `json:"pending,omitempty"`
	// Protocol is the ownership protocol routes and rules are written with.
	Protocol int `json:"protocol"`
	// PinMTU lists declared masters with an MTU whose ports this plan
	// changes: the kernel moves a bridge's MTU to its ports' smallest when
	// one joins or leaves (unless the MTU was set by a change, not at
	// creation), so apply checks them after the link ops and sets the MTU
	// again where the kernel moved it.
	PinMTU []*model.Link `json:"-"`
	// FollowMTU lists the links without a declared MTU that sit on a
	// lower device whose MTU or ports this plan changes (a macvlan, vlan
	// or ipvlan on its parent, a vxlan on its device), lower devices
	// first: the kernel may move such a link with its lower device on the
	// way (a port pulls its bridge down until apply sets the bridge back),
	// so apply sets it again, after the masters of PinMTU, to its lower
	// device's MTU less Headroom where it differs.
	FollowMTU []MTUFollow `json:"-"`
	// IPv6MTU holds the links of PinMTU and FollowMTU, each with its
	// declared net.ipv6.conf.LINK.mtu: the kernel sets the key to the
	// link's MTU whenever that moves, so apply runs the plan's writes of
	// the key (a give-back included) after the pins, and writes a
	// declared one again where a pin moved the MTU.
	IPv6MTU map[string]IPv6MTUAfterPins `json:"-"`
	// Warnings are what the plan makes the kernel do silently (warning.go).
	Warnings []Warning `json:"warnings,omitempty"`
	// Held are the ops above Inputs.MaxDisruption that the plan holds
	// back, as they would have been planned, and HeldDependents say which
	// other objects wait with them (those that need a held link).
	Held           []Op     `json:"held,omitempty"`
	HeldDependents []string `json:"held_dependents,omitempty"`
	// LeftOut names the declared links the plan leaves out for a conflict
	// (theirs, or one they need): nothing of theirs is planned. The engine
	// allocates no pool address for them, so that diff and apply leave out
	// the same objects.
	LeftOut map[string]bool `json:"-"`
	// Waiting names the nftables tables the plan leaves as they are until
	// the links their rules name exist (Inputs.Waiting), each shown in
	// Pending: the engine's apply plans them again once the plan's links
	// are made.
	Waiting map[model.NftTableKey]string `json:"-"`
	// PoolAddrs are the addresses the pools handed each link
	// (Inputs.PoolAddrs): the engine records the other addresses the
	// plan creates as the file's static ones (ledger.Ledger.StaticAddrs).
	PoolAddrs map[string]map[netip.Addr]bool `json:"-"`
}

// Empty reports whether there is nothing to do.
func (p *Plan) Empty() bool { return len(p.Ops) == 0 && len(p.Pending) == 0 }

// Counts returns the number of operations per action, the pending ones
// included.
func (p *Plan) Counts() map[Action]int {
	c := map[Action]int{}
	for _, ops := range [][]Op{p.Ops, p.Pending} {
		for _, op := range ops {
			c[op.Action]++
		}
	}
	return c
}

// IPv6MTUAfterPins is a link's declared net.ipv6.conf.LINK.mtu (Sysctl,
// nil: none) and whether the kernel held the file's value when the plan
// was made (Kept): only then does apply write it again, unowned, after a
// pin moved the MTU. Otherwise the plan's write does, which records the
// key's old value first; a pass that leaves that write out (Select) leaves
// the key to the next.
type IPv6MTUAfterPins struct {
	Sysctl *model.Sysctl
	Kept   bool
}

// Select returns a plan of the operations of p that keep accepts, in the
// same order, with p's protocol, masters to pin and waiting tables (the daemon holds back
// the ops that wait for a retry). Pending entries are left out. keep is
// called once per op, in order. When it keeps every op, the result shares
// p's ops (a pass over 100k routes would otherwise hold two copies of its
// plan while it applies): neither plan may change them.
func (p *Plan) Select(keep func(op *Op) bool) *Plan {
	out := &Plan{Protocol: p.Protocol, PinMTU: p.PinMTU, FollowMTU: p.FollowMTU, IPv6MTU: p.IPv6MTU, Waiting: p.Waiting, PoolAddrs: p.PoolAddrs}
	copied := false
	for i := range p.Ops {
		switch {
		case keep(&p.Ops[i]):
			if copied {
				out.Ops = append(out.Ops, p.Ops[i])
			}
		case !copied:
			copied = true
			out.Ops = append(make([]Op, 0, len(p.Ops)-1), p.Ops[:i]...)
		}
	}
	if !copied {
		out.Ops = p.Ops
	}
	return out
}

var sigils = map[Action]string{Create: "+", Update: "~", Replace: "±", Delete: "-"}

// String renders the plan for a person: one line per object, with +, ~, ±
// or -, and one indented line per changed attribute.
func (p *Plan) String() string {
	var b strings.Builder
	p.Write(&b)
	return b.String()
}

// Write renders the plan as String does: the operations, then the pending
// entries.
func (p *Plan) Write(w io.Writer) {
	for _, ops := range [][]Op{p.Ops, p.Pending} {
		for i := range ops {
			writeOp(w, &ops[i])
		}
	}
}

// WriteOps renders operations as Plan.Write does (apply's report of what
// it did).
func WriteOps(w io.Writer, ops []*Op) {
	for _, op := range ops {
		writeOp(w, op)
	}
}

// writeOp writes one operation. Names, aliases and values come from the
// file and from the kernel, where anyone who may create a link or a table
// chose them: each is made inert (package inert), so that none can move
// the terminal's cursor or forge a line of the plan.
func writeOp(w io.Writer, op *Op) {
	line := fmt.Sprintf("%s %s %s", sigils[op.Action], op.Kind, inert.String(op.ID))
	if op.Summary != "" {
		line += " (" + inert.String(op.Summary) + ")"
	}
	if op.Reason != "" {
		line += ": " + inert.String(op.Reason)
	}
	if op.Disruption != InPlace {
		// In place is the rule and goes unsaid; the summary counts it.
		line += " [" + op.Disruption.Words() + "]"
	}
	fmt.Fprintln(w, line)
	for _, c := range op.Changes {
		field, from, to := inert.String(c.Field), inert.String(c.From), inert.String(c.To)
		switch {
		case c.From == "" && c.To == "":
			// Written again as it is (an adopted link's alias takes the marker).
			fmt.Fprintf(w, "    %s\n", field)
		case c.From == "":
			fmt.Fprintf(w, "    %s: %s\n", field, to)
		case c.To == "":
			fmt.Fprintf(w, "    %s: %s -> (none)\n", field, from)
		default:
			fmt.Fprintf(w, "    %s: %s -> %s\n", field, from, to)
		}
	}
}

// Summary is a one-line count, e.g. "3 to create, 1 to update, 0 to replace, 2 to delete".
func (p *Plan) Summary() string {
	c := p.Counts()
	return fmt.Sprintf("%d to create, %d to update, %d to replace, %d to delete", c[Create], c[Update], c[Replace], c[Delete])
}

// JSON renders the plan as JSON.
func (p *Plan) JSON() ([]byte, error) {
	if p.Ops == nil {
		p.Ops = []Op{}
	}
	return json.MarshalIndent(p, "", "  ")
}

// NftTable returns the table an nftables op changes: apply groups ops into
// one batch per table by it, and the engine records a table it is about to
// create.
func (op *Op) NftTable() model.NftTableKey { return op.Table }

// IsNft reports whether k is an nftables kind.
func (k Kind) IsNft() bool {
	switch k {
	case KindNftTable, KindNftSet, KindNftElem, KindNftChain, KindNftRule, KindNftObj:
		return true
	}
	return false
}

// LinkFields are the attributes a link update writes in place, each from
// Op.Link. The ownership marker is written with the alias (an adopted link's
// update always writes its alias).
//
// Kind is the attributes of the link's kind that the kernel changes in
// place (a macvlan's mode, a bond's mode and miimon): one write of all of
// them, from Op.Link.
type LinkFields struct {
	Kind, MTU, Master, Alias, State bool
	// MTUAfterMaster writes the MTU after the master: a bond gives a member
	// it releases back the MTU the member had when it joined, so an MTU
	// written before the release would be undone by it.
	MTUAfterMaster bool
}

// LinkWriter writes one attribute of a link per method: apply implements
// it. Adding a field to LinkFields adds its method here.
type LinkWriter interface {
	Kind() error
	MTU() error
	Master() error
	Alias() error
	State() error
}

// Write calls w's method for every attribute in f, stopping at the first
// error. The order: the kind's attributes first (a bond's mode changes only
// while it is down, and the state comes after), the MTU, then the master (a port joins with its final
// MTU; with MTUAfterMaster, the master first), the alias, and the state last (a link comes up
// configured).
func (f LinkFields) Write(w LinkWriter) error {
	mtuFirst, mtuLast := f.MTU && !f.MTUAfterMaster, f.MTU && f.MTUAfterMaster
	for _, a := range []struct {
		set   bool
		write func() error
	}{{f.Kind, w.Kind}, {mtuFirst, w.MTU}, {f.Master, w.Master}, {mtuLast, w.MTU}, {f.Alias, w.Alias}, {f.State, w.State}} {
		if a.set {
			if err := a.write(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Any reports whether f writes anything.
func (f LinkFields) Any() bool { return f != LinkFields{} }

// MTUFollow is a link kept at its lower device's MTU less Headroom (the
// encapsulation of a vxlan), that of a link made now (Plan.FollowMTU).
type MTUFollow struct {
	Link, Lower string
	Headroom    int
}
