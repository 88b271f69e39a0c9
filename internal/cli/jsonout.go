package cli

import (
	"errors"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/redact"
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

// planJSON is `diff -o json`: the plan (diff.Plan's fields) and, when the
// command fails, why. Ops is absent when there is no plan at all (an invalid
// configuration), so that nobody reads an empty list as "nothing to do".
type planJSON struct {
	*diff.Plan
	jsonFailure
}

// applyJSON is `apply -o json`: the operations done and failed, in the form
// of diff's plan, and why the command failed.
type applyJSON struct {
	// Ops are the operations the kernel took, in order: `changed` for a
	// caller is len(Ops) > 0.
	Ops    []diff.Op    `json:"ops"`
	Failed []failedJSON `json:"failed,omitempty"`
	// Protocol is the ownership protocol the plan wrote with.
	Protocol int `json:"protocol,omitempty"`
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
	r := applyJSON{Ops: res.Done, jsonFailure: failureOf(err)}
	if r.Ops == nil {
		r.Ops = []diff.Op{}
	}
	if plan != nil {
		r.Protocol = plan.Protocol
	}
	for _, f := range res.Failed {
		r.Failed = append(r.Failed, failedJSON{Op: f.Op, OpError: redact.Error(f.Err).Error()})
	}
	return r
}
