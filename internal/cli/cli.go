// Package cli is the netreconcile command line: one small function per
// subcommand over the engine, desired and diff packages.
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

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Exit codes. diff uses ExitChanges to say "changes pending", like
// `terraform plan -detailed-exitcode` and `git diff --exit-code`.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2
	ExitUsage   = 64 // EX_USAGE from sysexits.h
)

// Defaults.
const (
	DefaultConfig   = "/etc/netreconcile/netreconcile.yaml"
	DefaultStateDir = "/var/lib/netreconcile"
)

// Env carries the process's streams.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

type globals struct {
	config   string
	confDir  string
	netns    string
	stateDir string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", DefaultConfig, "")
	fs.StringVar(&g.config, "c", DefaultConfig, "")
	fs.StringVar(&g.confDir, "conf-dir", "", "")
	fs.StringVar(&g.netns, "netns", "", "")
	fs.StringVar(&g.stateDir, "state-dir", DefaultStateDir, "")
	fs.StringVar(&kernel.UserspaceProgram, "wireguard-go", kernel.DefaultUserspaceProgram, "")
}

// flags starts a subcommand's flag set with the common options.
func (g *globals) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	g.register(fs)
	return fs
}

// outputFlag registers -o/--output, text by default.
func outputFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "output", "text", "")
	fs.StringVar(p, "o", "text", "")
}

// badOutput reports an --output value other than text or json.
func badOutput(env *Env, cmd, output string) bool {
	if output == "text" || output == "json" {
		return false
	}
	fmt.Fprintf(env.Stderr, "netreconcile %s: --output must be text or json, not %q\n", cmd, output)
	return true
}

// loadAndOpen loads the configuration and opens the engine on the kernel.
func (g *globals) loadAndOpen() (*desired.Config, *engine.Engine, func(), error) {
	cfg, err := desired.Load(g.config, g.dropIn())
	if err != nil {
		return nil, nil, nil, err
	}
	eng, closeFn, err := g.openEngine()
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, eng, closeFn, nil
}

// loadOptional loads the configuration for commands that also work without
// one (show, status): an unreadable default file gives nil, an unreadable
// file named with --config is an error.
func (g *globals) loadOptional(fs *flag.FlagSet) (*model.State, error) {
	cfg, err := desired.Load(g.config, g.dropIn())
	if err == nil {
		return cfg.State, nil
	}
	if isSet(fs, "config") {
		return nil, err
	}
	return nil, nil
}

func (g *globals) dropIn() string {
	if g.confDir != "" {
		return g.confDir
	}
	return desired.DropInDir(g.config)
}

// nsPath maps --netns to the file ip-netns(8) keeps for it.
func (g *globals) nsPath() string {
	if g.netns == "" {
		return ""
	}
	if strings.ContainsRune(g.netns, '/') {
		return g.netns
	}
	return filepath.Join("/run/netns", g.netns)
}

// ledgerPath keeps one ownership ledger per network namespace.
func (g *globals) ledgerPath() string {
	if g.netns == "" {
		return filepath.Join(g.stateDir, "ledger.json")
	}
	return filepath.Join(g.stateDir, "netns", filepath.Base(g.netns), "ledger.json")
}

func (g *globals) openEngine() (*engine.Engine, func(), error) {
	k, err := kernel.Open(g.nsPath())
	if err != nil {
		return nil, nil, err
	}
	l, err := ledger.Open(g.ledgerPath())
	if err != nil {
		k.Close()
		return nil, nil, err
	}
	return &engine.Engine{Kernel: k, Ledger: l, IPAMDir: g.ipamDir()}, func() { k.Close() }, nil
}

type command struct {
	name, summary, usage string
	run                  func(ctx context.Context, env *Env, args []string) int
}

func commands() []command {
	return []command{
		{"validate", "check the configuration, touch nothing", validateHelp, runValidate},
		{"diff", "show the plan that apply would execute", diffHelp, runDiff},
		{"apply", "make the kernel match the configuration, once", applyHelp, runApply},
		{"show", "print the kernel state as configuration", showHelp, runShow},
		{"run", "keep the kernel equal to the configuration (the service)", runHelp, runRun},
		{"status", "show WireGuard peers: endpoint, state, handshake", statusHelp, runStatus},
		{"ipam", "hand out addresses from the configuration's pools", ipamHelp, runIPAM},
	}
}

// Run executes the command line args (without the program name) and returns
// the exit code.
func Run(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, mainHelp)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			for _, c := range commands() {
				if c.name == args[1] {
					fmt.Fprint(env.Stdout, c.usage)
					return ExitOK
				}
			}
		}
		fmt.Fprint(env.Stdout, mainHelp)
		return ExitOK
	case "--version", "version":
		fmt.Fprintln(env.Stdout, "netreconcile", Version)
		return ExitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.Stderr, "netreconcile: unknown command %q\n\n%s", args[0], mainHelp)
	return ExitUsage
}

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "dev"

// parse parses a subcommand's flags; it prints the usage on -h.
func parse(env *Env, fs *flag.FlagSet, usage string, args []string) (ok bool, code int) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.Stdout, usage)
			return false, ExitOK
		}
		fmt.Fprintf(env.Stderr, "netreconcile %s: %v\n\n%s", fs.Name(), err, usage)
		return false, ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "netreconcile %s: unexpected argument %q\n\n%s", fs.Name(), fs.Arg(0), usage)
		return false, ExitUsage
	}
	return true, 0
}

func fail(env *Env, cmd string, err error) int {
	fmt.Fprintf(env.Stderr, "netreconcile %s: %v\n", cmd, err)
	return ExitError
}
