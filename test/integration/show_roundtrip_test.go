package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// What `show` prints after an apply is itself a valid file, and diffs empty:
// a user may copy it as the configuration. It once printed "dev: lo" for
// IPv6 reject-type routes (a file may not give them a dev) and routes
// through lo without declaring it. Routes and set elements from side files
// (routes-files, elements-file) are shown in the YAML with the others: the
// kernel does not say where they were written.
func TestShowOutputIsAValidFile(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	e.file("tables.routes", "# from a side file\n10.61.0.0/16 via 10.30.0.254 metric 7\nblackhole 10.62.0.0/16 table 10\n")
	e.file("block.txt", "192.0.2.0/24\n198.51.100.7\n")
	f := e.file("f.yaml", `version: 1
links:
  lo: {kind: device, state: up, sysctls: {ipv4.accept_local: 1}}
  br0: {kind: bridge, mtu: 1400, addresses: [10.30.0.1/24, "fd30::1/64"], sysctls: {ipv4.rp_filter: 2}}
  va: {kind: veth, master: br0, veth: {peer: vb}}
  vb: {kind: veth, veth: {peer: va}, addresses: [10.31.0.1/24]}
  vx0: {kind: vxlan, master: br0, vxlan: {id: 42, local: 10.31.0.1, remote: 10.31.0.2, dev: vb}}
routes:
  - {to: 10.40.0.0/16, via: 10.30.0.254, table: 9, metric: 5}
  - {to: "fd53::/64", type: throw, table: 9}
  - {to: "fd54::/64", type: blackhole}
  - {to: "fd55::/64", type: unreachable, table: 9}
  - {to: "fd56::/64", type: prohibit, table: 9}
  - {to: 10.57.0.0/16, type: throw, table: 9}
  - {to: 10.58.0.0/16, type: blackhole}
  - {to: "fd59::1/128", type: local, dev: lo, table: 9}
  - {to: "fd60::/64", via: "fe80::1", dev: br0}
  - {to: default, dev: vb, table: 9}
routes-files: [{file: tables.routes, table: 9}]
rules:
  - {priority: 100, table: 9, fwmark: 0x10}
sysctls: {net.ipv4.ip_forward: 1, net.ipv4.ip_local_port_range: "20000 40000"}
nftables:
  inet rt:
    sets:
      s: {type: ipv4_addr, elements: [10.0.0.1]}
      block: {type: ipv4_addr, flags: [interval], elements-file: block.txt}
    chains:
      c: {type: filter, hook: input, priority: filter, rules: ["ip saddr @s counter accept"]}
`)
	e.apply(f)
	// show --all lists the file's sysctls, in the schema, with the
	// kernel's values; the kernel's own routes are comments.
	if r := e.cli("show", "--all", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "ipv4.accept_local: 1") ||
		!strings.Contains(r.Stdout, "\nsysctls:\n    net.ipv4.ip_forward: 1\n    net.ipv4.ip_local_port_range: \"20000 40000\"\n") {
		t.Errorf("show --all: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, show := range [][]string{{"show", "-c", f}, {"show", "--all", "-c", f}} {
		r := e.cli(show...)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", show, r.Code, r.Stdout, r.Stderr)
		}
		s := filepath.Join(e.dir, "s.yaml")
		if err := os.WriteFile(s, []byte(r.Stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"10.61.0.0/16", "10.62.0.0/16", "198.51.100.7"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("%v: no %s in\n%s", show, want, r.Stdout)
			}
		}
		if r := e.cli("diff", "-c", s); r.Code != 0 {
			t.Errorf("diff -c (%v's output): exit %d, want 0\n%s%s\nshow printed:\n%s", show, r.Code, r.Stdout, r.Stderr, mustRead(t, s))
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// show --all prints what is not netreconcile's as comments: with foreign
// objects of every kind show reads (a veth pair with an address, a route
// through it of protocol boot, a bridge with a port, an nftables table made
// by hand) and the kernel's own routes and rules, its output loads, plans
// nothing and applies with zero kernel writes; its JSON lists the foreign
// objects under foreign. Its output once declared them all, which did not
// validate (a broadcast route, the default rules) and would have been
// conflicts; it once left out every nftables table the ledger does not
// list.
func TestShowAllOutputIsAValidFile(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	e.ip("link", "add", "fva", "type", "veth", "peer", "name", "fvb")
	e.ip("addr", "add", "10.9.0.1/24", "dev", "fva")
	e.ip("link", "set", "fva", "up")
	e.ip("link", "set", "fvb", "up")
	e.ip("route", "add", "10.10.0.0/16", "via", "10.9.0.2", "proto", "boot")
	e.ip("link", "add", "fbr", "type", "bridge")
	e.ip("link", "set", "fvb", "master", "fbr")
	nettest.Exec(t, "ip", "netns", "exec", e.ns, "nft", "add table inet handmade; add chain inet handmade c")
	f := e.file("f.yaml", `version: 1
links:
  lo: {kind: device, state: up}
  br0: {kind: bridge, addresses: [10.30.0.1/24]}
  fva: {kind: device}
routes:
  - {to: 10.40.0.0/16, type: blackhole}
  - {to: 10.41.0.0/16, via: 10.9.0.2, dev: fva}
rules:
  - {priority: 100, table: 9, fwmark: 0x10}
`)
	e.apply(f)
	out := e.roundTrip(f, "--all")
	for _, want := range []string{
		"    # fva: # not netreconcile's: add `adopt: true` to take it over\n",
		"    #         - 10.9.0.1/24\n",
		"    # fbr: # not netreconcile's: add `adopt: true` to take it over\n",
		"    #     master: fbr\n",
		"    # - {to: 10.10.0.0/16, via: 10.9.0.2, dev: fva, table: main, scope: global} # proto 3 (boot): not netreconcile's (245)\n",
		"type: broadcast",
		"    # - {priority: 32766, family: ipv4, table: main} # proto 2 (kernel): the kernel's\n",
		// Declared, as show declares it: ours goes through it.
		"    fva: {kind: device}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show --all lacks %q:\n%s", want, out)
		}
	}
	// The table made by hand, which the ledger does not list, is shown
	// too (show --all once read only the ledger's tables).
	if !strings.Contains(out, "\n# nftables:\n    # inet handmade: # not netreconcile's: add `adopt: true` to take it over\n    #     chains:\n    #         c:\n") {
		t.Errorf("show --all does not show the table made by hand:\n%s", out)
	}
	// Applied through the engine, the output makes no kernel write.
	shown := e.file("shown.yaml", out)
	cfg, err := desired.Load(shown, "")
	if err != nil {
		t.Fatal(err)
	}
	eng, k := e.engine()
	plan, err := eng.Plan(cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Empty() {
		t.Errorf("show --all's output plans:\n%s", plan)
	}
	if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if w := k.Writes(); w != 0 {
		t.Errorf("show --all's output made %d kernel writes", w)
	}
	// The JSON: the same configuration as show's, the rest under foreign.
	r := e.cli("show", "--all", "-c", f, "-o", "json")
	var doc struct {
		Configuration map[string]any
		Foreign       struct {
			Links    map[string]map[string]any
			Routes   []map[string]any
			Rules    []map[string]any
			NFTables map[string]any `json:"nftables"`
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || r.Code != 0 {
		t.Fatalf("show --all -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	for _, n := range []string{"fva", "fvb", "fbr", "lo"} {
		if doc.Foreign.Links[n] == nil {
			t.Errorf("foreign lacks link %s:\n%s", n, r.Stdout)
		}
	}
	if doc.Foreign.NFTables["inet handmade"] == nil {
		t.Errorf("foreign lacks the table made by hand:\n%s", r.Stdout)
	}
	if a, _ := doc.Foreign.Links["fva"]["addresses"].([]any); len(a) == 0 || a[0] != "10.9.0.1/24" {
		t.Errorf("foreign lacks fva's address:\n%s", r.Stdout)
	}
	var boot, defaults int
	for _, rt := range doc.Foreign.Routes {
		if rt["to"] == "10.10.0.0/16" {
			boot++
		}
	}
	for _, ru := range doc.Foreign.Rules {
		if p, _ := ru["priority"].(float64); p == 0 || p == 32766 || p == 32767 {
			defaults++
		}
	}
	if boot != 1 || defaults < 3 {
		t.Errorf("foreign: %d routes to 10.10.0.0/16 (want 1), %d default rules (want 3 or more):\n%s", boot, defaults, r.Stdout)
	}
	links, _ := doc.Configuration["links"].(map[string]any)
	if links["fbr"] != nil || links["br0"] == nil {
		t.Errorf("configuration: want br0 and not fbr:\n%s", r.Stdout)
	}
}
