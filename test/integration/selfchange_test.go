package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// State the kernel changes by itself (docs/config.md, "State the kernel
// changes by itself"): each rule there, on the real kernel.

// 76. A set with a default timeout that declares elements: the kernel
// expires them, diff then exits 2 and a daemon adds them back for ever.
// Refused now, with the reason, before anything is touched.
// Walk finding 76 (issue 30's report).
func TestWalkFinding76TimeoutSetWithDeclaredElementsRefused(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ file, want string }{
		{"version: 1\nnftables:\n  inet t:\n    sets:\n      s: {type: ipv4_addr, timeout: 30s, elements: [10.0.0.1]}\n",
			"f.yaml:5:52: nftables.inet t.sets.s.elements: a set with a default timeout cannot declare elements"},
		{"version: 1\nnftables:\n  inet t:\n    sets:\n      s: {type: ipv4_addr, timeout: 30s, elements-file: e.txt}\n",
			"f.yaml:5:57: nftables.inet t.sets.s.elements-file: a set with a default timeout cannot declare elements"},
	} {
		nettest.WriteFile(t, e.dir, "e.txt", "10.0.0.2\n")
		f := nettest.WriteFile(t, e.dir, "f.yaml", tc.file)
		r := e.cli("apply", "-c", f)
		got := strings.ReplaceAll(r.Stderr, f, "f.yaml")
		if r.Code == 0 || !strings.Contains(got, tc.want) {
			t.Errorf("apply of\n%s: exit %d, want an error containing %q:\n%s%s", tc.file, r.Code, tc.want, r.Stdout, got)
		}
	}
	if out, _ := exec.Command("ip", "netns", "exec", e.ns, "nft", "list", "ruleset").CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("a refused file touched the kernel:\n%s", out)
	}
}

// 86. A map nft declares with a default timeout and elements is refused as
// a set is (76), but the error named the map a set: "nftables.inet
// t.sets.m.elements", a path the file does not hold. Found beside the walk,
// when it was given maps in nft's words.
func TestWalkFinding86MapErrorsNameTheMap(t *testing.T) {
	e := newEnv(t)
	f := nettest.WriteFile(t, e.dir, "f.yaml", "version: 1\nnftables:\n  inet t:\n    maps:\n      m: {typeof: \"meta mark : meta mark\", timeout: 1h, elements: [\"0x20 : 0x21\"]}\n")
	r := e.cli("validate", "-c", f)
	got := strings.ReplaceAll(r.Stderr, f, "f.yaml")
	if want := "nftables.inet t.maps.m.elements: an element with a timeout"; r.Code == 0 || !strings.Contains(got, want) {
		t.Errorf("validate: exit %d, want an error containing %q:\n%s%s", r.Code, want, r.Stdout, got)
	}
}

// 87. The elements of an interval set nft declares (typeof meta priority,
// flags interval, auto-merge) could not all be deleted, nor one replaced
// by another: the plan sent them in the order a dump lists them, highest
// key first and each interval's end before its start, and the kernel
// refused the batch (ENOENT deleting, EEXIST adding). Walk finding 87 (host
// seed 90934393032559, step 129: change nd of arp nrw4 to no elements;
// shrunk: two files, the set with elements ["1:3", "2:1"], then without).
func TestWalkFinding87DeclaredIntervalSetElementsChange(t *testing.T) {
	e := newEnv(t)
	for i, elems := range []string{`["1:3", "2:1"]`, `[]`, `["1:2"]`, `["2:1"]`, `["1:3", "2:1", "3:0-3:ff"]`, `["1:3"]`, `[]`} {
		f := nettest.WriteFile(t, e.dir, "f.yaml", "version: 1\nnftables:\n  arp t:\n    sets:\n      nd: {typeof: \"meta priority\", flags: [interval], auto-merge: true, elements: "+elems+"}\n")
		t.Logf("file %d: elements %s", i+1, elems)
		e.applyOut(f)
		e.settled(f, "arp t")
	}
}

// passes runs n passes over file f as the daemon does: one engine, one
// kernel handle (with its element cache) for all of them, each reading the
// kernel, planning and applying. It fails the test unless every plan is
// empty and no pass wrote to the kernel.
func (e *env) passes(f string, n int) {
	e.t.Helper()
	cfg, err := desired.Load(f, "")
	if err != nil {
		e.t.Fatal(err)
	}
	eng, k := e.engine()
	for i := 0; i < n; i++ {
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			e.t.Fatalf("pass %d: %v", i+1, err)
		}
		if !plan.Empty() {
			e.t.Errorf("pass %d: plan not empty:\n%s", i+1, plan)
		}
		res, err := eng.Apply(context.Background(), plan)
		if err != nil || res.Err() != nil {
			e.t.Fatalf("pass %d: %v %v", i+1, err, res.Err())
		}
	}
	if w := k.Writes(); w != 0 {
		e.t.Errorf("%d passes made %d kernel writes", n, w)
	}
}

// nftIn runs nft in the test's namespace and returns what it prints.
func (e *env) nftIn(args ...string) string {
	e.t.Helper()
	return nettest.InNS(e.t, e.ns, "nft", args...)
}

// settled checks that the kernel holds what file f declares and leaves
// alone: diff exits 0, a second apply prints no changes and commits no
// nftables transaction, daemon passes write nothing, show round-trips; and
// every line of keep is still in the table's listing.
func (e *env) settled(f, table string, keep ...string) {
	e.t.Helper()
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		e.t.Errorf("diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	before := gen(e.t, e.ns)
	if out := e.applyOut(f); !strings.Contains(out, "No changes") {
		e.t.Errorf("second apply:\n%s", out)
	}
	e.passes(f, 3)
	e.roundTrip(f)
	if g := gen(e.t, e.ns); g != before {
		e.t.Errorf("apply, daemon passes and show's round trip committed %d nftables transactions", g-before)
	}
	list := e.nftIn("list", "table", table)
	for _, k := range keep {
		if !strings.Contains(list, k) {
			e.t.Errorf("the kernel lost %q:\n%s", k, list)
		}
	}
}

// Elements another program adds with a timeout to a set of ours, or that
// take the set's default timeout, are the kernel's: it deletes them when
// the timeout runs out. They are left alone (not deleted, not drift, not
// shown), in sets netreconcile writes itself and in sets nft declares. A
// declared element the kernel holds with a timeout is put back without
// one; a foreign element without a timeout is still deleted (the table is
// ours whole).
// Walk finding 75.
func TestWalkFinding75OthersExpiringElementsLeftAlone(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("f.yaml", `version: 1
nftables:
  inet t:
    sets:
      s: {type: ipv4_addr, flags: [timeout], elements: [10.0.0.1]}
      d: {type: ipv4_addr, timeout: 1h}
      c: {type: "ipv4_addr . inet_service", flags: [timeout], elements: ["10.0.0.1 . 22"]}
`)
	e.apply(f)
	e.nftIn("add", "element", "inet", "t", "s", "{ 10.1.2.3 timeout 1h }")
	e.nftIn("add", "element", "inet", "t", "d", "{ 10.1.2.4 }")
	e.nftIn("add", "element", "inet", "t", "c", "{ 10.1.2.3 . 80 timeout 1h }")
	e.settled(f, "inet t", "10.0.0.1", "10.1.2.3 timeout 1h", "10.1.2.4 expires", "10.1.2.3 . 80 timeout 1h", "10.0.0.1 . 22")

	// A declared element replaced by one with a timeout is put back
	// without one, in one apply.
	e.nftIn("delete", "element", "inet", "t", "s", "{ 10.0.0.1 }")
	e.nftIn("add", "element", "inet", "t", "s", "{ 10.0.0.1 timeout 1h }")
	e.nftIn("delete", "element", "inet", "t", "c", "{ 10.0.0.1 . 22 }")
	e.nftIn("add", "element", "inet", "t", "c", "{ 10.0.0.1 . 22 timeout 1h }")
	if r := e.cli("diff", "-c", f); r.Code != 2 {
		t.Errorf("diff with declared elements expiring: exit %d, want 2\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.apply(f)
	list := e.nftIn("list", "table", "inet", "t")
	for _, el := range []string{"10.0.0.1 timeout", "10.0.0.1 expires", "10.0.0.1 . 22 timeout"} {
		if strings.Contains(list, el) {
			t.Errorf("a declared element still expires (%q):\n%s", el, list)
		}
	}
	e.settled(f, "inet t", "10.0.0.1", "10.1.2.3 timeout 1h", "10.1.2.4 expires", "10.1.2.3 . 80 timeout 1h", "10.0.0.1 . 22")

	// An element without a timeout that the file does not declare is
	// not the kernel's: deleted, the expiring ones kept.
	e.nftIn("add", "element", "inet", "t", "s", "{ 10.9.9.9 }")
	e.nftIn("add", "element", "inet", "t", "c", "{ 10.9.9.9 . 9 }")
	e.apply(f)
	if list := e.nftIn("list", "table", "inet", "t"); strings.Contains(list, "10.9.9.9") {
		t.Errorf("a foreign element without a timeout stayed:\n%s", list)
	}
	e.settled(f, "inet t", "10.0.0.1", "10.1.2.3 timeout 1h", "10.1.2.4 expires", "10.1.2.3 . 80 timeout 1h", "10.0.0.1 . 22")
}

// A set the packet path fills (a rule of its table adds to it or updates
// it: a rate-limit meter, a list of recent sources) holds elements no one
// declares: they are left alone, whether they expire or not, and the
// elements the file declares stay as written. Traffic on lo fills four
// sets: nft-declared (dynamic, with and without a default timeout) and of
// netreconcile's own types (with the timeout flag, and without any flag).
func TestDynamicSetFedByRules(t *testing.T) {
	nettest.RequireTool(t, "nft")
	nettest.RequireTool(t, "ping")
	e := newEnv(t)
	f := e.file("f.yaml", `version: 1
links:
  lo: {kind: device, state: up}
nftables:
  inet t:
    sets:
      recent: {type: ipv4_addr, flags: [dynamic, timeout], timeout: 1h}
      rate: {type: ipv4_addr, flags: [dynamic]}
      own: {type: ipv4_addr, flags: [timeout], elements: [127.0.0.9]}
      plain: {type: ipv4_addr, elements: [127.0.0.10]}
    chains:
      out:
        type: filter
        hook: output
        priority: 0
        rules:
          - add @recent { ip daddr }
          - update @rate { ip daddr limit rate over 1000/second } counter
          - update @own { ip daddr timeout 1h }
          - add @plain { ip daddr }
`)
	e.apply(f)
	for _, dst := range []string{"127.0.0.5", "127.0.0.6", "127.0.0.9", "127.0.0.10"} {
		nettest.InNS(t, e.ns, "ping", "-c", "1", "-W", "1", dst)
	}
	list := e.nftIn("list", "table", "inet", "t")
	for _, want := range []string{"127.0.0.5 expires", "127.0.0.6 timeout 1h expires"} {
		if !strings.Contains(list, want) {
			t.Fatalf("the traffic did not fill the sets as expected (%q):\n%s", want, list)
		}
	}
	e.settled(f, "inet t", "127.0.0.5", "127.0.0.6", "127.0.0.9", "127.0.0.10")
	// The declared elements stay as written: the rule's update does not
	// give them a timeout.
	if list := e.nftIn("list", "set", "inet", "t", "own"); strings.Contains(list, "127.0.0.9 timeout") || strings.Contains(list, "127.0.0.9 expires") {
		t.Errorf("a declared element expires:\n%s", list)
	}
}

// A map the packet path fills (a rule of its table adds a key with a value)
// and that the file declares an element of, with another value, under a
// key the packet path already holds: the apply added the file's element
// beside the kernel's, which the kernel refuses (EEXIST: a key holds one
// value), the whole table's batch with it, on every pass. The file's
// element takes the kernel's place (deleted and added in one batch); the
// rule's add leaves an existing key alone, so it stays; the keys the file
// does not declare stay the packet path's.
func TestDynamicMapFedByRulesDeclaredKey(t *testing.T) {
	nettest.RequireTool(t, "nft")
	nettest.RequireTool(t, "ping")
	e := newEnv(t)
	conf := func(name, elems string) string {
		return e.file(name, `version: 1
links:
  lo: {kind: device, state: up}
nftables:
  inet t:
    maps:
      m:
        type: "ipv4_addr : mark"
`+elems+`    chains:
      out:
        type: filter
        hook: output
        priority: 0
        rules:
          - "add @m { ip daddr : 0x2 }"
`)
	}
	e.apply(conf("f.yaml", ""))
	ping := func() {
		for _, dst := range []string{"127.0.0.7", "127.0.0.8"} {
			nettest.InNS(t, e.ns, "ping", "-c", "1", "-W", "1", dst)
		}
	}
	ping()
	if list := e.nftIn("list", "map", "inet", "t", "m"); !strings.Contains(list, "127.0.0.7 : 0x00000002") {
		t.Fatalf("the traffic did not fill the map:\n%s", list)
	}
	g := conf("g.yaml", "        elements: [\"127.0.0.7 : 0x1\"]\n")
	e.apply(g)
	ping()
	e.settled(g, "inet t", "127.0.0.7 : 0x00000001", "127.0.0.8 : 0x00000002")
}

// A WireGuard peer that roamed (its packets now come from an address that
// is none of the file's candidates, with handshakes there) keeps that
// endpoint through a one-shot apply, as through the daemon's passes: the
// kernel learned it. Two namespaces over a veth pair, wireguard-go on both
// sides; the peer moves to another port.
func TestRoamedEndpointKeptByApply(t *testing.T) {
	nettest.RequireTool(t, "wireguard-go")
	nettest.RequireTool(t, "wg")
	e := newEnv(t)
	peerNS := e.ns + "-r"
	if out, err := exec.Command("ip", "netns", "add", peerNS).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		stopNetNSProcesses(peerNS)
		_ = exec.Command("ip", "netns", "del", peerNS).Run()
	})
	t.Cleanup(func() { stopNetNSProcesses(e.ns) })
	suffix := e.ns[len(e.ns)-4:]
	dev, peerDev := "wra"+suffix, "wrb"+suffix
	e.ip("link", "add", "ra", "type", "veth", "peer", "name", "rb", "netns", peerNS)
	e.ip("addr", "add", "192.0.2.1/24", "dev", "ra")
	e.ip("link", "set", "ra", "up")
	inPeer := func(args ...string) string { return nettest.InNS(t, peerNS, args[0], args[1:]...) }
	inPeer("ip", "addr", "add", "192.0.2.2/24", "dev", "rb")
	inPeer("ip", "link", "set", "rb", "up")
	key, peerKey := e.keyFile("a.key"), e.keyFile("b.key")
	f := e.file("a.yaml", "version: 1\nlinks:\n  "+dev+":\n    kind: wireguard\n    addresses: [10.77.0.1/24]\n    wireguard:\n      private-key-file: "+key+
		"\n      listen-port: 51820\n      userspace: true\n      peers:\n        - {public-key: "+e.publicKeyOf(peerKey)+
		", allowed-ips: [10.77.0.2/32], endpoints: [\"192.0.2.2:51820\"]}\n")
	e.apply(f)
	inPeer("wireguard-go", peerDev)
	inPeer("wg", "set", peerDev, "private-key", peerKey, "listen-port", "51820", "peer", e.publicKeyOf(key),
		"allowed-ips", "10.77.0.1/32", "endpoint", "192.0.2.1:51820")
	inPeer("ip", "addr", "add", "10.77.0.2/24", "dev", peerDev)
	inPeer("ip", "link", "set", peerDev, "up")
	nettest.InNS(t, e.ns, "ping", "-c", "1", "-W", "5", "10.77.0.2")
	endpoint := func() string {
		return strings.TrimSpace(strings.Fields(nettest.InNS(t, e.ns, "wg", "show", dev, "endpoints") + " -")[1])
	}
	if got := endpoint(); got != "192.0.2.2:51820" {
		t.Fatalf("endpoint before the roam: %s", got)
	}
	// The peer moves to another port: its packets come from there.
	inPeer("wg", "set", peerDev, "listen-port", "51821")
	for i := 0; ; i++ {
		_ = nettest.ExecErr("ip", "netns", "exec", peerNS, "ping", "-c", "1", "-W", "2", "10.77.0.1")
		if endpoint() == "192.0.2.2:51821" {
			break
		}
		if i == 5 {
			t.Fatalf("the peer did not roam: endpoint %s", endpoint())
		}
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("diff after the roam: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.applyOut(f); !strings.Contains(out, "No changes") {
		t.Errorf("apply after the roam:\n%s", out)
	}
	if got := endpoint(); got != "192.0.2.2:51821" {
		t.Errorf("apply reset the roamed endpoint to %s", got)
	}
}
