package safeapply

import (
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
)

// The JSON the command line prints (-o json) for apply --confirm-within,
// confirm, rollback and status. It is an interface (the Ansible collection
// reads it): fields are only ever added. docs/safe-apply.md shows each.

// TxnReport is a transaction as the output shows it.
type TxnReport struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	Netns string `json:"netns,omitempty"`
	// Started and Deadline are RFC 3339 times in UTC.
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	// SecondsLeft is the time to the deadline, while pending (0 after).
	SecondsLeft float64 `json:"seconds_left"`
	// Window is the last --confirm-within, as a Go duration ("2m0s").
	Window string `json:"window"`
	// Extended counts the applies that moved the deadline.
	Extended int `json:"extended"`
	// Timer: "daemon:PID", "systemd:UNIT" or "process:PID".
	Timer  string   `json:"timer,omitempty"`
	Probes []string `json:"probes"`
	// ConfirmCommand confirms the transaction, while pending.
	ConfirmCommand string `json:"confirm_command,omitempty"`
	// Ended, Cause and Detail are set once it ended: Cause is one of
	// timeout, manual, probe, verify, apply, reboot for a rollback.
	Ended  *time.Time `json:"ended,omitempty"`
	Cause  Cause      `json:"cause,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

// Report turns a transaction into its output form; confirm is the command
// that confirms it (shown while pending).
func Report(t *Txn, now time.Time, confirm string) *TxnReport {
	if t == nil {
		return nil
	}
	r := &TxnReport{ID: t.ID, State: t.State, Netns: t.Netns, Started: t.Started, Deadline: t.Deadline,
		Window: time.Duration(t.Window).String(), Extended: t.Extended, Timer: t.Timer, Probes: t.Probes,
		Cause: t.Cause, Detail: t.Detail}
	if r.Probes == nil {
		r.Probes = []string{}
	}
	if t.State == Pending {
		r.SecondsLeft = max(t.Deadline.Sub(now).Round(time.Millisecond).Seconds(), 0)
		r.ConfirmCommand = confirm
	} else {
		ended := t.Ended
		r.Ended = &ended
	}
	return r
}

// RollbackReport is a rollback as the output shows it.
type RollbackReport struct {
	Cause  Cause  `json:"cause"`
	Detail string `json:"detail"`
	// Files are the configuration files written back or moved aside.
	Files []string `json:"files"`
	// Operations are the kernel changes the rollback made.
	Operations []*diff.Op `json:"operations"`
	// Error says what the rollback could not do ("" when complete).
	Error string `json:"error,omitempty"`
}

// ReportRollback turns a rollback into its output form.
func ReportRollback(r *RollbackResult) *RollbackReport {
	if r == nil {
		return nil
	}
	out := &RollbackReport{Cause: r.Txn.Cause, Detail: r.Txn.Detail, Files: r.Files, Operations: []*diff.Op{}}
	if out.Files == nil {
		out.Files = []string{}
	}
	if r.Outcome != nil && r.Outcome.Done != nil {
		out.Operations = r.Outcome.Done
	}
	if r.Err != nil {
		out.Error = r.Err.Error()
	}
	return out
}
