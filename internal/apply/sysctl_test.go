package apply_test

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

const sysctlConfig = `version: 1
sysctls:
  net.ipv4.ip_forward: 1
  net.ipv4.ip_local_port_range: "1024 65000"
  net.ipv6.conf.all.forwarding: 0
links:
  v0:
    kind: veth
    veth: {peer: v1}
    sysctls: {ipv4.rp_filter: 2, ipv4.proxy_arp: 1, ipv6.disable_ipv6: 0}
`

func planText(t *testing.T, e *engine.Engine, st *model.State) (*diff.Plan, string) {
	t.Helper()
	p, err := e.Plan(st)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p, p.String()
}

func applyPlan(t *testing.T, e *engine.Engine, p *diff.Plan) {
	t.Helper()
	res, err := e.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
}

func wantSysctl(t *testing.T, k *kerneltest.Kernel, key, want string) {
	t.Helper()
	if got, ok := k.SysctlValue(key); !ok || model.NormalizeSysctl(got) != want {
		t.Errorf("%s = %q (exists %v), want %q", key, got, ok, want)
	}
}

// TestSysctlLifecycle: a declared key is set and its old value recorded; a
// per-link key is set on the link the same apply creates, and again when
// the link is made again; the second apply writes nothing; drift is
// repaired; a key that leaves the file gets its old value back and its
// record is dropped; a key never declared is never touched.
func TestSysctlLifecycle(t *testing.T) {
	e, k := newEngine(t)
	k.PutSysctl("net.ipv4.conf.all.rp_filter", "1") // someone else's
	st := load(t, sysctlConfig)
	p, text := planText(t, e, st)
	// Global keys first: some write through to every link's.
	want := `+ link v0 (veth peer v1)
~ sysctl net.ipv4.ip_forward
    value: 0 -> 1
~ sysctl net.ipv4.ip_local_port_range
    value: 32768 60999 -> 1024 65000
+ sysctl net.ipv4.conf.v0.proxy_arp: link v0 is new: it starts with net.ipv4.conf.default.proxy_arp
    value: 0 -> 1
+ sysctl net.ipv4.conf.v0.rp_filter: link v0 is new: it starts with net.ipv4.conf.default.rp_filter
    value: 0 -> 2
`
	if text != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", text, want)
	}
	applyPlan(t, e, p)
	wantSysctl(t, k, "net.ipv4.ip_forward", "1")
	wantSysctl(t, k, "net.ipv4.ip_local_port_range", "1024 65000")
	wantSysctl(t, k, "net.ipv4.conf.v0.rp_filter", "2")
	wantSysctl(t, k, "net.ipv4.conf.v0.proxy_arp", "1")
	wantSysctl(t, k, "net.ipv4.conf.v1.rp_filter", "0")
	wantLedger := map[string]string{"net.ipv4.ip_forward": "0", "net.ipv4.ip_local_port_range": "32768 60999",
		"net.ipv4.conf.v0.rp_filter": "0", "net.ipv4.conf.v0.proxy_arp": "0"}
	if !mapsEqual(e.Ledger.Sysctls, wantLedger) {
		t.Errorf("ledger: %v, want %v", e.Ledger.Sysctls, wantLedger)
	}

	writes := k.Writes()
	if p, text := planText(t, e, st); !p.Empty() {
		t.Fatalf("second plan not empty:\n%s", text)
	}
	if k.Writes() != writes {
		t.Errorf("a plan wrote")
	}

	// Drift is repaired, and the first old value stays recorded.
	k.PutSysctl("net.ipv4.ip_forward", "0")
	p, text = planText(t, e, st)
	if text != "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" {
		t.Fatalf("plan after drift:\n%s", text)
	}
	applyPlan(t, e, p)
	wantSysctl(t, k, "net.ipv4.ip_forward", "1")
	if e.Ledger.Sysctls["net.ipv4.ip_forward"] != "0" {
		t.Errorf("ledger records %q for ip_forward, want the first old value 0", e.Ledger.Sysctls["net.ipv4.ip_forward"])
	}

	// The link is made again (by hand here): its per-link keys are set again.
	if err := k.DeleteLink("v0"); err != nil {
		t.Fatal(err)
	}
	p, text = planText(t, e, st)
	if !strings.Contains(text, "+ sysctl net.ipv4.conf.v0.rp_filter") || !strings.Contains(text, "+ sysctl net.ipv4.conf.v0.proxy_arp") {
		t.Fatalf("plan after the link went:\n%s", text)
	}
	applyPlan(t, e, p)
	wantSysctl(t, k, "net.ipv4.conf.v0.rp_filter", "2")
	if p, text := planText(t, e, st); !p.Empty() {
		t.Fatalf("plan after the link came back not empty:\n%s", text)
	}

	// Keys leave the file: their old values come back.
	st = load(t, strings.NewReplacer("  net.ipv4.ip_forward: 1\n", "", "ipv4.proxy_arp: 1, ", "").Replace(sysctlConfig))
	p, text = planText(t, e, st)
	want = `- sysctl net.ipv4.ip_forward: back to the value found before netreconcile set it
    value: 1 -> 0
- sysctl net.ipv4.conf.v0.proxy_arp: back to the value found before netreconcile set it
    value: 1 -> 0
`
	if text != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", text, want)
	}
	applyPlan(t, e, p)
	wantSysctl(t, k, "net.ipv4.ip_forward", "0")
	wantSysctl(t, k, "net.ipv4.conf.v0.proxy_arp", "0")
	if _, ok := e.Ledger.Sysctls["net.ipv4.ip_forward"]; ok {
		t.Errorf("ledger still records ip_forward")
	}
	if p, text := planText(t, e, st); !p.Empty() {
		t.Fatalf("plan after the restore not empty:\n%s", text)
	}
	// The foreign key was never written.
	wantSysctl(t, k, "net.ipv4.conf.all.rp_filter", "1")
	for _, w := range k.Log {
		if strings.Contains(w, "conf.all.rp_filter") {
			t.Errorf("foreign key written: %s", w)
		}
	}

	// The file drops the link: its keys go with it, and the ledger forgets them.
	st = load(t, "version: 1\nsysctls: {net.ipv4.ip_local_port_range: \"1024 65000\"}\n")
	p, text = planText(t, e, st)
	if strings.Contains(text, "sysctl") {
		t.Errorf("plan restores keys of a link it deletes:\n%s", text)
	}
	applyPlan(t, e, p)
	if _, err := e.Plan(st); err != nil {
		t.Fatal(err)
	}
	if len(e.Ledger.Sysctls) != 1 {
		t.Errorf("ledger: %v, want only ip_local_port_range", e.Ledger.Sysctls)
	}
}

// TestSysctlPromoteSecondaries: apply turns promote_secondaries on to
// delete an IPv4 address of an owned link; a link that declares it 0 gets
// its 0 back in the same apply, so a second apply writes nothing.
func TestSysctlPromoteSecondaries(t *testing.T) {
	e, k := newEngine(t)
	cfg := "version: 1\nlinks:\n  br0:\n    kind: bridge\n    addresses: [10.0.0.1/24, 10.0.1.1/24]\n    sysctls: {ipv4.promote_secondaries: 0}\n"
	p, _ := planText(t, e, load(t, cfg))
	applyPlan(t, e, p)
	st := load(t, strings.Replace(cfg, ", 10.0.1.1/24", "", 1))
	p, text := planText(t, e, st)
	want := "- address 10.0.1.1/24 dev br0\n~ sysctl net.ipv4.conf.br0.promote_secondaries: written again: deleting an address of br0 turns it on\n    value: 1 -> 0\n"
	if text != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", text, want)
	}
	applyPlan(t, e, p)
	wantSysctl(t, k, "net.ipv4.conf.br0.promote_secondaries", "0")
	if p, text := planText(t, e, st); !p.Empty() {
		t.Fatalf("second plan not empty:\n%s", text)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSysctlUnknownKey: a key the kernel does not have refuses the whole
// plan, before anything is written; a per-link key of a link to be made is
// checked against the "default" key.
func TestSysctlUnknownKey(t *testing.T) {
	e, k := newEngine(t)
	st := load(t, "version: 1\nsysctls:\n  net.ipv4.ip_forward: 1\n  net.ipv4.no_such_key: 1\nlinks:\n  v0:\n    kind: veth\n    veth: {peer: v1}\n    sysctls: {ipv4.nope: 1}\n")
	p, err := e.Plan(st)
	if p != nil || err == nil {
		t.Fatalf("plan %v, err %v; want no plan and an error", p, err)
	}
	for _, w := range []string{"2 unknown sysctl key(s), nothing was changed",
		"sysctl net.ipv4.no_such_key (declared at test.yaml:4:3): the kernel in this namespace has no such key (/proc/sys/net/ipv4/no_such_key does not exist)",
		"sysctl net.ipv4.conf.v0.nope (declared at test.yaml:9:15): the kernel in this namespace has no such key for links (/proc/sys/net/ipv4/conf/default/nope does not exist)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if k.Writes() != 0 {
		t.Errorf("%d writes", k.Writes())
	}
}

// TestSysctlWriteFails: a write that fails leaves no record in the ledger
// (the key was not taken over), and the next pass tries again.
func TestSysctlWriteFails(t *testing.T) {
	e, k := newEngine(t)
	st := load(t, "version: 1\nsysctls: {net.ipv4.ip_forward: 1, net.ipv4.tcp_syncookies: 0}\n")
	k.FailOnce(kerneltest.CallSetSysctl, "net.ipv4.ip_forward", syscall.EPERM)
	p, _ := planText(t, e, st)
	res, err := e.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Err.Error(), "declared at test.yaml:2:11") {
		t.Fatalf("failed: %v", res.Failed)
	}
	if _, ok := e.Ledger.Sysctls["net.ipv4.ip_forward"]; ok {
		t.Errorf("ledger records a key whose write failed")
	}
	if e.Ledger.Sysctls["net.ipv4.tcp_syncookies"] != "1" {
		t.Errorf("ledger: %v", e.Ledger.Sysctls)
	}
	p, text := planText(t, e, st)
	if text != "~ sysctl net.ipv4.ip_forward\n    value: 0 -> 1\n" {
		t.Fatalf("plan after the failure:\n%s", text)
	}
	applyPlan(t, e, p)
	wantSysctl(t, k, "net.ipv4.ip_forward", "1")
}

// TestSysctlPlanJSON: the JSON plan has the sysctl ops with their values.
func TestSysctlPlanJSON(t *testing.T) {
	e, _ := newEngine(t)
	p, _ := planText(t, e, load(t, "version: 1\nsysctls: {net.ipv4.ip_forward: 1}\n"))
	js, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"action": "update"`, `"kind": "sysctl"`, `"id": "net.ipv4.ip_forward"`, `"field": "value"`, `"from": "0"`, `"to": "1"`} {
		if !strings.Contains(string(js), w) {
			t.Errorf("JSON plan lacks %s:\n%s", w, js)
		}
	}
}
