package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// openHost opens the namespace for a transaction: its state directory with
// the writer lock held, and the engine on its kernel.
func (g *globals) openHost(ctx context.Context, env *Env, cmd string) (*safeapply.Host, func(), error) {
	eng, closeFn, err := g.openEngine(ctx, env, cmd, false)
	if err != nil {
		return nil, nil, err
	}
	w, _ := handedByRoot()
	return &safeapply.Host{Dir: eng.State, Engine: eng, Netns: g.netns, AllowInsecureConfig: g.allowInsecureConfig, Getenv: env.Getenv, Options: g.nsOptions(), MainWriter: w}, closeFn, nil
}

// timerArgs are the options a timer's "rollback --due" needs to reach the
// same namespace and state directory, from / and outside this session.
func (g *globals) timerArgs() ([]string, error) {
	sd, err := filepath.Abs(g.stateDir)
	if err != nil {
		return nil, err
	}
	args := []string{"--state-dir", sd, "--lock-timeout", g.lockTimeout.String(), "--wireguard-go", kernel.UserspaceProgram}
	if g.netns != "" {
		ns := g.netns
		if strings.ContainsRune(ns, '/') {
			if ns, err = filepath.Abs(ns); err != nil {
				return nil, err
			}
		}
		args = append(args, "--netns", ns)
	}
	if g.allowInsecureConfig {
		args = append(args, "--allow-insecure-config")
	}
	return args, nil
}

// nsOptions are the options that name this namespace and state directory,
// for the commands that messages suggest.
func (g *globals) nsOptions() string {
	opts := ""
	if g.netns != "" {
		opts += " --netns " + g.netns
	}
	if g.stateDir != DefaultStateDir {
		opts += " --state-dir " + g.stateDir
	}
	return opts
}

// confirmCommand is the command line that confirms id.
func (g *globals) confirmCommand(id string) string {
	return "netreconcile confirm" + g.nsOptions() + " " + id
}

// probeFlag is the repeatable --probe.
type probeFlag []string

func (p *probeFlag) String() string     { return strings.Join(*p, ",") }
func (p *probeFlag) Set(v string) error { *p = append(*p, v); return nil }

type probesOutput struct {
	Armed         []string                `json:"armed"`
	Skipped       []safeapply.ProbeResult `json:"skipped"`
	After         []safeapply.ProbeResult `json:"after"`
	AfterRollback []safeapply.ProbeResult `json:"after_rollback"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// runSafeApply is apply --confirm-within.
func runSafeApply(ctx context.Context, env *Env, g *globals, o *applyOpts) int {
	var candidate []byte
	if o.candidate != "" {
		read := func() ([]byte, error) { return os.ReadFile(o.candidate) }
		if _, f := handedByRoot(); f != nil {
			// Read by root's process, which started this one
			// (runas_linux.go).
			read = func() ([]byte, error) { return io.ReadAll(f) }
		}
		data, err := read()
		if err != nil {
			return fail(env, "apply", fmt.Errorf("--candidate: %w", err))
		}
		candidate = data
	}
	penv := safeapply.ProbeEnv{Netns: g.nsPath(), Getenv: env.Getenv}
	var probes []safeapply.Probe
	for _, spec := range o.probes {
		p, err := safeapply.ParseProbe(spec, penv)
		if err != nil {
			fmt.Fprintf(env.Stderr, "netreconcile apply: %v\n", err)
			return ExitUsage
		}
		probes = append(probes, p)
	}
	mode, err := safeapply.ParseTimerMode(o.timer)
	if err != nil {
		fmt.Fprintf(env.Stderr, "netreconcile apply: %v\n", err)
		return ExitUsage
	}
	self, err := os.Executable()
	if err != nil {
		return fail(env, "apply", fmt.Errorf("find this program for the rollback timer: %w", err))
	}
	args, err := g.timerArgs()
	if err != nil {
		return fail(env, "apply", err)
	}
	h, closeFn, err := g.openHost(ctx, env, "apply")
	if err != nil {
		return fail(env, "apply", err)
	}
	defer closeFn()
	tm := &safeapply.Timer{Mode: mode, Dir: h.Dir, Program: self, Args: args}
	h.Timer = tm.Arrange
	res, err := h.Begin(ctx, safeapply.BeginRequest{Main: g.config, DropIn: g.dropIn(), Candidate: candidate, Window: o.confirmWithin, Probes: probes})
	if res == nil {
		return fail(env, "apply", err)
	}
	now := time.Now()
	var outErr error
	if res.Outcome != nil {
		outErr = errors.Join(res.Outcome.Err, res.Outcome.Verify)
	}
	if outErr == nil {
		outErr = err
	}
	out := applyReport(nil, &apply.Result{}, outErr)
	out.Warnings, out.Rollback = nonNil(res.Warnings), safeapply.ReportRollback(res.Rollback)
	if res.Txn != nil {
		t := res.Txn
		if res.Rollback != nil {
			t = res.Rollback.Txn
		}
		out.Transaction = safeapply.Report(t, now, g.confirmCommand(t.ID))
	}
	if res.Outcome != nil {
		out.Done = nonNil(res.Outcome.Done)
		out.Changed = len(res.Outcome.Done) > 0
		out.Verified = res.Outcome.Err == nil && res.Outcome.Verify == nil
		if res.Outcome.Plan != nil {
			out.Protocol = res.Outcome.Plan.Protocol
		}
	}
	if res.Txn != nil {
		out.Probes = &probesOutput{Armed: nonNil(res.Armed), Skipped: nonNil(res.Skipped), After: nonNil(res.After), AfterRollback: nonNil(res.Again)}
	}
	if o.output == "json" {
		printJSON(env, out)
	} else if !o.quiet {
		writeSafeApplyText(env, g, res, now)
	}
	if err != nil {
		return fail(env, "apply", err)
	}
	return ExitOK
}

func writeSafeApplyText(env *Env, g *globals, res *safeapply.BeginResult, now time.Time) {
	w := env.Stdout
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "Probe %s not armed: it fails already (%s).\n", s.Probe, s.Err)
	}
	if len(res.Armed) > 0 {
		fmt.Fprintf(w, "Probes armed: %s.\n", strings.Join(res.Armed, ", "))
	}
	if res.Outcome != nil {
		diff.WriteOps(w, res.Outcome.Done)
		fmt.Fprintf(w, "Applied %d operations.\n", len(res.Outcome.Done))
	}
	for _, s := range res.Warnings {
		fmt.Fprintf(env.Stderr, "netreconcile apply: warning: %s\n", s)
	}
	if rb := res.Rollback; rb != nil {
		fmt.Fprintf(w, "Rolled back at once (%s): %s\n", rb.Txn.Cause, rb.Txn.Detail)
		if rb.Outcome != nil {
			diff.WriteOps(w, rb.Outcome.Done)
		}
		for _, f := range rb.Files {
			fmt.Fprintf(w, "Restored %s.\n", f)
		}
		for _, p := range res.Again {
			state := "passes"
			if !p.OK {
				state = "still fails: " + p.Err
			}
			fmt.Fprintf(w, "Probe %s after the rollback: %s.\n", p.Probe, state)
		}
		return
	}
	t := res.Txn
	verb := "begun"
	if res.Extended {
		verb = "extended"
	}
	fmt.Fprintf(w, "Transaction %s %s: rolls back at %s (in %s) unless confirmed (held by %s).\n",
		t.ID, verb, t.Deadline.Local().Format("15:04:05 MST"), t.Deadline.Sub(now).Round(time.Second), t.Timer)
	fmt.Fprintf(w, "Confirm from any session: %s\n", g.confirmCommand(t.ID))
}

func printJSON(env *Env, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(env.Stderr, "netreconcile: encode json: %v\n", err)
		return
	}
	fmt.Fprintln(env.Stdout, string(data))
}

// parseWithID parses a command's flags and at most one positional ID,
// before or after the options.
func parseWithID(env *Env, fs *flag.FlagSet, usage string, args []string) (id string, ok bool, code int) {
	fs.SetOutput(io.Discard)
	var ids []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(env.Stdout, usage)
				return "", false, ExitOK
			}
			fmt.Fprintf(env.Stderr, "netreconcile %s: %v\n\n%s", fs.Name(), err, usage)
			return "", false, ExitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		ids = append(ids, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(ids) > 1 {
		fmt.Fprintf(env.Stderr, "netreconcile %s: unexpected argument %q\n\n%s", fs.Name(), ids[1], usage)
		return "", false, ExitUsage
	}
	if len(ids) == 1 {
		id = ids[0]
	}
	return id, true, 0
}

type txnOutput struct {
	Transaction *safeapply.TxnReport      `json:"transaction"`
	Rollback    *safeapply.RollbackReport `json:"rollback"`
}

func runConfirm(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output string
	fs := g.flags("confirm")
	outputFlag(fs, &output)
	id, ok, code := parseWithID(env, fs, confirmHelp, args)
	if !ok {
		return code
	}
	if badOutput(env, "confirm", output) {
		return ExitUsage
	}
	h, closeFn, err := g.openHost(ctx, env, "confirm")
	if err != nil {
		return fail(env, "confirm", err)
	}
	defer closeFn()
	t, rolled, err := h.Confirm(ctx, id)
	now := time.Now()
	out := txnOutput{Transaction: safeapply.Report(t, now, ""), Rollback: safeapply.ReportRollback(rolled)}
	if rolled != nil {
		out.Transaction = safeapply.Report(rolled.Txn, now, "")
	}
	if output == "json" && (t != nil || rolled != nil) {
		printJSON(env, out)
	} else if t != nil {
		fmt.Fprintf(env.Stdout, "Transaction %s confirmed: its configuration is the restore point of the next one.\n", t.ID)
	}
	if err != nil {
		return fail(env, "confirm", err)
	}
	return ExitOK
}

func runRollback(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output string
	var due bool
	fs := g.flags("rollback")
	outputFlag(fs, &output)
	fs.BoolVar(&due, "due", false, "")
	id, ok, code := parseWithID(env, fs, rollbackHelp, args)
	if !ok {
		return code
	}
	if badOutput(env, "rollback", output) {
		return ExitUsage
	}
	var rolled *safeapply.RollbackResult
	var err error
	if due {
		if id == "" {
			fmt.Fprintf(env.Stderr, "netreconcile rollback: --due needs the transaction's ID\n")
			return ExitUsage
		}
		st, oerr := g.openState(false)
		if oerr != nil {
			return fail(env, "rollback", oerr)
		}
		defer st.close()
		rolled, err = safeapply.WaitDue(ctx, st.dir, id, func(ctx context.Context) (*safeapply.Host, func(), error) {
			return g.openHost(ctx, env, "rollback")
		})
	} else {
		h, closeFn, oerr := g.openHost(ctx, env, "rollback")
		if oerr != nil {
			return fail(env, "rollback", oerr)
		}
		defer closeFn()
		rolled, err = h.Rollback(ctx, id, safeapply.CauseManual, "rolled back by netreconcile rollback")
	}
	if rolled != nil {
		if output == "json" {
			printJSON(env, txnOutput{Transaction: safeapply.Report(rolled.Txn, time.Now(), ""), Rollback: safeapply.ReportRollback(rolled)})
		} else {
			if rolled.Outcome != nil {
				diff.WriteOps(env.Stdout, rolled.Outcome.Done)
			}
			for _, f := range rolled.Files {
				fmt.Fprintf(env.Stdout, "Restored %s.\n", f)
			}
			fmt.Fprintf(env.Stdout, "Transaction %s rolled back (%s).\n", rolled.Txn.ID, rolled.Txn.Cause)
		}
		if err == nil {
			err = rolled.Err
		}
	}
	if err != nil {
		return fail(env, "rollback", err)
	}
	return ExitOK
}
