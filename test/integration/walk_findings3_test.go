package integration

// Regression tests for the defects the walk found once show's round trip
// was one of its checks, its generator reached every key of the schema and
// other owners held pool addresses (docs/walk-findings.md, from 68).

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// roundTrip runs show (with extra arguments) against file f, writes what it
// prints as a file of its own and checks that it is one: it loads, diffs
// empty, and an apply of it changes nothing, the IPAM registry included. It
// returns what show printed.
func (e *env) roundTrip(f string, extra ...string) string {
	e.t.Helper()
	r := e.cli(append([]string{"show", "-c", f}, extra...)...)
	if r.Code != 0 {
		e.t.Fatalf("show: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	dir := e.t.TempDir()
	shown := filepath.Join(dir, "shown.yaml")
	if err := os.WriteFile(shown, []byte(r.Stdout), 0o644); err != nil {
		e.t.Fatal(err)
	}
	reg := e.registries()
	if d := e.cli("diff", "-c", shown); d.Code != 0 {
		e.t.Errorf("diff of show's output: exit %d\n%s%s\nshow printed:\n%s", d.Code, d.Stdout, d.Stderr, r.Stdout)
		return r.Stdout
	}
	if a := e.cli("apply", "-c", shown); a.Code != 0 || !strings.HasPrefix(a.Stdout, "No changes") {
		e.t.Errorf("apply of show's output: exit %d\n%s%s\nshow printed:\n%s", a.Code, a.Stdout, a.Stderr, r.Stdout)
	}
	if after := e.registries(); after != reg {
		e.t.Errorf("apply of show's output changed the IPAM registry:\n%s\nto:\n%s\nshow printed:\n%s", reg, after, r.Stdout)
	}
	return r.Stdout
}

// registries returns the namespace's IPAM registry files, one after the
// other.
func (e *env) registries() string {
	files, _ := filepath.Glob(filepath.Join(e.state, "netns", e.ns, "ipam", "*.registry"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.WriteString(filepath.Base(f) + ":\n" + string(data))
	}
	return b.String()
}

// 68. A link that leaves the file but that the plan leaves as it is (a
// foreign port in it makes its delete a conflict) keeps the address it took
// from a pool: the pool gave it back while the link still held it, withdrew
// its block's export route, and would have handed the address out again.
// Walk finding 68 (host seed 90934393032559, step 8; shrunk to 4 steps).
func TestWalkFinding68PoolAddressOfALinkLeftOut(t *testing.T) {
	e := bridgeWithForeignPort(t, "{pool: p}")
	f := b1TakesFromThePool(e, "b.yaml")
	if got := e.ip("-4", "addr", "show", "dev", "b0"); !strings.Contains(got, "10.98.0.0/32") {
		t.Fatalf("b0 lost its address:\n%s", got)
	}
	if got := e.ip("-4", "addr", "show", "dev", "b1"); strings.Contains(got, "10.98.0.0/") {
		t.Errorf("b1 was given the address b0 still holds:\n%s", got)
	}
	if got := e.table119Of("120"); !strings.Contains(got, "10.98.0.0 dev lo") || !strings.Contains(got, "10.98.0.1 dev lo") {
		t.Errorf("export routes of table 120:\n%s", got)
	}
	if got := e.ipam("list", "-c", f); !strings.Contains(got, "config:link/b0") {
		t.Errorf("the registry gave b0's address back:\n%s", got)
	}
}

// 160. A link left out for a conflict kept an allocation it no longer
// carried: its pool left the file (the address with it, the registry file
// kept), then came back in the step the link left the file with a foreign
// port in it. The pool kept the block for nobody and exported its route.
// Walk finding 160 (host soak seed 109420441245139, step 53; shrunk to 7
// steps).
func TestWalkFinding160LeftOutLinkKeepsOnlyWhatItCarries(t *testing.T) {
	e := bridgeWithForeignPort(t, "{pool: p}")
	e.apply(e.file("b.yaml", "version: 1\nlinks:\n  lo: {kind: device, state: up}\n  b0: {kind: bridge}\n"))
	if got := e.ip("-4", "addr", "show", "dev", "b0"); strings.Contains(got, "10.98.0.") {
		t.Fatalf("b0 kept its pool's address when the pool left the file:\n%s", got)
	}
	f := b1TakesFromThePool(e, "c.yaml")
	if got := e.ipam("list", "-c", f); strings.Contains(got, "config:link/b0") {
		t.Errorf("the registry keeps an address for b0, which carries none:\n%s", got)
	}
	b1 := e.ip("-4", "-o", "addr", "show", "dev", "b1")
	m := regexp.MustCompile(`inet (10\.98\.0\.\d+)/32`).FindStringSubmatch(b1)
	if m == nil {
		t.Fatalf("b1 has no address of the pool:\n%s", b1)
	}
	if got := strings.TrimSpace(e.table119Of("120")); !strings.HasPrefix(got, m[1]+" dev lo") || strings.Contains(got, "\n") {
		t.Errorf("export routes of table 120:\n%s\nwant only b1's block, %s", got, m[1])
	}
	if r := e.cli("diff", "-c", f); !strings.Contains(r.Stdout+r.Stderr, "cannot be deleted") || strings.Contains(r.Stdout, "route") {
		t.Errorf("diff after the apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// 104. A link left out for a conflict keeps every address it has, a
// static address in a pool's subnets that the file no longer declares
// included, and the pool must not hand that address out: it reserved it
// only while the file declared it, and gave it to the next link that took
// from the pool, so that two links held it. The kept address is no
// allocation: no block is held for it and none is exported.
// Walk finding 104 (host soak seed 65383515445023, step 27: the oracle took
// the left-out link's static addresses for allocations and wanted their
// blocks exported; the hand-out was found analysing it).
func TestWalkFinding104PoolReservesWhatALeftOutLinkKeeps(t *testing.T) {
	e := bridgeWithForeignPort(t, "10.98.0.0/24")
	f := b1TakesFromThePool(e, "b.yaml")
	if got := e.ip("-4", "addr", "show", "dev", "b0"); !strings.Contains(got, "10.98.0.0/24") {
		t.Fatalf("b0 lost the address it keeps:\n%s", got)
	}
	b1 := e.ip("-4", "-o", "addr", "show", "dev", "b1")
	m := regexp.MustCompile(`inet (10\.98\.0\.\d+)/32`).FindStringSubmatch(b1)
	if m == nil {
		t.Fatalf("b1 has no address of the pool:\n%s", b1)
	}
	if m[1] == "10.98.0.0" {
		t.Errorf("the pool gave b1 10.98.0.0, which b0 still holds")
	}
	if got := strings.TrimSpace(e.table119Of("120")); !strings.HasPrefix(got, m[1]+" dev lo") || strings.Contains(got, "\n") {
		t.Errorf("export routes of table 120:\n%s\nwant only b1's block, %s", got, m[1])
	}
	if got := e.ipam("list", "-c", f); strings.Count(got, "config:link/") != 1 {
		t.Errorf("the registry holds more than b1's address:\n%s", got)
	}
	if r := e.cli("diff", "-c", f); !strings.Contains(r.Stdout+r.Stderr, "cannot be deleted") || !strings.HasPrefix(r.Stdout, "No changes planned") {
		t.Errorf("diff after the apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// The conflict gone, b0 goes, and b1 keeps its address.
	e.ip("link", "del", "fp0")
	e.apply(f)
	if got := e.ip("-4", "-o", "addr", "show", "dev", "b1"); !strings.Contains(got, m[1]+"/32") {
		t.Errorf("b1 lost %s once b0 went:\n%s", m[1], got)
	}
	e.converged(f)
}

// table119Of lists IPv4 table t.
func (e *env) table119Of(t string) string { return e.ip("-4", "route", "show", "table", t) }

// 69. A file whose settings.protocol the kernel names (babel, 42, with
// protocol-override) is shown with protocol-override, or show's output
// does not load.
// Walk finding 69 (host seed 90934393032559, step 1).
func TestWalkFinding69ShowOfANamedProtocol(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", "version: 1\nsettings: {protocol: 42, protocol-override: true}\nroutes:\n  - {to: 172.16.1.0/24, type: blackhole}\n")
	e.apply(f)
	if out := e.roundTrip(f); !strings.Contains(out, "protocol-override: true") {
		t.Errorf("show:\n%s", out)
	}
}

// 70. A netdev base chain moved to another device is rebuilt (the kernel
// does not move a hook), and show prints the chain's device, without which
// its output is not a file.
// Walk finding 70 (issue 30; generated by the walk since).
func TestWalkFinding70NetdevChainDevice(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	file := func(name, dev string) string {
		return e.file(name, "version: 1\nlinks:\n  v0: {kind: veth, veth: {peer: v1}}\n  v1: {kind: veth, veth: {peer: v0}}\n"+
			"nftables:\n  netdev t:\n    chains:\n      in: {type: filter, hook: ingress, device: "+dev+", priority: 0, rules: [counter accept]}\n")
	}
	e.apply(file("a.yaml", "v0"))
	f := file("b.yaml", "v1")
	e.apply(f)
	out, err := exec.Command("ip", "netns", "exec", e.ns, "nft", "list", "table", "netdev", "t").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `device "v1"`) {
		t.Errorf("nft list: %v\n%s", err, out)
	}
	e.converged(f)
	if shown := e.roundTrip(f); !strings.Contains(shown, "device: v1") {
		t.Errorf("show:\n%s", shown)
	}
}

// 71. An address of ours on a link the file does not own (kind: device, lo
// here) is shown: the kernel marks it ours (Linux 6.3), and applying show's
// output deleted it.
// Walk finding 71 (issue 30; generated by the walk since).
func TestWalkFinding71ShowAddressOnADevice(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", "version: 1\nlinks:\n  lo: {kind: device, state: up, addresses: [10.77.0.1/32]}\n")
	e.apply(f)
	shown := e.roundTrip(f)
	if !strings.Contains(shown, "10.77.0.1/32") {
		t.Errorf("show left out the address of ours on lo:\n%s", shown)
	}
	if got := e.ip("-4", "addr", "show", "dev", "lo"); !strings.Contains(got, "10.77.0.1/32") {
		t.Errorf("the address of ours on lo is gone:\n%s", got)
	}
}

// 72. A link's address from a pool is shown as the link's pool entry, and
// the pool's export routes are left to the pools section: shown as a static
// address and routes, applying show's output gave the address back to the
// pool (and a route in routes may not take an export route's key).
// Walk finding 72 (host seed 90934393032559, step 8).
func TestWalkFinding72ShowPoolAddresses(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
pools:
  p4: {subnets: [10.99.0.0/24], block-size-bits: 2, export-table: 120, reuse-delay: 0s}
  pd: {subnets: [{ipv4: 10.98.0.0/24, ipv6: "fd98::/120"}], block-size-bits: 0, reuse-delay: 0s}
links:
  lo: {kind: device, state: up}
  b0: {kind: bridge, addresses: [{pool: p4, prefix-length: 24}, {pool: pd, ipv6-prefix-length: 64}]}
`)
	e.apply(f)
	e.ipam("allocate", "-c", f, "--pool", "p4", "--owner", "cni:pod1")
	e.apply(f)
	shown := e.roundTrip(f)
	for _, want := range []string{"{pool: p4, prefix-length: 24}", "{pool: pd, ipv6-prefix-length: 64}"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %s:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "\nroutes:") {
		t.Errorf("show prints the export routes:\n%s", shown)
	}
}

// 73. show of a WireGuard device loads: it prints the device's public key,
// which keeps the private key the device holds, and keep-preshared-key for a
// peer with a preshared key. It printed neither key source (the kernel gives
// a key back, never its file), and its output did not load.
// Walk finding 73 (issue 30; TestEveryKindEveryStage kept it visible).
func TestWalkFinding73ShowWireGuardKeys(t *testing.T) {
	e := newEnv(t)
	key, psk := e.keyFile("wg.key"), e.keyFile("wg.psk")
	peer := e.publicKeyOf(e.keyFile("peer.key"))
	dev := "wgf" + e.ns[len(e.ns)-4:]
	f := e.file("a.yaml", "version: 1\nlinks:\n  "+dev+":\n    kind: wireguard\n    wireguard:\n      private-key-file: "+key+
		"\n      userspace: true\n      peers:\n        - {public-key: "+peer+", preshared-key-file: "+psk+", allowed-ips: [10.9.0.0/24]}\n")
	requireWireGuard(t, e, f)
	shown := e.roundTrip(f)
	if !strings.Contains(shown, "public-key: "+e.publicKeyOf(key)) || !strings.Contains(shown, "keep-preshared-key: true") || strings.Contains(shown, "private-key-file:") {
		t.Errorf("show:\n%s", shown)
	}
	// The file keeps the key: another key on the device is a conflict,
	// never a write.
	other := e.file("b.yaml", strings.Replace(shown, e.publicKeyOf(key), e.publicKeyOf(e.keyFile("other.key")), 1))
	if r := e.cli("apply", "-c", other); r.Code == 0 || !strings.Contains(r.Stderr, "holds the private key of public key") {
		t.Errorf("apply of another public-key: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// 74. A veth end whose peer is in another namespace is shown with its peer
// and the peer's namespace, without which show's output is not a file.
// Walk finding 74 (host seed 90934393032559, step 22).
func TestWalkFinding74ShowVethWithRemotePeer(t *testing.T) {
	e := newEnv(t)
	peer := e.ns + "-p"
	if out, err := exec.Command("ip", "netns", "add", peer).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", peer).Run() })
	f := e.file("a.yaml", "version: 1\nlinks:\n  p9a: {kind: veth, veth: {peer: p9b, peer-netns: "+peer+"}}\n")
	e.apply(f)
	if shown := e.roundTrip(f); !strings.Contains(shown, "veth: {peer: p9b, peer-netns: "+peer+"}") {
		t.Errorf("show:\n%s", shown)
	}
}

// keyFile writes a new WireGuard key (mode 0600) in the test's directory.
func (e *env) keyFile(name string) string {
	e.t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(k.String()+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// publicKeyOf is the public key of a key file's private key.
func (e *env) publicKeyOf(file string) string {
	e.t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := wgtypes.ParseKey(strings.TrimSpace(string(data)))
	if err != nil {
		e.t.Fatal(err)
	}
	return k.PublicKey().String()
}

// requireWireGuard applies f, which makes a WireGuard device: the kernel
// module, or wireguard-go (userspace: true), whose daemon the test stops.
func requireWireGuard(t *testing.T, e *env, f string) {
	t.Helper()
	nettest.RequireTool(t, "wireguard-go")
	t.Cleanup(func() { stopNetNSProcesses(e.ns) })
	e.apply(f)
}

// 77. A pool whose block size changes in the same step as every link
// holding its blocks leaves the file converges: the leaving links give
// their addresses back first, and the pool takes the new size, so a link
// joining in that step takes its address from it. The apply was refused
// (blocks held) before the releases that would have ended the conflict, on
// every pass. A holder that stays keeps the refusal.
// Walk finding 77 (host seed 40585726035581, step 2; shrunk to 2 steps).
func TestWalkFinding77PoolResizedAsItsHoldersLeave(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "set", "lo", "up")
	pool := func(bits string) string {
		return "version: 1\npools:\n  pv: {subnets: [\"fd99::/120\"]" + bits + ", export-table: 120, reuse-delay: 0s}\nlinks:\n  lo: {kind: device, state: up}\n"
	}
	e.apply(e.file("a.yaml", pool("")+"  b0: {kind: bridge, addresses: [{pool: pv, prefix-length: 128}]}\n"))
	f := e.file("b.yaml", pool(", block-size-bits: 2")+"  b1: {kind: bridge, addresses: [{pool: pv, prefix-length: 128}]}\n")
	if d := e.cli("diff", "-c", f); d.Code != 2 || !strings.Contains(d.Stdout, "of link b0 to be given back") {
		t.Fatalf("diff: exit %d, want a plan giving b0's address back\n%s%s", d.Code, d.Stdout, d.Stderr)
	}
	e.apply(f)
	e.converged(f)
	if got := e.ip("-6", "route", "show", "table", "120"); !strings.Contains(got, "fd99::/126 dev lo") || strings.Contains(got, "/123") {
		t.Errorf("export routes of table 120 (want the new size's block):\n%s", got)
	}
	if got := e.ip("-6", "addr", "show", "dev", "b1"); !strings.Contains(got, "fd99::/128") {
		t.Errorf("b1 took no address from the resized pool:\n%s", got)
	}

	// Two holders, one stays: the blocks stay held, and the new size is
	// refused before anything changes.
	e.apply(e.file("c.yaml", pool("")+"  b2: {kind: bridge, addresses: [{pool: pv, prefix-length: 128}]}\n  b3: {kind: bridge, addresses: [{pool: pv, prefix-length: 128}]}\n"))
	g := e.file("d.yaml", pool(", block-size-bits: 2")+"  b3: {kind: bridge, addresses: [{pool: pv, prefix-length: 128}]}\n")
	if r := e.cli("apply", "-c", g); r.Code == 0 || !strings.Contains(r.Stderr, "blockSizeBits cannot change from 5 to 2 while blocks are held") {
		t.Errorf("apply with a holder staying: exit %d, want the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := e.ip("link", "show", "b2"); !strings.Contains(got, "b2") {
		t.Errorf("the refused apply deleted b2:\n%s", got)
	}
}

// 102. A veth pair made from an end with an MTU below 1280 gave the other
// end, which the file gives no MTU, the same MTU (the library copies it
// to the peer; the kernel alone gives a peer 1500): the kernel took IPv6
// off that end, which the file did not hold low. Walk finding 102 (host
// soak seed 9117206635281, step 53; shrunk to one file: p9a mtu 1200, its
// peer p9b without one).
func TestWalkFinding102VethPeerWithoutMTUStartsAtTheDefault(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", "version: 1\nlinks:\n  p9a: {kind: veth, mtu: 1200, veth: {peer: p9b}}\n  p9b: {kind: veth, veth: {peer: p9a}, addresses: ['fd99::1/64']}\n")
	e.apply(f)
	if got := e.ip("-o", "link", "show", "p9b"); !strings.Contains(got, " mtu 1500 ") {
		t.Errorf("p9b, which the file gives no MTU:\n%s", got)
	}
	if got := e.ip("-o", "link", "show", "p9a"); !strings.Contains(got, " mtu 1200 ") {
		t.Errorf("p9a:\n%s", got)
	}
	if got := e.ip("-6", "addr", "show", "dev", "p9b"); !strings.Contains(got, "fd99::1/64") {
		t.Errorf("p9b's IPv6 address:\n%s", got)
	}
	e.converged(f)
}

// leftOutPools is the pool of the tests of a link left out for a conflict:
// one address a block, exported to table 120.
const leftOutPools = "pools:\n  p: {subnets: [10.98.0.0/24], block-size-bits: 0, export-table: 120, reuse-delay: 0s}\n"

// bridgeWithForeignPort applies a file with pool p and bridge b0 holding
// addrs (the items of its addresses list), then gives b0 a port of
// someone else's: from then on its delete is a conflict.
func bridgeWithForeignPort(t *testing.T, addrs string) *env {
	e := newEnv(t)
	e.ip("link", "set", "lo", "up")
	e.apply(e.file("a.yaml", "version: 1\n"+leftOutPools+"links:\n  lo: {kind: device, state: up}\n  b0: {kind: bridge, addresses: ["+addrs+"]}\n"))
	e.ip("link", "add", "fp0", "type", "veth", "peer", "name", "fp1")
	e.ip("link", "set", "fp0", "master", "b0")
	return e
}

// b1TakesFromThePool applies the file name, in which b0 left the file and
// b1 takes an address from pool p, and requires the apply to report b0's
// conflict. It returns the file.
func b1TakesFromThePool(e *env, name string) string {
	e.t.Helper()
	f := e.file(name, "version: 1\n"+leftOutPools+"links:\n  lo: {kind: device, state: up}\n  b1: {kind: bridge, addresses: [{pool: p}]}\n")
	if r := e.cli("apply", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, "cannot be deleted") {
		e.t.Fatalf("apply: exit %d, want the conflict of b0\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	return f
}

// ipam allocate makes no plan, so it reserved only the file's addresses:
// the address a link left out for a conflict keeps (b0's 10.98.0.0, which
// the file no longer gives it) was handed to a container while b0 still
// held it. It reserves whatever the kernel shows in the namespace.
func TestIPAMAllocateReservesWhatALeftOutLinkKeeps(t *testing.T) {
	e := bridgeWithForeignPort(t, "10.98.0.0/24")
	f := b1TakesFromThePool(e, "b.yaml")
	for _, owner := range []string{"c1", "c2"} {
		got := strings.TrimSpace(e.ipam("allocate", "-c", f, "--owner", owner))
		if got == "10.98.0.0/32" || got == "10.98.0.0" {
			t.Errorf("ipam allocate gave %s 10.98.0.0, which b0 still holds", owner)
		}
	}
	// The conflict gone, b0 goes, and the address is free again.
	e.ip("link", "del", "fp0")
	e.apply(f)
	if got := e.ipam("allocate", "-c", f, "--owner", "c3"); !strings.Contains(got, "10.98.0.0") {
		t.Errorf("ipam allocate after b0 went gave %q, want 10.98.0.0", got)
	}
}

// 166. What the walk's oracle takes of a link left out for a conflict: a
// static address the file gave it before any pool held the subnet stays no
// allocation once a pool that holds it comes into the file (the pool
// reserves it and exports no block for it). The oracle took it for an
// allocation and wanted its block exported.
// Walk finding 166 (host soak seed 115288018858865, step 30; shrunk to 8
// steps).
func TestWalkFinding166LeftOutStaticAddressAndAPoolThatComesLater(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "set", "lo", "up")
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  lo: {kind: device, state: up}\n  b0: {kind: bridge, addresses: [10.98.0.1/24]}\n"))
	e.ip("link", "add", "fp0", "type", "veth", "peer", "name", "fp1")
	e.ip("link", "set", "fp0", "master", "b0")
	f := b1TakesFromThePool(e, "b.yaml")
	if got := e.ip("-4", "addr", "show", "dev", "b0"); !strings.Contains(got, "10.98.0.1/24") {
		t.Fatalf("b0 lost the address it keeps:\n%s", got)
	}
	if got := e.ip("-4", "-o", "addr", "show", "dev", "b1"); !strings.Contains(got, "10.98.0.0/32") {
		t.Errorf("b1 was not given the pool's first free address, 10.98.0.0:\n%s", got)
	}
	if got := strings.TrimSpace(e.table119Of("120")); got != "10.98.0.0 dev lo proto 245" {
		t.Errorf("export routes of table 120:\n%s\nwant only b1's block", got)
	}
	if got := e.ipam("list", "-c", f); strings.Count(got, "config:link/") != 1 {
		t.Errorf("the registry holds more than b1's address:\n%s", got)
	}
	e.roundTrip(f)
}

// 167. A link left out for a conflict kept as the pool's an address the
// file then declared itself, on that link or on another link: the pool
// kept the allocation and its block exported, and show printed the link as
// taking from the pool, a file that moved the address off the link (the
// pool gives back what the file declares, and the link takes another), so
// that show's output planned changes. The pool now takes the address back
// at once, as from a link not left out: declared on the link, the link
// keeps it as the file's own; declared on another link, it leaves the
// left-out link (what the pool takes back leaves a link in conflict too)
// and the other link gets it, so that it is on one link.
// Walk finding 167 (host soak seed 61660673403130, step 57: the file gave
// p2b 10.99.0.1/24, which bridge-15bytes0, out of the file since step 55
// with a foreign port in it, held from pool pw).
func TestWalkFinding167LeftOutLinksPoolAddressDeclaredByTheFile(t *testing.T) {
	for _, tc := range []struct {
		name, links, want string
		keeps             bool // b0 keeps 10.98.0.0
	}{
		{"on the link", "  b0: {kind: veth, veth: {peer: b0p}, addresses: [10.98.0.0/24]}\n", "address 10.98.0.0/24 dev b0 is left out", true},
		{"on another link", "  b2: {kind: bridge, addresses: [10.98.0.0/24]}\n", "link b0 cannot be deleted", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := bridgeWithForeignPort(t, "{pool: p}")
			f := e.file("b.yaml", "version: 1\n"+leftOutPools+"links:\n  lo: {kind: device, state: up}\n"+tc.links)
			if r := e.cli("apply", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, tc.want) {
				t.Fatalf("apply: exit %d, want %q\n%s%s", r.Code, tc.want, r.Stdout, r.Stderr)
			}
			if got := e.ip("-4", "addr", "show", "dev", "b0"); strings.Contains(got, "10.98.0.0/32") != tc.keeps {
				t.Errorf("b0 keeps 10.98.0.0/32: %v, want %v:\n%s", !tc.keeps, tc.keeps, got)
			}
			if got := e.ipam("list", "-c", f); strings.Contains(got, "config:link/b0") {
				t.Errorf("the registry keeps b0's address, which the file declares:\n%s", got)
			}
			if got := strings.TrimSpace(e.table119Of("120")); got != "" {
				t.Errorf("export routes of table 120:\n%s\nwant none", got)
			}
			if r := e.cli("diff", "-c", f); !strings.Contains(r.Stdout, "No changes planned") {
				t.Errorf("diff after the apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if shown := e.roundTrip(f); strings.Contains(shown, "pool: p}") {
				t.Errorf("show prints b0 as taking from the pool:\n%s", shown)
			}
		})
	}
}
