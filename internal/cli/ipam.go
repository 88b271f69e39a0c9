package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
	"github.com/netreconcile/netreconcile/internal/render"
)

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
		fmt.Fprintf(w, "Pool %s: %s of link %s "+verb+".\n", inert.String(a.Pool), joinAddrs(a.Addrs()), inert.String(strings.TrimPrefix(a.Owner, ipam.ConfigOwner("link", ""))))
	}
	for _, pool := range st.Pools {
		u, err := reg.Usage(ctx, pool.Name)
		if err != nil {
			fmt.Fprintf(w, "Pool %s: %v\n", inert.String(pool.Name), redact.Error(err))
			continue
		}
		fmt.Fprintf(w, "Pool %s: %d addresses allocated, %d of %d allowed blocks held.\n", inert.String(pool.Name), u.Allocated, u.BlocksHeld, u.BlocksAllowed)
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

// ipamClock is the clock of the ipam commands: when an address is handed out, and the ages
// list and gc print. Tests set a fake one.
var ipamClock ipam.Clock = ipam.SystemClock{}

// defaultFreeAfter is how old an allocation must be before gc frees it for a missing owner:
// Lyft's suggested registry-gc interval, far longer than any container setup takes.
const defaultFreeAfter = 15 * time.Minute

// errUsage marks an ipam error in the command line itself (exit ExitUsage); any other error is
// the registry's or the configuration's (exit ExitError).
var errUsage = errors.New("usage error")

// usageError is an error of the command line; errors.Is(err, errUsage) holds.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// ipamCommand is a subcommand of ipam: its flags beside the common options, and its run.
// run prints its own JSON document, also on failure; failed is the
// document of a run that could not start.
type ipamCommand struct {
	name, usage string
	// summary is the one line of its manual page's NAME and of completion.
	summary string
	// readOnly: takes no lock and writes nothing (list).
	readOnly bool
	flags    func(fs *flag.FlagSet, a *ipamArgs)
	run      func(r *ipamRun) error
	failed   func(env *Env, err error) any
}

// ipamArgs are the flags of the ipam subcommands.
type ipamArgs struct {
	pool, owner, iface, output string
	freeAfter                  time.Duration
}

// ipamRun is one run of a subcommand, on the opened registry.
type ipamRun struct {
	ctx   context.Context
	env   *Env
	reg   *ipam.Registry
	pools []ipam.Pool
	// close releases the lock and the state directory after the command.
	close func()
	ipamArgs
}

func ipamCommands() []ipamCommand {
	ownerFlags := func(fs *flag.FlagSet, a *ipamArgs) {
		fs.StringVar(&a.pool, "pool", "", "")
		fs.StringVar(&a.owner, "owner", "", "")
		fs.StringVar(&a.iface, "iface", "", "")
		outputFlag(fs, &a.output)
	}
	return []ipamCommand{
		{name: "allocate", summary: "give an owner an address from a pool", usage: ipamAllocateHelp, flags: ownerFlags, run: ipamAllocate, failed: func(env *Env, err error) any {
			return allocateJSON{jsonHeader: header(), jsonFailure: env.failure(err)}
		}},
		{name: "release", summary: "take back the address an owner holds", usage: ipamReleaseHelp, flags: ownerFlags, run: ipamRelease, failed: func(env *Env, err error) any {
			return releaseJSON{jsonHeader: header(), jsonFailure: env.failure(err)}
		}},
		{name: "list", summary: "show the addresses handed out and the blocks held", usage: ipamListHelp, readOnly: true, run: ipamList, flags: func(fs *flag.FlagSet, a *ipamArgs) {
			fs.StringVar(&a.pool, "pool", "", "")
			outputFlag(fs, &a.output)
		}, failed: func(env *Env, err error) any { return listJSON{jsonHeader: header(), jsonFailure: env.failure(err)} }},
		{name: "gc", summary: "free the addresses of owners that are gone", usage: ipamGCHelp, run: ipamGC, flags: func(fs *flag.FlagSet, a *ipamArgs) {
			fs.DurationVar(&a.freeAfter, "free-after", defaultFreeAfter, "")
			outputFlag(fs, &a.output)
		}, failed: func(env *Env, err error) any { return gcJSON{jsonHeader: header(), jsonFailure: env.failure(err)} }},
	}
}

// runIPAM runs `netreconcile ipam [OPTIONS] COMMAND [OPTIONS]`. The common options may come
// before the command or among its own: one flag set per command parses them all, once the
// command is found (the first argument that is no option, as a first parse of the common
// options alone finds it).
func runIPAM(ctx context.Context, env *Env, args []string) int {
	var top globals
	fs := top.flags("ipam")
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(env.Stdout, ipamHelp)
		return ExitOK
	case err != nil:
		badUsage(env, "ipam", err.Error())
		return ExitUsage
	case fs.NArg() == 0:
		badUsage(env, "ipam", "a command is missing: allocate, release, list or gc")
		return ExitUsage
	case fs.Arg(0) == "help":
		return runHelpCommand(env, append([]string{"ipam"}, fs.Args()[1:]...))
	}
	name := fs.Arg(0)
	var cmd *ipamCommand
	for _, c := range ipamCommands() {
		if c.name == name {
			cmd = &c
		}
	}
	if cmd == nil {
		badUsage(env, "ipam", fmt.Sprintf("unknown command %q; commands: allocate, release, list, gc", name))
		return ExitUsage
	}
	rest := append(slices.Clone(args[:len(args)-fs.NArg()]), fs.Args()[1:]...)

	var g globals
	r := &ipamRun{ctx: ctx, env: env}
	cfs := g.flags("ipam " + name)
	cmd.flags(cfs, &r.ipamArgs)
	if ok, code := parse(env, cfs, cmd.usage, rest); !ok {
		return code
	}
	r.close = func() {}
	err = r.prepare(cmd, &g)
	defer r.close()
	if errors.Is(err, errUsage) {
		badUsage(env, "ipam "+name, err.Error())
		return ExitUsage
	}
	if err != nil {
		// The registry could not be opened: the command's document
		// with nothing but the error.
		return failJSON(env, "ipam "+name, r.output, cmd.failed(env, err), err)
	}
	return exitOf(env, "ipam "+name, cmd.run(r))
}

// prepare checks the flags, loads the configuration and opens the registry, under the
// namespace's writer lock for a command that changes it.
func (r *ipamRun) prepare(cmd *ipamCommand, g *globals) error {
	if r.output == "table" {
		r.output = "text" // list and gc called it table before every command had --output text
	}
	if r.output != "text" && r.output != "json" {
		return usagef("--output must be text or json, not %q", r.output)
	}
	if cmd.name == "allocate" || cmd.name == "release" {
		if r.owner == "" {
			return usagef("--owner is required")
		}
	}
	if r.freeAfter < 0 {
		return usagef("--free-after %s is negative", r.freeAfter)
	}
	cfg, err := g.load()
	if err != nil {
		return err
	}
	r.pools = cfg.State.IPAMPools()
	if cmd.name != "list" && cmd.name != "gc" {
		if r.pool, err = r.poolName(); err != nil {
			return err
		}
	}
	st, err := g.openState(cmd.readOnly)
	if err != nil {
		return err
	}
	r.close = st.close
	if !cmd.readOnly {
		lock := g.guardedLock(st, cfg.State, g.lockFn(st, waitingMessage(r.env, "ipam "+cmd.name, g.lockTimeout)))
		unlock, err := lock(r.ctx)
		if err != nil {
			return err
		}
		r.close = func() { unlock(); st.close() }
	}
	if cmd.name == "allocate" && len(r.pools) > 0 {
		if r.pools, err = g.reserveShown(r.pools); err != nil {
			return err
		}
	}
	r.reg, err = ipam.OpenIn(st.dir, r.pools, ipamClock)
	return err
}

// reserveShown adds to the pools' reserved addresses those the kernel
// shows in the namespace (engine.ReserveShown): read under the writer
// lock, so no apply changes them in between.
func (g *globals) reserveShown(pools []model.PoolSpec) ([]model.PoolSpec, error) {
	k, err := kernel.Open(g.nsPath())
	if err != nil {
		return nil, err
	}
	defer k.Close()
	addrs, err := k.Addresses()
	if err != nil {
		return nil, fmt.Errorf("read the addresses in use: %w", err)
	}
	return engine.ReserveShown(pools, addrs), nil
}

// poolName picks the pool allocate and release work on: the one given, or the only one there is.
func (r *ipamRun) poolName() (string, error) {
	if r.pool != "" {
		return r.pool, nil
	}
	switch len(r.pools) {
	case 0:
		return "", errors.New("the configuration has no IPAM pools")
	case 1:
		return r.pools[0].Name, nil
	}
	names := make([]string, len(r.pools))
	for i, p := range r.pools {
		names[i] = p.Name
	}
	return "", usagef("--pool is required: the configuration has pools %s", strings.Join(names, ", "))
}

// Each subcommand below prints its JSON document with the error of a
// failed run, and returns the error for the exit status.

func ipamAllocate(r *ipamRun) error {
	a, err := r.reg.Allocate(r.ctx, r.pool, r.owner, r.iface)
	if r.output == "json" {
		out := allocateJSON{jsonHeader: header(), jsonFailure: r.env.failure(err)}
		if err == nil {
			j := allocationOf(a)
			out.Allocation = &j
		}
		return errors.Join(err, r.env.writeJSON(out))
	}
	if err != nil {
		return err
	}
	for _, x := range a.Addrs() {
		fmt.Fprintln(r.env.Stdout, x)
	}
	return nil
}

func ipamRelease(r *ipamRun) error {
	a, ok, err := r.reg.Release(r.ctx, r.pool, r.owner, r.iface)
	if r.output == "json" {
		out := releaseJSON{jsonHeader: header(), jsonFailure: r.env.failure(err)}
		if err == nil {
			out.Released = []allocationJSON{}
			if ok {
				out.Released = append(out.Released, allocationOf(a))
			}
		}
		return errors.Join(err, r.env.writeJSON(out))
	}
	if err != nil {
		return err
	}
	if !ok {
		who := "owner=" + r.owner
		if r.iface != "" {
			who += " iface=" + r.iface
		}
		_, err := fmt.Fprintf(r.env.Stdout, "%s holds no address in pool %s\n", inert.String(who), inert.String(r.pool))
		return err
	}
	_, err = fmt.Fprintf(r.env.Stdout, "released %s\n", joinAddrs(a.Addrs()))
	return err
}

// ipamListing is what `ipam list` shows of a pool.
type ipamListing struct {
	pool        string
	usage       ipam.Usage
	blocks      []ipam.Block
	allocations []ipam.Allocation
}

func ipamList(r *ipamRun) error {
	names := []string{r.pool}
	if r.pool == "" {
		names = names[:0]
		for _, p := range r.pools {
			names = append(names, p.Name)
		}
	}
	var listings []ipamListing
	var err error
	for _, name := range names {
		l := ipamListing{pool: name}
		if l.usage, err = r.reg.Usage(r.ctx, name); err != nil {
			break
		}
		if l.blocks, err = r.reg.HeldBlocks(r.ctx, name); err != nil {
			break
		}
		if l.allocations, err = r.reg.List(r.ctx, name); err != nil {
			break
		}
		listings = append(listings, l)
	}
	if r.output == "json" {
		out := listJSON{jsonHeader: header(), jsonFailure: r.env.failure(err)}
		if err == nil {
			out.Pools = []poolListing{}
			for _, l := range listings {
				out.Pools = append(out.Pools, poolListing{Pool: l.pool, Usage: usageOf(l.usage), Blocks: blocksOf(l.blocks), Allocations: allocationsOf(l.allocations)})
			}
		}
		return errors.Join(err, r.env.writeJSON(out))
	}
	if err != nil {
		return err
	}
	w := r.env.Stdout
	var all []ipam.Allocation
	for _, l := range listings {
		all = append(all, l.allocations...)
	}
	if len(all) > 0 {
		allocationTable(w, all)
		fmt.Fprintln(w)
	}
	for _, l := range listings {
		u := l.usage
		fmt.Fprintf(w, "pool %s: %d addresses allocated, %d waiting out the reuse delay, %d of %d allowed blocks held",
			inert.String(l.pool), u.Allocated, u.Cooling, u.BlocksHeld, u.BlocksAllowed)
		for i, b := range l.blocks {
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(w, "%s%s", sep, ipam.Subnet{IPv4: b.IPv4, IPv6: b.IPv6})
		}
		fmt.Fprintln(w)
	}
	return nil
}

func ipamGC(r *ipamRun) error {
	freed, err := r.reg.GC(r.ctx, r.freeAfter, ipam.OwnerAlive)
	if r.output == "json" {
		// What was freed before an error was freed: it is listed.
		out := gcJSON{jsonHeader: header(), Freed: allocationsOf(freed), jsonFailure: r.env.failure(err)}
		return errors.Join(err, r.env.writeJSON(out))
	}
	if len(freed) > 0 {
		allocationTable(r.env.Stdout, freed)
	}
	fmt.Fprintf(r.env.Stdout, "freed %d addresses\n", len(freed))
	if err != nil {
		return err
	}
	r.noteUnchecked()
	return nil
}

// noteUnchecked tells on stderr how many old enough addresses gc kept because it cannot tell
// whether their owner exists, so nobody takes "freed 0" for "nothing is stale".
func (r *ipamRun) noteUnchecked() {
	as, err := r.reg.List(r.ctx, "")
	if err != nil {
		return
	}
	now := ipamClock.Now()
	n := 0
	for _, a := range as {
		if now.Sub(a.AllocatedAt) >= r.freeAfter && !strings.HasPrefix(a.Owner, ipam.OwnerPID) && !strings.HasPrefix(a.Owner, ipam.OwnerNetns) {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(r.env.Stderr, "kept %d addresses older than %s whose owners gc cannot check (not pid: or netns:)\n", n, r.freeAfter)
	}
}

func allocationTable(w io.Writer, as []ipam.Allocation) {
	now := ipamClock.Now()
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tBLOCK\tIPV4\tIPV6\tOWNER\tIFACE\tAGE")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", inert.String(a.Pool), a.Block, orDash(a.IPv4.IsValid(), a.IPv4.String()),
			orDash(a.IPv6.IsValid(), a.IPv6.String()), inert.String(a.Owner), orDash(a.Iface != "", inert.String(a.Iface)), age(now, a.AllocatedAt))
	}
	tw.Flush()
}

func orDash(ok bool, s string) string {
	if ok {
		return s
	}
	return "-"
}

func age(now, t time.Time) string {
	d := now.Sub(t).Truncate(time.Second)
	switch {
	case d < time.Hour:
		return d.String()
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
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
	// The records of the static addresses of ours, as apply reads them:
	// the ipam commands refuse what apply refuses, and no more.
	l, err := ledger.OpenIn(st.dir, st.id.Cookie)
	if err != nil {
		return err
	}
	return engine.CheckLostRegistries(k, reg, desired, l.StaticAddrs)
}
