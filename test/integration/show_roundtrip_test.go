package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	// show --all is not a file (the kernel's own routes): it lists the
	// file's sysctls, in the schema, with the kernel's values.
	if r := e.cli("show", "--all", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "sysctls:\n            ipv4.accept_local: 1\n") ||
		!strings.Contains(r.Stdout, "\nsysctls:\n    net.ipv4.ip_forward: 1\n    net.ipv4.ip_local_port_range: \"20000 40000\"\n") {
		t.Errorf("show --all: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, show := range [][]string{{"show", "-c", f}} {
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
