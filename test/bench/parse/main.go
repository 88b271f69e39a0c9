// Command parse measures the configuration loader (make bench-parse): the
// time and the peak memory of validating one file, for the large and the
// hostile files the loader must bound:
//
//   - 100k routes, one flow mapping per line;
//   - 100k routes in block style;
//   - 100k routes from a side file (routes-files), a route a line;
//   - 100k set elements in one flow list, and from a side file
//     (elements-file), an element a line;
//   - 1 MB of aliases at the expansion budget: a set's elements anchored and
//     aliased as often as the budget allows, decoded in full;
//   - the same with the shortest items (most nodes per byte);
//   - 1 MB "billion laughs": nested aliases, refused at the budget;
//   - 1 MB of pool subnets (every subnet checked against the others);
//   - 100k errors: routes through an undeclared link;
//   - 1 MB of one-character items in each list checked item by item,
//     aliased once (the most errors a megabyte holds), unknown keys,
//     nested flow lists, one long scalar;
//   - 1 MB of the other shapes that cost the most per byte: empty mappings
//     where the list wants them (a struct each, decoded and checked), one
//     mapping aliased as often as the budget allows, items with every field
//     wrong, block lists (no flow cut), links by the ten thousand, keys
//     unknown, long or given twice, nesting.
//
// Each file is loaded by a child process (this program with -child), so
// that the peak resident set size the kernel reports for it (rusage
// maxrss) is the loader's alone. Times are the wall-clock time of reading
// and validating, in the child, and the child's whole CPU time (user and
// system, all threads: the garbage collector runs beside the loader). The
// target is checked against the minimum CPU time of the runs (-n): the
// wall time counts waiting for a core, and the machine may be shared.
// With -base, another build's child loads the same files in turn (same
// load, so the ratio is steady where the figures are not), and a result
// that differs from ours is printed: the loaders must agree.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
)

type benchCase struct {
	name string
	gen  func() string
	// side, when set, makes the side file the case's file names as
	// sideName: written beside it, read by the loader with it.
	side    func() string
	maxTime time.Duration
	maxMB   int
}

// sideName is what a case's file calls its side file; the file written is
// the case's own (NN.side), the name replaced.
const sideName = "SIDE"

const routes = 100000

var only string

// The targets of the big files: in YAML, what yaml.v3's tree of the whole
// document costs (about 1 KB per route); from a side file, a few times the
// routes' own size.
var cases = []benchCase{
	{"100k routes, flow style", func() string { return routesFile(routes, false, "bench0") }, nil, 1200 * time.Millisecond, 250},
	{"100k routes, block style", func() string { return routesFile(routes, true, "bench0") }, nil, 1200 * time.Millisecond, 250},
	{"100k routes, routes-files", func() string {
		return "version: 1\nlinks:\n  bench0: {kind: device}\nroutes-files: [" + sideName + "]\n"
	}, routeLines, 300 * time.Millisecond, 80},
	{"100k set elements, flow style", func() string { return setFile("elements: [" + strings.Join(elements(routes), ", ") + "]") }, nil, 1200 * time.Millisecond, 250},
	{"100k set elements, elements-file", func() string { return setFile("elements-file: " + sideName) }, func() string {
		return strings.Join(elements(routes), "\n") + "\n"
	}, 300 * time.Millisecond, 80},
	{"1 MB of aliases at the budget", aliasesAtBudget, nil, time.Second, 200},
	{"1 MB of aliases, short items", denseAliases, nil, time.Second, 200},
	{"1 MB billion laughs", laughs, nil, time.Second, 200},
	{"1 MB of pool subnets", poolSubnets, nil, time.Second, 200},
	{"100k errors", func() string { return routesFile(routes, false, "missing0") }, nil, time.Second, 200},
	// The most errors a megabyte holds, one per one-character item, in
	// each list whose items are checked one by one; aliased once where
	// the budget allows, so that each is decoded and checked twice.
	{"1 MB one-char routes", oneChar("routes: &e [", "]\nx: *e\n"), nil, time.Second, 200},
	{"1 MB one-char addresses", oneChar("links:\n  d0:\n    kind: dummy\n    addresses: &e [", "]\n  d1: {kind: dummy, addresses: *e}\n"), nil, time.Second, 200},
	{"1 MB one-char set elements", oneChar("nftables:\n  inet bench:\n    sets:\n      s0:\n        type: ipv4_addr\n        elements: &e [", "]\n      s1: {type: ipv4_addr, elements: *e}\n"), nil, time.Second, 200},
	{"1 MB one-char peers", oneChar("links:\n  wg0:\n    kind: wireguard\n    private-key: x\n    peers: &e [", "]\n  wg1: {kind: wireguard, private-key: x, peers: *e}\n"), nil, time.Second, 200},
	{"1 MB one-char rules, no alias", oneChar("nftables:\n  inet bench:\n    chains:\n      c0:\n        rules: [", "]\n"), nil, time.Second, 200},
	// Mappings where the list wants them, but empty: each item is a
	// struct the decoder makes and the builder checks (and reports).
	{"1 MB empty route mappings", oneItem("routes: [", "{}", "]\n"), nil, time.Second, 200},
	{"1 MB empty address mappings", oneItem("links:\n  d0:\n    kind: dummy\n    addresses: &e [", "{}", "]\n  d1: {kind: dummy, addresses: *e}\n"), nil, time.Second, 200},
	{"1 MB empty peer mappings", oneItem("links:\n  wg0:\n    kind: wireguard\n    private-key-file: /nonexistent\n    peers: &e [", "{}", "]\n  wg1: {kind: wireguard, private-key-file: /nonexistent, peers: *e}\n"), nil, time.Second, 200},
	{"1 MB one-char policy rules", oneChar("rules: &e [", "]\nx: *e\n"), nil, time.Second, 200},
	{"1 MB empty policy rule mappings", oneItem("rules: [", "{}", "]\n"), nil, time.Second, 200},
	// One anchored mapping aliased as often as the budget allows: every
	// alias is a route of its own to the decoder and the builder.
	{"1 MB of one aliased mapping", oneItem("routes: [&e {}, ", "*e", "]\n"), nil, time.Second, 200},
	// Routes with every field wrong: several errors per item.
	{"1 MB of routes, all fields bad", oneItem("routes:\n", "  - {to: x, via: x, src: x, table: x, scope: x, metric: x, tos: x, mtu: x, onlink: x, family: x}\n", ""), nil, time.Second, 200},
	// Block style items that are not mappings: no flow cut applies.
	{"1 MB block list of one-char routes", oneItem("routes:\n", "- x\n", ""), nil, time.Second, 200},
	{"1 MB of dummy links", func() string { return links(false) }, nil, time.Second, 200},
	{"1 MB of links with an address", func() string { return links(true) }, nil, time.Second, 200},
	{"1 MB of bridge ports", oneItemN("links:\n  br0: {kind: bridge}\n", func(i int) string { return fmt.Sprintf("  v%d: {kind: veth, master: br0, veth: {peer: w%d}}\n", i, i) }, "", ""), nil, time.Second, 200},
	{"1 MB of links, not mappings", oneItemN("links: {", func(i int) string { return fmt.Sprintf("l%d: x", i) }, ", ", "}\n"), nil, time.Second, 200},
	// Each keyed section with entries that are not mappings, or with
	// every field of the wrong type.
	{"1 MB of links, every field bad", oneItemN("links:\n", func(i int) string {
		return fmt.Sprintf("  l%d: {kind: [x], mtu: x, state: [x], master: {}, alias: [], adopt: x, addresses: x, veth: x, vxlan: x}\n", i)
	}, "", ""), nil, time.Second, 200},
	{"1 MB of nft tables, not mappings", oneItemN("nftables: {", func(i int) string { return fmt.Sprintf("inet t%d: x", i) }, ", ", "}\n"), nil, time.Second, 200},
	{"1 MB of nft sets, not mappings", oneItemN("nftables:\n  inet t:\n    sets: {", func(i int) string { return fmt.Sprintf("s%d: x", i) }, ", ", "}\n"), nil, time.Second, 200},
	{"1 MB of nft chains, not mappings", oneItemN("nftables:\n  inet t:\n    chains: {", func(i int) string { return fmt.Sprintf("c%d: x", i) }, ", ", "}\n"), nil, time.Second, 200},
	{"1 MB of pools, not mappings", oneItemN("pools: {", func(i int) string { return fmt.Sprintf("p%d: x", i) }, ", ", "}\n"), nil, time.Second, 200},
	{"1 MB of empty pools", oneItemN("pools: {", func(i int) string { return fmt.Sprintf("p%d: {}", i) }, ", ", "}\n"), nil, time.Second, 200},
	{"1 MB of empty nft sets", oneItemN("nftables:\n  inet t:\n    sets: {", func(i int) string { return fmt.Sprintf("s%d: {}", i) }, ", ", "}\n"), nil, time.Second, 200},
	{"1 MB one-char pool subnets", oneChar("pools:\n  p: {subnets: &e [", "]}\n  q: {subnets: *e}\n"), nil, time.Second, 200},
	{"1 MB one-char pool blocks", oneChar("pools:\n  p: {subnets: [10.0.0.0/8], blocks: &e [", "]}\n  q: {subnets: [10.1.0.0/16], blocks: *e}\n"), nil, time.Second, 200},
	{"1 MB of valid nft rules", oneItemN("nftables:\n  inet bench:\n    chains:\n      c0:\n        rules:\n", func(i int) string {
		return fmt.Sprintf("          - ip saddr 10.%d.%d.%d tcp dport %d accept\n", i>>16&255, i>>8&255, i&255, i%65535+1)
	}, "", ""), nil, time.Second, 200},
	{"1 MB of unknown keys", manyKeys, nil, time.Second, 200},
	{"1 MB of unknown long keys", longKeys, nil, time.Second, 200},
	{"1 MB of keys given twice", oneItem("links:\n  d0: {kind: dummy", ", mtu: 1500", "}\n"), nil, time.Second, 200},
	{"1 MB of unknown keys, block style", oneItemN("links:\n  d0:\n    kind: dummy\n", func(i int) string { return fmt.Sprintf("    %x: 1\n", i) }, "", ""), nil, time.Second, 200},
	{"1 MB nested block mappings", nestedBlock, nil, time.Second, 200},
	{"1 MB nested flow lists", nested, nil, time.Second, 200},
	{"1 MB scalar", longScalar, nil, time.Second, 200},
}

func main() {
	child := flag.String("child", "", "load this file and print the time taken (internal)")
	flag.StringVar(&only, "run", "", "only the cases whose name matches this regular expression")
	runs := flag.Int("n", 1, "load each file this many times; the minimum and the median are printed")
	base := flag.String("base", "", "another build of this program (say, of main): its loader runs on the same files, interleaved, for a ratio that cancels the machine's load")
	keep := flag.String("keep", "", "write the files into this directory and keep them (to profile a case with BenchmarkParseFile)")
	flag.Parse()
	if *child != "" {
		os.Exit(runChild(*child))
	}
	if err := run(max(*runs, 1), *base, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench-parse:", err)
		os.Exit(1)
	}
}

// sample is one child's figures.
type sample struct {
	result string
	wall   time.Duration
	cpu    time.Duration
	mb     float64
}

// measure loads path in a child process of bin.
func measure(bin, path string) (sample, error) {
	cmd := exec.Command(bin, "-child", path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return sample{}, err
	}
	var s sample
	if _, err := fmt.Sscanf(string(out), "%d", &s.wall); err != nil {
		return sample{}, fmt.Errorf("child printed %q: %w", out, err)
	}
	s.result = strings.TrimSpace(strings.SplitN(string(out), " ", 2)[1])
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	s.mb = float64(ru.Maxrss) / 1024 // Linux reports KiB
	// CPU time (user + system) beside the wall time: on a shared machine
	// the wall time also counts waiting for a core.
	s.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	return s, nil
}

// stats is the minimum and the median of a case's samples.
type stats struct{ minCPU, medCPU, minWall, minMB, medMB float64 }

func summarise(ss []sample) stats {
	pick := func(f func(sample) float64) (lo, med float64) {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[0], v[len(v)/2]
	}
	var st stats
	st.minCPU, st.medCPU = pick(func(s sample) float64 { return float64(s.cpu) / 1e6 })
	st.minWall, _ = pick(func(s sample) float64 { return float64(s.wall) / 1e6 })
	st.minMB, st.medMB = pick(func(s sample) float64 { return s.mb })
	return st
}

func run(runs int, base, keep string) error {
	dir := keep
	if dir == "" {
		d, err := os.MkdirTemp("", "bench-parse")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The figures are the minimum and the median of the runs: the minimum
	// is the loader's own cost, the median says how noisy the machine was.
	fmt.Printf("%d run(s) per case; CPU ms and peak RSS MB as min/median", runs)
	if base != "" {
		fmt.Printf("; base: %s, ratio = min CPU / base min CPU", base)
	}
	fmt.Println()
	fmt.Printf("%-34s %5s %-34s %7s %11s %9s", "file", "size", "result", "wall", "CPU", "RSS")
	if base != "" {
		fmt.Printf(" %11s %9s %5s", "base CPU", "base RSS", "ratio")
	}
	fmt.Println("  target")
	match, err := regexp.Compile(only)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	for i, c := range cases {
		if !match.MatchString(c.name) {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("%02d.yaml", i))
		data := c.gen()
		size := len(data)
		if c.side != nil {
			sp := filepath.Join(dir, fmt.Sprintf("%02d.side", i))
			side := c.side()
			if err := os.WriteFile(sp, []byte(side), 0o644); err != nil {
				return err
			}
			data = strings.ReplaceAll(data, sideName, filepath.Base(sp))
			size += len(side)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
		var ours, theirs []sample
		// Interleaved, so that both see the same load.
		for range runs {
			s, err := measure(self, p)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			ours = append(ours, s)
			if base != "" {
				s, err := measure(base, p)
				if err != nil {
					return fmt.Errorf("%s (base): %w", c.name, err)
				}
				theirs = append(theirs, s)
			}
		}
		st := summarise(ours)
		mark := ""
		if st.minCPU > float64(c.maxTime)/1e6 || st.minMB > float64(c.maxMB) {
			mark = "  OVER"
		}
		fmt.Printf("%-34s %4.1fM %-34s %5.0fms %5.0f/%-5.0f %4.0f/%-4.0f", c.name, float64(size)/1e6, short(ours[0].result, 34),
			st.minWall, st.minCPU, st.medCPU, st.minMB, st.medMB)
		if base != "" {
			bt := summarise(theirs)
			fmt.Printf(" %5.0f/%-5.0f %4.0f/%-4.0f %5.2f", bt.minCPU, bt.medCPU, bt.minMB, bt.medMB, st.minCPU/bt.minCPU)
			if theirs[0].result != ours[0].result {
				mark += "  base: " + theirs[0].result
			}
		}
		fmt.Printf("  ≤ %v, ≤ %d MB%s\n", c.maxTime, c.maxMB, mark)
	}
	return nil
}

// short cuts s to n characters.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
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

// oneItem is about 1 MB: "version: 1", head, then item again and again
// (with ", " between items when head ends in "["), then tail.
func oneItem(head, item, tail string) func() string {
	sep := ""
	if strings.HasSuffix(head, "[") || strings.HasSuffix(head, "[&e {}, ") {
		sep = ","
	}
	return oneItemN(head, func(int) string { return item }, sep, tail)
}

// oneItemN is oneItem with the i-th item made by item and sep between items.
func oneItemN(head string, item func(i int) string, sep, tail string) func() string {
	return func() string {
		var b strings.Builder
		b.WriteString("version: 1\n")
		b.WriteString(head)
		for i := 0; ; i++ {
			it := item(i)
			if b.Len()+len(sep)+len(it)+len(tail) > 1<<20 {
				break
			}
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(it)
		}
		b.WriteString(tail)
		return b.String()
	}
}

// links is about 1 MB of dummy links, with an address each when addr.
func links(addr bool) string {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n")
	for i := 0; b.Len() < 1<<20-100; i++ {
		if addr {
			fmt.Fprintf(&b, "  d%d: {kind: dummy, addresses: [10.%d.%d.%d/32]}\n", i, i>>16&255, i>>8&255, i&255)
		} else {
			fmt.Fprintf(&b, "  d%d: {kind: dummy}\n", i)
		}
	}
	return b.String()
}

// longKeys is about 1 MB of unknown keys of a kilobyte each.
func longKeys() string {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n  d0:\n    kind: dummy\n")
	for i := 0; b.Len() < 1<<20-2000; i++ {
		fmt.Fprintf(&b, "    %s%08x: 1\n", strings.Repeat("k", 1000), i)
	}
	return b.String()
}

// nestedBlock is about 1 MB of block mappings nested as deep as the
// indentation allows in a megabyte (a key per level, one space more each).
func nestedBlock() string {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n")
	for depth := 1; b.Len() < 1<<20-2000; depth++ {
		b.WriteString(strings.Repeat(" ", depth+1) + "k:\n")
	}
	return b.String()
}

// routeLines is the 100k routes of routesFile as the lines of a routes
// file.
func routeLines() string {
	var b strings.Builder
	for i := range routes {
		v := uint32(1<<16+i) << 8
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24)
		fmt.Fprintf(&b, "%s dev bench0 table 100\n", p)
	}
	return b.String()
}

// elements is n distinct IPv4 addresses.
func elements(n int) []string {
	es := make([]string, n)
	for i := range es {
		es[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	return es
}

// setFile is a set of IPv4 addresses whose elements key is elems.
func setFile(elems string) string {
	return "version: 1\nnftables:\n  inet bench:\n    sets:\n      s:\n        type: ipv4_addr\n        " + elems + "\n"
}
