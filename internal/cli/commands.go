package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

func runValidate(ctx context.Context, env *Env, args []string) int {
	var g globals
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	g.register(fs)
	if ok, code := parse(env, fs, validateHelp, args); !ok {
		return code
	}
	cfg, err := desired.Load(g.config, g.dropIn())
	if err != nil {
		return fail(env, "validate", err)
	}
	st := cfg.State
	fmt.Fprintf(env.Stdout, "%s: valid (%d files; %d links, %d addresses, %d routes, %d rules, %d fou ports, %d nftables tables)\n",
		g.config, len(cfg.Files), len(st.Links), len(st.Addresses), len(st.Routes), len(st.Rules), len(st.FouPorts), len(st.NFTables))
	return ExitOK
}

func runDiff(ctx context.Context, env *Env, args []string) int {
	var g globals
	var output string
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	g.register(fs)
	fs.StringVar(&output, "output", "text", "")
	fs.StringVar(&output, "o", "text", "")
	if ok, code := parse(env, fs, diffHelp, args); !ok {
		return code
	}
	if output != "text" && output != "json" {
		fmt.Fprintf(env.Stderr, "netreconcile diff: --output must be text or json, not %q\n", output)
		return ExitUsage
	}
	cfg, err := desired.Load(g.config, g.dropIn())
	if err != nil {
		return fail(env, "diff", err)
	}
	eng, closeFn, err := g.openEngine()
	if err != nil {
		return fail(env, "diff", err)
	}
	defer closeFn()
	plan, pools, err := eng.PlanDesired(ctx, cfg.State, true)
	if plan == nil {
		return fail(env, "diff", err)
	}
	if output == "json" {
		data, jerr := plan.JSON()
		if jerr != nil {
			return fail(env, "diff", jerr)
		}
		fmt.Fprintln(env.Stdout, string(data))
	} else if plan.Empty() {
		fmt.Fprintln(env.Stdout, "No changes: the kernel matches the configuration.")
	} else {
		plan.Write(env.Stdout)
		fmt.Fprintf(env.Stdout, "\nPlan: %s.\n", plan.Summary())
	}
	if output != "json" {
		writePoolSummary(ctx, env.Stdout, &g, cfg.State, pools, true)
	}
	if err != nil {
		return fail(env, "diff", err)
	}
	if plan.Empty() {
		return ExitOK
	}
	return ExitChanges
}

func runApply(ctx context.Context, env *Env, args []string) int {
	var g globals
	var quiet bool
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	g.register(fs)
	fs.BoolVar(&quiet, "quiet", false, "")
	fs.BoolVar(&quiet, "q", false, "")
	if ok, code := parse(env, fs, applyHelp, args); !ok {
		return code
	}
	cfg, err := desired.Load(g.config, g.dropIn())
	if err != nil {
		return fail(env, "apply", err)
	}
	eng, closeFn, err := g.openEngine()
	if err != nil {
		return fail(env, "apply", err)
	}
	defer closeFn()
	plan, pools, conflicts := eng.PlanDesired(ctx, cfg.State, false)
	if plan == nil {
		return fail(env, "apply", conflicts)
	}
	if plan.Empty() && conflicts == nil {
		if !quiet {
			fmt.Fprintln(env.Stdout, "No changes: the kernel matches the configuration.")
		}
		return ExitOK
	}
	res, err := eng.Apply(ctx, plan)
	if !quiet {
		done := &diff.Plan{Ops: res.Done}
		done.Write(env.Stdout)
		fmt.Fprintf(env.Stdout, "Applied %d of %d operations.\n", len(res.Done), len(plan.Ops))
		writePoolSummary(ctx, env.Stdout, &g, cfg.State, pools, false)
	}
	err = errors.Join(conflicts, res.Err(), err)
	if err != nil {
		return fail(env, "apply", err)
	}
	return ExitOK
}

func runShow(ctx context.Context, env *Env, args []string) int {
	var g globals
	var all bool
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	g.register(fs)
	fs.BoolVar(&all, "all", false, "")
	fs.BoolVar(&all, "a", false, "")
	if ok, code := parse(env, fs, showHelp, args); !ok {
		return code
	}
	protocol := 0
	var conf *model.State
	if cfg, err := desired.Load(g.config, g.dropIn()); err == nil {
		protocol, conf = cfg.State.Protocol, cfg.State
	} else if isSet(fs, "config") {
		return fail(env, "show", err)
	}
	eng, closeFn, err := g.openEngine()
	if err != nil {
		return fail(env, "show", err)
	}
	defer closeFn()
	if protocol == 0 {
		protocol = defaultProtocol
	}
	st, err := eng.Actual(protocol, all)
	if err != nil {
		return fail(env, "show", err)
	}
	if !all {
		st = owned(st)
	}
	data, err := desired.Render(st)
	if err != nil {
		return fail(env, "show", err)
	}
	_, _ = env.Stdout.Write(data)
	if conf != nil {
		pools, err := renderPools(ctx, &g, conf)
		if err != nil {
			return fail(env, "show", err)
		}
		_, _ = env.Stdout.Write(pools)
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
