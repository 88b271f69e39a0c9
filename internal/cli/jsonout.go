package cli

import (
	"errors"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/redact"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// What validate, diff and apply print with -o json, for programs (the Ansible
// collection reads nothing else). Every string passes through package redact,
// as standard error does. A command that fails still prints one JSON object,
// with "error" set, and exits as it would in text: the error also goes to
// standard error.

// jsonFailure describes why a command failed.
type jsonFailure struct {
	// Error is the whole message, as standard error shows it.
	Error string `json:"error,omitempty"`
	// Errors are the configuration's problems with their positions, when
	// the configuration is invalid; ErrorCount counts them all (only the
	// first desired.MaxKeptErrors are kept).
	Errors     []jsonFieldError `json:"errors,omitempty"`
	ErrorCount int              `json:"error_count,omitempty"`
	// Conflicts are the objects the plan left out for the kernel's state.
	Conflicts []string `json:"conflicts,omitempty"`
}

// jsonFieldError is one desired.FieldError. Line and column count from 1;
// 0 when the error concerns a whole file.
type jsonFieldError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Text is the line standard error prints: FILE:LINE:COL: PATH: message.
	Text string `json:"text"`
}

// failureOf fills a jsonFailure from err; nil gives the zero value.
func failureOf(err error) jsonFailure {
	if err == nil {
		return jsonFailure{}
	}
	f := jsonFailure{Error: redact.Error(err).Error()}
	var es desired.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			f.Errors = append(f.Errors, jsonFieldError{
				File: redact.String(e.Pos.File), Line: e.Pos.Line, Column: e.Pos.Col,
				Path: redact.String(e.Path), Message: redact.String(e.Msg), Text: e.Error(),
			})
		}
		f.ErrorCount = desired.ErrorCount(err)
	}
	var cs diff.Conflicts
	if errors.As(err, &cs) {
		for _, c := range cs {
			f.Conflicts = append(f.Conflicts, redact.String(c))
		}
	}
	return f
}

// validateJSON is `validate -o json`.
type validateJSON struct {
	Valid  bool           `json:"valid"`
	Config string         `json:"config"`
	Files  []string       `json:"files,omitempty"`
	Counts map[string]int `json:"counts,omitempty"`
	jsonFailure
}

// planJSON is `diff -o json`: the plan (diff.Plan's JSON fields) and, when
// the command fails, why. "ops" is absent when there is no plan at all (an
// invalid configuration), so that nobody reads an empty list as "nothing to
// do". A report, not a plan: only internal/diff makes a Plan's ops.
type planJSON struct {
	Planned  *[]diff.Op `json:"ops,omitempty"`
	Pending  []diff.Op  `json:"pending,omitempty"`
	Protocol int        `json:"protocol,omitempty"`
	jsonFailure
}

// planReport is diff's JSON from its plan (nil when none could be made).
func planReport(plan *diff.Plan, err error) planJSON {
	r := planJSON{jsonFailure: failureOf(err)}
	if plan != nil {
		ops := append([]diff.Op{}, plan.Ops...)
		r = planJSON{Planned: &ops, Pending: plan.Pending, Protocol: plan.Protocol, jsonFailure: r.jsonFailure}
	}
	return r
}

// applyJSON is `apply -o json`, plain or with --confirm-within: the
// operations done and failed, in the form of diff's plan, the verify and the
// safe-apply transaction (docs/safe-apply.md), and why the command failed.
type applyJSON struct {
	// Done are the operations the kernel took, in order: `changed` for a
	// caller is a non-empty "ops".
	Done   []*diff.Op   `json:"ops"`
	Failed []failedJSON `json:"failed,omitempty"`
	// Protocol is the ownership protocol the plan wrote with.
	Protocol int `json:"protocol,omitempty"`
	// Changed: ops is not empty. Verified: the kernel read again after the
	// apply needed no change.
	Changed  bool `json:"changed"`
	Verified bool `json:"verified"`
	// Transaction is the safe-apply transaction (null for a plain apply),
	// Probes its probes (absent for a plain apply), Rollback what a
	// rollback at once did (null when none ran).
	Transaction *safeapply.TxnReport      `json:"transaction"`
	Probes      *probesOutput             `json:"probes,omitempty"`
	Rollback    *safeapply.RollbackReport `json:"rollback"`
	Warnings    []string                  `json:"warnings"`
	jsonFailure
}

// failedJSON is an operation the kernel refused, with its error.
type failedJSON struct {
	diff.Op
	OpError string `json:"op_error"`
}

// applyReport is apply's JSON from the plan it ran and what came of it
// (either may be nil).
func applyReport(plan *diff.Plan, res *apply.Result, err error) applyJSON {
	if res == nil {
		res = &apply.Result{}
	}
	protocol := 0
	if plan != nil {
		protocol = plan.Protocol
	}
	r := applyJSON{Done: append([]*diff.Op{}, res.Done...), Protocol: protocol, Warnings: []string{}, jsonFailure: failureOf(err)}
	for _, f := range res.Failed {
		r.Failed = append(r.Failed, failedJSON{Op: f.Op, OpError: redact.Error(f.Err).Error()})
	}
	return r
}
