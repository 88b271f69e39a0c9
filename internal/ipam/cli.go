package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// defaultFreeAfter is how old an allocation must be before gc frees it for a missing owner:
// Lyft's suggested registry-gc interval, far longer than any container setup takes.
const defaultFreeAfter = 15 * time.Minute

const cliUsage = `usage: netreconcile ipam <command> [flags]

Hand out addresses from the IPAM pools of the configuration, and see what is handed out.
The registry, a file per pool, is kept in
  %s
and these commands, the daemon and CNI plugins may all use it at the same time.

Commands:
  allocate  give an owner an address from a pool (the same one if it already has one)
  release   take an owner's address back
  list      show the addresses handed out and the blocks held
  gc        free the addresses of owners that are gone

Run 'netreconcile ipam <command> --help' for the flags of a command.
`

// RunCLI runs `netreconcile ipam <args>` on the registry in stateDir for the pools of the
// configuration. Results and --help go to stdout; errors are returned, not printed.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer, stateDir string, pools []Pool) error {
	return runCLI(ctx, args, stdout, stderr, stateDir, pools, SystemClock{})
}

// RunCLIIn is RunCLI on the opened, checked state directory base (nil: none yet, for list).
// lock, when set, takes the namespace's writer lock around a command that changes the registry
// (allocate, release, gc): apply and the daemon hold it for a whole pass.
func RunCLIIn(ctx context.Context, args []string, stdout, stderr io.Writer, base *statedir.Dir, lock func(context.Context) (func(), error), pools []Pool) error {
	path := "(none yet)"
	if base != nil {
		path = base.Path()
	}
	return runCLIWith(ctx, args, &cli{ctx: ctx, stdout: stdout, stderr: stderr, stateDir: path, base: base, lock: lock, pools: pools, clock: SystemClock{}})
}

func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer, stateDir string, pools []Pool, clock Clock) error {
	return runCLIWith(ctx, args, &cli{ctx: ctx, stdout: stdout, stderr: stderr, stateDir: stateDir, pools: pools, clock: clock})
}

func runCLIWith(ctx context.Context, args []string, c *cli) error {
	usage := fmt.Sprintf(cliUsage, c.stateDir+"/ipam")
	if len(args) == 0 {
		return fmt.Errorf("ipam: missing command\n\n%s", usage)
	}
	switch args[0] {
	case "allocate", "release", "gc":
		if c.lock != nil {
			unlock, err := c.lock(ctx)
			if err != nil {
				return fmt.Errorf("ipam %s: %w", args[0], err)
			}
			defer unlock()
		}
	}
	switch args[0] {
	case "allocate":
		return c.allocate(args[1:])
	case "release":
		return c.release(args[1:])
	case "list":
		return c.list(args[1:])
	case "gc":
		return c.gc(args[1:])
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(c.stdout, usage)
		return err
	}
	return fmt.Errorf("ipam: unknown command %q; commands: allocate, release, list, gc", args[0])
}

type cli struct {
	ctx      context.Context
	stdout   io.Writer
	stderr   io.Writer
	stateDir string
	base     *statedir.Dir
	lock     func(context.Context) (func(), error)
	pools    []Pool
	clock    Clock
}

// command is a subcommand's flag set with its help text.
type command struct {
	*flag.FlagSet
	synopsis, about string
}

func newCommand(name, synopsis, about string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &command{FlagSet: fs, synopsis: synopsis, about: about}
}

// parse parses args; help is true when --help was asked for and has been printed.
func (c *command) parse(out io.Writer, args []string) (help bool, err error) {
	err = c.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp(out)
		return true, nil
	}
	if err == nil && c.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", c.Arg(0))
	}
	if err != nil {
		return false, fmt.Errorf("ipam %s: %w (see 'netreconcile ipam %s --help')", c.Name(), err, c.Name())
	}
	return false, nil
}

func (c *command) printHelp(out io.Writer) {
	fmt.Fprintf(out, "usage: netreconcile ipam %s %s\n\n%s\nFlags:\n", c.Name(), c.synopsis, c.about)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	c.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		if f.DefValue != "" {
			text += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, arg, text)
	})
	tw.Flush()
}

func (c *cli) open() (*Registry, error) {
	if c.base != nil || c.lock != nil {
		return OpenIn(c.base, c.pools, c.clock)
	}
	return Open(c.stateDir, c.pools, c.clock)
}

// poolName picks the pool a command works on: the one given, or the only one there is.
func (c *cli) poolName(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	switch len(c.pools) {
	case 0:
		return "", errors.New("the configuration has no IPAM pools")
	case 1:
		return c.pools[0].Name, nil
	}
	names := make([]string, len(c.pools))
	for i, p := range c.pools {
		names[i] = p.Name
	}
	return "", fmt.Errorf("--pool is required: the configuration has pools %s", strings.Join(names, ", "))
}

const ownerHelp = `The owner ID is any printable text without spaces. These forms let 'gc' tell
when their owner is gone:
  pid:1234               a process
  netns:/run/netns/blue  a network namespace (gone when the path is)
  config:link/wg0        an object of the configuration (netreconcile's own)
`

// ownerArgs are the flags of allocate and release.
type ownerArgs struct {
	pool, owner, iface, output string
}

// ownerCommand parses the flags of allocate or release and opens the registry; it returns a nil
// Registry when --help was asked for and has been printed.
func (c *cli) ownerCommand(name, about string, args []string) (*Registry, ownerArgs, error) {
	cmd := newCommand(name, "[--pool P] --owner ID [--iface NAME] [--output text|json]", about)
	var o ownerArgs
	cmd.StringVar(&o.pool, "pool", "", "the pool `P` (may be left out when the configuration has only one)")
	cmd.StringVar(&o.owner, "owner", "", "the owner `ID` (required)")
	cmd.StringVar(&o.iface, "iface", "", "the interface `NAME`, for an owner that has several")
	cmd.StringVar(&o.output, "output", "text", "output `FORMAT`: text or json")
	help, err := cmd.parse(c.stdout, args)
	switch {
	case help || err != nil:
		return nil, o, err
	case o.owner == "":
		return nil, o, fmt.Errorf("ipam %s: --owner is required (see 'netreconcile ipam %s --help')", name, name)
	case o.output != "text" && o.output != "json":
		return nil, o, fmt.Errorf("ipam %s: --output %q: use text or json", name, o.output)
	}
	if o.pool, err = c.poolName(o.pool); err != nil {
		return nil, o, err
	}
	r, err := c.open()
	return r, o, err
}

func (c *cli) allocate(args []string) error {
	r, o, err := c.ownerCommand("allocate", `Give an owner an address from a pool and print it; a dual-stack pool gives an IPv4 and an
IPv6 address, one per line. The same owner and interface asking again get the same address.
A new address is the next after the last one handed out; a released one is handed out again
only after the pool's reuse delay.

`+ownerHelp, args)
	if r == nil {
		return err
	}
	a, err := r.Allocate(c.ctx, o.pool, o.owner, o.iface)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(c.stdout, a)
	}
	for _, x := range a.Addrs() {
		fmt.Fprintln(c.stdout, x)
	}
	return nil
}

func (c *cli) release(args []string) error {
	r, o, err := c.ownerCommand("release", `Take back the address an owner holds on an interface (or without one) in a pool. It is
handed out again only after the pool's reuse delay; a block left empty is given back at once.
Releasing an address that is not held does nothing and is not an error.
`, args)
	if r == nil {
		return err
	}
	a, ok, err := r.Release(c.ctx, o.pool, o.owner, o.iface)
	if err != nil {
		return err
	}
	if o.output == "json" {
		released := []Allocation{}
		if ok {
			released = append(released, a)
		}
		return writeJSON(c.stdout, map[string]any{"released": released})
	}
	if !ok {
		_, err := fmt.Fprintf(c.stdout, "%s holds no address in pool %s\n", Allocation{Owner: o.owner, Iface: o.iface}.describe(), o.pool)
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "released %s\n", joinAddrs(a))
	return err
}

// poolListing is what `list --output json` prints for a pool.
type poolListing struct {
	Pool        string       `json:"pool"`
	Usage       Usage        `json:"usage"`
	Blocks      []Block      `json:"blocks"`
	Allocations []Allocation `json:"allocations"`
}

func (c *cli) list(args []string) error {
	cmd := newCommand("list", "[--pool P] [--output table|json]",
		`Show the addresses handed out, oldest first, and for each pool the blocks held and how
many addresses wait out the reuse delay.
`)
	pool := cmd.String("pool", "", "show only the pool `P`")
	output := cmd.String("output", "table", "output `FORMAT`: table or json")
	if help, err := cmd.parse(c.stdout, args); help || err != nil {
		return err
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("ipam list: --output %q: use table or json", *output)
	}
	r, err := c.open()
	if err != nil {
		return err
	}
	names := []string{*pool}
	if *pool == "" {
		names = names[:0]
		for _, p := range c.pools {
			names = append(names, p.Name)
		}
	}
	listings := []poolListing{}
	for _, name := range names {
		l := poolListing{Pool: name}
		if l.Usage, err = r.Usage(c.ctx, name); err != nil {
			return err
		}
		if l.Blocks, err = r.HeldBlocks(c.ctx, name); err != nil {
			return err
		}
		if l.Allocations, err = r.List(c.ctx, name); err != nil {
			return err
		}
		listings = append(listings, l)
	}
	if *output == "json" {
		return writeJSON(c.stdout, map[string]any{"pools": listings})
	}

	var all []Allocation
	for _, l := range listings {
		all = append(all, l.Allocations...)
	}
	if len(all) > 0 {
		c.allocationTable(all)
		fmt.Fprintln(c.stdout)
	}
	for _, l := range listings {
		u := l.Usage
		fmt.Fprintf(c.stdout, "pool %s: %d addresses allocated, %d waiting out the reuse delay, %d of %d allowed blocks held",
			l.Pool, u.Allocated, u.Cooling, u.BlocksHeld, u.BlocksAllowed)
		for i, b := range l.Blocks {
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(c.stdout, "%s%s", sep, b.describe())
		}
		fmt.Fprintln(c.stdout)
	}
	return nil
}

func (c *cli) allocationTable(as []Allocation) {
	now := c.clock.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tBLOCK\tIPV4\tIPV6\tOWNER\tIFACE\tAGE")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", a.Pool, a.Block, orDash(a.IPv4.IsValid(), a.IPv4.String()),
			orDash(a.IPv6.IsValid(), a.IPv6.String()), a.Owner, orDash(a.Iface != "", a.Iface), age(now, a.AllocatedAt))
	}
	tw.Flush()
}

func (c *cli) gc(args []string) error {
	cmd := newCommand("gc", "[--free-after D] [--output table|json]",
		`Free the addresses whose owner is gone and that were handed out at least D ago, and show
what was freed. Only owners of the forms pid:N and netns:PATH can be checked here; the daemon
frees the addresses of configuration objects (config:...) itself.
`)
	freeAfter := cmd.Duration("free-after", defaultFreeAfter, "free only addresses handed out at least `D` ago, e.g. 30m")
	output := cmd.String("output", "table", "output `FORMAT`: table or json")
	if help, err := cmd.parse(c.stdout, args); help || err != nil {
		return err
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("ipam gc: --output %q: use table or json", *output)
	}
	if *freeAfter < 0 {
		return fmt.Errorf("ipam gc: --free-after %s is negative", *freeAfter)
	}
	r, err := c.open()
	if err != nil {
		return err
	}
	freed, err := r.GC(c.ctx, *freeAfter, OwnerAlive)
	if *output == "json" {
		if freed == nil {
			freed = []Allocation{}
		}
		if werr := writeJSON(c.stdout, map[string]any{"freed": freed}); werr != nil {
			return werr
		}
		return err
	}
	if len(freed) > 0 {
		c.allocationTable(freed)
	}
	fmt.Fprintf(c.stdout, "freed %d addresses\n", len(freed))
	if err != nil {
		return err
	}
	c.noteUnchecked(r, *freeAfter)
	return nil
}

// noteUnchecked tells on stderr how many old enough addresses gc kept because it cannot tell
// whether their owner exists, so nobody takes "freed 0" for "nothing is stale".
func (c *cli) noteUnchecked(r *Registry, freeAfter time.Duration) {
	as, err := r.List(c.ctx, "")
	if err != nil {
		return
	}
	now := c.clock.Now()
	n := 0
	for _, a := range as {
		if now.Sub(a.AllocatedAt) >= freeAfter && !strings.HasPrefix(a.Owner, OwnerPID) && !strings.HasPrefix(a.Owner, OwnerNetns) {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(c.stderr, "kept %d addresses older than %s whose owners gc cannot check (not pid: or netns:)\n", n, freeAfter)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func joinAddrs(a Allocation) string {
	var s []string
	for _, x := range a.Addrs() {
		s = append(s, x.String())
	}
	return strings.Join(s, " ")
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
