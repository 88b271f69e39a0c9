package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/render"
)

const ipamHelp = `Usage: netreconcile ipam COMMAND [OPTIONS] [FLAGS]

Hand out addresses from the IPAM pools of the configuration (the pools:
section), and see what is handed out. The registry is a file per pool under
STATE-DIR/ipam (STATE-DIR/netns/NAME/ipam with --netns NAME, or
netns/nsfs-DEV-INODE/ipam for a path such as /proc/PID/ns/net), shared with
apply and the daemon: any number of these commands, CNI plugins and apply may
run at once. allocate, release and gc hold the namespace's writer lock, as
apply does (see --lock-timeout); list writes nothing.

Commands:
  allocate  --owner ID [--pool P] [--iface NAME] [--output text|json]
            give an owner an address (the same one if it already has one)
            and print it; a dual-stack pool prints an IPv4 and an IPv6 line
  release   --owner ID [--pool P] [--iface NAME] [--output text|json]
            take an owner's address back; it is handed out again only after
            the pool's reuse-delay, and a block left empty is given back
  list      [--pool P] [--output table|json]
            the addresses handed out, and the blocks this host holds
  gc        [--free-after D] [--output table|json]
            free the addresses of owners that are gone (pid:N, netns:PATH)
            and were handed out at least D ago (default 15m)

--pool may be left out when the configuration has one pool. Owner IDs are
printable text without spaces; pid:1234 and netns:/run/netns/blue let gc
tell when the owner is gone; config:link/NAME are the addresses links take
from pools, which apply hands out and gives back itself.

A block taken by allocate is exported as a route (dev lo, table export-table)
by the next apply, or the daemon's next pass; a block given back by release
is withdrawn the same way.

Run 'netreconcile ipam COMMAND --help' for the flags of one command.
` + commonFlags + `
Examples:
  netreconcile ipam allocate --pool kubespan --owner pid:$$
  netreconcile ipam release --pool kubespan --owner pid:$$
  netreconcile ipam list --output json | jq '.pools[].usage'
`

// writePoolSummary prints one line per pool: allocations and held blocks, after a plan.
func writePoolSummary(ctx context.Context, w io.Writer, eng *engine.Engine, st *model.State, p *engine.Pools, dryRun bool) {
	reg, err := eng.OpenRegistry(st)
	if reg == nil || err != nil {
		return
	}
	verb := "given back"
	if dryRun {
		verb = "to be given back"
	}
	for _, a := range p.Released {
		fmt.Fprintf(w, "Pool %s: %s of link %s "+verb+".\n", a.Pool, joinAddrs(a.Addrs()), strings.TrimPrefix(a.Owner, ipam.ConfigOwner("link", "")))
	}
	for _, pool := range st.Pools {
		u, err := reg.Usage(ctx, pool.Name)
		if err != nil {
			fmt.Fprintf(w, "Pool %s: %v\n", pool.Name, err)
			continue
		}
		fmt.Fprintf(w, "Pool %s: %d addresses allocated, %d of %d allowed blocks held.\n", pool.Name, u.Allocated, u.BlocksHeld, u.BlocksAllowed)
	}
}

func joinAddrs[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, " ")
}

// renderPools is the pools section of show: definitions, held blocks and allocation counts.
func renderPools(ctx context.Context, eng *engine.Engine, st *model.State) ([]byte, error) {
	reg, err := eng.OpenRegistry(st)
	if reg == nil || err != nil {
		return nil, err
	}
	status := map[string]render.PoolStatus{}
	for _, p := range st.Pools {
		var s render.PoolStatus
		if s.Usage, err = reg.Usage(ctx, p.Name); err != nil {
			return nil, err
		}
		if s.Blocks, err = reg.HeldBlocks(ctx, p.Name); err != nil {
			return nil, err
		}
		status[p.Name] = s
	}
	return render.Pools(st.Pools, status)
}

// globalFlags are the options of every command; ipam takes them anywhere among its own.
var globalFlags = map[string]bool{"c": true, "config": true, "conf-dir": true, "netns": true, "state-dir": true, "lock-timeout": true, "allow-insecure-config": true}

// splitGlobals takes the common options out of args and leaves the ipam command's own.
func splitGlobals(g *globals, args []string) ([]string, error) {
	g.config, g.stateDir, g.lockTimeout = DefaultConfig, DefaultStateDir, DefaultLockTimeout
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" || !globalFlags[name] {
			rest = append(rest, a)
			continue
		}
		if name == "allow-insecure-config" { // a boolean: takes no argument
			g.allowInsecureConfig = !hasValue || value == "true"
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			value = args[i]
		}
		switch name {
		case "c", "config":
			g.config = value
		case "conf-dir":
			g.confDir = value
		case "netns":
			g.netns, g.netnsGiven = value, true
		case "state-dir":
			g.stateDir = value
		case "lock-timeout":
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--lock-timeout must be a positive duration such as 30s, not %q", value)
			}
			g.lockTimeout = d
		}
	}
	return rest, nil
}

func runIPAM(ctx context.Context, env *Env, args []string) int {
	var g globals
	rest, err := splitGlobals(&g, args)
	if err != nil {
		fmt.Fprintf(env.Stderr, "netreconcile ipam: %v\n\n%s", err, ipamHelp)
		return ExitUsage
	}
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help" {
		if len(rest) == 0 {
			fmt.Fprint(env.Stderr, ipamHelp)
			return ExitUsage
		}
		fmt.Fprint(env.Stdout, ipamHelp)
		return ExitOK
	}
	if len(rest) > 1 && (rest[1] == "-h" || rest[1] == "--help" || rest[1] == "-help") {
		// A command's help needs no configuration.
		return ipamResult(env, ipam.RunCLIIn(ctx, rest, env.Stdout, env.Stderr, nil, nil, nil))
	}
	cfg, err := g.load()
	if err != nil {
		return fail(env, "ipam", err)
	}
	// list reads; the other commands change the registry, under the
	// namespace's writer lock like apply.
	readOnly := rest[0] == "list"
	st, err := g.openState(readOnly)
	if err != nil {
		return fail(env, "ipam", err)
	}
	defer st.close()
	var lock func(context.Context) (func(), error)
	if !readOnly {
		lock = g.guardedLock(st, cfg.State, g.lockFn(st, waitingMessage(env, "ipam "+rest[0], g.lockTimeout)))
	}
	return ipamResult(env, ipam.RunCLIIn(ctx, rest, env.Stdout, env.Stderr, st.dir, lock, cfg.State.IPAMPools()))
}

// guardedLock takes the writer lock, then refuses, as apply does, when a
// pool's registry is missing while the kernel holds what it handed out
// (engine.CheckLostRegistries): allocate would otherwise make a fresh
// registry and hand out an address still in use, and gc or release would
// record an empty pool. Checked under the lock, so no writer can change
// the registry or the kernel in between.
func (g *globals) guardedLock(st *nsState, desired *model.State, lock func(context.Context) (func(), error)) func(context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		unlock, err := lock(ctx)
		if err != nil {
			return nil, err
		}
		if err := g.checkRegistries(st, desired); err != nil {
			unlock()
			return nil, err
		}
		return unlock, nil
	}
}

func (g *globals) checkRegistries(st *nsState, desired *model.State) error {
	if len(desired.Pools) == 0 {
		return nil
	}
	reg, err := ipam.OpenIn(st.dir, desired.IPAMPools(), nil)
	if err != nil {
		return err
	}
	k, err := kernel.Open(g.nsPath())
	if err != nil {
		return err
	}
	defer k.Close()
	return engine.CheckLostRegistries(k, reg, desired)
}

func ipamResult(env *Env, err error) int {
	if err == nil {
		return ExitOK
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "ipam") {
		fmt.Fprintf(env.Stderr, "netreconcile %s\n", msg)
	} else {
		fmt.Fprintf(env.Stderr, "netreconcile ipam: %s\n", msg)
	}
	if errors.Is(err, ipam.ErrPoolExhausted) || errors.Is(err, ipam.ErrUnknownPool) || errors.Is(err, ipam.ErrCorrupt) || errors.Is(err, ipam.ErrPoolInUse) {
		return ExitError
	}
	if strings.Contains(msg, "see 'netreconcile ipam") || strings.Contains(msg, "unknown command") || strings.Contains(msg, "missing command") {
		return ExitUsage
	}
	return ExitError
}
