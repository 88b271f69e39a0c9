package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

const statusHelp = `Usage: netreconcile status [OPTIONS]

Show the namespace's safe-apply transaction, if one is pending (its id, the
time left before it rolls back and how to confirm it), and how the last one
ended; then each WireGuard peer of the devices the file names (or, without a
readable file, of every device netreconcile owns): the endpoint in use, the
state (up, unknown, down; see docs/config.md, wireguard rotation), the age
of the last handshake, bytes received and sent, and the candidate endpoint a
rotation would try next. Only public keys are printed.

A one-shot command does not know when the daemon last changed an endpoint:
it judges each peer by its last handshake alone.

Options:
  -o, --output FORMAT  text (default) or json: {"transaction": {...} or
                       null, "last_transaction": {...} or null, "counts":
                       {"confirmed": N, "rolled_back": {"CAUSE": N}},
                       "peers": [...]} (docs/safe-apply.md)
` + commonFlags

// statusOutput is status's JSON.
type statusOutput struct {
	Transaction     *safeapply.TxnReport `json:"transaction"`
	LastTransaction *safeapply.TxnReport `json:"last_transaction"`
	Counts          safeapply.Counts     `json:"counts"`
	Peers           []engine.PeerStatus  `json:"peers"`
}

func runStatus(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output string
	fs := g.flags("status")
	outputFlag(fs, &output)
	if ok, code := parse(env, fs, statusHelp, args); !ok {
		return code
	}
	if badOutput(env, "status", output) {
		return ExitUsage
	}
	st, err := g.loadOptional(fs)
	if err != nil {
		return fail(env, "status", err)
	}
	eng, closeFn, err := g.openEngine(ctx, env, "status", true)
	if err != nil {
		return fail(env, "status", err)
	}
	defer closeFn()
	peers, err := eng.PeerStatuses(st)
	if err != nil {
		return fail(env, "status", err)
	}
	// Read without the lock: the file is replaced whole, never written in
	// place. A pending transaction past its deadline is shown as it is;
	// the next writer rolls it back.
	txn, err := safeapply.Load(eng.State)
	if err != nil {
		return fail(env, "status", err)
	}
	now := time.Now()
	if output == "json" {
		out := statusOutput{Transaction: safeapply.Report(txn.Pending, now, ""), LastTransaction: safeapply.Report(txn.Last, now, ""), Counts: txn.Counts, Peers: nonNil(peers)}
		if out.Counts.RolledBack == nil {
			out.Counts.RolledBack = map[safeapply.Cause]uint64{}
		}
		if t := txn.Pending; t != nil {
			out.Transaction.ConfirmCommand = g.confirmCommand(t.ID)
		}
		printJSON(env, out)
		return ExitOK
	}
	if t := txn.Pending; t != nil {
		left := t.Deadline.Sub(now).Round(time.Second)
		when := fmt.Sprintf("rolls back at %s (in %s)", t.Deadline.Local().Format("15:04:05 MST"), left)
		if left <= 0 {
			when = fmt.Sprintf("deadline passed at %s: the next netreconcile writer rolls it back", t.Deadline.Local().Format("15:04:05 MST"))
		}
		fmt.Fprintf(env.Stdout, "Transaction %s pending: %s unless confirmed; held by %s.\nConfirm: %s\n\n", t.ID, when, t.Timer, g.confirmCommand(t.ID))
	} else if t := txn.Last; t != nil {
		how := string(t.State)
		if t.Cause != "" {
			how += " (" + string(t.Cause) + ")"
		}
		fmt.Fprintf(env.Stdout, "No transaction pending; the last one, %s, was %s at %s.\n\n", t.ID, how, t.Ended.Local().Format("2006-01-02 15:04:05 MST"))
	}
	if len(peers) == 0 {
		fmt.Fprintln(env.Stdout, "No WireGuard peers.")
		return ExitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINK\tPEER\tENDPOINT\tSTATE\tHANDSHAKE\tRX\tTX\tNEXT")
	for _, p := range peers {
		hs := "never"
		if !p.LastHandshake.IsZero() {
			hs = now.Sub(p.LastHandshake).Truncate(time.Second).String() + " ago"
		}
		next := p.Next
		if next == "" {
			next = "-"
		}
		if !p.Declared {
			next = "(not in the file)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", p.Link, p.PublicKey, p.Endpoint, p.State, hs, p.RxBytes, p.TxBytes, next)
	}
	return exitOf(tw.Flush())
}

func exitOf(err error) int {
	if err != nil {
		return ExitError
	}
	return ExitOK
}
