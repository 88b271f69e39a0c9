package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/buildinfo"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
	"github.com/netreconcile/netreconcile/internal/redact"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// What every command prints with -o json: one JSON document on standard
// output, on success and on failure, for programs (the Ansible collection
// reads nothing else). The contract is docs/json.md, and each command's
// document has a JSON Schema in docs/schema, which the tests hold the real
// output to:
//
//   - every document starts with "schema_version" (SchemaVersion);
//   - names and enumerated values are snake_case;
//   - every field is always present, null when it does not apply or is not
//     known (a command that failed early), a list [] when empty;
//   - "error" is null on success and holds the whole message on failure,
//     as standard error shows it; the exit status is the text output's;
//   - times are RFC 3339 in UTC, durations numbers of seconds;
//   - a usage error (exit 64) prints no document, only standard error.
//
// Every string passes through package redact, as standard error does.

// SchemaVersion is the version of the JSON output contract: it changes only
// if a stable field ever changes incompatibly, which 1.x never does.
const SchemaVersion = 1

// jsonHeader starts every document.
type jsonHeader struct {
	SchemaVersion int `json:"schema_version"`
}

func header() jsonHeader { return jsonHeader{SchemaVersion} }

// jsonFailure says why a command failed: null and empty on success.
type jsonFailure struct {
	// Error is the whole message, as standard error shows it.
	Error *string `json:"error"`
	// Errors are the configuration's problems with their positions, when
	// the configuration is invalid; ErrorCount counts them all (only the
	// first desired.MaxKeptErrors are kept).
	Errors     []jsonFieldError `json:"errors"`
	ErrorCount int              `json:"error_count"`
}

// jsonFieldError is one desired.FieldError. Line and column count from 1;
// 0 when the error concerns a whole file.
type jsonFieldError struct {
	File    string  `json:"file"`
	Line    int     `json:"line"`
	Column  int     `json:"column"`
	Path    *string `json:"path"`
	Message string  `json:"message"`
	// Text is the line standard error prints: FILE:LINE:COL: PATH: message.
	Text string `json:"text"`
}

// failure fills a jsonFailure from err; nil gives success.
func (env *Env) failure(err error) jsonFailure {
	f := jsonFailure{Errors: []jsonFieldError{}}
	if err == nil {
		return f
	}
	msg := redact.Error(env.explain(err)).Error()
	f.Error = &msg
	var es desired.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			fe := jsonFieldError{File: redact.String(e.Pos.File), Line: e.Pos.Line, Column: e.Pos.Col,
				Message: redact.String(e.Msg), Text: redact.String(e.Error())}
			if e.Path != "" {
				p := redact.String(e.Path)
				fe.Path = &p
			}
			f.Errors = append(f.Errors, fe)
		}
		f.ErrorCount = desired.ErrorCount(err)
	}
	var nes nftcompile.Errors
	if errors.As(err, &nes) {
		for _, e := range nes {
			file, line, col := e.Place()
			fe := jsonFieldError{File: redact.String(file), Line: line, Column: col,
				Message: redact.String(e.Msg), Text: redact.String(e.Error())}
			if e.Path != "" {
				p := redact.String(e.Path)
				fe.Path = &p
			}
			f.Errors = append(f.Errors, fe)
		}
		f.ErrorCount = len(nes)
	}
	return f
}

// conflictsOf lists the objects a plan left out for the kernel's state, as
// err (a diff.Conflicts, maybe joined to others) names them.
func conflictsOf(err error) []string {
	out := []string{}
	var cs diff.Conflicts
	if errors.As(err, &cs) {
		for _, c := range cs {
			out = append(out, redact.String(c))
		}
	}
	return out
}

// writeJSON prints one document on standard output. encoding/json escapes
// the ASCII controls and coerces invalid UTF-8, but leaves DEL, the C1
// controls and the bidirectional overrides raw: they are written as \u
// escapes too, which decode to the same string, so that a document shown
// on a terminal is inert (package inert) and still the same JSON.
func (env *Env) writeJSON(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	_, err := env.jsonOut.Write(escapeJSON(b.Bytes()))
	return err
}

// escapeJSON writes as \u escapes the characters package inert escapes that
// encoding/json leaves raw; they occur only inside strings.
func escapeJSON(b []byte) []byte {
	i := bytes.IndexFunc(b, jsonUnsafe)
	if i < 0 {
		return b
	}
	out := append([]byte{}, b[:i]...)
	for len(b[i:]) > 0 {
		r, n := utf8.DecodeRune(b[i:])
		if jsonUnsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func jsonUnsafe(r rune) bool {
	return r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 ||
		r == 0x200e || r == 0x200f || r == 0x061c
}

// validateJSON is `validate -o json`.
type validateJSON struct {
	jsonHeader
	Valid  bool     `json:"valid"`
	Config string   `json:"config"`
	Files  []string `json:"files"`
	// Counts are null for an invalid configuration.
	Counts *validateCounts `json:"counts"`
	jsonFailure
}

type validateCounts struct {
	Links     int `json:"links"`
	Addresses int `json:"addresses"`
	Routes    int `json:"routes"`
	Rules     int `json:"rules"`
	Fou       int `json:"fou"`
	NFTables  int `json:"nftables"`
}

// planJSON is `diff -o json`: the plan (diff.Plan's JSON fields) and, when
// the command fails, why. "ops" is null when there is no plan at all (an
// invalid configuration), so that nobody reads an empty list as "nothing to
// do". A report, not a plan: only internal/diff makes a Plan's ops.
type planJSON struct {
	jsonHeader
	Planned  *[]diff.Op `json:"ops"`
	Pending  []diff.Op  `json:"pending"`
	Protocol *int       `json:"protocol"`
	// Conflicts are the objects the plan left out for the kernel's state;
	// HeldBack counts them.
	Conflicts []string `json:"conflicts"`
	HeldBack  int      `json:"held_back"`
	// Warnings are what the plan makes the kernel do silently, [] when
	// none (or no plan).
	Warnings []diff.Warning `json:"warnings"`
	// PlanFile is where --out saved the plan, null when it saved none.
	PlanFile *string `json:"plan_file"`
	jsonFailure
}

// planReport is diff's JSON from its plan (nil when none could be made).
func (env *Env) planReport(plan *diff.Plan, err error) planJSON {
	r := planJSON{jsonHeader: header(), Conflicts: conflictsOf(err), Warnings: []diff.Warning{}, jsonFailure: env.failure(err)}
	r.HeldBack = len(r.Conflicts)
	if plan != nil {
		ops := append([]diff.Op{}, plan.Ops...)
		r.Planned, r.Pending, r.Protocol = &ops, append([]diff.Op{}, plan.Pending...), &plan.Protocol
		r.Warnings = append(r.Warnings, plan.Warnings...)
	}
	return r
}

// applyJSON is `apply -o json`, plain or with --confirm-within: the
// operations done and failed, in the form of diff's plan, the verify and the
// safe-apply transaction (docs/safe-apply.md), and why the command failed.
type applyJSON struct {
	jsonHeader
	// Done are the operations the kernel took, in order.
	Done   []*diff.Op   `json:"ops"`
	Failed []failedJSON `json:"failed"`
	// Protocol is the ownership protocol the plan wrote with (null
	// without a plan).
	Protocol *int `json:"protocol"`
	// Conflicts are the objects the plan left out for the kernel's state;
	// HeldBack counts them.
	Conflicts []string `json:"conflicts"`
	HeldBack  int      `json:"held_back"`
	// Changed: ops is not empty. Verified: the kernel read again after the
	// apply needed no change.
	Changed  bool `json:"changed"`
	Verified bool `json:"verified"`
	// Transaction is the safe-apply transaction (null for a plain apply),
	// Probes its probes (null for a plain apply), Rollback what a
	// rollback at once did (null when none ran).
	Transaction *safeapply.TxnReport      `json:"transaction"`
	Probes      *probesOutput             `json:"probes"`
	Rollback    *safeapply.RollbackReport `json:"rollback"`
	Warnings    []string                  `json:"warnings"`
	// PlanWarnings are what the plan makes the kernel do silently
	// (--strict refuses a plan with any).
	PlanWarnings []diff.Warning `json:"plan_warnings"`
	// Stale says why --plan was refused, Refused are the ops above
	// --max-disruption: null when neither refused the plan.
	Stale   []string  `json:"stale"`
	Refused []diff.Op `json:"refused"`
	jsonFailure
}

// failedJSON is an operation the kernel refused, with its error.
type failedJSON struct {
	diff.OpJSON
	OpError string `json:"op_error"`
}

// applyReport is apply's JSON from the plan it ran and what came of it
// (either may be nil).
func (env *Env) applyReport(plan *diff.Plan, res *apply.Result, err error) applyJSON {
	if res == nil {
		res = &apply.Result{}
	}
	r := applyJSON{jsonHeader: header(), Done: append([]*diff.Op{}, res.Done...), Failed: []failedJSON{}, Warnings: []string{}, PlanWarnings: []diff.Warning{},
		Conflicts: conflictsOf(err), jsonFailure: env.failure(err)}
	r.HeldBack = len(r.Conflicts)
	if plan != nil {
		r.Protocol = &plan.Protocol
	}
	for _, f := range res.Failed {
		r.Failed = append(r.Failed, failedJSON{OpJSON: f.Op.JSON(), OpError: redact.Error(f.Err).Error()})
	}
	return r
}

type probesOutput struct {
	Armed         []string                `json:"armed"`
	Skipped       []safeapply.ProbeResult `json:"skipped"`
	After         []safeapply.ProbeResult `json:"after"`
	AfterRollback []safeapply.ProbeResult `json:"after_rollback"`
}

// txnOutput is `confirm -o json` and `rollback -o json`.
type txnOutput struct {
	jsonHeader
	Transaction *safeapply.TxnReport      `json:"transaction"`
	Rollback    *safeapply.RollbackReport `json:"rollback"`
	jsonFailure
}

// statusOutput is `status -o json`.
type statusOutput struct {
	jsonHeader
	Transaction     *safeapply.TxnReport `json:"transaction"`
	LastTransaction *safeapply.TxnReport `json:"last_transaction"`
	Counts          *countsJSON          `json:"counts"`
	Peers           []peerJSON           `json:"peers"`
	jsonFailure
}

// countsJSON counts how the namespace's transactions ended.
type countsJSON struct {
	Confirmed uint64 `json:"confirmed"`
	// RolledBack is by cause: every cause, 0 for none.
	RolledBack map[string]uint64 `json:"rolled_back"`
}

func countsOf(c safeapply.Counts) *countsJSON {
	out := &countsJSON{Confirmed: c.Confirmed, RolledBack: map[string]uint64{}}
	for _, cause := range safeapply.Causes {
		out.RolledBack[string(cause)] = c.RolledBack[cause]
	}
	return out
}

// peerJSON is a WireGuard peer in `status -o json`.
type peerJSON struct {
	Link      string `json:"link"`
	PublicKey string `json:"public_key"`
	// Endpoint is null when the peer has none.
	Endpoint *string `json:"endpoint"`
	// State is up, unknown or down.
	State string `json:"state"`
	// LastHandshake is null for never.
	LastHandshake *time.Time `json:"last_handshake"`
	RxBytes       int64      `json:"rx_bytes"`
	TxBytes       int64      `json:"tx_bytes"`
	// NextCandidate is the endpoint a rotation would try next (null:
	// none).
	NextCandidate *string `json:"next_candidate"`
	// Declared: the file names the peer.
	Declared bool `json:"declared"`
}

func peersJSON(ps []engine.PeerStatus) []peerJSON {
	out := make([]peerJSON, 0, len(ps))
	for _, p := range ps {
		j := peerJSON{Link: p.Link, PublicKey: p.PublicKey, State: p.State, RxBytes: p.RxBytes, TxBytes: p.TxBytes, Declared: p.Declared}
		if p.Endpoint != "" && p.Endpoint != "none" {
			e := p.Endpoint
			j.Endpoint = &e
		}
		if !p.LastHandshake.IsZero() {
			t := p.LastHandshake.UTC()
			j.LastHandshake = &t
		}
		if p.Next != "" {
			n := p.Next
			j.NextCandidate = &n
		}
		out = append(out, j)
	}
	return out
}

// showJSON is `show -o json`: the configuration show prints, as JSON (which
// is YAML: validate and apply read it), and the pools' usage.
type showJSON struct {
	jsonHeader
	// Configuration is a netreconcile configuration: its keys are the
	// configuration's (docs/config.md), not the output's.
	Configuration json.RawMessage `json:"configuration"`
	// Foreign (show --all) are the objects that are not netreconcile's, in
	// the configuration's structure: links with their addresses, fou,
	// routes, rules, nftables. Null without --all.
	Foreign json.RawMessage `json:"foreign"`
	Pools   []poolListing   `json:"pools"`
	jsonFailure
}

// versionJSON is `version -o json`.
type versionJSON struct {
	jsonHeader
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

func versionReport() versionJSON {
	return versionJSON{header(), buildinfo.Version(), buildinfo.Commit(), buildinfo.GoVersion()}
}

// The ipam documents. The registry's own types (package ipam) carry no
// JSON: these are the output's.

type allocateJSON struct {
	jsonHeader
	Allocation *allocationJSON `json:"allocation"`
	jsonFailure
}

type releaseJSON struct {
	jsonHeader
	// Released is [] when the owner held nothing, null on failure.
	Released []allocationJSON `json:"released"`
	jsonFailure
}

type listJSON struct {
	jsonHeader
	Pools []poolListing `json:"pools"`
	jsonFailure
}

type gcJSON struct {
	jsonHeader
	Freed []allocationJSON `json:"freed"`
	jsonFailure
}

// allocationJSON is an address handed out.
type allocationJSON struct {
	Pool  string  `json:"pool"`
	Owner string  `json:"owner"`
	Iface *string `json:"iface"`
	Block uint64  `json:"block"`
	// IPv4 and IPv6 are null for a family the pool does not have.
	IPv4        *string   `json:"ipv4"`
	IPv6        *string   `json:"ipv6"`
	AllocatedAt time.Time `json:"allocated_at"`
}

func allocationOf(a ipam.Allocation) allocationJSON {
	j := allocationJSON{Pool: a.Pool, Owner: a.Owner, Block: a.Block, AllocatedAt: a.AllocatedAt.UTC()}
	if a.Iface != "" {
		s := a.Iface
		j.Iface = &s
	}
	if a.IPv4.IsValid() {
		s := a.IPv4.String()
		j.IPv4 = &s
	}
	if a.IPv6.IsValid() {
		s := a.IPv6.String()
		j.IPv6 = &s
	}
	return j
}

func allocationsOf(as []ipam.Allocation) []allocationJSON {
	out := make([]allocationJSON, 0, len(as))
	for _, a := range as {
		out = append(out, allocationOf(a))
	}
	return out
}

// poolListing is a pool in `ipam list -o json` and `show -o json`.
type poolListing struct {
	Pool   string      `json:"pool"`
	Usage  usageJSON   `json:"usage"`
	Blocks []blockJSON `json:"blocks"`
	// Allocations are the addresses handed out (ipam list; null in show).
	Allocations []allocationJSON `json:"allocations"`
}

type usageJSON struct {
	// BlocksHeld and BlocksAllowed: blocks held now, and how many this
	// host may hold.
	BlocksHeld    int    `json:"blocks_held"`
	BlocksAllowed uint64 `json:"blocks_allowed"`
	// Addresses in the held blocks (a dual-stack pair counts once),
	// Allocated those handed out, Cooling those waiting out the reuse
	// delay.
	Addresses uint64 `json:"addresses"`
	Allocated int    `json:"allocated"`
	Cooling   int    `json:"cooling"`
}

func usageOf(u ipam.Usage) usageJSON {
	return usageJSON{BlocksHeld: u.BlocksHeld, BlocksAllowed: u.BlocksAllowed, Addresses: u.Addresses, Allocated: u.Allocated, Cooling: u.Cooling}
}

type blockJSON struct {
	Index uint64  `json:"index"`
	IPv4  *string `json:"ipv4"`
	IPv6  *string `json:"ipv6"`
}

func blocksOf(bs []ipam.Block) []blockJSON {
	out := make([]blockJSON, 0, len(bs))
	for _, b := range bs {
		j := blockJSON{Index: b.Index}
		if b.IPv4.IsValid() {
			s := b.IPv4.String()
			j.IPv4 = &s
		}
		if b.IPv6.IsValid() {
			s := b.IPv6.String()
			j.IPv6 = &s
		}
		out = append(out, j)
	}
	return out
}
