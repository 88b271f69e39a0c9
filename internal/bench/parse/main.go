// Command parse measures the configuration loader (make bench-parse): the
// time and the peak memory of validating one file, for the large and the
// hostile files the loader must bound:
//
//   - 100k routes, one flow mapping per line (the routes fast path);
//   - 100k routes in block style (the general decoder);
//   - 1 MB of aliases at the expansion budget: a set's elements anchored and
//     aliased as often as the budget allows, decoded in full;
//   - the same with the shortest items (most nodes per byte);
//   - 1 MB "billion laughs": nested aliases, refused at the budget;
//   - 1 MB of pool subnets (every subnet checked against the others);
//   - 100k errors: routes through an undeclared link;
//   - 1 MB of one-character items in each list checked item by item,
//     aliased once (the most errors a megabyte holds), unknown keys,
//     nested flow lists, one long scalar.
//
// Each file is loaded by a child process (this program with -child), so
// that the peak resident set size the kernel reports for it (rusage
// maxrss) is the loader's alone. Times are the wall-clock time of reading
// and validating, in the child, and the child's whole CPU time (user and
// system, all threads: the garbage collector runs beside the loader).
// Nothing is asserted: the targets are printed beside the figures.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
)

type benchCase struct {
	name    string
	gen     func() string
	maxTime time.Duration
	maxMB   int
}

const routes = 100000

var only string

var cases = []benchCase{
	{"100k routes, flow style", func() string { return routesFile(routes, false, "bench0") }, 250 * time.Millisecond, 130},
	{"100k routes, block style", func() string { return routesFile(routes, true, "bench0") }, time.Second, 150},
	{"1 MB of aliases at the budget", aliasesAtBudget, time.Second, 200},
	{"1 MB of aliases, short items", denseAliases, time.Second, 200},
	{"1 MB billion laughs", laughs, time.Second, 200},
	{"1 MB of pool subnets", poolSubnets, time.Second, 200},
	{"100k errors", func() string { return routesFile(routes, false, "missing0") }, time.Second, 200},
	// The most errors a megabyte holds, one per one-character item, in
	// each list whose items are checked one by one; aliased once where
	// the budget allows, so that each is decoded and checked twice.
	{"1 MB one-char routes", oneChar("routes: &e [", "]\nx: *e\n"), time.Second, 200},
	{"1 MB one-char addresses", oneChar("links:\n  d0:\n    kind: dummy\n    addresses: &e [", "]\n  d1: {kind: dummy, addresses: *e}\n"), time.Second, 200},
	{"1 MB one-char set elements", oneChar("nftables:\n  inet bench:\n    sets:\n      s0:\n        type: ipv4_addr\n        elements: &e [", "]\n      s1: {type: ipv4_addr, elements: *e}\n"), time.Second, 200},
	{"1 MB one-char peers", oneChar("links:\n  wg0:\n    kind: wireguard\n    private-key: x\n    peers: &e [", "]\n  wg1: {kind: wireguard, private-key: x, peers: *e}\n"), time.Second, 200},
	{"1 MB one-char rules, no alias", oneChar("nftables:\n  inet bench:\n    chains:\n      c0:\n        rules: [", "]\n"), time.Second, 200},
	{"1 MB of unknown keys", manyKeys, time.Second, 200},
	{"1 MB nested flow lists", nested, time.Second, 200},
	{"1 MB scalar", longScalar, time.Second, 200},
}

func main() {
	child := flag.String("child", "", "load this file and print the time taken (internal)")
	flag.StringVar(&only, "run", "", "only the cases whose name contains this")
	flag.Parse()
	if *child != "" {
		os.Exit(runChild(*child))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-parse:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "bench-parse")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("%-30s %6s %-36s %8s %8s %9s  %s\n", "file", "size", "result", "time", "CPU", "peak RSS", "target")
	for i, c := range cases {
		if !strings.Contains(c.name, only) {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("%d.yaml", i))
		data := c.gen()
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(self, "-child", p)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		var took time.Duration
		var result string
		if _, err := fmt.Sscanf(string(out), "%d", &took); err != nil {
			return fmt.Errorf("%s: child printed %q: %w", c.name, out, err)
		}
		result = strings.TrimSpace(strings.SplitN(string(out), " ", 2)[1])
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		mb := float64(ru.Maxrss) / 1024 // Linux reports KiB
		mark := ""
		if took > c.maxTime || mb > float64(c.maxMB) {
			mark = "  OVER"
		}
		// CPU time (user + system) beside the wall time: on a shared
		// machine the wall time also counts waiting for a core.
		cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		fmt.Printf("%-30s %5.1fM %-36s %6.0fms %6.0fms %7.0fMB  ≤ %v, ≤ %d MB%s\n", c.name, float64(len(data))/1e6, result,
			float64(took)/float64(time.Millisecond), float64(cpu)/float64(time.Millisecond), mb, c.maxTime, c.maxMB, mark)
	}
	return nil
}

func runChild(path string) int {
	start := time.Now()
	srcs, err := desired.ReadSources(path, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := desired.Parse(srcs)
	took := time.Since(start)
	var es desired.Errors
	switch {
	case errors.As(err, &es):
		first := es[0].Msg
		if len(first) > 20 {
			first = first[:20] + "…"
		}
		fmt.Printf("%d %d errors (%s)\n", took, desired.ErrorCount(err), first)
	case err != nil:
		fmt.Printf("%d error: %v\n", took, err)
	default:
		fmt.Printf("%d valid, %d objects\n", took, cfg.State.Objects())
	}
	return 0
}

func routesFile(n int, block bool, dev string) string {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n  bench0: {kind: device}\nroutes:\n")
	for i := range n {
		v := uint32(1<<16+i) << 8
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24)
		if block {
			fmt.Fprintf(&b, "  - to: %s\n    dev: %s\n    table: 100\n", p, dev)
		} else {
			fmt.Fprintf(&b, "  - {to: %s, dev: %s, table: 100}\n", p, dev)
		}
	}
	return b.String()
}

// aliasesAtBudget is about 1 MB: one set's elements (anchored) and another
// set aliasing them, which the budget (twice the file's nodes) just allows.
func aliasesAtBudget() string {
	var b strings.Builder
	b.WriteString("version: 1\nnftables:\n  inet bench:\n    sets:\n      s0:\n        type: ipv4_addr\n        elements: &e [")
	for i := 0; b.Len() < 1<<20-200; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	b.WriteString("]\n")
	b.WriteString("      s1: {type: ipv4_addr, elements: *e}\n")
	return b.String()
}

// laughs is about 1 MB: nested aliases, each level ten of the one before,
// after a list that makes up the size.
func laughs() string {
	var b strings.Builder
	b.WriteString("version: 1\npad: [")
	for i := 0; b.Len() < 1<<20-2000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("x")
	}
	b.WriteString("]\nx0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// poolSubnets is about 1 MB: two pools of /24 subnets, none overlapping.
func poolSubnets() string {
	var b strings.Builder
	b.WriteString("version: 1\npools:\n")
	for p := range 2 {
		fmt.Fprintf(&b, "  p%d:\n    subnets: [", p)
		for i := 0; b.Len() < (p+1)*(1<<19)-100; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d.%d.%d.0/24", 10+p, i>>8&255, i&255)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// denseAliases is aliasesAtBudget with one-character items, the most nodes
// a megabyte can hold, aliased to the budget.
func denseAliases() string {
	var b strings.Builder
	b.WriteString("version: 1\nnftables:\n  inet bench:\n    chains:\n      c0:\n        rules: &e [")
	for i := 0; b.Len() < 1<<20-200; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("x")
	}
	b.WriteString("]\n")
	b.WriteString("      c1: {rules: *e}\n")
	return b.String()
}

// oneChar is about 1 MB: head, then "x,x,…" up to the size, then tail.
func oneChar(head, tail string) func() string {
	return func() string {
		var b strings.Builder
		b.WriteString("version: 1\n")
		b.WriteString(head)
		for i := 0; b.Len() < 1<<20-len(tail)-2; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("x")
		}
		b.WriteString(tail)
		return b.String()
	}
}

// manyKeys is about 1 MB of short unknown keys in one flow mapping.
func manyKeys() string {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n  d0: {kind: dummy")
	for i := 0; b.Len() < 1<<20-10; i++ {
		fmt.Fprintf(&b, ",%x: 1", i)
	}
	b.WriteString("}\n")
	return b.String()
}

// nested is about 1 MB of flow lists inside each other, as deep as the
// YAML decoder allows, again and again.
func nested() string {
	var b strings.Builder
	b.WriteString("version: 1\nroutes: [")
	for i := 0; b.Len() < 1<<20-20000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))
	}
	b.WriteString("]\n")
	return b.String()
}

// longScalar is one 1 MB word: a rule.
func longScalar() string {
	return "version: 1\nnftables:\n  inet bench:\n    chains:\n      c0:\n        rules: [" + strings.Repeat("x", 1<<20-100) + "]\n"
}
