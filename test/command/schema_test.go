package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// schemas compiles every command's schema in docs/schema, by file name.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("no schemas in %s: %v", schemaDir, err)
	}
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		if filepath.Base(f) == "defs.json" || filepath.Base(f) == configSchema {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(abs)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		out[filepath.Base(f)] = s
	}
	return out
}

// document is one -o json output to check: the schema it must follow, and
// the exit status it comes with.
type document struct {
	schema string
	what   string
	code   int
	r      result
}

// TestJSONOutputFollowsTheSchemas runs every command with -o json in a fresh
// namespace, on success and on failure, and holds each document to its
// command's schema (strict: every field required, no other allowed), and
// each exit status to the table of docs/json.md.
func TestJSONOutputFollowsTheSchemas(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "wireguard-go")
	sch := schemas(t)
	h := newHost(t)
	var docs []document
	check := func(schema, what string, code int, r result) result {
		t.Helper()
		docs = append(docs, document{schema, what, code, r})
		return r
	}

	// WireGuard keys, made by the library the binary uses.
	priv, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	psk, err := wgtypes.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile, pskFile := filepath.Join(h.dir, "wg.key"), filepath.Join(h.dir, "wg.psk")
	for f, k := range map[string]wgtypes.Key{keyFile: priv, pskFile: psk} {
		if err := os.WriteFile(f, []byte(k.String()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// wireguard-go's control socket is per name, not per namespace.
	wg := fmt.Sprintf("nrc%d", os.Getpid()%100000)
	good := h.write("good.yaml", `version: 1
pools:
  p1:
    subnets: [{ipv4: 10.2.0.0/28, ipv6: "fd01:203:405:607::/124"}]
    block-size-bits: 2
links:
  lo: {kind: device, state: up}
  br0:
    kind: bridge
    mtu: 1400
    addresses: [10.9.0.1/24, {pool: p1}]
  `+wg+`:
    kind: wireguard
    addresses: [10.100.0.1/24]
    wireguard:
      private-key-file: `+keyFile+`
      userspace: true
      peers:
        - public-key: `+peer.PublicKey().String()+`
          preshared-key-file: `+pskFile+`
          allowed-ips: [10.100.0.2/32]
          endpoints: ["192.0.2.7:51820"]
routes:
  - {to: 10.8.0.0/24, via: 10.9.0.254}
rules:
  - {priority: 100, from: 10.9.0.0/24, table: 100}
nftables:
  inet nrc:
    chains:
      in: {type: filter, hook: input, priority: 0, policy: accept}
`)
	t.Cleanup(func() { h.run("apply", "-c", h.write("empty.yaml", "version: 1\n")) })
	bad := h.write("bad.yaml", "version: 1\nlinks:\n  br0: {kind: bridge, mtu: 20}\n  br1: {kind: brigde}\n")
	missing := filepath.Join(h.dir, "missing.yaml")

	check("version.json", "version", 0, h.exec("version", "-o", "json"))
	check("validate.json", "a valid file", 0, h.exec("validate", "-c", good, "-o", "json"))
	check("validate.json", "an invalid file", 1, h.exec("validate", "-c", bad, "-o", "json"))
	check("diff.json", "an invalid file", 1, h.run("diff", "-c", bad, "-o", "json"))
	check("diff.json", "changes pending", 2, h.run("diff", "-c", good, "-o", "json"))
	check("apply.json", "a first apply", 0, h.run("apply", "-c", good, "-o", "json"))
	check("apply.json", "a second apply", 0, h.run("apply", "-c", good, "-o", "json"))
	check("apply.json", "an invalid file", 1, h.run("apply", "-c", bad, "-o", "json"))
	check("diff.json", "nothing to do", 0, h.run("diff", "-c", good, "-o", "json"))
	check("show.json", "show", 0, h.run("show", "-c", good, "-o", "json"))
	check("show.json", "show --all", 0, h.run("show", "-a", "-c", good, "-o", "json"))
	check("show.json", "a missing file", 1, h.run("show", "-c", missing, "-o", "json"))
	check("status.json", "status", 0, h.run("status", "-c", good, "-o", "json"))
	check("status.json", "a missing file", 1, h.run("status", "-c", missing, "-o", "json"))
	for _, c := range []struct {
		schema, what string
		code         int
		args         []string
	}{
		{"ipam-allocate.json", "allocate", 0, []string{"allocate", "--owner", "pid:1", "--iface", "eth0"}},
		{"ipam-allocate.json", "an unknown pool", 1, []string{"allocate", "--owner", "pid:1", "--pool", "nope"}},
		{"ipam-list.json", "list", 0, []string{"list"}},
		{"ipam-list.json", "an unknown pool", 1, []string{"list", "--pool", "nope"}},
		{"ipam-release.json", "release", 0, []string{"release", "--owner", "pid:1", "--iface", "eth0"}},
		{"ipam-release.json", "nothing held", 0, []string{"release", "--owner", "pid:1", "--iface", "eth0"}},
		{"ipam-release.json", "an unknown pool", 1, []string{"release", "--owner", "pid:1", "--pool", "nope"}},
		{"ipam-gc.json", "gc", 0, []string{"gc"}},
		{"ipam-list.json", "a missing file", 1, []string{"list", "-c", missing}},
	} {
		args := append([]string{"ipam"}, c.args...)
		if !slices.Contains(c.args, "-c") {
			args = append(args, "-c", good)
		}
		check(c.schema, c.what, c.code, h.run(append(args, "-o", "json")...))
	}

	// A safe-apply transaction: begun, shown, confirmed; another, rolled
	// back; then nothing to confirm or roll back. A probe that fails
	// before the apply is reported as skipped.
	safe := func() result {
		t.Helper()
		r := h.run("apply", "-c", good, "-o", "json", "--confirm-within", "2m", "--rollback-timer", "process", "--probe", "tcp:127.0.0.1:1")
		var out struct {
			Transaction *struct{ ID, Timer string }
		}
		if json.Unmarshal([]byte(r.stdout), &out) == nil && out.Transaction != nil {
			var pid int
			if _, err := fmt.Sscanf(out.Transaction.Timer, "process:%d", &pid); err == nil {
				t.Cleanup(func() { killTimer(pid, out.Transaction.ID) })
			}
		}
		return r
	}
	check("apply.json", "a transaction begun", 0, safe())
	check("status.json", "a pending transaction", 0, h.run("status", "-c", good, "-o", "json"))
	check("confirm.json", "a confirmation", 0, h.run("confirm", "-c", good, "-o", "json"))
	check("status.json", "a confirmed transaction", 0, h.run("status", "-c", good, "-o", "json"))
	check("apply.json", "a transaction begun", 0, safe())
	check("rollback.json", "a rollback", 0, h.run("rollback", "-c", good, "-o", "json"))
	check("confirm.json", "nothing pending", 1, h.run("confirm", "-c", good, "-o", "json"))
	check("rollback.json", "nothing pending", 1, h.run("rollback", "-c", good, "-o", "json"))
	check("status.json", "a rolled back transaction", 0, h.run("status", "-c", good, "-o", "json"))

	// A conflict (a foreign veth where the file wants a bridge) and an
	// operation the kernel refuses (a gateway no route reaches).
	nettest.IP(t, h.ns, "link", "add", "fv0", "type", "veth", "peer", "fv1")
	conflict := h.write("conflict.yaml", "version: 1\nlinks:\n  fv0: {kind: bridge}\nroutes:\n  - {to: 10.99.0.0/24, via: 10.250.0.1}\n")
	check("diff.json", "a conflict", 1, h.run("diff", "-c", conflict, "-o", "json"))
	check("apply.json", "a conflict and a failed operation", 1, h.run("apply", "-c", conflict, "-o", "json"))

	used := map[string]bool{}
	for _, d := range docs {
		used[d.schema] = true
		if d.r.code != d.code {
			t.Errorf("%s (%s): want exit %d\n%s", d.schema, d.what, d.code, d.r)
		}
		if strings.Count(d.r.stdout, "\n}\n") != 1 || !strings.HasSuffix(d.r.stdout, "}\n") {
			t.Errorf("%s (%s): standard output is not one document\n%s", d.schema, d.what, d.r)
			continue
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(d.r.stdout)))
		if err != nil {
			t.Errorf("%s (%s): not JSON: %v\n%s", d.schema, d.what, err, d.r)
			continue
		}
		if err := sch[d.schema].Validate(v); err != nil {
			t.Errorf("%s (%s) does not follow its schema:\n%v\n%s", d.schema, d.what, err, d.r)
		}
		// On failure, "error" holds what standard error says.
		var f struct{ Error *string }
		_ = json.Unmarshal([]byte(d.r.stdout), &f)
		if (d.code == 1) != (f.Error != nil) && d.schema != "version.json" {
			t.Errorf("%s (%s): exit %d with error %v", d.schema, d.what, d.r.code, f.Error)
		}
	}
	for name := range sch {
		if !used[name] {
			t.Errorf("%s: no command's output was checked against it", name)
		}
	}
	t.Logf("%d documents of %d schemas checked", len(docs), len(used))
}

// show -o json holds a configuration that validate and apply read: applied
// back, it plans nothing.
func TestShowJSONIsAConfiguration(t *testing.T) {
	nettest.RequireRoot(t)
	h := newHost(t)
	conf := h.write("nr.yaml", `version: 1
pools:
  p1:
    subnets: [10.2.0.0/28]
    block-size-bits: 2
links:
  lo: {kind: device, state: up}
  br0: {kind: bridge, mtu: 1400, alias: "a bridge", addresses: [10.9.0.1/24, {pool: p1}]}
  v0: {kind: veth, veth: {peer: v1}, master: br0}
  v1: {kind: veth, veth: {peer: v0}}
routes:
  - {to: 10.8.0.0/24, via: 10.9.0.254, metric: 10}
rules:
  - {priority: 100, fwmark: 0x10/0xff, table: 100}
nftables:
  inet nrshow:
    sets:
      s: {type: ipv4_addr, flags: [interval], elements: [10.0.0.0/8]}
    chains:
      in: {type: filter, hook: input, priority: 0, policy: accept, rules: ["ip saddr @s counter"]}
`)
	if r := h.run("apply", "-c", conf); r.code != 0 {
		t.Fatalf("apply: %s", r)
	}
	r := h.run("show", "-c", conf, "-o", "json")
	var out struct {
		Configuration json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("show -o json: %v\n%s", err, r)
	}
	shown := h.write("shown.json", string(out.Configuration))
	if r := h.exec("validate", "-c", shown); r.code != 0 {
		t.Fatalf("validate of show's configuration: %s\n%s", r, out.Configuration)
	}
	// The pools section is the file's: the addresses taken from the pool
	// are shown as addresses.
	if r := h.run("diff", "-c", shown); r.code != 0 || !strings.Contains(r.stdout, "No changes") {
		t.Errorf("diff of show's configuration: %s\n%s", r, out.Configuration)
	}
	// With --all, the configuration is the same and what is not ours is
	// beside it, under foreign: lo is the kernel's, and so is its
	// 127.0.0.0/8 route.
	r = h.run("show", "--all", "-c", conf, "-o", "json")
	var all struct {
		Configuration json.RawMessage
		Foreign       struct {
			Links  map[string]json.RawMessage
			Routes []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || r.code != 0 {
		t.Fatalf("show --all -o json: %v\n%s", err, r)
	}
	if string(all.Configuration) != string(out.Configuration) {
		t.Errorf("show --all's configuration is not show's:\n%s\nshow:\n%s", all.Configuration, out.Configuration)
	}
	if all.Foreign.Links["lo"] == nil || !slices.ContainsFunc(all.Foreign.Routes, func(r map[string]any) bool { return r["to"] == "127.0.0.0/8" }) {
		t.Errorf("show --all -o json: lo or its 127.0.0.0/8 route missing from foreign:\n%s", r.stdout)
	}
}
