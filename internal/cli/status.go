package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"
)

const statusHelp = `Usage: netreconcile status [OPTIONS]

Show each WireGuard peer of the devices the file names (or, without a
readable file, of every device netreconcile owns): the endpoint in use, the
state (up, unknown, down; see docs/config.md, wireguard rotation), the age
of the last handshake, bytes received and sent, and the candidate endpoint a
rotation would try next. Only public keys are printed.

A one-shot command does not know when the daemon last changed an endpoint:
it judges each peer by its last handshake alone.

Options:
  -o, --output FORMAT  text (default) or json
` + commonFlags

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
	if output == "json" {
		data, err := json.MarshalIndent(peers, "", "  ")
		if err != nil {
			return fail(env, "status", err)
		}
		fmt.Fprintln(env.Stdout, string(data))
		return ExitOK
	}
	if len(peers) == 0 {
		fmt.Fprintln(env.Stdout, "No WireGuard peers.")
		return ExitOK
	}
	now := time.Now()
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
