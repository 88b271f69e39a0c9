package integration

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Saved plans on the real kernel (docs/plans.md): diff --out then apply
// --plan applies exactly the saved ops; a plan goes stale, and apply
// refuses it with exit 3 and nothing changed, when a file is edited, a
// drop-in appears, a secret is rotated, the kernel is changed by hand, or
// the plan is taken to another namespace; a forged or edited plan file is
// refused too.

const planLinks = `version: 1
links:
  br0: {kind: bridge, mtu: 1400, addresses: [10.9.0.1/24]}
  p0: {kind: veth, master: br0, veth: {peer: p1}}
  p1: {kind: veth, veth: {peer: p0}}
`

const planRoutes = `routes:
  - {to: 198.51.100.0/24, via: 10.9.0.254}
`

const planBase = planLinks + planRoutes

// dump is the namespace as the tools show it, for "nothing changed".
func (e *env) dump() string {
	e.t.Helper()
	return e.links() + e.addrs() + e.ours() + nettest.InNS(e.t, e.ns, "nft", "list", "ruleset")
}

func readSaved(t *testing.T, path string) *diff.SavedPlan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := diff.DecodeSaved(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// opLines are the first lines of a plan's text, one per op.
func opLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && strings.ContainsAny(l[:1], "+~±-") {
			out = append(out, l)
		}
	}
	return out
}

func TestSavedPlanAppliesExactly(t *testing.T) {
	e := newEnv(t)
	f := e.file("n.yaml", planBase)
	plan := filepath.Join(e.dir, "p.json")
	r := e.cli("diff", "-c", f, "--out", plan)
	if r.Code != cli.ExitChanges {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if fi, err := os.Stat(plan); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("plan file: %v %v, want mode 0600", fi, err)
	}
	saved := readSaved(t, plan)
	if len(saved.Inputs) != 1 || saved.Inputs[0].Role != diff.InputConfig || saved.Target.Netns != "/run/netns/"+e.ns {
		t.Errorf("inputs %+v, target %+v", saved.Inputs, saved.Target)
	}
	a := e.cli("apply", "-c", f, "--plan", plan)
	if a.Code != 0 {
		t.Fatalf("apply --plan: exit %d\n%s%s", a.Code, a.Stdout, a.Stderr)
	}
	want, got := opLines(r.Stdout), opLines(a.Stdout)
	if strings.Join(want, "\n") != strings.Join(got, "\n") || len(want) != 5 {
		t.Errorf("applied:\n%s\nplanned:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Applied: the same plan file is stale now (its ops are done).
	if r := e.cli("apply", "-c", f, "--plan", plan); r.Code != cli.ExitStale || !strings.Contains(r.Stderr, "op no longer planned: + link br0") {
		t.Errorf("the plan applied again: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestSavedPlanStale(t *testing.T) {
	nettest.RequireTool(t, "wg")
	for _, c := range []struct {
		name   string
		change func(e *env, f, key string)
		// args of apply besides -c and --plan
		args []string
		want string
	}{{
		name: "file edited",
		change: func(e *env, f, _ string) {
			e.file(filepath.Base(f), strings.Replace(planLinks+wgLink+planRoutes+"routes-files: [extra.routes]\n", "mtu: 1400", "mtu: 1300", 1))
		},
		want: "configuration file " + "DIR/n.yaml: changed",
	}, {
		name: "drop-in added",
		change: func(e *env, f, _ string) {
			if err := os.Mkdir(filepath.Join(e.dir, "conf.d"), 0o755); err != nil {
				e.t.Fatal(err)
			}
			e.file("conf.d/10-x.yaml", "version: 1\nlinks:\n  br1: {kind: bridge}\n")
		},
		want: "drop-in DIR/conf.d/10-x.yaml: new",
	}, {
		name: "secret rotated",
		change: func(e *env, _, key string) {
			k, err := exec.Command("wg", "genkey").Output()
			if err != nil {
				e.t.Fatal(err)
			}
			if err := os.WriteFile(key, k, 0o600); err != nil {
				e.t.Fatal(err)
			}
		},
		want: "secret links.wg9.wireguard.private-key-file (DIR/wg.key): changed (its content is not shown)",
	}, {
		name: "side file edited",
		change: func(e *env, _, _ string) {
			e.file("extra.routes", "blackhole 203.0.113.0/24\nblackhole 203.0.114.0/24\n")
		},
		want: "side file DIR/extra.routes: changed",
	}, {
		name:   "kernel changed by hand",
		change: func(e *env, _, _ string) { e.ip("link", "set", "br0", "mtu", "1350") },
		want:   "op planned as: ~ link br0\n      mtu: 1500 -> 1400\n  is now: ~ link br0\n      mtu: 1350 -> 1400",
	}, {
		name:   "a link the plan deletes changed by hand",
		change: func(e *env, _, _ string) { e.ip("link", "set", "old0", "alias", "netreconcile: renamed by hand") },
		want:   "op - link old0 (bridge): the kernel's object changed since the plan was made",
	}, {
		name:   "another namespace",
		change: func(*env, string, string) {},
		args:   []string{"OTHERNS"},
		want:   "made for namespace /run/netns/NS, applied to /run/netns/OTHER",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			key := filepath.Join(e.dir, "wg.key")
			k, err := exec.Command("wg", "genkey").Output()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(key, k, 0o600); err != nil {
				t.Fatal(err)
			}
			// Applied once without its MTU and with a bridge to delete,
			// so that the plan updates br0 and deletes old0.
			f := e.file("n.yaml", strings.Replace(planLinks, "mtu: 1400, ", "", 1)+"  old0: {kind: bridge}\n"+planRoutes)
			e.apply(f)
			e.file("extra.routes", "blackhole 203.0.113.0/24\n")
			e.file("n.yaml", planLinks+wgLink+planRoutes+"routes-files: [extra.routes]\n")
			plan := filepath.Join(e.dir, "p.json")
			if r := e.cli("diff", "-c", f, "--out", plan); r.Code != cli.ExitChanges {
				t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			c.change(e, f, key)
			ns := e.ns
			if len(c.args) > 0 {
				ns = nettest.NewNetNS(t)
			}
			before := nettest.IP(t, ns, "-o", "link")
			r := nettest.CLI(t, "apply", "-c", f, "--plan", plan, "--netns", ns, "--state-dir", e.state, "--wireguard-go", "/nonexistent")
			want := strings.NewReplacer("DIR", e.dir, "OTHER", ns, "/NS", "/"+e.ns).Replace(c.want)
			if r.Code != cli.ExitStale || !strings.Contains(r.Stderr, want) {
				t.Fatalf("apply --plan: exit %d, want %d and %q\n%s%s", r.Code, cli.ExitStale, want, r.Stdout, r.Stderr)
			}
			if after := nettest.IP(t, ns, "-o", "link"); after != before {
				t.Errorf("a refused plan changed the kernel:\n%s\nbefore:\n%s", after, before)
			}
			if strings.Contains(r.Stderr, strings.TrimSpace(string(k))) {
				t.Error("the key is printed")
			}
		})
	}
}

// wgLink is a WireGuard link whose key is DIR/wg.key: the plan's secret.
// It is only planned (the stale plans are refused before anything is
// made), so no WireGuard implementation is needed.
const wgLink = "  wg9: {kind: wireguard, wireguard: {private-key-file: wg.key, userspace: true}}\n"

// A plan file edited by hand, or forged to hold an op the files do not
// plan, is refused and changes nothing; so is one that is not a plan.
func TestSavedPlanForgedOrEdited(t *testing.T) {
	e := newEnv(t)
	e.ip("link", "add", "keep0", "type", "bridge")
	f := e.file("n.yaml", planBase)
	plan := filepath.Join(e.dir, "p.json")
	if r := e.cli("diff", "-c", f, "--out", plan); r.Code != cli.ExitChanges {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	orig, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	ops := doc["ops"].([]any)
	edit := func(mut func(ops []any) []any) string {
		var d map[string]any
		_ = json.Unmarshal(orig, &d)
		d["ops"] = mut(d["ops"].([]any))
		b, _ := json.Marshal(d)
		return string(b)
	}
	first := ops[0].(map[string]any)
	for _, c := range []struct {
		name, file, want string
		code             int
	}{{
		name: "an op added: delete a foreign link",
		file: edit(func(o []any) []any {
			del := map[string]any{"action": "delete", "kind": "link", "id": "keep0", "disruption": "in-place", "digest": first["digest"], "depends": "absent"}
			return append(o, del)
		}),
		want: "op no longer planned: - link keep0", code: cli.ExitStale,
	}, {
		name: "an op's summary edited",
		file: edit(func(o []any) []any {
			o[0].(map[string]any)["summary"] = "bridge mtu 9000"
			return o
		}),
		want: "op planned as: + link br0 (bridge mtu 9000)", code: cli.ExitStale,
	}, {
		name: "an op's digest edited",
		file: edit(func(o []any) []any {
			o[1].(map[string]any)["digest"] = "hmac-sha256:" + strings.Repeat("0", 64)
			return o
		}),
		want: "op + link p0 (veth peer p1 master br0): what it writes changed", code: cli.ExitStale,
	}, {
		name: "a field unknown",
		file: strings.Replace(string(orig), `"protocol": 245`, `"protocol": 245, "run": "rm -rf /"`, 1),
		want: `unknown field "run"`, code: cli.ExitError,
	}, {
		name: "a key twice",
		file: strings.Replace(string(orig), `"protocol": 245`, `"protocol": 245, "protocol": 246`, 1),
		want: `key "protocol" twice`, code: cli.ExitError,
	}, {
		name: "a terminal escape in a reason",
		file: edit(func(o []any) []any {
			o[0].(map[string]any)["reason"] = "\x1b[2Jall good"
			return o
		}),
		want: "control character", code: cli.ExitError,
	}, {
		name: "not JSON", file: "#!/bin/sh\nreboot\n", want: "not a plan netreconcile wrote", code: cli.ExitError,
	}} {
		t.Run(c.name, func(t *testing.T) {
			p := e.file("forged.json", c.file)
			before := e.dump()
			r := e.cli("apply", "-c", f, "--plan", p)
			if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", r.Code, c.code, c.want, r.Stdout, r.Stderr)
			}
			if after := e.dump(); after != before {
				t.Errorf("a refused plan changed the kernel:\n%s", after)
			}
		})
	}
	// The plan as saved still applies, and the foreign bridge stays.
	if r := e.cli("apply", "-c", f, "--plan", plan); r.Code != 0 {
		t.Fatalf("apply --plan: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.ip("link", "show", "keep0")
}

// --plan inside a transaction: applied with --confirm-within and a probe,
// confirmed; a stale plan there is refused before any transaction exists.
func TestSavedPlanConfirmWithin(t *testing.T) {
	e := newEnv(t)
	f := e.file("n.yaml", "version: 1\n")
	e.apply(f) // the restore point
	e.file("n.yaml", planBase)
	plan := filepath.Join(e.dir, "p.json")
	if r := e.cli("diff", "-c", f, "--out", plan); r.Code != cli.ExitChanges {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	stale := filepath.Join(e.dir, "stale.json")
	if r := e.cli("diff", "-c", e.file("other.yaml", "version: 1\nlinks:\n  br5: {kind: bridge}\n"), "--out", stale); r.Code != cli.ExitChanges {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.cli("apply", "-c", f, "--plan", stale, "--confirm-within", "30s", "--rollback-timer", "process"); r.Code != cli.ExitStale ||
		!strings.Contains(r.Stderr, "configuration file "+e.dir+"/other.yaml: changed") {
		t.Fatalf("a stale plan in a transaction: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.cli("status", "-o", "json"); strings.Contains(r.Stdout, `"pending": {`) {
		t.Fatalf("a refused plan left a transaction:\n%s", r.Stdout)
	}
	r := e.cli("apply", "-c", f, "--plan", plan, "--confirm-within", "30s", "--rollback-timer", "process", "--probe", "tcp:10.9.0.1:1", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("apply --plan --confirm-within: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var out struct {
		Ops         []diff.Op `json:"ops"`
		Transaction struct {
			ID string `json:"id"`
		} `json:"transaction"`
		Probes struct {
			Skipped []struct{ Probe string } `json:"skipped"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Ops) != 5 || out.Transaction.ID == "" || len(out.Probes.Skipped) != 1 {
		t.Fatalf("apply: %s", r.Stdout)
	}
	if r := e.cli("confirm", out.Transaction.ID); r.Code != 0 {
		t.Fatalf("confirm: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// --plan under a probe that passes before and fails after: the saved plan
// is applied, the probe fails, and the transaction rolls it back at once.
func TestSavedPlanProbeRollsBack(t *testing.T) {
	e := newEnv(t)
	f := e.file("n.yaml", "version: 1\nlinks:\n  pr0: {kind: bridge, addresses: [10.9.9.1/24]}\n")
	e.apply(f)                      // the restore point
	e.ip("link", "set", "lo", "up") // what reaches a local address goes over it
	ln := listenIn(t, e.ns, "10.9.9.1:0")
	probe := "tcp:" + ln.Addr().String()
	e.file("n.yaml", "version: 1\nlinks:\n  pr0: {kind: bridge, addresses: [10.9.8.1/24]}\n")
	plan := filepath.Join(e.dir, "p.json")
	if r := e.cli("diff", "-c", f, "--out", plan); r.Code != cli.ExitChanges {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r := e.cli("apply", "-c", f, "--plan", plan, "--confirm-within", "30s", "--rollback-timer", "process", "--probe", probe, "-o", "json")
	var out struct {
		Ops    []diff.Op `json:"ops"`
		Probes struct {
			Armed []string `json:"armed"`
		} `json:"probes"`
		Rollback *struct {
			Cause string `json:"cause"`
		} `json:"rollback"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, r.Stdout, r.Stderr)
	}
	if r.Code != cli.ExitError || len(out.Ops) == 0 || len(out.Probes.Armed) != 1 || out.Rollback == nil || out.Rollback.Cause != "probe" {
		t.Fatalf("apply --plan with a probe that fails after it: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if a := e.ip("-o", "-4", "addr", "show", "dev", "pr0"); !strings.Contains(a, "10.9.9.1/24") || strings.Contains(a, "10.9.8.1") {
		t.Errorf("not rolled back:\n%s", a)
	}
}

// listenIn listens on addr inside ns, accepting and closing connections
// until the test ends.
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	nettest.Within(t, ns, func() {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

// A plan with a pool address pending (a dry run cannot name it) applies:
// the apply allocates it, and that is the only difference allowed.
func TestSavedPlanWithPoolAddress(t *testing.T) {
	e := newEnv(t)
	f := "../../examples/ipam.yaml"
	plan := filepath.Join(e.dir, "p.json")
	r := e.cli("diff", "-c", f, "--out", plan)
	if r.Code != cli.ExitChanges || !strings.Contains(r.Stdout, "(from pool kubespan) dev kube0: allocated by apply") {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	a := e.cli("apply", "-c", f, "--plan", plan)
	if a.Code != 0 || !strings.Contains(a.Stdout, "+ address 10.2.0.") {
		t.Fatalf("apply --plan: exit %d\n%s%s", a.Code, a.Stdout, a.Stderr)
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// --max-disruption refuses, with exit 4, a plan above it and names the op;
// --strict refuses one that warns; neither changes anything.
func TestApplyMaxDisruptionAndStrict(t *testing.T) {
	e := newEnv(t)
	f := e.file("n.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n  vx0: {kind: vxlan, master: br0, vxlan: {id: 100, remote: 192.0.2.2}}\n")
	e.apply(f)
	e.file("n.yaml", "version: 1\nlinks:\n  br0: {kind: bridge, mtu: 1400}\n  vx0: {kind: vxlan, master: br0, vxlan: {id: 101, remote: 192.0.2.2}}\n")
	before := e.dump()
	for _, max := range []string{"in-place", "table-replaced", "link-flapped"} {
		r := e.cli("apply", "-c", f, "--max-disruption", max, "-o", "json")
		var out struct {
			Refused []diff.Op `json:"refused"`
		}
		_ = json.Unmarshal([]byte(r.Stdout), &out)
		if r.Code != cli.ExitDisruption || len(out.Refused) != 1 || out.Refused[0].ID != "vx0" || out.Refused[0].Disruption != diff.LinkRecreated ||
			!strings.Contains(r.Stderr, "± link vx0 (vxlan id 101 remote 192.0.2.2 dstport 4789 master br0): vxlan id 100 -> 101 [link recreated]") {
			t.Fatalf("--max-disruption %s: exit %d\n%s%s", max, r.Code, r.Stdout, r.Stderr)
		}
	}
	if after := e.dump(); after != before {
		t.Errorf("a refused plan changed the kernel:\n%s", after)
	}
	g := e.file("w.yaml", "version: 1\nroutes:\n  - {to: 203.0.113.0/24, via: 192.0.2.1}\n")
	if r := e.cli("apply", "-c", g, "--strict"); r.Code != cli.ExitError || !strings.Contains(r.Stderr, "1 warning(s) and --strict, nothing was changed") {
		t.Fatalf("--strict: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if after := e.dump(); after != before {
		t.Errorf("--strict changed the kernel:\n%s", after)
	}
	if r := e.cli("apply", "-c", f, "--max-disruption", "link-recreated"); r.Code != 0 {
		t.Fatalf("--max-disruption link-recreated: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
