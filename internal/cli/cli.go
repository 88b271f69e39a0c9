// Package cli is the netreconcile command line: one small function per
// subcommand over the engine, desired and diff packages.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcache"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
	"github.com/netreconcile/netreconcile/internal/redact"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Exit codes, the same for every command (docs/json.md has the table).
// diff uses ExitChanges to say "changes pending", like `terraform plan
// -detailed-exitcode` and `git diff --exit-code`.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2
	// ExitStale: apply --plan refused a saved plan that no longer holds
	// (the files or the kernel changed since diff --out made it).
	ExitStale = 3
	// ExitDisruption: apply --max-disruption refused a plan that disrupts
	// more.
	ExitDisruption = 4
	ExitUsage      = 64 // EX_USAGE from sysexits.h
)

// Defaults.
const (
	DefaultConfig   = "/etc/netreconcile/netreconcile.yaml"
	DefaultStateDir = "/var/lib/netreconcile"
	// DefaultLockTimeout bounds how long a writer waits for another one
	// holding the namespace's lock: longer than the slowest pass measured
	// (deleting 1,358 bridges took 49 s), short enough that a stuck holder
	// is reported rather than waited for forever.
	DefaultLockTimeout = 2 * time.Minute
	// lockFile is the namespace's writer lock, in its state directory.
	lockFile = "writer.lock"
)

// Env carries the process's streams.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string

	// Set by Run. jsonOut is standard output for JSON documents, which
	// writeJSON makes inert itself (Stdout escapes text, which would
	// break a JSON string); logOut is standard error, redacted, for the
	// daemon's JSON log lines, whose strings the logger makes inert.
	jsonOut, logOut io.Writer
	// netns: the command was given --netns (what a permission error
	// needs then includes CAP_SYS_ADMIN).
	netns bool
	// Stdin is what wireguard pubkey reads; nil reads os.Stdin.
	Stdin io.Reader
}

type globals struct {
	config  string
	confDir string
	netns   string
	// netnsGiven tells "--netns ''" (an error) from no --netns (the
	// caller's own namespace): a script whose variable is unset must not
	// write to the host.
	netnsGiven  bool
	stateDir    string
	lockTimeout time.Duration
	// allowInsecureConfig: --allow-insecure-config.
	allowInsecureConfig bool
	// kept, when set, is the namespace's identity as the apply that
	// started a rollback timer identified it (rollback --due-netns): its
	// state directory is the transaction's, whatever names the namespace
	// has gained or lost since (the key of a namespace with no name then
	// is netns/nsfs-…, netns/NAME once ip netns attach names it), also
	// when it gained one before the timer got to look.
	kept *statedir.Netns
	// opened is the identity the last openState found, the one the
	// command works under.
	opened statedir.Netns
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", DefaultConfig, "")
	fs.StringVar(&g.config, "c", DefaultConfig, "")
	fs.StringVar(&g.confDir, "conf-dir", "", "")
	fs.Var(netnsFlag{g}, "netns", "")
	fs.StringVar(&g.stateDir, "state-dir", DefaultStateDir, "")
	fs.DurationVar(&g.lockTimeout, "lock-timeout", DefaultLockTimeout, "")
	fs.BoolVar(&g.allowInsecureConfig, "allow-insecure-config", false, "")
	fs.StringVar(&kernel.UserspaceProgram, "wireguard-go", kernel.DefaultUserspaceProgram, "")
	fs.StringVar(&engine.DefaultCompiler.Path, "nft", nftcompile.DefaultNft, "")
}

// load reads and validates the configuration, refusing files that a user
// other than root or the caller could change (desired.CheckTrusted; the
// loader checks the side files it reads) unless --allow-insecure-config.
func (g *globals) load() (*desired.Config, error) {
	if !g.allowInsecureConfig {
		if err := desired.CheckTrusted(g.config, g.dropIn()); err != nil {
			return nil, err
		}
	}
	return desired.LoadWith(g.config, g.dropIn(), desired.Options{AllowInsecure: g.allowInsecureConfig})
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
	badUsage(env, cmd, fmt.Sprintf("--output must be text or json, not %q", output))
	return true
}

// loadAndOpen loads the configuration and opens the engine on the kernel.
func (g *globals) loadAndOpen(ctx context.Context, env *Env, cmd string, readOnly bool) (*desired.Config, *engine.Engine, func(), error) {
	cfg, err := g.load()
	if err != nil {
		return nil, nil, nil, err
	}
	eng, closeFn, err := g.openEngine(ctx, env, cmd, readOnly)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, eng, closeFn, nil
}

// loadOptional loads the configuration for commands that also work without
// one (show, status): an unreadable default file gives nil, an unreadable
// file named with --config is an error.
func (g *globals) loadOptional(fs *flag.FlagSet) (*model.State, error) {
	cfg, err := g.load()
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

// nsState is the namespace a run works on and its state directory.
type nsState struct {
	id   statedir.Netns
	root *statedir.Dir
	// dir is the namespace's directory: root itself for the caller's own
	// namespace, root/netns/... for another (see statedir.Netns.Key). Nil
	// for a read-only run on a host that has no state yet.
	dir *statedir.Dir
}

func (s *nsState) close() {
	if s.dir != nil && s.dir != s.root {
		s.dir.Close()
	}
	if s.root != nil {
		s.root.Close()
	}
}

// netnsFlag is --netns, recording that it was given.
type netnsFlag struct{ g *globals }

func (f netnsFlag) String() string {
	if f.g == nil {
		return ""
	}
	return f.g.netns
}

func (f netnsFlag) Set(v string) error {
	f.g.netns, f.g.netnsGiven = v, true
	return nil
}

// errEmptyNetns: --netns was given an empty value.
var errEmptyNetns = errors.New("--netns is empty: give a namespace name or path, or leave --netns out for this process's own namespace")

// openState identifies the namespace and opens its state directory,
// checked (package statedir). A read-only run (diff, show, ipam list)
// creates nothing: a missing directory is no state yet.
func (g *globals) openState(readOnly bool) (*nsState, error) {
	if g.netnsGiven && g.netns == "" {
		return nil, errEmptyNetns
	}
	id, err := statedir.IdentifyNetns(g.netns)
	if err != nil {
		return nil, err
	}
	if k := g.kept; k != nil && k.Cookie == id.Cookie && k.Dev == id.Dev && k.Ino == id.Ino {
		id.Key = k.Key
	}
	st := &nsState{id: id}
	g.opened = id
	st.root, err = statedir.Open(g.stateDir, !readOnly)
	if readOnly && errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if id.Key == "" {
		st.dir = st.root
		return st, nil
	}
	st.dir, err = st.root.Sub(id.Key, !readOnly)
	if readOnly && errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// lockFn returns the function that takes the namespace's writer lock,
// waiting at most --lock-timeout; waiting is told whom it waits for.
func (g *globals) lockFn(st *nsState, waiting func(pid int)) func(context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		ctx, cancel := context.WithTimeout(ctx, g.lockTimeout)
		defer cancel()
		unlock, err := st.dir.Lock(ctx, lockFile, statedir.LockOptions{RecordPID: true, Waiting: waiting})
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("another writer kept this namespace's lock for --lock-timeout %s: %w", g.lockTimeout, err)
		}
		return unlock, err
	}
}

// waitingMessage tells the user of a command line writer why it waits.
func waitingMessage(env *Env, cmd string, timeout time.Duration) func(int) {
	return func(pid int) {
		who := "another netreconcile"
		if pid > 0 {
			who = fmt.Sprintf("pid %d", pid)
		}
		fmt.Fprintf(env.Stderr, "netreconcile %s: waiting up to %s for the lock held by %s (apply, ipam or the daemon on this namespace)…\n", cmd, timeout, who)
	}
}

// openEngine opens the kernel and the namespace's state. A writer (apply)
// holds the namespace's lock from before the ledger is read until closeFn,
// so two writers never interleave; a read-only run (diff, show) takes no
// lock and writes nothing, not even the ledger.
func (g *globals) openEngine(ctx context.Context, env *Env, cmd string, readOnly bool) (*engine.Engine, func(), error) {
	st, err := g.openState(readOnly)
	if err != nil {
		return nil, nil, err
	}
	unlock := func() {}
	if !readOnly {
		if unlock, err = g.lockFn(st, waitingMessage(env, cmd, g.lockTimeout))(ctx); err != nil {
			st.close()
			return nil, nil, err
		}
	}
	k, err := kernel.Open(g.nsPath())
	if err != nil {
		unlock()
		st.close()
		return nil, nil, err
	}
	l, err := ledger.OpenIn(st.dir, st.id.Cookie)
	if err != nil {
		k.Close()
		unlock()
		st.close()
		return nil, nil, err
	}
	l.ReadOnly = readOnly
	if l.Discarded && !readOnly {
		fmt.Fprintf(env.Stderr, "netreconcile %s: the ownership ledger was recorded for an earlier namespace under this name; its records are dropped\n", cmd)
	}
	// The nftables elements of the last run, if the ruleset has not moved
	// since (package nftcache); an apply writes them back for the next.
	cacheID, cacheErr := nftcache.CurrentIdentity(st.id.Cookie)
	if c, err := k.NetnsCookie(); err != nil || c != st.id.Cookie {
		cacheErr = errors.New("the kernel's namespace is not the state directory's")
	}
	var loaded kernel.NFTElemSnapshot
	if cacheErr == nil {
		if gen, err := k.NFTGen(); err == nil {
			var ok bool
			if loaded, ok = nftcache.Load(st.dir, cacheID, gen); ok {
				k.SeedNFTElems(loaded)
			}
		}
	}
	e := &engine.Engine{Kernel: k, Ledger: l, State: st.dir}
	return e, func() {
		if s, _ := k.NFTElems(); !readOnly && cacheErr == nil && !nftcache.Same(loaded, s) {
			// A cache that cannot be written costs the next run a read.
			_ = nftcache.Save(st.dir, cacheID, s, cacheMin(env))
		}
		k.Close()
		unlock()
		st.close()
	}, nil
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
		{"confirm", "confirm the pending safe-apply transaction", confirmHelp, runConfirm},
		{"rollback", "roll the pending safe-apply transaction back now", rollbackHelp, runRollback},
		{"show", "print the kernel state as configuration", showHelp, runShow},
		{"run", "keep the kernel equal to the configuration (the service)", runHelp, runRun},
		{"status", "show a pending transaction and WireGuard peers", statusHelp, runStatus},
		{"ipam", "hand out addresses from the configuration's pools", ipamHelp, runIPAM},
		{"version", "print the version and the commit", versionHelp, runVersion},
		{"wireguard", "make a WireGuard private key, derive its public key", wireguardHelp, runWireGuard},
		{"completion", "print the shell completion script for bash, zsh or fish", completionHelp, runCompletion},
	}
}

// Run executes the command line args (without the program name) and returns
// the exit code.
func Run(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	// Every message, the daemon's log included, reaches standard error:
	// nothing that looks like a key is ever printed there, whatever
	// field the user typed it in. Both streams are inert (package inert):
	// a name from the kernel or a file cannot act on the terminal.
	raw, e := env, *env
	e.Stdout = inert.Writer(env.Stdout)
	e.Stderr = redact.Writer(inert.Writer(env.Stderr))
	e.jsonOut = env.Stdout
	e.logOut = redact.Writer(env.Stderr)
	env = &e
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, mainHelp)
		return ExitUsage
	}
	// Root on a host with the packaged service runs the command as the
	// service's user (runas_linux.go), which makes its own output safe.
	if code, ok := runAsServiceUser(ctx, raw, args); ok {
		return code
	}
	switch args[0] {
	case "-h", "--help", "help":
		return runHelpCommand(env, args[1:])
	case "--version":
		return runVersion(ctx, env, args[1:])
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.Stderr, "netreconcile: unknown command %q; run 'netreconcile help' for the list\n", args[0])
	return ExitUsage
}

// runHelpCommand is `help [COMMAND [SUBCOMMAND]]`: the general help, or
// one command's, on standard output; an unknown command is a usage error
// of one line.
func runHelpCommand(env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stdout, mainHelp)
		return ExitOK
	}
	if len(args) <= 2 {
		if usage, ok := helpText(args...); ok {
			fmt.Fprint(env.Stdout, usage)
			return ExitOK
		}
	}
	fmt.Fprintf(env.Stderr, "netreconcile help: no command %q; run 'netreconcile help' for the list\n", strings.Join(args, " "))
	return ExitUsage
}

// helpText is the help of a command, or of an ipam subcommand ("ipam",
// "allocate"): every text `help` and --help print comes from help.go.
func helpText(words ...string) (string, bool) {
	for _, c := range commands() {
		if c.name != words[0] {
			continue
		}
		if len(words) == 1 {
			return c.usage, true
		}
		if c.name == "ipam" {
			for _, sc := range ipamCommands() {
				if sc.name == words[1] {
					return sc.usage, true
				}
			}
		}
	}
	return "", false
}

// parse parses a subcommand's flags; it prints the usage on -h.
func parse(env *Env, fs *flag.FlagSet, usage string, args []string) (ok bool, code int) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.Stdout, usage)
			return false, ExitOK
		}
		badUsage(env, fs.Name(), err.Error())
		return false, ExitUsage
	}
	env.netns = netnsGiven(fs)
	if fs.NArg() > 0 {
		badUsage(env, fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
		return false, ExitUsage
	}
	return true, 0
}

// badUsage prints a command line's error and where its options are
// explained: two lines, never the whole help, which would scroll the
// error away. The message is one line (package flag quotes no name it
// did not know). The caller exits ExitUsage.
func badUsage(env *Env, cmd, msg string) {
	fmt.Fprintf(env.Stderr, "netreconcile %s: %s\nRun 'netreconcile help %s' for its options.\n", cmd, inert.String(msg), cmd)
}

// netnsGiven reports whether a parsed flag set was given --netns.
func netnsGiven(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "netns" })
	return given
}

// fail prints err, with whatever looks like a key hidden (package redact)
// and what a refused permission needs (explain).
func fail(env *Env, cmd string, err error) int {
	fmt.Fprintf(env.Stderr, "netreconcile %s: %v\n", cmd, redact.Error(env.explain(err)))
	return ExitError
}

// cacheMin is the size from which apply keeps nftables elements in the
// state directory: nftcache.MinElements, or NETRECONCILE_NFT_CACHE_MIN, a
// test hook (the convergence walk sets 0, so that its small sets go
// through the cache and its oracle checks every use of it).
func cacheMin(env *Env) int {
	if v, err := strconv.Atoi(env.Getenv("NETRECONCILE_NFT_CACHE_MIN")); err == nil && v >= 0 {
		return v
	}
	return nftcache.MinElements
}
