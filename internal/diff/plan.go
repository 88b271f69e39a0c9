// Package diff compares a desired and an actual model.State and produces a
// Plan: the ordered, smallest list of kernel operations that makes the actual
// state equal to the desired one. It is pure: no I/O, same input, same plan.
package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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

// Object kinds, in the order creates happen.
const (
	KindLink    = "link"
	KindFou     = "fou"
	KindAddress = "address"
	KindRoute   = "route"
	KindRule    = "rule"
)

// Change is one attribute that differs.
type Change struct {
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

// Op is one operation. Exactly one of the object fields is set, by Kind.
type Op struct {
	Action  Action   `json:"action"`
	Kind    string   `json:"kind"`
	ID      string   `json:"id"`
	Summary string   `json:"summary,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	Reason  string   `json:"reason,omitempty"`

	// Link is the desired link (the actual one for a delete). For an update,
	// only the fields named in Changes are written.
	Link *model.Link `json:"-"`
	// Pair is set on a veth create when the peer end is declared too: the
	// apply stage marks and configures that end after creating the pair.
	PeerOfPair bool           `json:"-"`
	Address    *model.Address `json:"-"`
	Route      *model.Route   `json:"-"`
	Rule       *model.Rule    `json:"-"`
	Fou        *model.FouPort `json:"-"`
	Old        *model.Address `json:"-"` // the address an address replace removes
	// Promote is set on a delete or replace of an IPv4 address on a link
	// netreconcile owns: apply turns the link's promote_secondaries on
	// first, so that the kernel keeps the other addresses of the subnet
	// (and the routes through the link) when the primary goes.
	Promote bool `json:"-"`
	// NFT holds the nftables messages of an nft op; apply sends every nft
	// op of a plan in one batch.
	NFT       []model.NftOp `json:"-"`
	WireGuard *WireGuardOp  `json:"-"`
}

// Plan is the ordered list of operations.
type Plan struct {
	Ops []Op `json:"ops"`
	// Protocol is the ownership protocol routes and rules are written with.
	Protocol int `json:"protocol"`
	// PinMTU lists declared masters with an MTU whose ports this plan
	// changes: the kernel moves a bridge's MTU to its ports' smallest when
	// one joins or leaves (unless the MTU was set by a change, not at
	// creation), so apply checks them after the link ops and sets the MTU
	// again where the kernel moved it.
	PinMTU []*model.Link `json:"-"`
}

// Empty reports whether there is nothing to do.
func (p *Plan) Empty() bool { return len(p.Ops) == 0 }

// Counts returns the number of operations per action.
func (p *Plan) Counts() map[Action]int {
	c := map[Action]int{}
	for _, op := range p.Ops {
		c[op.Action]++
	}
	return c
}

var sigils = map[Action]string{Create: "+", Update: "~", Replace: "±", Delete: "-"}

// String renders the plan for a person: one line per object, with +, ~, ±
// or -, and one indented line per changed attribute.
func (p *Plan) String() string {
	var b strings.Builder
	p.Write(&b)
	return b.String()
}

// Write renders the plan as String does.
func (p *Plan) Write(w io.Writer) {
	for _, op := range p.Ops {
		line := fmt.Sprintf("%s %s %s", sigils[op.Action], op.Kind, op.ID)
		if op.Summary != "" {
			line += " (" + op.Summary + ")"
		}
		if op.Reason != "" {
			line += ": " + op.Reason
		}
		fmt.Fprintln(w, line)
		for _, c := range op.Changes {
			switch {
			case c.From == "" && c.To == "":
				// Written again as it is (an adopted link's alias takes the marker).
				fmt.Fprintf(w, "    %s\n", c.Field)
			case c.From == "":
				fmt.Fprintf(w, "    %s: %s\n", c.Field, c.To)
			case c.To == "":
				fmt.Fprintf(w, "    %s: %s -> (none)\n", c.Field, c.From)
			default:
				fmt.Fprintf(w, "    %s: %s -> %s\n", c.Field, c.From, c.To)
			}
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

// NftTable returns the table an nftables op changes: from its kernel ops
// when it has any, else from its ID, which starts with the table's
// "FAMILY NAME". Apply groups ops into one batch per table by it, and the
// engine records a table it is about to create.
func (op *Op) NftTable() model.NftTableKey {
	if len(op.NFT) > 0 {
		return op.NFT[0].Table
	}
	key := model.NftTableKey{}
	key.Family, key.Name, _ = strings.Cut(op.ID, " ")
	key.Name, _, _ = strings.Cut(key.Name, " ")
	return key
}
