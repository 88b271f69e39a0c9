package safeapply

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
)

// The JSON the command line prints (-o json) for apply --confirm-within,
// confirm, rollback and status: part of the output contract of docs/json.md
// (docs/schema/*.json). Every field is always present, null when it does
// not apply; names and enumerated values are snake_case; times are RFC 3339
// in UTC, durations numbers of seconds. A stable field is never renamed or
// removed: fields are only added.

// TxnReport is a transaction as the output shows it.
type TxnReport struct {
	ID string `json:"id"`
	// State is pending, rolling_back, confirmed or rolled_back.
	// rolling_back: a rollback began (the record says so before its first
	// write) and has not ended, because it is under way or its process was
	// killed; it can no longer be confirmed, and whoever finds the record
	// next (any writer, the daemon, the timer) finishes it.
	State string `json:"state"`
	// Netns is the --netns the transaction was begun with (null for the
	// caller's own namespace).
	Netns *string `json:"netns"`
	// Started and Deadline are RFC 3339 times in UTC.
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	// SecondsLeft is the time to the deadline, while pending (0 after).
	SecondsLeft float64 `json:"seconds_left"`
	// WindowSeconds is the last --confirm-within.
	WindowSeconds float64 `json:"window_seconds"`
	// Extended counts the applies that moved the deadline.
	Extended int `json:"extended"`
	// Timer: "daemon:PID", "systemd:UNIT" or "process:PID" (null before
	// one was arranged).
	Timer  *string  `json:"timer"`
	Probes []string `json:"probes"`
	// ConfirmCommand confirms the transaction, while pending (null
	// after): a command line for a POSIX shell, each word quoted.
	ConfirmCommand *string `json:"confirm_command"`
	// Ended, Cause and Detail are set once it ended: Cause is one of
	// timeout, manual, probe, verify, apply, reboot for a rollback. While
	// rolling_back, Cause and Detail are the rollback's, Ended null.
	Ended  *time.Time `json:"ended"`
	Cause  *string    `json:"cause"`
	Detail *string    `json:"detail"`
}

// stateName is a state as the output writes it: snake_case, as every
// enumerated value of the JSON output.
func stateName(s State) string { return strings.ReplaceAll(string(s), "-", "_") }

// RollingBackState is the state the output gives a pending transaction
// whose rollback began: the record's state stays pending until the
// rollback ends it, but nothing can confirm it any more.
const RollingBackState = "rolling_back"

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Report turns a transaction into its output form; confirm is the command
// that confirms it (shown while pending).
func Report(t *Txn, now time.Time, confirm string) *TxnReport {
	if t == nil {
		return nil
	}
	r := &TxnReport{ID: t.ID, State: stateName(t.State), Netns: orNull(t.Netns), Started: t.Started.UTC(), Deadline: t.Deadline.UTC(),
		WindowSeconds: time.Duration(t.Window).Seconds(), Extended: t.Extended, Timer: orNull(t.Timer), Probes: t.Probes,
		Cause: orNull(string(t.Cause)), Detail: orNull(t.Detail)}
	if r.Probes == nil {
		r.Probes = []string{}
	}
	switch {
	case t.State == Pending && t.RollingBack != "":
		r.State, r.Cause = RollingBackState, orNull(string(t.RollingBack))
	case t.State == Pending:
		r.SecondsLeft = max(t.Deadline.Sub(now).Round(time.Millisecond).Seconds(), 0)
		if now.Before(t.Deadline) {
			// Past its deadline, a confirm rolls it back instead.
			r.ConfirmCommand = orNull(confirm)
		}
	default:
		ended := t.Ended.UTC()
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
	// Error says what the rollback could not do (null when complete).
	Error *string `json:"error"`
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
		out.Error = orNull(r.Err.Error())
	}
	return out
}

// MarshalJSON writes a probe's outcome: "error" is null when it passed.
func (p ProbeResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Probe string  `json:"probe"`
		OK    bool    `json:"ok"`
		Err   *string `json:"error"`
	}{p.Probe, p.OK, orNull(p.Err)})
}

// UnmarshalJSON reads a probe's outcome as MarshalJSON writes it.
func (p *ProbeResult) UnmarshalJSON(b []byte) error {
	var v struct {
		Probe string
		OK    bool
		Err   *string `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = ProbeResult{Probe: v.Probe, OK: v.OK}
	if v.Err != nil {
		p.Err = *v.Err
	}
	return nil
}
