package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/netreconcile/netreconcile/internal/apply"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
	"github.com/netreconcile/netreconcile/internal/render"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

func runValidate(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output string
	fs := g.flags("validate")
	outputFlag(fs, &output)
	if ok, code := parse(env, fs, validateHelp, args); !ok {
		return code
	}
	if badOutput(env, "validate", output) {
		return ExitUsage
	}
	cfg, err := g.load()
	if err == nil {
		// Rules are nft's: nft compiles them, in a namespace of its own.
		err = engine.CompileAll(ctx, nil, cfg.State, localLinks())
	}
	if output == "json" {
		r := validateJSON{jsonHeader: header(), Valid: err == nil, Config: g.config, jsonFailure: env.failure(err)}
		if err == nil {
			st := cfg.State
			r.Files = cfg.Files
			r.Counts = &validateCounts{Links: len(st.Links), Addresses: len(st.Addresses), Routes: len(st.Routes),
				Rules: len(st.Rules), Fou: len(st.FouPorts), NFTables: len(st.NFTables)}
		}
		if jerr := env.writeJSON(r); jerr != nil {
			return fail(env, "validate", jerr)
		}
	}
	if err != nil {
		return fail(env, "validate", err)
	}
	if output == "json" {
		return ExitOK
	}
	st := cfg.State
	files := fmt.Sprintf("%d files", len(cfg.Files))
	if len(cfg.Sides) > 0 {
		files += fmt.Sprintf(", %d side files", len(cfg.Sides))
	}
	fmt.Fprintf(env.Stdout, "%s: valid (%s; %d links, %d addresses, %d routes, %d rules, %d fou ports, %d nftables tables)\n",
		inert.String(g.config), files, len(st.Links), len(st.Addresses), len(st.Routes), len(st.Rules), len(st.FouPorts), len(st.NFTables))
	return ExitOK
}

// heldBack counts the objects a conflict error says the plan left out.
func heldBack(err error) int {
	var cs diff.Conflicts
	if errors.As(err, &cs) {
		return len(cs)
	}
	return 0
}

// heldBackText is the sentence that says how many objects conflicts held
// back, or "".
func heldBackText(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 object held back by a conflict"
	}
	return fmt.Sprintf("%d objects held back by conflicts", n)
}

// localLinks are the links of the caller's namespace by name: validate
// compiles rules that name a link (iif, oif) to its index here, as nft run
// here would. Listing them needs no privilege.
func localLinks() map[string]int {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	out := make(map[string]int, len(ifs))
	for _, i := range ifs {
		out[i.Name] = i.Index
	}
	return out
}

func runDiff(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output, outFile string
	var strict bool
	fs := g.flags("diff")
	outputFlag(fs, &output)
	fs.StringVar(&outFile, "out", "", "")
	fs.BoolVar(&strict, "strict", false, "")
	if ok, code := parse(env, fs, diffHelp, args); !ok {
		return code
	}
	if badOutput(env, "diff", output) {
		return ExitUsage
	}
	if isSet(fs, "out") && outFile == "" {
		badUsage(env, "diff", "--out is empty: give the file to save the plan to")
		return ExitUsage
	}
	var cfg *desired.Config
	var snap *safeapply.Snapshot
	var eng *engine.Engine
	var closeFn func()
	var err error
	if outFile != "" {
		// The plan's inputs are digested from the bytes that are
		// parsed: read once, as apply reads them.
		cfg, snap, err = g.loadSnapshot("diff")
		if err == nil {
			eng, closeFn, err = g.openEngine(ctx, env, "diff", true)
		}
	} else {
		cfg, eng, closeFn, err = g.loadAndOpen(ctx, env, "diff", true)
	}
	if err != nil {
		return failJSON(env, "diff", output, env.planReport(nil, err), err)
	}
	defer closeFn()
	plan, pools, err := eng.PlanDesired(ctx, cfg.State, true)
	if plan == nil {
		return failJSON(env, "diff", output, env.planReport(nil, err), err)
	}
	held := heldBack(err)
	var serr error
	if strict && len(plan.Warnings) > 0 {
		serr = &strictError{plan.Warnings}
	}
	var saved *string
	if outFile != "" && serr == nil {
		conflicts := err
		werr := func() error {
			salt, err := newSalt()
			if err != nil {
				return err
			}
			s, err := g.savedOf(plan, eng, snap, cfg, salt, conflicts)
			if err != nil {
				return err
			}
			return writeSavedPlan(outFile, s)
		}()
		if werr != nil {
			return failJSON(env, "diff", output, env.planReport(plan, errors.Join(err, werr)), werr)
		}
		saved = &outFile
	}
	switch {
	case output == "json":
		r := env.planReport(plan, errors.Join(err, serr))
		r.PlanFile = saved
		if jerr := env.writeJSON(r); jerr != nil {
			return fail(env, "diff", jerr)
		}
	case plan.Empty() && held > 0:
		// Never "no changes": the kernel does not match, conflicts keep
		// the plan from saying how.
		fmt.Fprintf(env.Stdout, "No changes planned: %s.\n", heldBackText(held))
	case plan.Empty():
		fmt.Fprintln(env.Stdout, "No changes: the kernel matches the configuration.")
	default:
		plan.Write(env.Stdout)
		summary := plan.Summary()
		if held > 0 {
			summary += "; " + heldBackText(held)
		}
		fmt.Fprintf(env.Stdout, "\nPlan: %s.\n", summary)
		fmt.Fprintln(env.Stdout, plan.DisruptionSummary())
	}
	if output != "json" {
		diff.WriteWarnings(env.Stdout, plan.Warnings)
		if saved != nil {
			fmt.Fprintf(env.Stdout, "Plan saved to %s: \"netreconcile apply --plan %s\" applies exactly it, or refuses if the files or the kernel changed since.\n", inert.String(*saved), inert.String(*saved))
		}
		writePoolSummary(ctx, env.Stdout, eng, cfg.State, pools, true)
	}
	if err = errors.Join(err, serr); err != nil {
		return fail(env, "diff", err)
	}
	if plan.Empty() {
		return ExitOK
	}
	return ExitChanges
}

// loadSnapshot reads the configuration's files once and parses those
// bytes (apply, diff --out): what is digested or recorded is what was
// parsed.
func (g *globals) loadSnapshot(cmd string) (*desired.Config, *safeapply.Snapshot, error) {
	if !g.allowInsecureConfig {
		if err := desired.CheckTrusted(g.config, g.dropIn()); err != nil {
			return nil, nil, err
		}
	}
	snap, err := safeapply.ReadSnapshot(g.config, g.dropIn(), time.Now(), cmd)
	if err != nil {
		return nil, nil, err
	}
	// The side files the configuration names join the snapshot as read.
	cfg, err := snap.Parse(g.allowInsecureConfig)
	if err != nil {
		return nil, nil, err
	}
	return cfg, snap, nil
}

// applyOpts are apply's own options.
type applyOpts struct {
	quiet         bool
	output        string
	confirmWithin time.Duration
	candidate     string
	probes        probeFlag
	timer         string
	// plan is --plan FILE; max --max-disruption (nil: no limit); strict
	// --strict. gate holds them once parsed.
	plan   string
	max    disruptionFlag
	strict bool
	gate   *planGate
}

func runApply(ctx context.Context, env *Env, args []string) int {
	var g globals
	var o applyOpts
	fs := g.flags("apply")
	fs.BoolVar(&o.quiet, "quiet", false, "")
	fs.BoolVar(&o.quiet, "q", false, "")
	outputFlag(fs, &o.output)
	fs.DurationVar(&o.confirmWithin, "confirm-within", 0, "")
	fs.StringVar(&o.candidate, "candidate", "", "")
	fs.Var(&o.probes, "probe", "")
	fs.StringVar(&o.timer, "rollback-timer", string(safeapply.TimerAuto), "")
	fs.StringVar(&o.plan, "plan", "", "")
	fs.Var(&o.max, "max-disruption", "")
	fs.BoolVar(&o.strict, "strict", false, "")
	if ok, code := parse(env, fs, applyHelp, args); !ok {
		return code
	}
	if badOutput(env, "apply", o.output) {
		return ExitUsage
	}
	if isSet(fs, "plan") && o.plan == "" {
		badUsage(env, "apply", "--plan is empty: give the file diff --out saved")
		return ExitUsage
	}
	if o.plan != "" && isSet(fs, "candidate") {
		badUsage(env, "apply", "--plan applies the plan of the files it was made from; --candidate would change them: make the plan from the candidate instead")
		return ExitUsage
	}
	o.gate = &planGate{g: &g, path: o.plan, max: o.max.v, strict: o.strict}
	if o.plan != "" {
		saved, err := readSavedPlan(o.plan)
		if err != nil {
			return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
		}
		o.gate.saved = saved
	}
	// Given as 0 (a script's variable that came out empty of minutes),
	// it would be a plain apply, which no rollback covers.
	if o.confirmWithin < 0 || o.confirmWithin == 0 && isSet(fs, "confirm-within") {
		badUsage(env, "apply", fmt.Sprintf("--confirm-within must be positive, not %s", o.confirmWithin))
		return ExitUsage
	}
	if o.confirmWithin > 0 {
		return runSafeApply(ctx, env, &g, &o)
	}
	for _, name := range []string{"candidate", "probe", "rollback-timer"} {
		if isSet(fs, name) {
			badUsage(env, "apply", fmt.Sprintf("--%s goes with --confirm-within", name))
			return ExitUsage
		}
	}
	if !g.allowInsecureConfig {
		if err := desired.CheckTrusted(g.config, g.dropIn()); err != nil {
			return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
		}
	}
	h, closeFn, err := g.openHost(ctx, env, "apply")
	if err != nil {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	}
	defer closeFn()
	if _, err := h.RefusePending(ctx); err != nil {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	}
	// The files are read once, and what is applied is what gets recorded
	// as confirmed: an edit made meanwhile is neither.
	snap, err := safeapply.ReadSnapshot(g.config, g.dropIn(), time.Now(), "apply")
	if err != nil {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	}
	if _, by, err := h.Pin().Sources(snap.Sources()); err != nil {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	} else if by != "" {
		err := fmt.Errorf("the configuration files hold what safe-apply transaction %s rolled back and could not write back "+
			"(the confirmed configuration stays in force): edit them, or apply them again inside a transaction with --confirm-within", by)
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	}
	// The parse adds the side files to the snapshot, as read.
	cfg, err := snap.Parse(g.allowInsecureConfig)
	if err != nil {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, err), err)
	}
	eng := h.Engine
	if err := o.gate.before(ctx, eng, snap, cfg); err != nil {
		return gateFailed(env, &o, err)
	}
	// Files other than the ones last applied may hold rules the kernel
	// lacks: nft starts now, to compile them, while the plan reads the
	// kernel. Files applied before most likely compile nothing, and start
	// no nft.
	if !h.LastConfirmed(snap) {
		eng.PrestartCompile(cfg.State)
		defer eng.DropPrestarted()
	}
	// The record of the files as confirmed is written and flushed while
	// they are applied, and put in place once the kernel is verified.
	staged := h.StageConfirmed(snap)
	defer staged.Discard()
	plan, pools, conflicts := eng.PlanDesired(ctx, cfg.State, false)
	if plan == nil {
		return failJSON(env, "apply", o.output, env.applyReport(nil, nil, conflicts), conflicts)
	}
	if err := o.gate.after(plan, eng, snap, cfg, conflicts); err != nil {
		return gateFailed(env, &o, err)
	}
	if o.output != "json" {
		for _, w := range plan.Warnings {
			fmt.Fprintf(env.Stderr, "netreconcile apply: warning: %s\n", w)
		}
	}
	var warnings []string
	var res *apply.Result
	var applyErr error
	if plan.Empty() && conflicts == nil {
		applyErr = eng.SaveLedger()
		res = &apply.Result{}
	} else {
		res, applyErr = eng.Apply(ctx, plan)
	}
	err = errors.Join(conflicts, res.Err(), applyErr)
	// Verify: the kernel read again must need no change. A failed apply
	// is known not to match; an empty plan was made from a read after
	// which nothing was written, which is that verification.
	var verr error
	if err == nil && !plan.Empty() {
		verr = safeapply.Verify(ctx, eng, cfg.State)
	}
	if err == nil && verr == nil {
		// Not a failure of the apply: the kernel is right. Only the next
		// apply --confirm-within lacks this restore point.
		if rerr := h.RecordConfirmedStaged(snap, staged); rerr != nil {
			warnings = append(warnings, "not recorded as the confirmed configuration: "+rerr.Error())
			fmt.Fprintf(env.Stderr, "netreconcile apply: warning: not recorded as the confirmed configuration: %v\n", redact.Error(rerr))
		}
	}
	held := heldBack(conflicts)
	switch {
	case o.output == "json":
		r := env.applyReport(plan, res, errors.Join(err, verr))
		r.Changed, r.Verified, r.Warnings = len(res.Done) > 0, err == nil && verr == nil, nonNil(warnings)
		r.PlanWarnings = nonNil(plan.Warnings)
		if jerr := env.writeJSON(r); jerr != nil && err == nil && verr == nil {
			return fail(env, "apply", jerr)
		}
	case o.quiet:
	case len(res.Done)+len(res.Failed) == 0 && held > 0:
		// Never "no changes" nor "applied 0 of 0": the kernel does not
		// match, and the conflicts (on standard error) say why.
		fmt.Fprintf(env.Stdout, "Nothing applied: %s.\n", heldBackText(held))
	case len(res.Done)+len(res.Failed) == 0 && err == nil:
		fmt.Fprintln(env.Stdout, "No changes: the kernel matches the configuration.")
	default:
		diff.WriteOps(env.Stdout, res.Done)
		// Done and Failed hold every op the apply ran, the MTUs it set
		// again on masters (apply.Apply) included.
		line := fmt.Sprintf("Applied %d of %d operations", len(res.Done), len(res.Done)+len(res.Failed))
		if held > 0 {
			line += "; " + heldBackText(held)
		}
		fmt.Fprintln(env.Stdout, line+".")
		writePoolSummary(ctx, env.Stdout, eng, cfg.State, pools, false)
	}
	if err = errors.Join(err, verr); err != nil {
		return fail(env, "apply", err) // the JSON is printed above
	}
	return ExitOK
}

func runShow(ctx context.Context, env *Env, args []string) int {
	var g globals
	var all bool
	var output string
	fs := g.flags("show")
	fs.BoolVar(&all, "all", false, "")
	fs.BoolVar(&all, "a", false, "")
	outputFlag(fs, &output)
	if ok, code := parse(env, fs, showHelp, args); !ok {
		return code
	}
	if badOutput(env, "show", output) {
		return ExitUsage
	}
	failed := func(err error) int {
		return failJSON(env, "show", output, showJSON{jsonHeader: header(), jsonFailure: env.failure(err)}, err)
	}
	conf, err := g.loadOptional(fs)
	if err != nil {
		return failed(err)
	}
	protocol := defaultProtocol
	if conf != nil {
		protocol = conf.Protocol
	}
	eng, closeFn, err := g.openEngine(ctx, env, "show", true)
	if err != nil {
		return failed(err)
	}
	defer closeFn()
	// With --all, the file's sysctls too: the kernel has thousands, and
	// only those the file declares or netreconcile owns are shown.
	var sysctls []model.Sysctl
	if all && conf != nil {
		sysctls = conf.Sysctls
	}
	st, err := eng.Actual(protocol, all, sysctls...)
	if err != nil {
		return failed(err)
	}
	// With --all, what is not netreconcile's is printed as comments
	// (render.All): declared, it would be a conflict, a write or invalid.
	// The file's sysctls stay declarations: their values are the kernel's,
	// and declaring a key at its value writes nothing.
	var foreign *model.State
	if all {
		foreign = st.Foreign()
		sysctls := st.Sysctls
		st = st.Owned()
		st.Sysctls = sysctls
		if err := listedRules(ctx, eng, foreign); err != nil {
			return fail(env, "show", err)
		}
	} else {
		st = st.Owned()
	}
	if err := listedRules(ctx, eng, st); err != nil {
		return fail(env, "show", err)
	}
	if conf != nil {
		if err := showPools(ctx, eng, conf, st); err != nil {
			return fail(env, "show", err)
		}
	}
	var data, foreignData []byte
	if all {
		data, err = render.All(st, foreign)
		if err == nil {
			foreignData, err = render.Foreign(foreign)
		}
	} else {
		data, err = render.State(st)
	}
	if err != nil {
		return failed(err)
	}
	var pools []byte
	if conf != nil {
		if pools, err = renderPools(ctx, eng, conf); err != nil {
			return failed(err)
		}
	}
	if output == "json" {
		r, err := showReport(ctx, eng, conf, data, pools, foreignData)
		if err != nil {
			return failed(err)
		}
		return exitOf(env, "show", env.writeJSON(r))
	}
	_, _ = env.Stdout.Write(data)
	_, _ = env.Stdout.Write(pools)
	return ExitOK
}

// gateFailed reports a plan the checks of apply refused (planGate): as
// JSON with what they found, and with the exit code of the refusal.
func gateFailed(env *Env, o *applyOpts, err error) int {
	if o.output == "json" {
		r := env.applyReport(nil, nil, err)
		r.PlanWarnings, r.Refused = nonNil(o.gate.warnings), o.gate.refused
		for _, d := range o.gate.stale {
			r.Stale = append(r.Stale, redact.String(d))
		}
		if jerr := env.writeJSON(r); jerr != nil {
			fail(env, "apply", jerr)
		}
	}
	fail(env, "apply", err)
	return exitFor(err)
}

// failJSON prints report as JSON when output is json, then fails with err
// as fail does; a nil err is success.
func failJSON(env *Env, cmd, output string, report any, err error) int {
	if output == "json" {
		if jerr := env.writeJSON(report); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil {
		return fail(env, cmd, err)
	}
	return ExitOK
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name || (name == "config" && f.Name == "c") {
			set = true
		}
	})
	return set
}

func runVersion(ctx context.Context, env *Env, args []string) int {
	var output string
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	outputFlag(fs, &output)
	if ok, code := parse(env, fs, versionHelp, args); !ok {
		return code
	}
	if badOutput(env, "version", output) {
		return ExitUsage
	}
	if output == "json" {
		return exitOf(env, "version", env.writeJSON(versionReport()))
	}
	v := versionReport()
	fmt.Fprintf(env.Stdout, "netreconcile %s (commit %s, %s)\n", inert.String(v.Version), inert.String(v.Commit), v.GoVersion)
	return ExitOK
}
