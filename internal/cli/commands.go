package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/render"
)

func runValidate(ctx context.Context, env *Env, args []string) int {
	var g globals
	fs := g.flags("validate")
	if ok, code := parse(env, fs, validateHelp, args); !ok {
		return code
	}
	cfg, err := g.load()
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
	fs := g.flags("diff")
	outputFlag(fs, &output)
	if ok, code := parse(env, fs, diffHelp, args); !ok {
		return code
	}
	if badOutput(env, "diff", output) {
		return ExitUsage
	}
	cfg, eng, closeFn, err := g.loadAndOpen(ctx, env, "diff", true)
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
		writePoolSummary(ctx, env.Stdout, eng, cfg.State, pools, true)
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
	fs := g.flags("apply")
	fs.BoolVar(&quiet, "quiet", false, "")
	fs.BoolVar(&quiet, "q", false, "")
	if ok, code := parse(env, fs, applyHelp, args); !ok {
		return code
	}
	cfg, eng, closeFn, err := g.loadAndOpen(ctx, env, "apply", false)
	if err != nil {
		return fail(env, "apply", err)
	}
	defer closeFn()
	plan, pools, conflicts := eng.PlanDesired(ctx, cfg.State, false)
	if plan == nil {
		return fail(env, "apply", conflicts)
	}
	if plan.Empty() && conflicts == nil {
		if err := eng.SaveLedger(); err != nil {
			return fail(env, "apply", err)
		}
		if !quiet {
			fmt.Fprintln(env.Stdout, "No changes: the kernel matches the configuration.")
		}
		return ExitOK
	}
	res, err := eng.Apply(ctx, plan)
	if !quiet {
		diff.WriteOps(env.Stdout, res.Done)
		// Done and Failed hold every op the apply ran, the MTUs it set
		// again on masters (apply.Apply) included.
		fmt.Fprintf(env.Stdout, "Applied %d of %d operations.\n", len(res.Done), len(res.Done)+len(res.Failed))
		writePoolSummary(ctx, env.Stdout, eng, cfg.State, pools, false)
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
	fs := g.flags("show")
	fs.BoolVar(&all, "all", false, "")
	fs.BoolVar(&all, "a", false, "")
	if ok, code := parse(env, fs, showHelp, args); !ok {
		return code
	}
	conf, err := g.loadOptional(fs)
	if err != nil {
		return fail(env, "show", err)
	}
	protocol := defaultProtocol
	if conf != nil {
		protocol = conf.Protocol
	}
	eng, closeFn, err := g.openEngine(ctx, env, "show", true)
	if err != nil {
		return fail(env, "show", err)
	}
	defer closeFn()
	st, err := eng.Actual(protocol, all)
	if err != nil {
		return fail(env, "show", err)
	}
	if !all {
		st = st.Owned()
	}
	data, err := render.State(st)
	if err != nil {
		return fail(env, "show", err)
	}
	_, _ = env.Stdout.Write(data)
	if conf != nil {
		pools, err := renderPools(ctx, eng, conf)
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
