package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

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
	failed := func(err error) int {
		return failJSON(env, "status", output, statusOutput{jsonHeader: header(), jsonFailure: env.failure(err)}, err)
	}
	st, err := g.loadOptional(fs)
	if err != nil {
		return failed(err)
	}
	eng, closeFn, err := g.openEngine(ctx, env, "status", true)
	if err != nil {
		return failed(err)
	}
	defer closeFn()
	peers, err := eng.PeerStatuses(st)
	if err != nil {
		return failed(err)
	}
	// Read without the lock: the file is replaced whole, never written in
	// place. A pending transaction past its deadline is shown as it is;
	// the next writer rolls it back.
	txn, err := safeapply.Load(eng.State)
	if err != nil {
		return failed(err)
	}
	now := time.Now()
	if output == "json" {
		out := statusOutput{jsonHeader: header(), Transaction: safeapply.Report(txn.Pending, now, ""), LastTransaction: safeapply.Report(txn.Last, now, ""),
			Counts: countsOf(txn.Counts), Peers: peersJSON(peers), jsonFailure: env.failure(nil)}
		if t := txn.Pending; t != nil && t.RollingBack == "" && now.Before(t.Deadline) {
			c := g.confirmCommand(t.ID)
			out.Transaction.ConfirmCommand = &c
		}
		return exitOf(env, "status", env.writeJSON(out))
	}
	// Every string below but the times and counts was read from the state
	// directory or the kernel: each is made inert (package inert).
	if t := txn.Pending; t != nil && t.RollingBack != "" {
		// The record says a rollback began before its first write: it is
		// under way (it holds the writer lock) or its process was killed.
		// Either way it is never undone, and this command, which takes no
		// lock, only says who finishes it.
		timer := ""
		if t.Timer != "" {
			timer = ", or the timer, held by " + inert.String(t.Timer)
		}
		fmt.Fprintf(env.Stdout, "Transaction %s rolling back (%s): %s.\n"+
			"The rollback began and has not ended: it is under way, or its process was interrupted. "+
			"It is never undone and can no longer be confirmed: the next netreconcile writer (an apply, confirm or rollback, the daemon%s) finishes it.\n"+
			"Finish it now: netreconcile rollback%s %s\n\n",
			inert.String(t.ID), inert.String(string(t.RollingBack)), inert.String(t.Detail), timer, g.nsOptions(), safeapply.IDArg(t.ID))
	} else if t := txn.Pending; t != nil {
		if t.Applying {
			// Set from the record to the end of the apply that began or
			// extended it, which holds the writer lock all along: this
			// command, which takes none, cannot tell which it is.
			fmt.Fprintf(env.Stdout, "The apply of transaction %s has not completed: it is under way, or its process was interrupted; "+
				"then it can no longer be confirmed, and the next netreconcile writer rolls it back.\n", inert.String(t.ID))
		}
		if !now.Before(t.Deadline) {
			// A confirm now rolls it back instead (it can no longer
			// be confirmed): no confirm command is offered.
			fmt.Fprintf(env.Stdout, "Transaction %s pending: deadline passed at %s; it can no longer be confirmed, and the next netreconcile writer rolls it back; held by %s.\nRoll it back now: netreconcile rollback%s %s\n\n",
				inert.String(t.ID), t.Deadline.Local().Format("15:04:05 MST"), inert.String(t.Timer), g.nsOptions(), safeapply.IDArg(t.ID))
		} else {
			fmt.Fprintf(env.Stdout, "Transaction %s pending: rolls back at %s (in %s) unless confirmed; held by %s.\nConfirm: %s\n\n",
				inert.String(t.ID), t.Deadline.Local().Format("15:04:05 MST"), t.Deadline.Sub(now).Round(time.Second), inert.String(t.Timer), g.confirmCommand(t.ID))
		}
	} else if t := txn.Last; t != nil {
		how := string(t.State)
		if t.Cause != "" {
			how += " (" + string(t.Cause) + ")"
		}
		fmt.Fprintf(env.Stdout, "No transaction pending; the last one, %s, was %s at %s.\n\n", inert.String(t.ID), inert.String(how), t.Ended.Local().Format("2006-01-02 15:04:05 MST"))
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", inert.String(p.Link), p.PublicKey, inert.String(p.Endpoint), p.State, hs, p.RxBytes, p.TxBytes, inert.String(next))
	}
	return exitOf(env, "status", tw.Flush())
}

// exitOf is the exit of a command whose last step was err: a failure
// printed as fail prints it, or success.
func exitOf(env *Env, cmd string, err error) int {
	if err != nil {
		return fail(env, cmd, err)
	}
	return ExitOK
}
