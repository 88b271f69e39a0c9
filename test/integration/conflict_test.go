package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// A foreign nftables table with a declared family and name is a conflict:
// its chains are not deleted, and diff says so. With adopt: true it is
// taken over whole.
func TestForeignNftTableConflict(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	nettest.InNS(t, e.ns, "nft", "add", "table", "inet", "ft")
	nettest.InNS(t, e.ns, "nft", "add", "chain", "inet", "ft", "theirs")
	f := e.file("a.yaml", "version: 1\nnftables:\n  inet ft:\n    chains:\n      c: {rules: [counter]}\n")
	r := e.cli("diff", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "nftables table inet ft exists and netreconcile did not create it") || strings.Contains(r.Stdout, "nft") {
		t.Errorf("diff: exit %d, want 1 with the conflict and no nft op\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = e.cli("apply", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "nftables table inet ft exists") {
		t.Errorf("apply: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "ft"); !strings.Contains(out, "chain theirs") || strings.Contains(out, "chain c ") {
		t.Errorf("the foreign table was changed:\n%s", out)
	}
	// The file says it knows: taken over whole, then converged.
	f = e.file("b.yaml", "version: 1\nnftables:\n  inet ft:\n    adopt: true\n    chains:\n      c: {rules: [counter]}\n")
	e.apply(f)
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "ft"); strings.Contains(out, "chain theirs") || !strings.Contains(out, "chain c {") {
		t.Errorf("the adopted table:\n%s", out)
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("diff after adopting: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// Owned now: dropping adopt does not make it a conflict.
	if r := e.cli("diff", "-c", e.file("c.yaml", "version: 1\nnftables:\n  inet ft:\n    chains:\n      c: {rules: [counter]}\n")); r.Code != 0 {
		t.Errorf("diff of the owned table without adopt: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// A foreign link with a declared name is a conflict, and whatever needs it
// is left out with it, in diff and in apply: its addresses, routes through
// it, a link enslaved to it.
func TestForeignLinkLeavesOutDependents(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "fbr", "type", "bridge")
	f := e.file("a.yaml", `version: 1
links:
  fbr: {kind: bridge, addresses: [10.41.0.1/24]}
  p0: {kind: veth, veth: {peer: p1}, master: fbr}
  p1: {kind: veth, veth: {peer: p0}}
  ok0: {kind: bridge, addresses: [10.42.0.1/24]}
routes:
  - {to: 10.43.0.0/16, dev: fbr}
  - {to: 10.44.0.0/16, dev: ok0}
`)
	r := e.cli("diff", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "link fbr exists and netreconcile did not create it") {
		t.Errorf("diff: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, s := range []string{"fbr", "p0", "p1", "10.41.", "10.43."} {
		if strings.Contains(r.Stdout, s) {
			t.Errorf("diff plans %s, which needs the conflicting link:\n%s", s, r.Stdout)
		}
	}
	if !strings.Contains(r.Stdout, "+ address 10.42.0.1/24 dev ok0") || !strings.Contains(r.Stdout, "+ route 10.44.0.0/16") {
		t.Errorf("diff leaves out what does not need the conflict:\n%s", r.Stdout)
	}
	if r := e.cli("apply", "-c", f); r.Code != 1 {
		t.Errorf("apply: exit %d, want 1\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("-o", "addr", "show", "dev", "fbr"); strings.Contains(out, "10.41.") {
		t.Errorf("an address was added to the foreign link:\n%s", out)
	}
	if out := e.ip("-o", "link", "show"); strings.Contains(out, "p0") || !strings.Contains(out, "ok0") {
		t.Errorf("links after apply:\n%s", out)
	}
	if out := e.ip("route", "show", "10.43.0.0/16"); out != "" {
		t.Errorf("a route through the foreign link was added: %s", out)
	}
}

// A foreign link on either end of an owned veth pair, or enslaved to an
// owned bridge, keeps the owned link: deleting the pair (or the bridge)
// would delete (or release) it.
func TestForeignLinkOnOwnedPairOrBridge(t *testing.T) {
	for _, tc := range []struct{ kind, end string }{{"vxlan", "qa"}, {"vxlan", "qb"}, {"macvlan", "qb"}} {
		end := tc.end
		t.Run(tc.kind+" on "+end, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\nlinks:\n  qa: {kind: veth, veth: {peer: qb}}\n  qb: {kind: veth, veth: {peer: qa}}\n"))
			if tc.kind == "vxlan" {
				e.ip("link", "add", "fvx", "type", "vxlan", "id", "7", "dstport", "4789", "dev", end)
			} else {
				e.ip("link", "add", "fvx", "link", end, "type", "macvlan")
			}
			f := e.file("b.yaml", "version: 1\n")
			for _, cmd := range []string{"diff", "apply"} {
				r := e.cli(cmd, "-c", f)
				if r.Code != 1 || !strings.Contains(r.Stderr, "fvx") || strings.Contains(r.Stdout, "- link") {
					t.Errorf("%s: exit %d, want 1 with a conflict naming fvx and no delete\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
				}
			}
			for _, l := range []string{"fvx", "qa", "qb"} {
				e.ip("link", "show", l) // fails the test if gone
			}
		})
	}
	t.Run("port of a bridge", func(t *testing.T) {
		e := newEnv(t)
		e.apply(e.file("a.yaml", "version: 1\nlinks:\n  obr: {kind: bridge}\n"))
		e.ip("link", "add", "fp0", "type", "veth", "peer", "name", "fp1")
		e.ip("link", "set", "fp0", "master", "obr")
		r := e.cli("apply", "-c", e.file("b.yaml", "version: 1\n"))
		if r.Code != 1 || !strings.Contains(r.Stderr, "fp0") {
			t.Errorf("apply: exit %d, want 1 with a conflict naming fp0\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if out := e.ip("-o", "link", "show", "fp0"); !strings.Contains(out, "master obr") {
			t.Errorf("the foreign port was released: %s", out)
		}
	})
}

// Pruning everything after a bridge, a veth pair with one end enslaved and
// a vxlan on the other end: the kernel deletes the vxlan with the pair, and
// that is not an error; the plan deletes children first and the pair once.
func TestPruneLinksTheKernelDeletesTogether(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  br0: {kind: bridge}
  va: {kind: veth, veth: {peer: vb}, master: br0}
  vb: {kind: veth, veth: {peer: va}}
  vx: {kind: vxlan, vxlan: {id: 9, dev: vb}}
  mv: {kind: vxlan, vxlan: {id: 10, dev: va}}
`))
	f := e.file("b.yaml", "version: 1\n")
	r := e.cli("diff", "-c", f)
	want := "- link mv (vxlan)\n- link vx (vxlan)\n- link va (veth, with its peer vb)\n- link br0 (bridge)\n"
	if !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("diff:\n%s\nwant:\n%s", r.Stdout, want)
	}
	e.apply(f)
	if out := e.ip("-o", "link", "show"); strings.Count(out, "\n") != 1 {
		t.Errorf("links left:\n%s", out)
	}
}

// A veth end that leaves the file while its peer stays declared (paired
// with it) is not deleted: that would delete the declared end too, and
// every apply would create the pair again.
func TestVethEndLeavesTheFilePeerStays(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  ea: {kind: veth, veth: {peer: eb}}\n  eb: {kind: veth, veth: {peer: ea}}\n"))
	idx := e.ifindex("ea")
	f := e.file("b.yaml", "version: 1\nlinks:\n  ea: {kind: veth, veth: {peer: eb}}\n")
	e.apply(f)
	if e.ifindex("ea") != idx {
		t.Errorf("ea was recreated")
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// An owned table deleted and made again by someone else under the same name,
// with no pass in between, is not taken for ours: its handle is not the one
// the ledger recorded. Declared, it is a conflict; dropped from the file, it
// is left alone; and the ledger forgets it.
func TestNftTableMadeAgainBySomeoneElse(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("a.yaml", "version: 1\nnftables:\n  inet rmt:\n    chains:\n      c: {rules: [counter]}\n")
	e.apply(f)
	remake := func() {
		nettest.InNS(t, e.ns, "nft", "delete", "table", "inet", "rmt")
		nettest.InNS(t, e.ns, "nft", "add", "table", "inet", "rmt")
		nettest.InNS(t, e.ns, "nft", "add", "chain", "inet", "rmt", "theirs")
	}
	remake()
	r := e.cli("apply", "-c", f)
	if r.Code != 1 || !strings.Contains(r.Stderr, "nftables table inet rmt exists and netreconcile did not create it") {
		t.Errorf("apply of the declared table: exit %d, want 1 with the conflict\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "rmt"); !strings.Contains(out, "chain theirs") {
		t.Errorf("the foreign table was changed:\n%s", out)
	}
	// Ours again, then made again by someone else, then dropped from the
	// file: not deleted.
	e.apply(e.file("b.yaml", "version: 1\nnftables:\n  inet rmt:\n    adopt: true\n    chains:\n      c: {rules: [counter]}\n"))
	remake()
	if r := e.cli("apply", "-c", e.file("c.yaml", "version: 1\n")); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("apply without the table: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := nettest.InNS(t, e.ns, "nft", "list", "table", "inet", "rmt"); !strings.Contains(out, "chain theirs") {
		t.Errorf("the foreign table was changed:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(e.state, "netns", e.ns, "ledger.json"))
	var led struct {
		NFTables []struct{ Name string } `json:"nftables"`
	}
	if err == nil {
		err = json.Unmarshal(data, &led)
	}
	if err != nil || len(led.NFTables) != 0 {
		t.Errorf("the ledger still lists the table (%v):\n%s", err, data)
	}
}

// A foreign route with the key of a declared one (table, destination, tos,
// metric) is a conflict the plan shows: diff does not plan "+ route" for
// it, apply leaves the foreign route alone, and the rest is applied.
func TestForeignRouteWithADeclaredKey(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "rk0", "type", "bridge")
	e.ip("link", "set", "rk0", "up")
	e.ip("route", "add", "10.71.0.0/16", "dev", "rk0", "table", "71", "metric", "5", "proto", "static")
	e.ip("-6", "route", "add", "2001:db8:71::/48", "dev", "rk0", "table", "71", "proto", "boot")
	f := e.file("a.yaml", `version: 1
links:
  rk0: {kind: device}
routes:
  - {to: 10.71.0.0/16, type: blackhole, table: 71, metric: 5}
  - {to: 10.71.0.0/16, type: blackhole, table: 71, metric: 6}
  - {to: "2001:db8:71::/48", type: blackhole, table: 71}
`)
	r := e.cli("diff", "-c", f)
	for _, want := range []string{
		"route 10.71.0.0/16 table 71 metric 5 exists with protocol 4 (static), not ours (245)",
		"route 2001:db8:71::/48 table 71 metric 1024 exists with protocol 3 (boot), not ours (245)",
	} {
		if r.Code != 1 || !strings.Contains(r.Stderr, want) {
			t.Errorf("diff: exit %d, want 1 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
		}
	}
	if strings.Contains(r.Stdout, "metric 5") || strings.Contains(r.Stdout, "2001:db8:71::/48") || !strings.Contains(r.Stdout, "+ route 10.71.0.0/16 table 71 metric 6") {
		t.Errorf("diff plans:\n%s", r.Stdout)
	}
	if r := e.cli("apply", "-c", f); r.Code != 1 || strings.Contains(r.Stderr, "file exists") {
		t.Errorf("apply: exit %d, want 1 with the conflict only\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("route", "show", "table", "71"); !strings.Contains(out, "10.71.0.0/16 dev rk0 proto static scope link metric 5") || !strings.Contains(out, "blackhole 10.71.0.0/16 proto 245 metric 6") {
		t.Errorf("table 71:\n%s", out)
	}
}

// A create the kernel refuses with EEXIST (a route with its key appeared
// between the plan and the apply) says whose route that is: another
// program's, or ours.
func TestRouteExistsSaysWhose(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ proto, want string }{
		{"static", "the route with this key is another program's (protocol 4 (static), not ours, 245)"},
		{"245", "the route with this key is ours (protocol 245), written since the plan was made"},
	} {
		k, err := kernel.Open("/run/netns/" + e.ns)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ledger.OpenIn(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		eng := &engine.Engine{Kernel: k, Ledger: l}
		cfg, err := desired.Parse([]desired.Source{{Name: "f.yaml", Data: []byte("version: 1\nroutes:\n  - {to: 10.72.0.0/16, type: blackhole, table: 72}\n")}})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := eng.Plan(cfg.State)
		if err != nil || len(plan.Ops) != 1 {
			t.Fatalf("plan: %v %v", plan, err)
		}
		e.ip("route", "add", "blackhole", "10.72.0.0/16", "table", "72", "proto", tc.proto)
		res, _ := eng.Apply(context.Background(), plan)
		if err := res.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("apply over a route of protocol %s: %v, want %q", tc.proto, err, tc.want)
		}
		e.ip("route", "del", "blackhole", "10.72.0.0/16", "table", "72")
		k.Close()
	}
}

// Recreating a link (here a veth whose peer changes) takes the links on it
// with it in the kernel: the same apply creates them again, and the ports
// of a recreated bridge are enslaved again, so one apply converges.
func TestRecreatedParentTakesChildren(t *testing.T) {
	e := newEnv(t)
	e.apply(e.file("a.yaml", `version: 1
links:
  br0: {kind: bridge}
  pa: {kind: veth, veth: {peer: pb}}
  pb: {kind: veth, veth: {peer: pa}}
  vx: {kind: vxlan, vxlan: {id: 9, dev: pa}, master: br0, addresses: [10.81.0.1/24]}
`))
	f := e.file("b.yaml", `version: 1
links:
  br0: {kind: bridge}
  pa: {kind: veth, veth: {peer: pc}}
  pc: {kind: veth, veth: {peer: pa}}
  vx: {kind: vxlan, vxlan: {id: 9, dev: pa}, master: br0, addresses: [10.81.0.1/24]}
`)
	e.apply(f)
	if out := e.ip("-o", "link", "show", "vx"); !strings.Contains(out, "master br0") {
		t.Errorf("vx after its lower link was recreated: %s", out)
	}
	if out := e.ip("-o", "-4", "addr", "show", "dev", "vx"); !strings.Contains(out, "10.81.0.1/24") {
		t.Errorf("vx's address: %s", out)
	}
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("diff after the apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func openKernel(t *testing.T, e *env) kernel.Interface {
	t.Helper()
	k, err := kernel.Open("/run/netns/" + e.ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func mustLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.OpenIn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A bridge's declared MTU holds after ports of another MTU join or leave it:
// the kernel moves a bridge's MTU to its ports' smallest unless the MTU was
// set by a change (not at creation), so one apply converges.
func TestBridgeMTUWithPortsOfAnotherMTU(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
links:
  br0: {kind: bridge, mtu: 1500}
  p0: {kind: veth, veth: {peer: p1}, master: br0, mtu: 1400}
  p1: {kind: veth, veth: {peer: p0}}
`)
	e.apply(f)
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Errorf("diff after one apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if out := e.ip("-o", "link", "show", "br0"); !strings.Contains(out, "mtu 1500") {
		t.Errorf("br0: %s", out)
	}
}

// A foreign link on the peer of an owned veth pair whose peer is in another
// namespace: deleting or recreating the pair would delete it there. Both are
// conflicts, as for a foreign link on an end here; once it is gone, the pair
// is deleted.
func TestForeignLinkOnPeerInAnotherNetns(t *testing.T) {
	e := newEnv(t)
	other := nettest.NewNetNS(t)
	e.apply(e.file("a.yaml", "version: 1\nlinks:\n  x1: {kind: veth, veth: {peer: x1p, peer-netns: "+other+"}}\n"))
	nettest.IP(t, other, "link", "add", "mvf", "link", "x1p", "type", "macvlan")
	empty := e.file("empty.yaml", "version: 1\n")
	recreate := e.file("bridge.yaml", "version: 1\nlinks:\n  x1: {kind: bridge}\n")
	want := "the kernel would delete [mvf] in namespace " + other + " with its peer x1p"
	for _, f := range []string{empty, recreate} {
		for _, cmd := range []string{"diff", "apply"} {
			r := e.cli(cmd, "-c", f)
			if r.Code != 1 || !strings.Contains(r.Stderr, "link x1 cannot be deleted or recreated: "+want) || strings.Contains(r.Stdout, "link x1") {
				t.Errorf("%s %s: exit %d, want 1 with a conflict naming mvf and no change to x1\n%s%s", cmd, filepath.Base(f), r.Code, r.Stdout, r.Stderr)
			}
		}
	}
	nettest.IP(t, other, "link", "show", "mvf") // fails the test if gone
	e.ip("link", "show", "x1")
	nettest.IP(t, other, "link", "del", "mvf")
	if out := e.apply(empty); !strings.Contains(out, "- link x1") {
		t.Errorf("apply after mvf is gone: want x1 deleted\n%s", out)
	}
	if out := nettest.IP(t, other, "-o", "link", "show"); strings.Contains(out, "x1p") {
		t.Errorf("x1p is still there:\n%s", out)
	}
}
