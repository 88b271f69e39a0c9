package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/safeapply"
	"github.com/netreconcile/netreconcile/internal/statedir"
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
// same namespace and state directory, from / and outside this session. A
// namespace given as a path is named as the timer will still reach it at
// the deadline: by its name when it has one (a /proc/PID/ns/net path goes
// with its process), else by a descriptor handed to the timer (netns, to
// close once the timer is arranged).
func (g *globals) timerArgs() (args []string, netns *os.File, err error) {
	sd, err := filepath.Abs(g.stateDir)
	if err != nil {
		return nil, nil, err
	}
	args = []string{"--state-dir", sd, "--lock-timeout", g.lockTimeout.String(), "--wireguard-go", kernel.UserspaceProgram, "--nft", engine.DefaultCompiler.Path}
	if g.netns != "" {
		ns := g.netns
		if strings.ContainsRune(ns, '/') {
			id, err := statedir.IdentifyNetns(ns)
			if err != nil {
				return nil, nil, err
			}
			if name, ok := strings.CutPrefix(id.Key, "netns/"); ok && !strings.HasPrefix(name, "nsfs-") {
				ns = name
			} else {
				if netns, err = os.Open(ns); err != nil {
					return nil, nil, fmt.Errorf("open network namespace %s for the rollback timer: %w", ns, err)
				}
				ns = fmt.Sprintf("/proc/self/fd/%d", safeapply.NetnsFD)
			}
		}
		// The state directory this apply records the transaction in: a
		// timer that identified the namespace itself would look in
		// another once the namespace gained a name (or one sorting
		// first) before it looked, find no transaction, and exit.
		args = append(args, "--netns", ns, "--due-netns", g.opened.Pin())
	}
	if g.allowInsecureConfig {
		args = append(args, "--allow-insecure-config")
	}
	return args, netns, nil
}

// inInitNetns reports whether this process is in the network namespace of
// PID 1, the service manager's, where a systemd timer runs. Where PID 1's
// namespace file cannot be read (a user other than root, a container), a
// namespace ip-netns(8) names is taken for another one: ip netns exec
// enters named namespaces.
func inInitNetns() bool {
	own, err1 := os.Stat("/proc/thread-self/ns/net")
	pid1, err2 := os.Stat("/proc/1/ns/net")
	if err1 == nil && err2 == nil {
		return os.SameFile(own, pid1)
	}
	id, err := statedir.IdentifyNetns("/proc/thread-self/ns/net")
	return err != nil || id.Key == ""
}

// nsArgs are the options that name this namespace and state directory,
// for the commands that messages suggest.
func (g *globals) nsArgs() []string {
	var args []string
	if g.netns != "" {
		args = append(args, "--netns", g.netns)
	}
	if g.stateDir != DefaultStateDir {
		args = append(args, "--state-dir", g.stateDir)
	}
	return args
}

// nsOptions are nsArgs as they follow a command in a command line the user
// is told to run: each quoted for the shell (package inert), with a
// leading space.
func (g *globals) nsOptions() string {
	if args := g.nsArgs(); len(args) > 0 {
		return " " + inert.Command(args...)
	}
	return ""
}

// confirmCommand is the command line that confirms id, quoted for the
// shell: the id was read from the state directory, which the service user
// writes, and the line is one to paste into root's shell.
func (g *globals) confirmCommand(id string) string {
	return "netreconcile confirm" + g.nsOptions() + " " + safeapply.IDArg(id)
}

// probeFlag is the repeatable --probe.
type probeFlag []string

func (p *probeFlag) String() string     { return strings.Join(*p, ",") }
func (p *probeFlag) Set(v string) error { *p = append(*p, v); return nil }

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
		read := func() ([]byte, error) {
			// The candidate becomes the main file: trusted as the main
			// file is (no user but root or the caller could write it).
			if !g.allowInsecureConfig {
				if err := desired.CheckTrustedFile(o.candidate, "candidate"); err != nil {
					return nil, err
				}
			}
			return desired.ReadFile(o.candidate)
		}
		if _, f := handedByRoot(); f != nil {
			// Read by root's process, which started this one
			// (runas_linux.go), within the same bound.
			read = func() ([]byte, error) {
				data, err := io.ReadAll(io.LimitReader(f, desired.MaxFileSize+1))
				if err == nil && len(data) > desired.MaxFileSize {
					err = fmt.Errorf("larger than %d bytes", desired.MaxFileSize)
				}
				return data, err
			}
		}
		data, err := read()
		if err != nil {
			err = fmt.Errorf("--candidate: %w", err)
			return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
		}
		candidate = data
	}
	penv := safeapply.ProbeEnv{Netns: g.nsPath(), Getenv: env.Getenv}
	var probes []safeapply.Probe
	for _, spec := range o.probes {
		p, err := safeapply.ParseProbe(spec, penv)
		if err != nil {
			badUsage(env, "apply", err.Error())
			return ExitUsage
		}
		probes = append(probes, p)
	}
	mode, err := safeapply.ParseTimerMode(o.timer)
	if err != nil {
		badUsage(env, "apply", err.Error())
		return ExitUsage
	}
	failed := func(err error) int {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	}
	self, err := os.Executable()
	if err != nil {
		return failed(fmt.Errorf("find this program for the rollback timer: %w", err))
	}
	h, closeFn, err := g.openHost(ctx, env, "apply")
	if err != nil {
		return failed(err)
	}
	defer closeFn()
	// After openHost: the timer is pinned to the namespace's identity as
	// this apply found it.
	args, netns, err := g.timerArgs()
	if err != nil {
		return failed(err)
	}
	if netns != nil {
		defer netns.Close()
	}
	tm := &safeapply.Timer{Mode: mode, Dir: h.Dir, Program: self, Args: args, Netns: netns, Elsewhere: g.netns == "" && !inInitNetns()}
	h.Timer = tm.Arrange
	gate := o.gate
	req := safeapply.BeginRequest{Main: g.config, DropIn: g.dropIn(), Candidate: candidate, CandidateName: o.candidate, Window: o.confirmWithin, Probes: probes,
		Check: func(ctx context.Context, applied *safeapply.Snapshot, cfg *desired.Config) error {
			return gate.before(ctx, h.Engine, applied, cfg)
		},
		CheckPlan: func(plan *diff.Plan, applied *safeapply.Snapshot, cfg *desired.Config, conflicts error) error {
			return gate.after(plan, h.Engine, applied, cfg, conflicts)
		}}
	res, err := h.Begin(ctx, req)
	if res == nil {
		var se *strictError
		if exitFor(err) != ExitError || errors.As(err, &se) {
			return gateFailed(env, o, err)
		}
		return failed(err)
	}
	if o.output != "json" {
		for _, w := range gate.warnings {
			fmt.Fprintf(env.Stderr, "netreconcile apply: warning: %s\n", w)
		}
	}
	now := time.Now()
	var outErr error
	if res.Outcome != nil {
		outErr = errors.Join(res.Outcome.Err, res.Outcome.Verify)
	}
	if outErr == nil {
		outErr = err
	}
	out := env.applyReport(nil, &apply.Result{}, outErr)
	out.Warnings, out.Rollback = nonNil(res.Warnings), safeapply.ReportRollback(res.Rollback)
	out.PlanWarnings = nonNil(gate.warnings)
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
			out.Protocol = &res.Outcome.Plan.Protocol
		}
	}
	if res.Txn != nil {
		out.Probes = &probesOutput{Armed: nonNil(res.Armed), Skipped: nonNil(res.Skipped), After: nonNil(res.After), AfterRollback: nonNil(res.Again)}
	}
	if o.output == "json" {
		if jerr := env.writeJSON(out); jerr != nil && err == nil {
			err = jerr
		}
	} else if !o.quiet {
		writeSafeApplyText(env, g, res, now)
	}
	if err != nil {
		return fail(env, "apply", err)
	}
	return ExitOK
}

// writeSafeApplyText prints what apply --confirm-within did. Ids, paths,
// probes and the messages of errors are made inert (package inert).
func writeSafeApplyText(env *Env, g *globals, res *safeapply.BeginResult, now time.Time) {
	w := env.Stdout
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "Probe %s not armed: it fails already (%s).\n", inert.String(s.Probe), inert.String(s.Err))
	}
	if len(res.Armed) > 0 {
		fmt.Fprintf(w, "Probes armed: %s.\n", inert.String(strings.Join(res.Armed, ", ")))
	}
	if res.Outcome != nil {
		diff.WriteOps(w, res.Outcome.Done)
		fmt.Fprintf(w, "Applied %d operations.\n", len(res.Outcome.Done))
	}
	for _, s := range res.Warnings {
		fmt.Fprintf(env.Stderr, "netreconcile apply: warning: %s\n", inert.String(s))
	}
	if rb := res.Rollback; rb != nil {
		fmt.Fprintf(w, "Rolled back at once (%s): %s\n", inert.String(string(rb.Txn.Cause)), inert.String(rb.Txn.Detail))
		if rb.Outcome != nil {
			diff.WriteOps(w, rb.Outcome.Done)
		}
		for _, f := range rb.Files {
			fmt.Fprintf(w, "Restored %s.\n", inert.String(f))
		}
		for _, p := range res.Again {
			state := "passes"
			if !p.OK {
				state = "still fails: " + p.Err
			}
			fmt.Fprintf(w, "Probe %s after the rollback: %s.\n", inert.String(p.Probe), inert.String(state))
		}
		return
	}
	t := res.Txn
	verb := "begun"
	if res.Extended {
		verb = "extended"
	}
	fmt.Fprintf(w, "Transaction %s %s: rolls back at %s (in %s) unless confirmed (held by %s).\n",
		inert.String(t.ID), verb, t.Deadline.Local().Format("15:04:05 MST"), t.Deadline.Sub(now).Round(time.Second), inert.String(t.Timer))
	fmt.Fprintf(w, "Confirm from any session: %s\n", g.confirmCommand(t.ID))
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
			badUsage(env, fs.Name(), err.Error())
			return "", false, ExitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		ids = append(ids, fs.Arg(0))
		args = fs.Args()[1:]
	}
	env.netns = netnsGiven(fs)
	if len(ids) > 1 {
		badUsage(env, fs.Name(), fmt.Sprintf("unexpected argument %q", ids[1]))
		return "", false, ExitUsage
	}
	if len(ids) == 1 {
		id = ids[0]
		if err := safeapply.ValidID(id); err != nil {
			fmt.Fprintf(env.Stderr, "netreconcile %s: %v\n\n%s", fs.Name(), err, usage)
			return "", false, ExitUsage
		}
	}
	return id, true, 0
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
		return failJSON(env, "confirm", output, txnOutput{jsonHeader: header(), jsonFailure: env.failure(err)}, err)
	}
	defer closeFn()
	t, rolled, err := h.Confirm(ctx, id)
	now := time.Now()
	out := txnOutput{jsonHeader: header(), Transaction: safeapply.Report(t, now, ""), Rollback: safeapply.ReportRollback(rolled), jsonFailure: env.failure(err)}
	if rolled != nil {
		out.Transaction = safeapply.Report(rolled.Txn, now, "")
	}
	if output == "json" {
		return failJSON(env, "confirm", output, out, err)
	}
	if t != nil {
		fmt.Fprintf(env.Stdout, "Transaction %s confirmed: its configuration is the restore point of the next one.\n", inert.String(t.ID))
	}
	return exitOf(env, "confirm", err)
}

func runRollback(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output string
	var due bool
	fs := g.flags("rollback")
	outputFlag(fs, &output)
	var duePin string
	fs.BoolVar(&due, "due", false, "")
	fs.StringVar(&duePin, "due-netns", "", "")
	id, ok, code := parseWithID(env, fs, rollbackHelp, args)
	if !ok {
		return code
	}
	if badOutput(env, "rollback", output) {
		return ExitUsage
	}
	failed := func(err error) int {
		return failJSON(env, "rollback", output, txnOutput{jsonHeader: header(), jsonFailure: env.failure(err)}, err)
	}
	var rolled *safeapply.RollbackResult
	var err error
	if due {
		// A timer waits until the apply that started it recorded the
		// transaction (or is gone).
		safeapply.WaitGate(os.Getenv)
		if id == "" {
			badUsage(env, "rollback", "--due needs the transaction's ID")
			return ExitUsage
		}
		if duePin != "" {
			pin, err := statedir.ParsePin(duePin)
			if err != nil {
				badUsage(env, "rollback", err.Error())
				return ExitUsage
			}
			g.kept = &pin
		}
		st, oerr := g.openState(false)
		if oerr != nil {
			return failed(oerr)
		}
		defer st.close()
		// The transaction is in this state directory: the one the
		// rollback opens at the deadline, even if the namespace was
		// named (or gained a name that sorts first) in the window.
		g.kept = &st.id
		rolled, err = safeapply.WaitDue(ctx, st.dir, id, func(ctx context.Context) (*safeapply.Host, func(), error) {
			h, closeFn, err := g.openHost(ctx, env, "rollback")
			if err == nil || g.netns == "" {
				return h, closeFn, err
			}
			if _, ierr := statedir.IdentifyNetns(g.netns); !errors.Is(ierr, os.ErrNotExist) {
				return nil, nil, err
			}
			// The namespace is gone (ip netns del, its last process
			// exited): its kernel state went with it, and the files
			// are written back all the same; retried forever instead,
			// the transaction stayed pending and its timer alive.
			unlock, lerr := g.lockFn(st, waitingMessage(env, "rollback", g.lockTimeout))(ctx)
			if lerr != nil {
				return nil, nil, lerr
			}
			w, _ := handedByRoot()
			return &safeapply.Host{Dir: st.dir, Netns: g.netns, AllowInsecureConfig: g.allowInsecureConfig, Getenv: env.Getenv, Options: g.nsOptions(), MainWriter: w}, unlock, nil
		})
	} else {
		h, closeFn, oerr := g.openHost(ctx, env, "rollback")
		if oerr != nil {
			return failed(oerr)
		}
		defer closeFn()
		rolled, err = h.Rollback(ctx, id, safeapply.CauseManual, "rolled back by netreconcile rollback")
	}
	if rolled != nil && err == nil {
		err = rolled.Err
	}
	if output == "json" {
		out := txnOutput{jsonHeader: header(), jsonFailure: env.failure(err)}
		if rolled != nil {
			out.Transaction, out.Rollback = safeapply.Report(rolled.Txn, time.Now(), ""), safeapply.ReportRollback(rolled)
		}
		return failJSON(env, "rollback", output, out, err)
	}
	if rolled != nil {
		if rolled.Outcome != nil {
			diff.WriteOps(env.Stdout, rolled.Outcome.Done)
		}
		for _, f := range rolled.Files {
			fmt.Fprintf(env.Stdout, "Restored %s.\n", inert.String(f))
		}
		fmt.Fprintf(env.Stdout, "Transaction %s rolled back (%s).\n", inert.String(rolled.Txn.ID), inert.String(string(rolled.Txn.Cause)))
	}
	return exitOf(env, "rollback", err)
}
